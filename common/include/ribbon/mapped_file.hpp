/// @file mapped_file.hpp
/// A filter file opened for reading: mapped read-only (or read into memory) and validated,
/// queryable in place through ref(). Needs only common/: no oneTBB, no CUDA (the `reader`
/// component of the CMake package: link ribbon::common).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "ribbon/detail/aligned_memory.hpp"
#include "ribbon/filter_ref.hpp"
#include "ribbon/format.hpp"

namespace ribbon {

/// The bytes of a file, mapped read-only or read into 64-byte aligned memory. Move-only.
class file_bytes {
 public:
  /// Opens `path`, which must be a regular file (a FIFO or device is refused at once, without
  /// waiting for a writer), and maps it (`use_mmap`) or reads it. Throws ribbon::error naming
  /// the file and the cause.
  static file_bytes open(const std::string& path, bool use_mmap = true);

  const unsigned char* data() const { return data_; }
  std::uint64_t size() const { return size_; }

 private:
  /// Unmaps the mapping it holds.
  struct unmapper {
    std::uint64_t bytes;
    void operator()(unsigned char* p) const;
  };

  std::unique_ptr<unsigned char, unmapper> mapping_;
  aligned_bytes buffer_;  // what was read, where not mapped
  const unsigned char* data_ = nullptr;
  std::uint64_t size_ = 0;
};

/// A filter file opened in place: its bytes and the validated view of them.
///
///     ribbon::mapped_file f = ribbon::mapped_file::open("ids.ribbon");
///     bool maybe = f.ref().contains(std::uint64_t{42});
///
/// The ref() answers like ribbon::filter's scalar queries, but does not check the key kind or
/// the variant: contains() on a retrieval file or byte-string keys on an integer file give
/// meaningless answers (check params().keys and params().variant first).
class mapped_file {
 public:
  /// Opens and validates `path` (every checksum, with `verify_checksums`: reads the whole
  /// file). Throws ribbon::error for a missing, unreadable, truncated, corrupt or unknown file.
  static mapped_file open(const std::string& path, bool verify_checksums = true,
                          bool use_mmap = true);

  /// The query view (points into the file's bytes: valid while this object lives).
  const filter_ref& ref() const { return image_.ref; }
  const filter_params& params() const { return image_.ref.params; }
  /// The header and the layer descriptors as stored.
  const format::parsed_image& image() const { return image_; }
  std::uint64_t size_bytes() const { return bytes_.size(); }

 private:
  file_bytes bytes_;
  format::parsed_image image_;
};

namespace detail {
/// "a directory", "a FIFO", "a character device"... for the file type bits of `mode`.
const char* file_type_name(mode_t mode);
}  // namespace detail

}  // namespace ribbon
