/// @file device_filter.cuh
/// A filter in device memory: the owning type for batched GPU queries, and the trivially
/// copyable view (ribbon::filter_ref) that user kernels query directly.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ribbon/cuda/query.cuh"
#include "ribbon/filter.hpp"
#include "ribbon/filter_ref.hpp"

namespace ribbon::cuda {

/// A device copy of a filter's file image (the one format: CPU- and GPU-built files alike).
///
/// Query it in bulk with contains(), or pass ref() by value to your own kernels and call
/// ref.contains(key) there (integer keys: ribbon::filter_ref::contains is host+device).
class device_filter {
 public:
  /// Copies `host`'s file image to the device (synchronously). Throws ribbon::error on a
  /// CUDA error.
  explicit device_filter(const ribbon::filter& host);
  /// Assembles a filter from layers whose sections are in device memory (what a device
  /// build holds at its end; see build_device_filter()): each section is copied, device to
  /// device on `stream`, to its place in one image laid out as the file. The header and
  /// descriptors of that image are left zero: the filter is queried through ref(), never
  /// read as a file. Returns when the copies are done; throws ribbon::error on a CUDA error.
  explicit device_filter(const format::filter_image& device_layers, cudaStream_t stream = 0);
  ~device_filter();
  device_filter(device_filter&& other) noexcept;
  device_filter& operator=(device_filter&& other) noexcept;
  device_filter(const device_filter&) = delete;
  device_filter& operator=(const device_filter&) = delete;

  /// The view for device code: every pointer in it points into device memory.
  const filter_ref& ref() const { return ref_; }
  /// Bytes of device memory held.
  std::uint64_t size_bytes() const { return bytes_; }

  /// out[i] = contains(keys[i]) for integer keys and answers in device memory; asynchronous
  /// on `stream`. `mapping`: a tile or a thread per key (see ribbon::cuda::key_mapping).
  /// Throws ribbon::error if the launch fails.
  void contains(const std::uint64_t* device_keys, std::uint64_t count, bool* device_out,
                cudaStream_t stream = 0, key_mapping mapping = default_key_mapping) const;

  /// Retrieval: out[i] = the value stored for integer keys[i], keys and values in device
  /// memory; asynchronous on `stream`.
  void lookup(const std::uint64_t* device_keys, std::uint64_t count, std::uint32_t* device_out,
              cudaStream_t stream = 0, key_mapping mapping = default_key_mapping) const;

  /// The same for keys and answers in host memory: chunks of `chunk_keys` are staged into
  /// pinned buffers by several host threads and go through three streams, so the host's
  /// staging of one chunk overlaps the copy in, kernel and copy out of the others. Returns
  /// when every answer is in `host_out`.
  void contains_host(const std::uint64_t* host_keys, std::uint64_t count, bool* host_out,
                     std::uint64_t chunk_keys = std::uint64_t{1} << 22,
                     key_mapping mapping = default_key_mapping) const;

 private:
  void release() noexcept;

  unsigned char* image_ = nullptr;
  std::uint64_t bytes_ = 0;
  filter_ref ref_{};
};

}  // namespace ribbon::cuda
