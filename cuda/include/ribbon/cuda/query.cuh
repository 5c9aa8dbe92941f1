/// @file query.cuh
/// Batched GPU queries over a filter image already copied to device memory.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ribbon/filter_ref.hpp"

namespace ribbon::cuda {

/// out[i] = filter.contains(keys[i]) for integer keys resident on the device. `filter` must
/// point into device memory (a copy of the file image; see ribbon::format::parse_image).
/// Asynchronous on `stream`; returns the launch error, if any.
cudaError_t contains(const filter_ref& filter, const std::uint64_t* keys, std::uint64_t count,
                     bool* out, cudaStream_t stream = 0);

/// out[i] = the value a retrieval structure stores for integer keys[i] (arbitrary for keys not
/// in its set), for keys and answers resident on the device; asynchronous on `stream`.
cudaError_t lookup(const filter_ref& filter, const std::uint64_t* keys, std::uint64_t count,
                   std::uint32_t* out, cudaStream_t stream = 0);

}  // namespace ribbon::cuda
