/// @file aligned_memory.hpp
/// 64-byte aligned buffers (2 MiB aligned and advised huge when big), for file images and
/// builders' arrays.
#pragma once

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

namespace ribbon {

struct free_deleter {
  void operator()(void* p) const { std::free(p); }
};
/// 64-byte aligned, uninitialized bytes.
using aligned_bytes = std::unique_ptr<unsigned char[], free_deleter>;

/// Buffers from this size on are backed by transparent huge pages where the kernel allows:
/// fewer TLB misses for random queries, fewer page faults while the builder fills them.
inline constexpr std::uint64_t huge_page_bytes = std::uint64_t{2} << 20;

/// Uninitialized, 64-byte aligned memory (2 MiB aligned and advised huge for big buffers).
inline void* allocate_raw(std::uint64_t bytes) {
  const bool huge = bytes >= huge_page_bytes;
  const std::uint64_t alignment = huge ? huge_page_bytes : 64;
  const std::uint64_t rounded =
      bytes == 0 ? alignment : (bytes + alignment - 1) / alignment * alignment;
  void* p = std::aligned_alloc(alignment, rounded);
  if (p == nullptr) throw std::bad_alloc();
  if (huge) ::madvise(p, rounded, MADV_HUGEPAGE);  // a hint: failure is harmless
  return p;
}

/// Gives the kernel back the pages of [used_bytes, size_bytes) of a buffer from allocate_raw
/// whose tail will not be read again (whole huge pages, so that none is split): resident
/// memory drops at once, the buffer stays valid and is freed as before. A hint: failure is
/// harmless.
inline void release_tail(void* p, std::uint64_t used_bytes, std::uint64_t size_bytes) {
  const auto base = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t first =
      (base + used_bytes + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
  const std::uintptr_t end = (base + size_bytes) / huge_page_bytes * huge_page_bytes;
  if (first < end) ::madvise(reinterpret_cast<void*>(first), end - first, MADV_DONTNEED);
}

inline aligned_bytes allocate_aligned(std::uint64_t bytes) {
  return aligned_bytes(static_cast<unsigned char*>(allocate_raw(bytes)));
}

template <class T>
using aligned_array = std::unique_ptr<T[], free_deleter>;

/// n uninitialized Ts: the pages are first touched by the parallel writers.
template <class T>
aligned_array<T> allocate_array(std::uint64_t n) {
  return aligned_array<T>(static_cast<T*>(allocate_raw(n * sizeof(T))));
}

}  // namespace ribbon
