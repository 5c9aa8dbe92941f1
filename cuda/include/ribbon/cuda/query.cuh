/// @file query.cuh
/// Batched GPU queries over a filter image already copied to device memory.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ribbon/filter_ref.hpp"

namespace ribbon::cuda {

/// How the query kernels map keys to threads, for filters whose r is 8 or 16 with r words in
/// every block and no layer-0 salt (the common filters; the others take a thread per key
/// through filter_ref whatever the mapping). Both read a row's two blocks in 16-byte loads.
enum class key_mapping {
  /// A tile of r * w / 128 lanes per key (4 at w = 64, r = 8), as cuCollections' Bloom
  /// filter: each lane loads 16 bytes of the row's block and 16 of the next, and the lanes OR
  /// their result bits together. A warp's load then touches 8 lines instead of 32.
  tile_per_key,
  /// One thread per key loads both blocks whole (2r/k loads of 16 bytes, k words each).
  thread_per_key,
};

/// The mapping the performance model in bench/RESULTS.md predicts faster: both move the same
/// bytes from HBM, the tile needs a quarter of the L1 wavefronts (w = 64, r = 8).
inline constexpr key_mapping default_key_mapping = key_mapping::tile_per_key;

/// out[i] = filter.contains(keys[i]) for integer keys resident on the device (a filter, or a
/// retrieval structure with check bits: whether the key's check bits match). `filter` must
/// point into device memory (a copy of the file image; see ribbon::format::parse_image).
/// Asynchronous on `stream`; returns the first CUDA error of the launch, if any.
cudaError_t contains(const filter_ref& filter, const std::uint64_t* keys, std::uint64_t count,
                     bool* out, cudaStream_t stream = 0, key_mapping mapping = default_key_mapping);

/// out[i] = the value a retrieval structure stores for integer keys[i] (arbitrary for keys not
/// in its set; its value bits, under any check bits), for keys and answers resident on the
/// device; asynchronous on `stream`.
cudaError_t lookup(const filter_ref& filter, const std::uint64_t* keys, std::uint64_t count,
                   std::uint32_t* out, cudaStream_t stream = 0,
                   key_mapping mapping = default_key_mapping);

}  // namespace ribbon::cuda
