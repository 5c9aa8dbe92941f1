// Memory of the device build pipeline (pipeline.inl), for both device systems:
//  - device_vector: every device buffer of a build, from a stream-ordered pool;
//  - exec(): the execution policy of the pipeline's algorithms, whose temporary storage comes
//    from the same pool;
//  - staging: host <-> device copies through pinned buffers.
// On Thrust's TBB backend "device" memory is host memory: plain vectors and memcpy.
#pragma once

#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ribbon/cuda/builder.hpp"

#if !defined(RIBBON_GPU_ON_TBB)
#include <cuda_runtime.h>
#include <thrust/mr/allocator.h>
#include <thrust/mr/memory_resource.h>

#include <algorithm>
#include <mutex>

#include "ribbon/cuda/check.hpp"
#endif

namespace ribbon::cuda {
inline namespace RIBBON_GPU_BACKEND {
namespace pipeline {

#if defined(RIBBON_GPU_ON_TBB)

template <class T>
using device_vector = thrust::device_vector<T>;

/// The policy of the pipeline's algorithms: TBB tasks on the calling thread's arena.
inline auto exec() {
  return thrust::device;
}

/// Returns the pool's idle memory to the system (nothing to do: the allocator is malloc's).
inline void release_idle_memory() noexcept {}

/// Host <-> "device" copies: both are host memory.
class staging {
 public:
  void to_device(void* device, const void* host, std::size_t bytes) {
    if (bytes) std::memcpy(device, host, bytes);
  }
  void to_host(void* host, const void* device, std::size_t bytes) {
    if (bytes) std::memcpy(host, device, bytes);
  }
};

#else

// Every allocation and free of a build is ordered on the calling thread's default stream
// (builder.cu is compiled with --default-stream per-thread), so that freeing never waits
// for the device: cudaFree synchronises the whole device and would serialise the two
// streams of device_range_solver.
inline cudaStream_t build_stream() {
  return cudaStreamPerThread;
}

/// The pipeline's memory pool on the current device, created on first use. Its release
/// threshold is unlimited: memory freed in a layer stays in the pool for the next layer (or
/// the next range) until release_idle_memory(). A pool of its own, so that the caller's
/// default pool keeps its settings.
inline cudaMemPool_t device_pool() {
  static std::mutex mutex;
  static std::vector<cudaMemPool_t> pools;  // by device; live as long as the process
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  const std::lock_guard<std::mutex> lock(mutex);
  if (pools.size() <= static_cast<std::size_t>(device)) pools.resize(device + 1, nullptr);
  if (pools[device] == nullptr) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool = nullptr;
    check(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate");
    std::uint64_t keep_everything = ~std::uint64_t{0};
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything),
          "cudaMemPoolSetAttribute (release threshold)");
    pools[device] = pool;
  }
  return pools[device];
}

/// Stream-ordered allocation from device_pool() on build_stream().
inline void* pool_allocate(std::size_t bytes) {
  void* p = nullptr;
  if (bytes == 0) return p;
  check(cudaMallocFromPoolAsync(&p, bytes, device_pool(), build_stream()),
        "cudaMallocFromPoolAsync");
  return p;
}

inline void pool_free(void* p) noexcept {
  if (p != nullptr) cudaFreeAsync(p, build_stream());  // nothing to report from a free
}

/// Returns the pool's idle memory to the device once a build is done (the caller synchronised).
/// Called from destructors: a failure leaves the memory in the pool, which is no error.
inline void release_idle_memory() noexcept {
  try {
    cudaMemPoolTrimTo(device_pool(), 0);
  } catch (...) {
  }
}

/// The memory resource behind every device_vector of the pipeline.
class pool_resource final : public thrust::mr::memory_resource<thrust::device_ptr<void>> {
 public:
  pointer do_allocate(std::size_t bytes, std::size_t) override {
    return pointer(pool_allocate(bytes));
  }
  void do_deallocate(pointer p, std::size_t, std::size_t) override { pool_free(p.get()); }
};

template <class T>
using device_vector =
    thrust::device_vector<T, thrust::mr::stateless_resource_allocator<T, pool_resource>>;

/// Thrust's temporary storage (sort, select, unique buffers) from the pool.
struct temporary_allocator {
  using value_type = char;
  char* allocate(std::ptrdiff_t bytes) {
    return static_cast<char*>(pool_allocate(static_cast<std::size_t>(bytes)));
  }
  void deallocate(char* p, std::size_t) noexcept { pool_free(p); }
};

/// The policy of the pipeline's algorithms: the build stream, temporary storage from the
/// pool, and no synchronisation after each algorithm (the stage timers synchronise).
inline auto exec() {
  return thrust::cuda::par_nosync(temporary_allocator{}).on(build_stream());
}

/// Host <-> device copies through two pinned buffers: the CPU copies one chunk between
/// pageable memory and a pinned buffer while the copy engine moves the other, at the pinned
/// bandwidth. One staging per thread that copies; allocate it once per build (or solver):
/// pinned allocations are slow and freeing them synchronises the device.
class staging {
 public:
  explicit staging(std::size_t chunk_bytes = std::size_t{8} << 20) : chunk_(chunk_bytes) {
    try {
      for (int b = 0; b < 2; ++b) {
        check(cudaMallocHost(&pinned_[b], chunk_), "cudaMallocHost (staging)");
        check(cudaEventCreateWithFlags(&copied_[b], cudaEventDisableTiming), "cudaEventCreate");
      }
    } catch (...) {
      release();
      throw;
    }
  }
  ~staging() { release(); }
  staging(const staging&) = delete;
  staging& operator=(const staging&) = delete;

