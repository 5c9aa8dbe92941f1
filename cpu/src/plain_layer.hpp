// The plain last layer of the oneTBB layer builder: one try over the few keys left (at most
// 2048), rehashed with the try's salt, sorted, and solved as one shard (solve_range) into
// a tight plain Ribbon; the layer loop (detail/layer_loop.hpp) retries with a new salt and
// one block more when a try fails.
// The members defined here are declared, with their contracts, in layered_builder_class.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "layered_builder_class.hpp"
#include "shard_range_solve.hpp"

namespace ribbon::detail {

template <unsigned Width, class Result, class Record>
inline bool layered_builder<Width, Result, Record>::plain_layer_try(
    const layer_step& step, const Record* previous, format::layer_image& layer,
    std::vector<aligned_bytes>& buffers) {
  const std::uint64_t n = layer.input_keys;
  std::vector<Record> hashes(previous, previous + n);
  if (step.remixes()) {
    for (Record& r : hashes) r = with_hash(r, remix(record_hash(r), step.salt));
  }
  std::sort(hashes.begin(), hashes.end(), record_less{});
  const layer_geometry& g = layer.geometry;
  start_layer(step.index, 1);
  aligned_bytes thresholds = allocate_aligned(g.threshold_words(p_.bucket_size) * 8);
  aligned_bytes solution = allocate_aligned(g.solution_bytes(p_.width, p_.result_bits));
  const std::vector<std::uint64_t> offsets{0, n};
  std::vector<std::uint64_t> bumped_counts;
  if (!solve_range(g, 0, 1, hashes.data(), offsets, true,
                   {reinterpret_cast<std::uint64_t*>(thresholds.get()), solution.get()},
                   bumped_counts)) {
    return false;
  }
  layer.thresholds = thresholds.get();
  layer.solution = solution.get();
  buffers.push_back(std::move(thresholds));
  buffers.push_back(std::move(solution));
  return true;
}

}  // namespace ribbon::detail
