/// @file temp_files.hpp
/// Temporary files and directories of builds in progress:
/// - a fixed table of them that a signal handler can walk (Ctrl-C during a build);
/// - an advisory lock (flock) held on each for the life of its owner, so that a later build
///   can tell the temporaries of a dead build (SIGKILL, power cut) from a live one's and
///   reclaim them (reclaim_stale_temporaries()).
#pragma once

#include <fcntl.h>
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>

#include "ribbon/mapped_file.hpp"  // detail::file_type_name

namespace ribbon::detail {

/// Registers `name` in the directory open as `directory_fd` (AT_FDCWD: `name` is a path) for
/// removal by remove_temp_paths(); unregisters it when destroyed. The owner still removes
/// the path itself on every normal exit, and keeps `directory_fd` open meanwhile. Throws
/// ribbon::error if the path is longer than PATH_MAX or the table is full (thousands of live
/// entries).
class temp_path {
 public:
  temp_path(const std::string& path, bool directory) : temp_path(AT_FDCWD, path, directory) {}
  temp_path(int directory_fd, const std::string& name, bool directory);
  ~temp_path();
  temp_path(const temp_path&) = delete;
  temp_path& operator=(const temp_path&) = delete;

 private:
  int slot_;
};

/// Unlinks every registered file, then removes every registered directory. Async-signal-safe.
void remove_temp_paths() noexcept;

/// A file descriptor, closed when destroyed.
class unique_fd {
 public:
  explicit unique_fd(int fd = -1) : fd_(fd) {}
  ~unique_fd() { reset(); }
  unique_fd(unique_fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  unique_fd& operator=(unique_fd&& other) noexcept;
  int get() const { return fd_; }
  /// Closes the descriptor; returns close()'s result (0 when there was none).
  int reset();

 private:
  int fd_;
};

/// Opens directory `path` for the *at() calls (-1 and errno on failure).
unique_fd open_directory(const std::string& path);

/// What a temporary is: a file (the output being written, recognised by the file magic), a
/// directory of spill files (recognised by its files' names) or a distributed build's parts
/// directory (named after its output; recognised by its parts' names).
enum class temp_kind { output_file, spill_directory, parts_directory };

/// A new temporary in the directory open as `directory_fd` (shown as `directory` in
/// messages), named after its kind (a parts directory: `prefix`, its output's) and a random
/// suffix, locked for the life of this object and registered for removal on signals. Removed
/// when destroyed unless committed (renamed away by the owner); a directory only if empty.
/// `before_locking(path)`, if given, runs between creating and locking it (tests: another
/// build looks at it then).
class locked_temp {
 public:
  locked_temp(int directory_fd, const std::string& directory, temp_kind kind,
              const std::string& prefix = {},
              const std::function<void(const std::string&)>& before_locking = nullptr);
  ~locked_temp();
  locked_temp(const locked_temp&) = delete;
  locked_temp& operator=(const locked_temp&) = delete;

  /// Open for writing (file) or for the *at() calls (directory); holds the lock.
  int fd() const { return fd_.get(); }
  const std::string& name() const { return name_; }
  /// The path shown in messages: directory/name.
  std::string path() const { return directory_ + "/" + name_; }
  /// The temporary was renamed to its final name: nothing to remove any more.
  void commit() { committed_ = true; }

 private:
  int directory_fd_;
  std::string directory_, prefix_, name_;
  temp_kind kind_;
  unique_fd fd_;
  bool committed_ = false;
  std::optional<temp_path> registration_;
};

/// Removes the temporaries of `kind` in the directory open as `directory_fd` whose owner is
/// dead: entries with exactly our naming (parts directories: `prefix`, their output's),
/// owned by this user, whose lock can be taken, and whose content is ours (a filter file's
/// magic; spill files' names; parts' names), or empty and older than a minute (a live owner
/// locks its new temporary within microseconds). Never throws; returns the number removed.
int reclaim_stale_temporaries(int directory_fd, temp_kind kind,
                              const std::string& prefix = {}) noexcept;

/// Unlinks the files of the directory open as `fd` (not its subdirectories).
void remove_files_in(int fd) noexcept;

/// The directory for spill files: `requested`, else $TMPDIR, else /tmp.
std::string temp_parent(const std::string& requested);

/// Before a build: throws ribbon::error if spill files under temp_parent(`requested`) would
/// have paths longer than PATH_MAX, and reclaims dead builds' spill directories there.
void prepare_temp_parent(const std::string& requested);

}  // namespace ribbon::detail
