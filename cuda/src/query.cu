#include "ribbon/cuda/query.cuh"

namespace ribbon::cuda {
namespace {

__global__ void contains_kernel(filter_ref filter, const std::uint64_t* keys, std::uint64_t count,
                                bool* out) {
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    out[i] = filter.contains(keys[i]);
  }
}

__global__ void lookup_kernel(filter_ref filter, const std::uint64_t* keys, std::uint64_t count,
                              std::uint32_t* out) {
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    out[i] = filter.lookup_hash(filter.key_hash(keys[i]));
  }
}

/// A grid-stride launch shape: 256 threads a block, at most 16 blocks a multiprocessor's worth.
unsigned grid_blocks(std::uint64_t count, unsigned threads) {
  const std::uint64_t wanted = (count + threads - 1) / threads;
  return static_cast<unsigned>(wanted < 65535 * 16 ? wanted : 65535 * 16);
}

}  // namespace

cudaError_t lookup(const filter_ref& filter, const std::uint64_t* keys, std::uint64_t count,
                   std::uint32_t* out, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  constexpr unsigned threads = 256;
  lookup_kernel<<<grid_blocks(count, threads), threads, 0, stream>>>(filter, keys, count, out);
  return cudaGetLastError();
}

cudaError_t contains(const filter_ref& filter, const std::uint64_t* keys, std::uint64_t count,
                     bool* out, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  constexpr unsigned threads = 256;
  contains_kernel<<<grid_blocks(count, threads), threads, 0, stream>>>(filter, keys, count, out);
  return cudaGetLastError();
}

}  // namespace ribbon::cuda
