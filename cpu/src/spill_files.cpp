// Stage: spill files (spill_files.hpp): create, append, read back, remove.
#include "spill_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "output_file.hpp"
#include "ribbon/error.hpp"

namespace ribbon::detail {

spill_file::spill_file(const std::string& path, std::uint64_t buffer_bytes)
    : path_(path), registration_(path, false) {
  fd_ = ::open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd_ < 0) throw error("cannot create " + path + ": " + std::strerror(errno));
  capacity_ = std::max<std::uint64_t>(buffer_bytes, 512);
  buffer_.reset(new unsigned char[capacity_]);  // not zeroed: pages are touched as filled
}

spill_file::~spill_file() {
  ::close(fd_);
  ::unlink(path_.c_str());
}

void spill_file::write_bytes(const void* data, std::uint64_t bytes) {
  write_fully(fd_, data, bytes, size_, path_);
  size_ += bytes;
}

void spill_file::read(void* data, std::uint64_t bytes, std::uint64_t offset) const {
  read_fully(fd_, data, bytes, offset, path_);
}

void spill_file::stream(std::vector<unsigned char>& buffer, const format::byte_sink& sink,
                        const std::function<void(std::uint64_t)>& progress) const {
  stream_file(fd_, 0, size_, buffer, sink, path_, progress);
}

namespace {

int checked(const unique_fd& fd, const std::string& parent) {
  if (fd.get() < 0) {
    throw error("cannot create a temporary directory in " + parent + ": " + std::strerror(errno));
  }
  return fd.get();
}

}  // namespace

spill_directory::spill_directory(const std::string& parent)
    : parent_(temp_parent(parent)),
      parent_fd_(open_directory(parent_)),
      directory_(checked(parent_fd_, parent_), parent_, temp_kind::spill_directory),
      path_(directory_.path()) {}

std::unique_ptr<spill_file> spill_directory::create(const std::string& kind,
                                                    std::uint64_t buffer_bytes) {
  return std::make_unique<spill_file>(path_ + "/" + kind + "-" + std::to_string(files_++),
                                      buffer_bytes);
}

}  // namespace ribbon::detail
