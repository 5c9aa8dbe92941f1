#include "ribbon/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ribbon/error.hpp"

namespace ribbon {

namespace {

/// Closes a descriptor when the scope ends.
struct fd_closer {
  int fd;
  ~fd_closer() { ::close(fd); }
};

[[noreturn]] void fail(const char* what, const std::string& path) {
  const int cause = errno;  // before the message's allocations can change it
  throw error(std::string(what) + " " + path + ": " + std::strerror(cause));
}

}  // namespace

void file_bytes::unmapper::operator()(unsigned char* p) const {
  ::munmap(p, bytes);
}

file_bytes file_bytes::open(const std::string& path, bool use_mmap) {
  // Non-blocking: opening a FIFO must not wait for a writer (it is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail("cannot open", path);
  const fd_closer closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) fail("cannot stat", path);
  if (!S_ISREG(st.st_mode)) {
    throw error("cannot read " + path + ": it is " + detail::file_type_name(st.st_mode) +
                ", and a filter is a regular file");
  }
  file_bytes bytes;
  bytes.size_ = static_cast<std::uint64_t>(st.st_size);
  if (use_mmap && bytes.size_ > 0) {
    void* map = ::mmap(nullptr, bytes.size_, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) fail("cannot map", path);
    bytes.mapping_ = {static_cast<unsigned char*>(map), unmapper{bytes.size_}};
    bytes.data_ = bytes.mapping_.get();
    return bytes;
  }
  bytes.buffer_ = allocate_aligned(bytes.size_);  // aligned as the format's sections are
  bytes.data_ = bytes.buffer_.get();
  for (std::uint64_t done = 0; done < bytes.size_;) {
    unsigned char* to = bytes.buffer_.get() + done;
    const ssize_t n = ::pread(fd, to, bytes.size_ - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("cannot read", path);
    if (n == 0) throw error(path + ": file shrank while being read");
    done += static_cast<std::uint64_t>(n);
  }
  return bytes;
}

mapped_file mapped_file::open(const std::string& path, bool verify_checksums, bool use_mmap) {
  mapped_file file;
  file.bytes_ = file_bytes::open(path, use_mmap);
  file.image_ = format::parse_image(file.bytes_.data(), file.bytes_.size(), verify_checksums, path);
  return file;
}

namespace detail {

const char* file_type_name(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFIFO: return "a FIFO";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
  }
  return "not a regular file";
}

}  // namespace detail

}  // namespace ribbon
