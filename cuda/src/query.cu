#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#include <algorithm>

#include "ribbon/cuda/query.cuh"
#include "ribbon/detail/wide_rows.hpp"

namespace ribbon::cuda {
namespace {

namespace cg = cooperative_groups;
using detail::layer0_row;

/// Membership queries: what a kernel answers for a key, by the general path or from its
/// layer-0 row. Retrieval structures with check bits answer from their check bits.
struct membership {
  using answer = bool;
  __device__ static bool general(const filter_ref& f, std::uint64_t key) { return f.contains(key); }
  template <class Row>
  __device__ static bool of_row(const filter_ref& f, const Row& row, std::uint32_t result) {
    if (is_retrieval(f.params.variant)) return f.params.check_passes(row.hash, result);
    return row.matches(f.params, result);
  }
  template <class Row>
  __device__ static bool bumped(const filter_ref& f, const Row& row) {
    if (is_retrieval(f.params.variant)) {
      return f.params.check_passes(row.hash, row.lookup_after_layer0(f));
    }
    return row.contains_after_layer0(f);
  }
};

/// Retrieval queries: the stored value (its value bits, under any check bits).
struct retrieval {
  using answer = std::uint32_t;
  __device__ static std::uint32_t general(const filter_ref& f, std::uint64_t key) {
    return f.params.value_of(f.lookup_hash(f.key_hash(key)));
  }
  template <class Row>
  __device__ static std::uint32_t of_row(const filter_ref& f, const Row&, std::uint32_t result) {
    return f.params.value_of(result);
  }
  template <class Row>
  __device__ static std::uint32_t bumped(const filter_ref& f, const Row& row) {
    return f.params.value_of(row.lookup_after_layer0(f));
  }
};

/// Any filter, a thread per key, through filter_ref (r words read one at a time).
template <class Query>
__global__ void general_kernel(filter_ref f, const std::uint64_t* keys, std::uint64_t count,
                               typename Query::answer* out) {
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    out[i] = Query::general(f, keys[i]);
  }
}

/// r = Bits at compile time, a thread per key: all 16-byte loads of both blocks in flight.
template <class Query, unsigned Width, unsigned Bits>
__global__ void thread_per_key_kernel(filter_ref f, const std::uint64_t* keys, std::uint64_t count,
                                      typename Query::answer* out) {
  const detail::layer_plan first(f.params, f.layers[0]);
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const layer0_row<Width, Bits> row(first, f.key_hash(keys[i]));
    out[i] = row.bumped ? Query::bumped(f, row) : Query::of_row(f, row, row.result());
  }
}

/// r = Bits at compile time, a tile per key: lane j loads piece j of both blocks, and the
/// tile ORs the lanes' result bits. Every lane hashes the key (cheaper than a broadcast), so
/// `bumped` is the same on all lanes of a tile and the reduction is reached by all of them.
template <class Query, unsigned Width, unsigned Bits>
__global__ void tile_per_key_kernel(filter_ref f, const std::uint64_t* keys, std::uint64_t count,
                                    typename Query::answer* out) {
  constexpr unsigned lanes = detail::loads_per_block<Width, Bits>;
  const cg::thread_block_tile<lanes> tile = cg::tiled_partition<lanes>(cg::this_thread_block());
  const detail::layer_plan first(f.params, f.layers[0]);
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x / lanes;
  for (std::uint64_t i = (std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) / lanes; i < count;
       i += stride) {
    const layer0_row<Width, Bits> row(first, f.key_hash(keys[i]));
    typename Query::answer answer;
    if (row.bumped) {
      answer = Query::bumped(f, row);
    } else {
      const std::uint32_t result =
          cg::reduce(tile, row.piece_result(tile.thread_rank()), cg::bit_or<std::uint32_t>());
      answer = Query::of_row(f, row, result);
    }
    if (tile.thread_rank() == 0) out[i] = answer;
  }
}

constexpr unsigned threads_per_block = 256;

/// Launches a grid-stride kernel over `threads` threads' worth of work, with at most one
/// wave of blocks: as many as the multiprocessors can hold at once (more blocks would only
/// queue behind them; each thread strides instead).
template <class... Params, class... Args>
cudaError_t launch_one_wave(void (*kernel)(Params...), std::uint64_t threads, cudaStream_t stream,
                            Args... args) {
  int device = 0, multiprocessors = 0, blocks_per_multiprocessor = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status == cudaSuccess) {
    status = cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device);
  }
  if (status == cudaSuccess) {
    status = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_multiprocessor, kernel,
                                                           threads_per_block, 0);
  }
  if (status != cudaSuccess) return status;
  const std::uint64_t wanted = (threads + threads_per_block - 1) / threads_per_block;
  const std::uint64_t wave = std::uint64_t{static_cast<unsigned>(multiprocessors)} *
                             static_cast<unsigned>(std::max(blocks_per_multiprocessor, 1));
  kernel<<<static_cast<unsigned>(std::min(wanted, wave)), threads_per_block, 0, stream>>>(args...);
  return cudaGetLastError();
}

template <class Query, unsigned Width, unsigned Bits>
cudaError_t launch_rows(const filter_ref& f, const std::uint64_t* keys, std::uint64_t count,
                        typename Query::answer* out, cudaStream_t stream, key_mapping mapping) {
  if (mapping == key_mapping::tile_per_key) {
    return launch_one_wave(tile_per_key_kernel<Query, Width, Bits>,
                           count * detail::loads_per_block<Width, Bits>, stream, f, keys, count,
                           out);
  }
  return launch_one_wave(thread_per_key_kernel<Query, Width, Bits>, count, stream, f, keys, count,
                         out);
}

template <class Query, unsigned Width>
cudaError_t launch_width(const filter_ref& f, const std::uint64_t* keys, std::uint64_t count,
                         typename Query::answer* out, cudaStream_t stream, key_mapping mapping) {
  if (detail::has_layer0_rows(f, 8)) {
    return launch_rows<Query, Width, 8>(f, keys, count, out, stream, mapping);
  }
  if (detail::has_layer0_rows(f, 16)) {
    return launch_rows<Query, Width, 16>(f, keys, count, out, stream, mapping);
  }
  return launch_one_wave(general_kernel<Query>, count, stream, f, keys, count, out);
}

template <class Query>
cudaError_t launch(const filter_ref& f, const std::uint64_t* keys, std::uint64_t count,
                   typename Query::answer* out, cudaStream_t stream, key_mapping mapping) {
  if (count == 0) return cudaSuccess;
  switch (f.params.width) {
    case 32: return launch_width<Query, 32>(f, keys, count, out, stream, mapping);
    case 64: return launch_width<Query, 64>(f, keys, count, out, stream, mapping);
    default: return launch_width<Query, 128>(f, keys, count, out, stream, mapping);
  }
}

}  // namespace

cudaError_t lookup(const filter_ref& filter, const std::uint64_t* keys, std::uint64_t count,
                   std::uint32_t* out, cudaStream_t stream, key_mapping mapping) {
  return launch<retrieval>(filter, keys, count, out, stream, mapping);
}

cudaError_t contains(const filter_ref& filter, const std::uint64_t* keys, std::uint64_t count,
                     bool* out, cudaStream_t stream, key_mapping mapping) {
  return launch<membership>(filter, keys, count, out, stream, mapping);
}

}  // namespace ribbon::cuda
