/// @file temp_files.hpp
/// Temporary files and directories that must not outlive the process, even when it dies of
/// a signal (Ctrl-C during a build): a fixed table the signal handler can walk.
#pragma once

#include <string>

namespace ribbon::detail {

/// Registers `path` (a file, or an empty-at-exit directory) for removal by
/// remove_temp_paths(); unregisters it when destroyed. The owner still removes the path
/// itself on every normal exit. Throws ribbon::error if the path is too long or the table is
/// full (thousands of live entries).
class temp_path {
 public:
  temp_path(const std::string& path, bool directory);
  ~temp_path();
  temp_path(const temp_path&) = delete;
  temp_path& operator=(const temp_path&) = delete;

 private:
  int slot_;
};

/// Unlinks every registered file, then removes every registered directory. Async-signal-safe.
void remove_temp_paths() noexcept;

}  // namespace ribbon::detail
