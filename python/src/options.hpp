// Keyword options of ribbon.build, build_many, build_set and BulkBuilder -> ribbon::
// build_options: their names, types and defaults are read in one place (keywords).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <unordered_set>

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

/// The keyword arguments (**options) of one binding, read by name and type. Each binding
/// takes the build options (build_options()) and its own few keywords; done() refuses any
/// keyword left unread, as Python refuses an unexpected keyword argument (TypeError).
class keywords {
 public:
  keywords(const char* function, nanobind::kwargs given) : function_(function), given_(given) {}

  /// The shared build options (fpr, bits, width, variant, seed, threads, shard_size, slack,
  /// success_probability, threshold_codes, check_bits), those named in `not_taken` left
  /// unread (so that done() refuses them).
  build_arguments build_options(std::initializer_list<const char*> not_taken = {});

  /// The keyword `name` as T; nullopt where it is absent or None. TypeError (naming the
  /// function and the keyword) for a value that is not a T.
  template <class T>
  std::optional<T> optional(const char* name) {
    read_.insert(name);
    if (!given_.contains(name)) return std::nullopt;
    nanobind::handle value = given_[name];
    if (value.is_none()) return std::nullopt;
    T result;
    if (!nanobind::try_cast(value, result)) wrong_type(name, value);
    return result;
  }
  template <class T>
  T value(const char* name, T fallback) {
    return optional<T>(name).value_or(std::move(fallback));
  }
  /// The keyword as given (None where absent).
  nanobind::object object(const char* name);

  /// Raises TypeError for a keyword no reader took.
  void done() const;

 private:
  [[noreturn]] void wrong_type(const char* name, nanobind::handle value) const;

  const char* function_;
  nanobind::kwargs given_;
  std::unordered_set<std::string> read_;
};

/// The C++ options; raises ribbon.OptionsError for values out of range or unknown names.
/// The library checks the rest when the build starts (also OptionsError).
build_options to_build_options(const build_arguments& args);

/// Whether backend "cpu", "gpu" or "auto" builds on the GPU; raises OptionsError for a GPU
/// build this module cannot run (built without CUDA, or no device), naming why.
bool use_gpu(const std::string& backend);

}  // namespace ribbon::python
