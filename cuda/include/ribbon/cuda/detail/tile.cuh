/// @file tile.cuh
/// The GPU implementation of the tile interface (ribbon/detail/tile.hpp): a cooperative-groups
/// tile of a thread block, one thread a lane.
#pragma once

#include <cooperative_groups.h>

#include <cstdint>

namespace ribbon::cuda::detail {

/// The value of the calling thread's lane (a device_tile's values<V>).
template <class V>
struct device_lane_value {
  V value;
  __device__ V& operator[](unsigned) { return value; }
  __device__ const V& operator[](unsigned) const { return value; }
};

/// A tile of `Lanes` threads of a block (Lanes a power of two, at most 32).
template <unsigned Lanes>
class device_tile {
 public:
  static constexpr unsigned size = Lanes;
  template <class V>
  using values = device_lane_value<V>;

  __device__ explicit device_tile(cooperative_groups::thread_block_tile<Lanes> tile)
      : tile_(tile) {}

  template <class F>
  __device__ void for_each_lane(F&& f) const {
    f(tile_.thread_rank());
  }
  template <class Predicate>
  __device__ std::uint32_t ballot(Predicate&& predicate) const {
    return tile_.ballot(predicate(tile_.thread_rank()));
  }
  template <class V>
  __device__ V shuffle(const values<V>& v, unsigned from) const {
    if constexpr (sizeof(V) <= 16) {
      return tile_.shfl(v.value, from);
    } else {  // cooperative groups shuffle values below 32 bytes: larger ones a word at a time
      static_assert(sizeof(V) % 4 == 0, "shuffled values are whole 32-bit words");
      std::uint32_t words[sizeof(V) / 4];
      memcpy(words, &v.value, sizeof(V));
      for (auto& word : words) word = tile_.shfl(word, from);
      V out;
      memcpy(&out, words, sizeof(V));
      return out;
    }
  }
  __device__ void sync() const { tile_.sync(); }

 private:
  cooperative_groups::thread_block_tile<Lanes> tile_;
};

}  // namespace ribbon::cuda::detail
