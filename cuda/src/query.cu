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

}  // namespace

cudaError_t contains(const filter_ref& filter, const std::uint64_t* keys, std::uint64_t count,
                     bool* out, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  constexpr unsigned threads = 256;
  const std::uint64_t wanted = (count + threads - 1) / threads;
  const unsigned blocks = static_cast<unsigned>(wanted < 65535 * 16 ? wanted : 65535 * 16);
  contains_kernel<<<blocks, threads, 0, stream>>>(filter, keys, count, out);
  return cudaGetLastError();
}

}  // namespace ribbon::cuda
