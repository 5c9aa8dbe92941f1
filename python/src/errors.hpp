// The package's exceptions and the wrapper that turns C++ errors into them.
#pragma once

#include <nanobind/nanobind.h>

#include <atomic>
#include <functional>
#include <string>
#include <utility>

#include "ribbon/error.hpp"

namespace ribbon::python {

/// What went wrong, which picks the Python exception (all derive from ribbon.Error).
enum class failure {
  generic,      ///< ribbon.Error
  options,      ///< ribbon.OptionsError (ValueError): bad build or load options
  file,         ///< ribbon.FileError (OSError): unreadable, corrupt or unwritable files/images
  keys,         ///< ribbon.KeysError (ValueError): nulls, out-of-range keys or values
  query,        ///< ribbon.QueryError (TypeError): wrong key kind, contains() vs lookup()
  key_type,     ///< ribbon.KeyTypeError (TypeError): keys of a type that is not supported
  conflicting,  ///< ribbon.ConflictingValuesError (ValueError): one key, two values
};

/// Creates the exception classes in `m` (module initialization).
void register_errors(nanobind::module_& m);

/// Raises the Python exception of `kind` with `message` (throws nanobind::python_error).
[[noreturn]] void raise(failure kind, const std::string& message);

/// Raises ribbon.ConflictingValuesError with e's message and its key_hash attribute (the key
/// hash given twice, which lets a caller holding byte-string keys find the key).
[[noreturn]] void raise_conflicting(const conflicting_values_error& e);

/// Runs f(); a ribbon::error it throws becomes the Python exception of `kind` with the C++
/// message (conflicting values always become ConflictingValuesError).
template <class F>
decltype(auto) translating(failure kind, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const conflicting_values_error& e) {
    raise_conflicting(e);
  } catch (const error& e) {
    raise(kind, e.what());
  }
}

/// Runs work() without the GIL. Called with the GIL held. On the main thread, work() runs
/// on a helper thread while this one checks for signals every 100 ms: on Ctrl-C it sets
/// `cancel` (the C++ builders poll it and stop, removing their temporary files), waits for
/// work() to return and raises the signal's exception (KeyboardInterrupt). Exceptions of
/// work() are rethrown here.
void run_interruptibly(const std::function<void()>& work, std::atomic<bool>* cancel);

}  // namespace ribbon::python