  /// Copies `bytes` from host memory to device memory, ordered on build_stream(); returns
  /// when the host memory may be reused.
  void to_device(void* device, const void* host, std::size_t bytes) {
    for (std::size_t done = 0, i = 0; done < bytes; done += chunk_, ++i) {
      const std::size_t b = i % 2, n = std::min(chunk_, bytes - done);
      check(cudaEventSynchronize(copied_[b]), "cudaEventSynchronize (staging)");  // buffer free
      std::memcpy(pinned_[b], static_cast<const unsigned char*>(host) + done, n);
      check(cudaMemcpyAsync(static_cast<unsigned char*>(device) + done, pinned_[b], n,
                            cudaMemcpyHostToDevice, build_stream()),
            "cudaMemcpyAsync (upload)");
      check(cudaEventRecord(copied_[b], build_stream()), "cudaEventRecord (staging)");
    }
  }

  /// Copies `bytes` from device memory (after the work queued on build_stream()) to host
  /// memory; returns when they are there.
  void to_host(void* host, const void* device, std::size_t bytes) {
    auto drain = [&](std::size_t i) {  // chunk i, whose copy was queued, to `host`
      const std::size_t b = i % 2, at = i * chunk_;
      check(cudaEventSynchronize(copied_[b]), "cudaEventSynchronize (staging)");
      std::memcpy(static_cast<unsigned char*>(host) + at, pinned_[b], std::min(chunk_, bytes - at));
    };
    std::size_t chunks = 0;
    for (std::size_t done = 0; done < bytes; done += chunk_, ++chunks) {
      const std::size_t b = chunks % 2, n = std::min(chunk_, bytes - done);
      check(cudaMemcpyAsync(pinned_[b], static_cast<const unsigned char*>(device) + done, n,
                            cudaMemcpyDeviceToHost, build_stream()),
            "cudaMemcpyAsync (download)");
      check(cudaEventRecord(copied_[b], build_stream()), "cudaEventRecord (staging)");
      if (chunks > 0) drain(chunks - 1);  // while this chunk is being copied
    }
    if (chunks > 0) drain(chunks - 1);
  }

 private:
  void release() noexcept {
    for (int b = 0; b < 2; ++b) {
      if (copied_[b] != nullptr) {
        cudaEventSynchronize(copied_[b]);
        cudaEventDestroy(copied_[b]);
      }
      cudaFreeHost(pinned_[b]);  // a no-op for nullptr
      copied_[b] = nullptr;
      pinned_[b] = nullptr;
    }
  }

  std::size_t chunk_;
  void* pinned_[2] = {nullptr, nullptr};
  cudaEvent_t copied_[2] = {nullptr, nullptr};
};

#endif

template <class T, class Alloc>
T* raw(thrust::device_vector<T, Alloc>& v) {
  return thrust::raw_pointer_cast(v.data());
}
template <class T, class Alloc>
const T* raw(const thrust::device_vector<T, Alloc>& v) {
  return thrust::raw_pointer_cast(v.data());
}

/// A device copy of `count` values in host memory, through `stage`.
template <class T>
device_vector<T> upload(staging& stage, const T* host, std::uint64_t count) {
  device_vector<T> copy(count);
  stage.to_device(raw(copy), host, count * sizeof(T));
  return copy;
}

/// The values of `v` in host memory, through `stage`.
template <class T>
std::vector<T> download(staging& stage, const device_vector<T>& v) {
  std::vector<T> copy(v.size());
  stage.to_host(copy.data(), raw(v), v.size() * sizeof(T));
  return copy;
}

}  // namespace pipeline
}  // namespace RIBBON_GPU_BACKEND
}  // namespace ribbon::cuda
