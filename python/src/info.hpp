// Filter.info(): the fields of `ribbon info --json`, from the library's filter_summary.
#pragma once

#include <nanobind/nanobind.h>

#include "ribbon/filter.hpp"

namespace ribbon::python {

/// The fields of `ribbon info --json` (without "file"), as a dict.
nanobind::dict info(const filter& f);

}  // namespace ribbon::python
