// The device pipeline's solve stage (pipeline.inl): a tile of lanes per shard runs
// common/'s tile solver, as a CUDA kernel with bands in shared memory, or on TBB threads with
// host tiles.
#pragma once

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <cstdint>

#if !defined(RIBBON_GPU_ON_TBB)
#include "ribbon/cuda/detail/tile.cuh"
#endif

#include "pipeline_backend.inl"
#include "ribbon/config.hpp"
#include "ribbon/detail/tile.hpp"
#include "ribbon/detail/tile_solver.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"

namespace ribbon::cuda {
inline namespace RIBBON_GPU_BACKEND {
namespace {

/// Lanes of the tile that solves a shard (tile_solver.hpp): eight, so that a warp solves four
/// shards at once; the TBB build runs the same tiles (see bench/RESULTS.md, "GPU model").
constexpr unsigned solve_tile_lanes = 8;

/// A tile per shard: eliminate (bumping by thresholds and by the shard-head rule), then
/// back-substitute into the shard's own solution blocks. The op covers the shard range
/// [range_first, ...): offsets and bumped counts are indexed from range_first, the section
/// windows start at its first threshold word and block. Shards [batch_first, ...) use the
/// batch's column arrays; `band` is the tile's own band memory (tile_band::bytes()).
template <unsigned Width, class Result, class Record>
struct solve_shard_op {
  using band = ribbon::detail::tile_band<Width, Result>;

  filter_params p;
  layer_geometry g;
  std::uint64_t range_first;
  std::uint64_t batch_first;
  Record* hashes;  // sorted; the shard's bumped keys end up at the front of its range
  const std::uint64_t* offsets;
  ribbon::detail::word_t<Width>* coeffs;
  Result* results;
  std::uint64_t columns;
  std::uint64_t* thresholds;
  std::uint64_t threshold_origin;
  ribbon::detail::word_t<Width>* solution;
  std::uint64_t block_origin;
  std::uint64_t* bumped_counts;
  int* failed;

  template <class Tile>
  RIBBON_HD void operator()(const Tile& tile, std::uint64_t shard, void* band_memory) const {
    const std::uint64_t slot = shard - batch_first;
    const ribbon::detail::tile_workspace<Width, Result> ws{
        band::in(band_memory, p.bucket_size), coeffs + slot * columns, results + slot * columns};
    const std::uint64_t local = shard - range_first;
    const std::uint64_t begin = offsets[local];
    const ribbon::detail::shard_outcome outcome =
        ribbon::detail::solve_shard_with_tile<Width, Result, Record>(
            tile, p, g, shard, hashes + begin, offsets[local + 1] - begin, ws, thresholds,
            threshold_origin, solution, block_origin);
    if (!outcome.solved) {
      *failed = 1;  // every writer writes 1: no atomic needed
      return;
    }
    bumped_counts[local] = outcome.bumped;
  }
};

#if defined(RIBBON_GPU_ON_TBB)
/// Solves shards [first, end) on TBB threads, each shard by a host tile whose lanes run in
/// lockstep, with its band in `bands` (a band per shard of the batch).
template <class Op>
void solve_shards(const Op& op, std::uint64_t first, std::uint64_t end, unsigned char* bands,
                  std::uint64_t band_bytes) {
  thrust::for_each(exec(), thrust::counting_iterator<std::uint64_t>(first),
                   thrust::counting_iterator<std::uint64_t>(end), [=](std::uint64_t shard) {
                     const ribbon::detail::host_tile<solve_tile_lanes> tile;
                     op(tile, shard, bands + (shard - first) * band_bytes);
                   });
}
#else
/// Each tile of a block solves shards, a grid's worth of tiles apart, with its band in
/// shared memory, or in `global_bands` (a band per tile of the grid) when a band is too large
/// for shared memory.
template <class Op>
__global__ void solve_shards_kernel(Op op, std::uint64_t first, std::uint64_t end,
                                    std::uint64_t band_bytes, unsigned char* global_bands) {
  extern __shared__ __align__(16) unsigned char shared_bands[];
  namespace cg = cooperative_groups;
  const auto tile = cg::tiled_partition<solve_tile_lanes>(cg::this_thread_block());
  const unsigned tiles_per_block = blockDim.x / solve_tile_lanes;
  const unsigned tile_in_block = threadIdx.x / solve_tile_lanes;
  const std::uint64_t tile_in_grid = std::uint64_t{blockIdx.x} * tiles_per_block + tile_in_block;
  unsigned char* band = global_bands != nullptr ? global_bands + tile_in_grid * band_bytes
                                                : shared_bands + tile_in_block * band_bytes;
  const ribbon::cuda::detail::device_tile<solve_tile_lanes> lanes(tile);
  const std::uint64_t tiles_in_grid = std::uint64_t{gridDim.x} * tiles_per_block;
  for (std::uint64_t shard = first + tile_in_grid; shard < end; shard += tiles_in_grid) {
    op(lanes, shard, band);
  }
}

/// Solves shards [first, end) with as many resident tiles as the device holds (or as there
/// are shards). `bands` is unused: bands live in shared memory (or in a device allocation
/// when one is larger than a block may have).
template <class Op>
void solve_shards(const Op& op, std::uint64_t first, std::uint64_t end, unsigned char*,
                  std::uint64_t band_bytes) {
  constexpr unsigned max_tiles_per_block = 8;  // 64 threads of 8-lane tiles
  int device = 0, shared_limit = 0, multiprocessors = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&shared_limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
        "cudaDeviceGetAttribute");
  check(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device),
        "cudaDeviceGetAttribute");
  const bool in_shared = band_bytes <= static_cast<std::uint64_t>(shared_limit);
  const unsigned tiles_per_block =
      in_shared
          ? static_cast<unsigned>(std::clamp<std::uint64_t>(
                static_cast<std::uint64_t>(shared_limit) / 4 / band_bytes, 1, max_tiles_per_block))
          : max_tiles_per_block;
  const unsigned threads = tiles_per_block * solve_tile_lanes;
  const std::size_t shared_bytes = in_shared ? tiles_per_block * band_bytes : 0;
  const auto kernel = solve_shards_kernel<Op>;
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(shared_bytes)),
        "cudaFuncSetAttribute");
  int blocks_per_multiprocessor = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_multiprocessor, kernel,
                                                      static_cast<int>(threads), shared_bytes),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  const std::uint64_t wanted = ribbon::detail::divide_round_up(end - first, tiles_per_block);
  const std::uint64_t resident =
      std::uint64_t{static_cast<unsigned>(std::max(blocks_per_multiprocessor, 1))} *
      static_cast<unsigned>(multiprocessors);
  const auto blocks = static_cast<unsigned>(std::min(wanted, resident));
  device_vector<unsigned char> global_bands(
      in_shared ? 0 : std::uint64_t{blocks} * tiles_per_block * band_bytes);
  kernel<<<blocks, threads, shared_bytes, cudaStreamPerThread>>>(
      op, first, end, band_bytes, in_shared ? nullptr : raw(global_bands));
  synchronize();
}
#endif

}  // namespace
}  // namespace RIBBON_GPU_BACKEND
}  // namespace ribbon::cuda
