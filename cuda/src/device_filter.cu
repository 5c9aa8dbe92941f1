#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "ribbon/cuda/check.hpp"
#include "ribbon/cuda/device_filter.cuh"
#include "ribbon/cuda/query.cuh"
#include "ribbon/error.hpp"
#include "ribbon/format.hpp"

namespace ribbon::cuda {

device_filter::device_filter(const ribbon::filter& host) {
  if (host.is_set()) {
    throw error(
        "the GPU queries take filters of keys: a filter set (format version 6) is queried on "
        "the CPU (filter::contains_in)");
  }
  // The image is laid out for reading in place: parse a 64-byte aligned host copy (the
  // reader insists on the alignment), copy it to the device and move the section pointers.
  const std::vector<unsigned char> bytes = host.serialize();
  bytes_ = bytes.size();
  const std::uint64_t rounded = (bytes_ + 63) / 64 * 64;
  std::unique_ptr<unsigned char, decltype(&std::free)> aligned(
      static_cast<unsigned char*>(std::aligned_alloc(64, std::max<std::uint64_t>(rounded, 64))),
      &std::free);
  if (!aligned) throw std::bad_alloc();
  std::memcpy(aligned.get(), bytes.data(), bytes_);
  const format::parsed_image parsed =
      format::parse_image(aligned.get(), bytes_, false, "filter image");
  check(cudaMalloc(&image_, std::max<std::uint64_t>(bytes_, 1)), "cudaMalloc (filter image)");
  try {
    check(cudaMemcpy(image_, aligned.get(), bytes_, cudaMemcpyHostToDevice),
          "cudaMemcpy (filter image)");
    ref_ = format::relocate(parsed.ref, aligned.get(), image_);
  } catch (...) {
    release();
    throw;
  }
}

device_filter::device_filter(const format::filter_image& device_layers, cudaStream_t stream)
    : bytes_(format::image_bytes(device_layers)) {
  check(cudaMalloc(&image_, std::max<std::uint64_t>(bytes_, 1)), "cudaMalloc (filter image)");
  try {
    check(cudaMemsetAsync(image_, 0, bytes_, stream), "cudaMemsetAsync (filter image)");
    ref_ = format::make_ref_at(device_layers, image_);
    const filter_params& p = device_layers.params;
    for (std::size_t l = 0; l < device_layers.layers.size(); ++l) {
      const format::layer_image& layer = device_layers.layers[l];
      const layer_ref& placed = ref_.layers[l];
      if (placed.thresholds != nullptr) {
        check(cudaMemcpyAsync(const_cast<std::uint64_t*>(placed.thresholds), layer.thresholds,
                              layer.geometry.threshold_words(p.bucket_size) * 8,
                              cudaMemcpyDeviceToDevice, stream),
              "cudaMemcpyAsync (thresholds)");
      }
      check(cudaMemcpyAsync(const_cast<void*>(placed.solution), layer.solution,
                            layer.geometry.solution_bytes(p.width, p.result_bits),
                            cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpyAsync (solution)");
    }
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (filter image)");
  } catch (...) {
    release();
    throw;
  }
}

device_filter::~device_filter() {
  release();
}

device_filter::device_filter(device_filter&& other) noexcept
    : image_(std::exchange(other.image_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      ref_(other.ref_) {}

device_filter& device_filter::operator=(device_filter&& other) noexcept {
  if (this != &other) {
    release();
    image_ = std::exchange(other.image_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    ref_ = other.ref_;
  }
  return *this;
}

void device_filter::release() noexcept {
  if (image_ != nullptr) cudaFree(image_);  // nothing to report from a destructor
  image_ = nullptr;
}

void device_filter::contains(const std::uint64_t* device_keys, std::uint64_t count,
                             bool* device_out, cudaStream_t stream, key_mapping mapping) const {
  check(cuda::contains(ref_, device_keys, count, device_out, stream, mapping),
        "contains kernel launch");
}

namespace {

/// memcpy on several host threads: one thread copies pageable memory into pinned memory at
/// about 10 GB/s, a fifth of what PCIe Gen5 x16 moves (bench/RESULTS.md, the model).
void parallel_copy(void* to, const void* from, std::uint64_t bytes) {
  constexpr std::uint64_t grain = std::uint64_t{1} << 20;
  if (bytes <= grain) {
    std::memcpy(to, from, bytes);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, bytes, grain),
                    [&](const tbb::blocked_range<std::uint64_t>& r) {
                      std::memcpy(static_cast<unsigned char*>(to) + r.begin(),
                                  static_cast<const unsigned char*>(from) + r.begin(), r.size());
                    });
}

/// Pinned host and device buffers of one stream's chunk.
struct staging {
  cudaStream_t stream = nullptr;
  std::uint64_t* pinned_keys = nullptr;
  bool* pinned_out = nullptr;
  std::uint64_t* device_keys = nullptr;
  bool* device_out = nullptr;
  std::uint64_t first = 0, count = 0;  // the chunk in flight

  explicit staging(std::uint64_t chunk) {
    try {
      check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
      check(cudaMallocHost(&pinned_keys, chunk * sizeof(std::uint64_t)), "cudaMallocHost");
      check(cudaMallocHost(&pinned_out, chunk), "cudaMallocHost");
      check(cudaMalloc(&device_keys, chunk * sizeof(std::uint64_t)), "cudaMalloc");
      check(cudaMalloc(&device_out, chunk), "cudaMalloc");
    } catch (...) {
      release();
      throw;
    }
  }
  ~staging() { release(); }
  void release() noexcept {  // frees whatever was allocated (cudaFree(nullptr) is a no-op)
    if (stream) cudaStreamSynchronize(stream);
    cudaFree(device_out);
    cudaFree(device_keys);
    cudaFreeHost(pinned_out);
    cudaFreeHost(pinned_keys);
    if (stream) cudaStreamDestroy(stream);
    stream = nullptr;
    pinned_keys = device_keys = nullptr;
    pinned_out = device_out = nullptr;
  }
  staging(const staging&) = delete;
  staging& operator=(const staging&) = delete;

  /// Waits for the chunk in flight and hands its answers over.
  void finish(bool* host_out) {
    if (count == 0) return;
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    parallel_copy(host_out + first, pinned_out, count);
    count = 0;
  }
};

}  // namespace

void device_filter::lookup(const std::uint64_t* device_keys, std::uint64_t count,
                           std::uint32_t* device_out, cudaStream_t stream,
                           key_mapping mapping) const {
  check(cuda::lookup(ref_, device_keys, count, device_out, stream, mapping),
        "lookup kernel launch");
}

void device_filter::contains_host(const std::uint64_t* host_keys, std::uint64_t count,
                                  bool* host_out, std::uint64_t chunk_keys,
                                  key_mapping mapping) const {
  if (count == 0) return;
  const std::uint64_t chunk = std::max<std::uint64_t>(1, std::min(chunk_keys, count));
  // Three chunks in flight: while the GPU copies in one and copies out another, the host
  // threads stage the third (PCIe moves both directions at once).
  staging lanes[3] = {staging(chunk), staging(chunk), staging(chunk)};
  constexpr std::uint64_t num_lanes = sizeof(lanes) / sizeof(lanes[0]);
  for (std::uint64_t first = 0, i = 0; first < count; first += chunk, ++i) {
    staging& s = lanes[i % num_lanes];
    s.finish(host_out);  // the chunk this lane had num_lanes rounds ago
    const std::uint64_t n = std::min(chunk, count - first);
    parallel_copy(s.pinned_keys, host_keys + first, n * sizeof(std::uint64_t));
    check(cudaMemcpyAsync(s.device_keys, s.pinned_keys, n * sizeof(std::uint64_t),
                          cudaMemcpyHostToDevice, s.stream),
          "cudaMemcpyAsync (keys)");
    contains(s.device_keys, n, s.device_out, s.stream, mapping);
    check(cudaMemcpyAsync(s.pinned_out, s.device_out, n, cudaMemcpyDeviceToHost, s.stream),
          "cudaMemcpyAsync (answers)");
    s.first = first;
    s.count = n;
  }
  for (staging& s : lanes) s.finish(host_out);
}

}  // namespace ribbon::cuda
