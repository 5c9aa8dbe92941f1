#include "temp_files.hpp"

#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <random>

#include "ribbon/bulk_builder.hpp"  // remove_temp_files_on_signals
#include "ribbon/error.hpp"
#include "ribbon/format.hpp"

namespace ribbon::detail {

namespace {

// Paths live in static storage: a signal handler may neither allocate nor lock. The states
// are apart from the paths so that the handler touches only their few pages.
constexpr int slot_count = 4096;

enum slot_state : int { free_slot = 0, claimed, live_file, live_directory };

std::atomic<int> slot_states[slot_count];
int slot_directories[slot_count];
char slot_paths[slot_count][PATH_MAX];

// Our temporaries' names: a prefix and six random letters or digits.
constexpr const char* output_prefix = ".ribbon-tmp-";
constexpr const char* spill_prefix = "ribbon-spill-";
constexpr std::size_t random_letters = 6;
// An empty temporary younger than this may be a live owner's that is not yet locked.
constexpr std::time_t unlocked_grace_seconds = 60;

std::string prefix_of(temp_kind kind, const std::string& prefix) {
  if (kind == temp_kind::parts_directory) return prefix;
  return kind == temp_kind::output_file ? output_prefix : spill_prefix;
}

bool is_alphanumeric(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/// `name` is prefix + exactly six letters or digits (parts directories, whose prefix names
/// their output: one to 64, the 32 hexadecimal digits of earlier releases' names included).
bool has_temp_name(const char* name, temp_kind kind, const std::string& given_prefix = {}) {
  const std::string prefix = prefix_of(kind, given_prefix);
  if (prefix.empty() || std::strncmp(name, prefix.c_str(), prefix.size()) != 0) return false;
  const char* rest = name + prefix.size();
  const std::size_t letters = std::strlen(rest);
  if (kind == temp_kind::parts_directory ? letters < 1 || letters > 64
                                         : letters != random_letters) {
    return false;
  }
  for (const char* c = rest; *c; ++c) {
    if (!is_alphanumeric(*c)) return false;
  }
  return true;
}

/// `name` is a spill file's: "<kind>-<number>", the kind in lowercase letters
/// (bulk_builder.cpp's spill_directory::create).
bool has_spill_file_name(const char* name) {
  const char* c = name;
  while (*c >= 'a' && *c <= 'z') ++c;
  if (c == name || *c != '-' || c[1] == '\0') return false;
  for (++c; *c; ++c) {
    if (*c < '0' || *c > '9') return false;
  }
  return true;
}

/// `name` is a distributed build's: a part "L<layer>-<keys>-R<range>.part" (digits), the
/// file while assembled, or a part's temporary file (distributed.cpp, ribbon.distributed).
bool has_parts_file_name(const char* name) {
  if (std::strcmp(name, "assembled.ribbon") == 0 || has_temp_name(name, temp_kind::output_file)) {
    return true;
  }
  const char* c = name;
  auto digits = [&c] {
    const char* start = c;
    while (*c >= '0' && *c <= '9') ++c;
    return c != start;
  };
  if (*c++ != 'L' || !digits() || *c++ != '-' || !digits() || *c++ != '-' || *c++ != 'R' ||
      !digits()) {
    return false;
  }
  return std::strcmp(c, ".part") == 0;
}

std::string random_name(const std::string& prefix) {
  static const char letters[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  thread_local std::mt19937_64 generator{std::random_device{}()};
  std::string name = prefix;
  for (std::size_t i = 0; i < random_letters; ++i) name += letters[generator() % 62];
  return name;
}

/// Calls f(name) for each entry of the directory open as `directory_fd`; false if it cannot
/// be listed.
template <class F>
bool for_each_entry(int directory_fd, F&& f) {
  const int fd = ::openat(directory_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    ::close(fd);
    return false;
  }
  while (const dirent* entry = ::readdir(dir)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) {
      f(entry->d_name);
    }
  }
  ::closedir(dir);
  return true;
}

bool older_than_grace(const struct stat& st) {
  return std::time(nullptr) - st.st_mtime > unlocked_grace_seconds;
}

/// A dead build's output file: it starts with the file magic, or is empty and old.
bool is_dead_output(int fd, const struct stat& st) {
  if (!S_ISREG(st.st_mode)) return false;
  if (st.st_size == 0) return older_than_grace(st);
  char start[sizeof(format::magic)];
  return ::pread(fd, start, sizeof(start), 0) == static_cast<ssize_t>(sizeof(start)) &&
         std::memcmp(start, format::magic, sizeof(start)) == 0;
}

/// Empties a dead build's spill (or parts) directory if it holds only spill files (parts),
/// or is empty and old.
bool empty_dead_directory(int fd, const struct stat& st, temp_kind kind) {
  if (!S_ISDIR(st.st_mode)) return false;
  bool ours = true, empty = true;
  if (!for_each_entry(fd, [&](const char* name) {
        empty = false;
        ours = ours && (kind == temp_kind::spill_directory ? has_spill_file_name(name)
                                                           : has_parts_file_name(name));
      })) {
    return false;
  }
  if (!ours || (empty && !older_than_grace(st))) return false;
  for_each_entry(fd, [&](const char* name) { ::unlinkat(fd, name, 0); });
  return true;
}

/// Removes one temporary if its owner is dead; the lock is held while it is removed.
bool reclaim_if_dead(int directory_fd, const char* name, temp_kind kind) {
  const bool directory = kind != temp_kind::output_file;
  const int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (directory ? O_DIRECTORY : 0);
  unique_fd fd(::openat(directory_fd, name, flags));
  struct stat st;
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || st.st_uid != ::geteuid()) return false;
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return false;  // its owner lives
  const bool dead =
      directory ? empty_dead_directory(fd.get(), st, kind) : is_dead_output(fd.get(), st);
  return dead && ::unlinkat(directory_fd, name, directory ? AT_REMOVEDIR : 0) == 0;
}

}  // namespace

temp_path::temp_path(int directory_fd, const std::string& name, bool directory) : slot_(-1) {
  if (name.size() >= PATH_MAX) {
    throw error("temporary path too long (at most " + std::to_string(PATH_MAX - 1) +
                " bytes): " + name);
  }
  for (int i = 0; i < slot_count; ++i) {
    int expected = free_slot;
    if (slot_states[i].compare_exchange_strong(expected, claimed)) {
      std::memcpy(slot_paths[i], name.c_str(), name.size() + 1);
      slot_directories[i] = directory_fd;
      slot_states[i].store(directory ? live_directory : live_file, std::memory_order_release);
      slot_ = i;
      return;
    }
  }
  throw error("too many temporary files at once");
}

temp_path::~temp_path() {
  slot_states[slot_].store(free_slot, std::memory_order_release);
}

namespace {

void on_fatal_signal(int sig) {
  remove_temp_paths();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

void remove_temp_paths() noexcept {
  for (const int wanted : {live_file, live_directory}) {  // directories must be empty
    for (int i = 0; i < slot_count; ++i) {
      if (slot_states[i].load(std::memory_order_acquire) != wanted) continue;
      ::unlinkat(slot_directories[i], slot_paths[i], wanted == live_file ? 0 : AT_REMOVEDIR);
    }
  }
}

unique_fd& unique_fd::operator=(unique_fd&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

int unique_fd::reset() {
  const int result = fd_ >= 0 ? ::close(fd_) : 0;
  fd_ = -1;
  return result;
}

unique_fd open_directory(const std::string& path) {
  unique_fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0 && errno == EACCES) {
    // Write and search permission are enough to create files in it.
    fd = unique_fd(::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  }
  return fd;
}

locked_temp::locked_temp(int directory_fd, const std::string& directory, temp_kind kind,
                         const std::string& prefix,
                         const std::function<void(const std::string&)>& before_locking)
    : directory_fd_(directory_fd),
      directory_(directory),
      prefix_(prefix_of(kind, prefix)),
      name_(random_name(prefix_)),
      kind_(kind) {
  const bool is_directory = kind != temp_kind::output_file;
  for (int attempt = 0;; ++attempt) {
    if (kind == temp_kind::output_file) {
      fd_ = unique_fd(
          ::openat(directory_fd, name_.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600));
    } else if (::mkdirat(directory_fd, name_.c_str(),
                         kind == temp_kind::parts_directory ? 0777 : 0700) == 0) {
      // A parts directory takes the umask: executors on a shared file system write to it.
      fd_ = unique_fd(
          ::openat(directory_fd, name_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (fd_.get() < 0) ::unlinkat(directory_fd, name_.c_str(), AT_REMOVEDIR);
    }
    if (fd_.get() >= 0) break;
    if (errno != EEXIST || attempt == 100) {
      throw error("cannot create a temporary " + std::string(is_directory ? "directory" : "file") +
                  " in " + directory + ": " + std::strerror(errno));
    }
    name_ = random_name(prefix_);
  }
  try {
    registration_.emplace(directory_fd, name_, is_directory);
    if (before_locking) before_locking(path());
  } catch (...) {
    ::unlinkat(directory_fd, name_.c_str(), is_directory ? AT_REMOVEDIR : 0);
    throw;
  }
  // A reclaimer holds the lock only while it looks at a new, empty temporary: wait for it.
  ::flock(fd_.get(), LOCK_EX);
}

locked_temp::~locked_temp() {
  if (!committed_) {
    ::unlinkat(directory_fd_, name_.c_str(), kind_ != temp_kind::output_file ? AT_REMOVEDIR : 0);
  }
}

int reclaim_stale_temporaries(int directory_fd, temp_kind kind,
                              const std::string& prefix) noexcept {
  int removed = 0;
  for_each_entry(directory_fd, [&](const char* name) {
    if (has_temp_name(name, kind, prefix) && reclaim_if_dead(directory_fd, name, kind)) ++removed;
  });
  return removed;
}

void remove_files_in(int fd) noexcept {
  for_each_entry(fd, [&](const char* name) { ::unlinkat(fd, name, 0); });
}

std::string temp_parent(const std::string& requested) {
  if (!requested.empty()) return requested;
  const char* env = std::getenv("TMPDIR");
  return env && *env ? env : "/tmp";
}

void prepare_temp_parent(const std::string& requested) {
  const std::string parent = temp_parent(requested);
  // parent/ribbon-spill-XXXXXX/<kind>-<20 digits>, kinds of up to 11 letters.
  const std::size_t longest =
      parent.size() + 1 + std::strlen(spill_prefix) + random_letters + 1 + 11 + 1 + 20;
  if (longest >= PATH_MAX) {
    throw error("temporary directory path too long (" + std::to_string(parent.size()) +
                " bytes; spill files need it below " +
                std::to_string(parent.size() + PATH_MAX - longest) + "): " + parent);
  }
  const unique_fd directory = open_directory(parent);
  if (directory.get() >= 0) reclaim_stale_temporaries(directory.get(), temp_kind::spill_directory);
}

}  // namespace ribbon::detail

namespace ribbon {

void remove_temp_files_on_signals() {
  struct sigaction action {};
  action.sa_handler = detail::on_fatal_signal;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::sigaction(sig, &action, nullptr);
}

}  // namespace ribbon
