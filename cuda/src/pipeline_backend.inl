// The pipeline's two device systems (pipeline.inl): CUDA (nvcc, builder.cu) and Thrust's TBB
// backend (g++, builder_tbb.cpp, RIBBON_GPU_ON_TBB). Everything that differs between them
// besides the solve kernel and the radix sort is here: waiting for the device, timing, the
// default workspace.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#if !defined(RIBBON_GPU_ON_TBB)
#include <cuda_runtime.h>

#include "ribbon/cuda/check.hpp"
#endif

#include "device_memory.hpp"
#include "ribbon/cuda/builder.hpp"
#include "ribbon/detail/records.hpp"

namespace ribbon::cuda {
inline namespace RIBBON_GPU_BACKEND {
namespace {

using ribbon::detail::keyed_value;
using ribbon::detail::record_hash;
using ribbon::detail::with_hash;

using clock_type = std::chrono::steady_clock;

using pipeline::device_vector;
using pipeline::exec;
using pipeline::raw;
using pipeline::staging;

#if defined(RIBBON_GPU_ON_TBB)
constexpr bool on_tbb = true;
void synchronize() {}
#else
constexpr bool on_tbb = false;
// builder.cu is compiled with --default-stream per-thread: each host thread's work (Thrust's
// kernels and copies included) goes to its own stream, so that ranges solved from two
// threads overlap on the device. Waiting is for this thread's stream only.
void synchronize() {
  check(cudaGetLastError(), "a kernel launch");
  check(cudaStreamSynchronize(pipeline::build_stream()), "cudaStreamSynchronize");
}
#endif

/// Seconds since `start`, after the device has finished its queued work.
double device_seconds_since(clock_type::time_point start) {
  synchronize();
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

/// Memory for the solve stage's column arrays when the options give none: 64 MiB on CPU
/// threads, a quarter of the device's free memory on a GPU.
std::uint64_t default_workspace_bytes() {
#if defined(RIBBON_GPU_ON_TBB)
  return std::uint64_t{64} << 20;
#else
  std::size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  return free_bytes / 4;
#endif
}

}  // namespace
}  // namespace RIBBON_GPU_BACKEND
}  // namespace ribbon::cuda
