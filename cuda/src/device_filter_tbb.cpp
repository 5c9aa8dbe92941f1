// ribbon::cuda::device_filter on Thrust's TBB backend (see device_filter_tbb.hpp).
#if !defined(RIBBON_GPU_ON_TBB)
#error "device_filter_tbb.cpp is the TBB backend: compile it with RIBBON_GPU_ON_TBB"
#endif
#include "ribbon/cuda/device_filter_tbb.hpp"

#include <thrust/execution_policy.h>
#include <thrust/transform.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "ribbon/config.hpp"

namespace ribbon::cuda {
inline namespace tbb_backend {
namespace {

struct contains_op {
  filter_ref filter;
  RIBBON_HD bool operator()(std::uint64_t key) const { return filter.contains(key); }
};

struct lookup_op {
  filter_ref filter;
  RIBBON_HD std::uint32_t operator()(std::uint64_t key) const {
    return filter.params.value_of(filter.lookup_hash(filter.key_hash(key)));
  }
};

}  // namespace

device_filter::device_filter(const format::filter_image& device_layers)
    : bytes_(format::image_bytes(device_layers)) {
  const std::uint64_t rounded = (bytes_ + 63) / 64 * 64;
  image_.reset(
      static_cast<unsigned char*>(std::aligned_alloc(64, std::max<std::uint64_t>(rounded, 64))));
  if (!image_) throw std::bad_alloc();
  std::memset(image_.get(), 0, bytes_);
  ref_ = format::make_ref_at(device_layers, image_.get());
  const filter_params& p = device_layers.params;
  for (std::size_t l = 0; l < device_layers.layers.size(); ++l) {
    const format::layer_image& layer = device_layers.layers[l];
    const layer_ref& placed = ref_.layers[l];
    if (placed.thresholds != nullptr) {
      std::memcpy(const_cast<std::uint64_t*>(placed.thresholds), layer.thresholds,
                  layer.geometry.threshold_words(p.bucket_size) * 8);
    }
    std::memcpy(const_cast<void*>(placed.solution), layer.solution,
                layer.geometry.solution_bytes(p.width, p.result_bits));
  }
}

void device_filter::contains(const std::uint64_t* keys, std::uint64_t count, bool* out) const {
  thrust::transform(thrust::device, keys, keys + count, out, contains_op{ref_});
}

void device_filter::lookup(const std::uint64_t* keys, std::uint64_t count,
                           std::uint32_t* out) const {
  thrust::transform(thrust::device, keys, keys + count, out, lookup_op{ref_});
}

}  // namespace tbb_backend
}  // namespace ribbon::cuda
