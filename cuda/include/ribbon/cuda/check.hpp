/// @file check.hpp
/// CUDA status checks for the library and for callers that manage device memory themselves
/// (the `ribbon` command): no CUDA error is swallowed.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "ribbon/error.hpp"

namespace ribbon::cuda {

/// Throws ribbon::error naming the failed call and CUDA's message.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(status));
  }
}

}  // namespace ribbon::cuda
