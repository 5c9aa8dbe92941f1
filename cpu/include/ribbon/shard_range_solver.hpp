/// @file shard_range_solver.hpp
/// The hook through which another solver (the GPU builder's) solves the shard ranges of an
/// out-of-core build (bulk_options::range_solver).
#pragma once

#include <cstdint>
#include <vector>

#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"

namespace ribbon {

/// Solves the shard ranges of out-of-core layers elsewhere (the GPU builder provides one).
/// solve() gets the keys of the shards [first_shard, end_shard) of a bumped layer, in any
/// order and possibly repeated; it solves each distinct key once, writes the range's
/// threshold words and solution blocks into windows that start at the range's first word and
/// block (layer_geometry::shard_first_threshold_word and shard_first_block), leaves in `keys`
/// the range's bumped keys and returns the number of distinct keys. The result must be the
/// CPU builder's.
class shard_range_solver {
 public:
  virtual ~shard_range_solver() = default;
  virtual std::uint64_t solve(const filter_params& params, const layer_geometry& layer,
                              std::uint64_t first_shard, std::uint64_t end_shard,
                              std::vector<std::uint64_t>& keys, std::uint64_t* threshold_window,
                              void* solution_window) = 0;
  /// How many ranges may be solved at once, each from its own thread (solve() must then be
  /// thread-safe). The builder keeps one more range's keys in memory while reading it.
  virtual unsigned ranges_in_flight() const { return 1; }
};

}  // namespace ribbon
