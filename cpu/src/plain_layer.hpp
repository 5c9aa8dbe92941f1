// The plain last layer of the oneTBB layer builder: one try over the few keys left (at most
// 2048), rehashed with the try's salt, sorted, and solved as a layer of one shard
// (solve_layer) into a tight plain Ribbon; the layer loop (detail/layer_loop.hpp) retries with a
// new salt and one block more when a try fails. The members defined here are declared, with their
// contracts, in layered_builder_class.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "layered_builder_class.hpp"

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
  // One shard (a plain layer has no bumping): the whole layer is its group.
  const std::vector<std::uint64_t> offsets{0, n};
  return solve_layer(step.index, n, hashes.data(), offsets, true, layer, buffers);
}

}  // namespace ribbon::detail
