// Keyword options of ribbon.build and ribbon.BulkBuilder -> ribbon::build_options.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ribbon/filter.hpp"
#include "ribbon/options.hpp"

namespace ribbon::python {

/// The build options as Python passes them (None: the library's default).
struct build_arguments {
  std::optional<double> fpr;
  std::optional<std::int64_t> bits;
  std::int64_t width = 64;
  std::string variant = "bumped";
  std::uint64_t seed = 0;  ///< the hash seed, 0 to 2^64 - 1
  std::optional<std::int64_t> threads;
  std::optional<std::int64_t> shard_size;
  std::optional<double> slack;
  std::optional<double> success_probability;
  /// "1+-bit", "2-bit" or "auto" (as `ribbon build --threshold-codes` names them).
  std::optional<std::string> threshold_codes;
  /// Retrieval: fingerprint bits stored above each value (0: none).
  std::int64_t check_bits = 0;
};

/// The C++ options; raises ribbon.OptionsError for values out of range or unknown names.
/// The library checks the rest when the build starts (also OptionsError).
build_options to_build_options(const build_arguments& args);

/// Whether backend "cpu", "gpu" or "auto" builds on the GPU; raises OptionsError for a GPU
/// build this module cannot run (built without CUDA, or no device), naming why.
bool use_gpu(const std::string& backend);

}  // namespace ribbon::python
