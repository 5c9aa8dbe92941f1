/// @file device_filter_tbb.hpp
/// ribbon::cuda::device_filter on Thrust's TBB backend (RIBBON_GPU_ON_TBB; included by
/// builder.hpp there), where "device" memory is host memory: the same construction from a
/// device build's layers and the same batched queries as device_filter.cuh, run by TBB tasks,
/// so that machines without a GPU test what build_device_filter() hands over.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "ribbon/filter_ref.hpp"
#include "ribbon/format.hpp"

namespace ribbon::cuda {
inline namespace tbb_backend {

/// A filter image in "device" memory (host memory on this backend), queried in bulk.
class device_filter {
 public:
  /// Assembles a filter from layers whose sections are in device memory (what a device
  /// build holds at its end): each section is copied to its place in one image laid out as
  /// the file. The header and descriptors of that image are left zero: the filter is
  /// queried through ref(), never read as a file.
  explicit device_filter(const format::filter_image& device_layers);

  /// The view for device code: every pointer in it points into the filter's image.
  const filter_ref& ref() const { return ref_; }
  /// Bytes of memory held (the file's size).
  std::uint64_t size_bytes() const { return bytes_; }

  /// out[i] = contains(keys[i]) for integer keys.
  void contains(const std::uint64_t* keys, std::uint64_t count, bool* out) const;
  /// Retrieval: out[i] = the value stored for integer keys[i].
  void lookup(const std::uint64_t* keys, std::uint64_t count, std::uint32_t* out) const;

 private:
  struct free_deleter {
    void operator()(unsigned char* p) const { std::free(p); }
  };
  std::unique_ptr<unsigned char, free_deleter> image_;
  std::uint64_t bytes_ = 0;
  filter_ref ref_{};
};

}  // namespace tbb_backend
}  // namespace ribbon::cuda
