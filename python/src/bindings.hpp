// The pieces of the extension module ribbon._ribbon, one function per source file.
#pragma once

#include <nanobind/nanobind.h>

#include "ribbon/filter.hpp"

/// python/src/keys.cpp: hash_keys, key_kind_of.
void bind_keys(nanobind::module_& m);
/// python/src/filter.cpp: Filter, build, load.
void bind_filter(nanobind::module_& m);
/// python/src/many.cpp: _build_many (ribbon.build_many).
void bind_many(nanobind::module_& m);
/// python/src/set.cpp: _build_set (ribbon.build_set).
void bind_sets(nanobind::module_& m);
/// python/src/set.cpp: Filter.contains_in and the set's properties.
void bind_set_queries(nanobind::class_<ribbon::filter>& c);
/// python/src/bulk.cpp: BulkBuilder.
void bind_bulk(nanobind::module_& m);
/// python/src/distributed.cpp: the engine-neutral steps of the distributed build.
void bind_distributed(nanobind::module_& m);
