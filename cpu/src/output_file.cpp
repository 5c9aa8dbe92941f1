#include "output_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>

#include "ribbon/filter.hpp"
#include "temp_files.hpp"

namespace ribbon {

namespace detail {
namespace {

/// Where an output path leads: the directory and name of the file that is replaced.
struct output_target {
  std::string directory, name;
};

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw error("cannot write " + path + ": " + why);
}

void check_length(const std::string& candidate, const std::string& path) {
  if (candidate.size() >= PATH_MAX) {
    refuse(path, (candidate == path ? "path too long (" : "link target path too long (") +
                     std::to_string(candidate.size()) + " bytes, at most " +
                     std::to_string(PATH_MAX - 1) + ")");
  }
}

std::string read_link(const std::string& link, const std::string& path) {
  std::string target(PATH_MAX, '\0');
  const ssize_t n = ::readlink(link.c_str(), target.data(), target.size());
  if (n < 0) refuse(path, "cannot read the symbolic link " + link + ": " + std::strerror(errno));
  if (static_cast<std::size_t>(n) >= target.size()) refuse(path, "symbolic link target too long");
  target.resize(static_cast<std::size_t>(n));
  return target;
}

/// Follows symbolic links to the file that is replaced; refuses anything but a regular file
/// (or no file) there.
output_target resolve(const std::string& path) {
  if (path.empty()) throw error("cannot write an empty path");
  std::string current = path;
  for (int links = 0;; ++links) {
    check_length(current, path);
    struct stat st;
    if (::lstat(current.c_str(), &st) != 0) {
      if (errno == ENOENT) break;  // a new file; a missing directory is reported when opened
      refuse(path, std::strerror(errno));
    }
    if (!S_ISLNK(st.st_mode)) {
      if (!S_ISREG(st.st_mode)) {
        refuse(path, std::string("it is ") + file_type_name(st.st_mode) +
                         (current == path ? "" : " (" + current + ")") +
                         ", and only a regular file is replaced");
      }
      break;
    }
    if (links == 40) refuse(path, "too many levels of symbolic links");
    const std::string target = read_link(current, path);
    const std::size_t slash = current.rfind('/');
    current = target[0] == '/' || slash == std::string::npos
                  ? target
                  : current.substr(0, slash + 1) + target;
  }
  const std::size_t slash = current.rfind('/');
  output_target t;
  t.directory = slash == std::string::npos ? "." : slash == 0 ? "/" : current.substr(0, slash);
  t.name = slash == std::string::npos ? current : current.substr(slash + 1);
  if (t.name.empty() || t.name == "." || t.name == "..") refuse(path, "no file name");
  return t;
}

/// The output's directory, open, with dead builds' temporaries reclaimed.
unique_fd open_output_directory(const output_target& target, const std::string& path) {
  unique_fd directory = open_directory(target.directory);
  if (directory.get() < 0) refuse(path, std::strerror(errno));
  reclaim_stale_temporaries(directory.get(), temp_kind::output_file);
  return directory;
}

/// A new locked temporary file in the output's directory.
void create_temp(std::optional<locked_temp>& temp, int directory_fd, const output_target& target,
                 const std::string& path) {
  try {
    temp.emplace(directory_fd, target.directory, temp_kind::output_file);
  } catch (const error& e) {
    refuse(path, e.what());
  }
}

/// Gives the temporary file the permissions a new file normally gets (mkstemp-like creation
/// made it 0600), flushes it and renames it over the target while it is still locked (so no
/// reclaimer can take it), then flushes the directory entry.
void commit(locked_temp& temp, int directory_fd, const output_target& target,
            const std::string& path) {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  auto fail_io = [&](const char* what) { refuse(path, what + std::string(std::strerror(errno))); };
  if (::fchmod(temp.fd(), 0666 & ~mask) != 0) fail_io("chmod: ");
  if (::fsync(temp.fd()) != 0) fail_io("fsync: ");
  if (::renameat(directory_fd, temp.name().c_str(), directory_fd, target.name.c_str()) != 0) {
    fail_io("rename: ");
  }
  temp.commit();
  // The rename is done: a failed sync of the entry (a directory opened O_PATH, a file system
  // that cannot sync directories) leaves the file in place, so it is no error.
  ::fsync(directory_fd);
}

}  // namespace

void write_atomically(const std::string& path,
                      const std::function<void(const format::byte_sink&)>& write) {
  const output_target target = resolve(path);
  const unique_fd directory = open_output_directory(target, path);
  std::optional<locked_temp> temp;
  create_temp(temp, directory.get(), target, path);
  std::uint64_t written = 0;
  write([&](const void* data, std::size_t size) {
    write_fully(temp->fd(), data, size, written, path);
    written += size;
  });
  commit(*temp, directory.get(), target, path);
}

void write_file_atomically(const std::string& path, const format::filter_image& image,
                           const format::section_source& external) {
  write_atomically(
      path, [&](const format::byte_sink& sink) { format::write_image(image, sink, external); });
}

void write_fully(int fd, const void* data, std::uint64_t bytes, std::uint64_t offset,
                 const std::string& path) {
  const auto* p = static_cast<const unsigned char*>(data);
  while (bytes > 0) {
    const ssize_t n =
        ::pwrite(fd, p, std::min<std::uint64_t>(bytes, 1u << 30), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      refuse(path, std::strerror(errno));
    }
    p += n;
    bytes -= static_cast<std::uint64_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
}

void read_fully(int fd, void* data, std::uint64_t bytes, std::uint64_t offset,
                const std::string& what) {
  auto* p = static_cast<unsigned char*>(data);
  while (bytes > 0) {
    const ssize_t n =
        ::pread(fd, p, std::min<std::uint64_t>(bytes, 1u << 30), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;  // the file is ours or checked: a short read means damage
      throw error("cannot read " + what + ": " + std::strerror(errno));
    }
    p += n;
    bytes -= static_cast<std::uint64_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
}

void stream_file(int fd, std::uint64_t offset, std::uint64_t bytes,
                 std::vector<unsigned char>& buffer, const format::byte_sink& sink,
                 const std::string& what, const std::function<void(std::uint64_t)>& progress) {
  for (std::uint64_t done = 0; done < bytes;) {
    const std::uint64_t n = std::min<std::uint64_t>(buffer.size(), bytes - done);
    read_fully(fd, buffer.data(), n, offset + done, what);
    sink(buffer.data(), static_cast<std::size_t>(n));
    done += n;
    if (progress) progress(done);
  }
}

}  // namespace detail

void check_output_path(const std::string& path) {
  const detail::output_target target = detail::resolve(path);
  const detail::unique_fd directory = detail::open_output_directory(target, path);
  std::optional<detail::locked_temp> probe;
  detail::create_temp(probe, directory.get(), target, path);
}

}  // namespace ribbon
