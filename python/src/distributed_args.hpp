// What the bindings of the distributed steps (distributed.cpp, assembly.cpp) share.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <optional>
#include <string>

#include "ribbon/group_names.hpp"
#include "ribbon/params.hpp"

namespace ribbon::python {

/// A set's group names (a collection of its group kind), or none (None: format version 6).
std::shared_ptr<const group_names> names_for(const filter_params& p, nanobind::handle names);

/// Application metadata (bytes), or none (None).
std::shared_ptr<const std::string> metadata_for(const std::optional<nanobind::bytes>& metadata);

/// The assembly's bindings (assembly.cpp): the file frame, its steps, the parts directory.
void bind_assembly(nanobind::module_& m);

}  // namespace ribbon::python
