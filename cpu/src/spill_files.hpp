// Stage: spill files. The temporary files of an out-of-core build (hashes partitioned by
// their top bits, solved sections, bumped keys) in a private, locked directory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "ribbon/format.hpp"
#include "temp_files.hpp"

namespace ribbon::detail {

/// A temporary file of records (64-bit hashes, or hashes with values: detail/records.hpp; one
/// kind per file) or raw bytes, appended through a buffer and read back with pread. Removed
/// when destroyed, and by the signal handler if the process is killed.
class spill_file {
 public:
  spill_file(const std::string& path, std::uint64_t buffer_bytes);
  ~spill_file();
  spill_file(const spill_file&) = delete;
  spill_file& operator=(const spill_file&) = delete;

  template <class Record>
  void push(const Record& record) {
    static_assert(std::is_trivially_copyable_v<Record>, "records are written as bytes");
    if (used_ + sizeof(Record) > capacity_) {
      flush();
      if (capacity_ < sizeof(Record)) return write_bytes(&record, sizeof(Record));  // released
    }
    std::memcpy(buffer_.get() + used_, &record, sizeof(Record));
    used_ += sizeof(Record);
  }
  template <class Record>
  void append(const Record* records, std::uint64_t count) {
    for (std::uint64_t i = 0; i < count; ++i) push(records[i]);
  }
  /// Appends bytes directly (no buffering).
  void write_bytes(const void* data, std::uint64_t bytes);
  void flush() {
    write_bytes(buffer_.get(), used_);
    used_ = 0;
  }
  /// Flushes and frees the buffer (no more appends expected; they would still work).
  void release_buffer() {
    flush();
    buffer_.reset();
    capacity_ = 0;
  }
  /// Bytes written so far (after flush()).
  std::uint64_t size() const { return size_; }
  /// Records of type Record appended, buffered ones included.
  template <class Record>
  std::uint64_t records() const {
    return (size_ + used_) / sizeof(Record);
  }

  /// Reads `bytes` at `offset` (which must exist).
  void read(void* data, std::uint64_t bytes, std::uint64_t offset) const;

  /// Passes the file's bytes to sink, in pieces the size of `buffer`; after each piece,
  /// progress(bytes passed so far).
  void stream(std::vector<unsigned char>& buffer, const format::byte_sink& sink,
              const std::function<void(std::uint64_t)>& progress) const;

  /// Calls f(const Record* records, count) for the file's (flushed) records, in pieces the
  /// size of `buffer`.
  template <class Record, class F>
  void for_each_piece(std::vector<Record>& buffer, F&& f) const {
    const std::uint64_t total = size_ / sizeof(Record);
    for (std::uint64_t done = 0; done < total;) {
      const std::uint64_t count = std::min<std::uint64_t>(buffer.size(), total - done);
      read(buffer.data(), count * sizeof(Record), done * sizeof(Record));
      f(static_cast<const Record*>(buffer.data()), count);
      done += count;
    }
  }

 private:
  std::string path_;
  temp_path registration_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::unique_ptr<unsigned char[]> buffer_;
  std::uint64_t used_ = 0, capacity_ = 0;
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
