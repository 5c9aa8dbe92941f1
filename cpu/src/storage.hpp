// Memory behind a filter: buffers the builder filled, a heap copy of a file, or a mapping.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "ribbon/filter.hpp"

namespace ribbon {

struct free_deleter {
  void operator()(void* p) const { std::free(p); }
};
/// 64-byte aligned, uninitialized bytes.
using aligned_bytes = std::unique_ptr<unsigned char[], free_deleter>;

inline aligned_bytes allocate_aligned(std::uint64_t bytes) {
  const std::uint64_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (p == nullptr) throw std::bad_alloc();
  return aligned_bytes(static_cast<unsigned char*>(p));
}

struct filter::storage {
  std::vector<aligned_bytes> buffers;
  void* mapping = nullptr;
  std::uint64_t mapping_bytes = 0;
  ~storage();
};

/// Lets the builder assemble a filter from the layers it built.
struct builder_access {
  static filter make(const filter_params& params, std::uint64_t key_count,
                     std::vector<format::layer_image> layers, std::vector<aligned_bytes> buffers);
};

}  // namespace ribbon
