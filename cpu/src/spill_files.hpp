// Stage: spill files. The temporary files of an out-of-core build (hashes partitioned by
// their top bits, solved sections, bumped keys) in a private, locked directory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ribbon/format.hpp"
#include "temp_files.hpp"

namespace ribbon::detail {

/// A temporary file of 64-bit hashes (or raw bytes), appended through a buffer and read back
/// with pread. Removed when destroyed, and by the signal handler if the process is killed.
class spill_file {
 public:
  spill_file(const std::string& path, std::uint64_t buffer_bytes);
  ~spill_file();
  spill_file(const spill_file&) = delete;
  spill_file& operator=(const spill_file&) = delete;

  void push(std::uint64_t hash) {
    buffer_.push_back(hash);
    if (buffer_.size() == buffer_.capacity()) flush();
  }
  void append(const std::uint64_t* hashes, std::uint64_t count) {
    for (std::uint64_t i = 0; i < count; ++i) push(hashes[i]);
  }
  /// Appends bytes directly (no buffering).
  void write_bytes(const void* data, std::uint64_t bytes);
  void flush() {
    write_bytes(buffer_.data(), buffer_.size() * 8);
    buffer_.clear();
  }
  /// Flushes and frees the buffer (no more appends expected; they would still work).
  void release_buffer() {
    flush();
    buffer_ = {};
  }
  /// Bytes written so far (after flush()).
  std::uint64_t size() const { return size_; }
  std::uint64_t hashes() const { return size_ / 8 + buffer_.size(); }

  /// Reads `bytes` at `offset` (which must exist).
  void read(void* data, std::uint64_t bytes, std::uint64_t offset) const;

  /// Passes the file's bytes to sink, in pieces the size of `buffer`; after each piece,
  /// progress(bytes passed so far).
  void stream(std::vector<unsigned char>& buffer, const format::byte_sink& sink,
              const std::function<void(std::uint64_t)>& progress) const;

  /// Calls f(const uint64_t* hashes, count) for the file's hashes, in pieces the size of
  /// `buffer`.
  template <class F>
  void for_each_piece(std::vector<std::uint64_t>& buffer, F&& f) const {
    const std::uint64_t total = size_ / 8;
    for (std::uint64_t done = 0; done < total;) {
      const std::uint64_t count = std::min<std::uint64_t>(buffer.size(), total - done);
      read(buffer.data(), count * 8, done * 8);
      f(static_cast<const std::uint64_t*>(buffer.data()), count);
      done += count;
    }
  }

 private:
  std::string path_;
  temp_path registration_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::vector<std::uint64_t> buffer_;
};

using spill_files = std::vector<std::unique_ptr<spill_file>>;

/// A private directory under tmp_dir for one build's spill files, locked while it lives so
/// that no other build reclaims it (temp_files.hpp).
class spill_directory {
 public:
  explicit spill_directory(const std::string& parent);
  // The directory is removed by directory_, after its files (members of the owner).
  spill_directory(const spill_directory&) = delete;
  spill_directory& operator=(const spill_directory&) = delete;

  /// A new file named after its kind and a serial number.
  std::unique_ptr<spill_file> create(const std::string& kind, std::uint64_t buffer_bytes);

 private:
  std::string parent_;
  unique_fd parent_fd_;
  locked_temp directory_;
  std::string path_;
  std::uint64_t files_ = 0;
};

}  // namespace ribbon::detail
