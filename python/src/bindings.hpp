// The pieces of the extension module ribbon._ribbon, one function per source file.
#pragma once

#include <nanobind/nanobind.h>

/// python/src/keys.cpp: hash_keys, key_kind_of.
void bind_keys(nanobind::module_& m);
/// python/src/filter.cpp: Filter, build, load.
void bind_filter(nanobind::module_& m);
/// python/src/many.cpp: _build_many (ribbon.build_many).
void bind_many(nanobind::module_& m);
/// python/src/bulk.cpp: BulkBuilder.
void bind_bulk(nanobind::module_& m);
/// python/src/distributed.cpp: the engine-neutral steps of the distributed build.
void bind_distributed(nanobind::module_& m);
