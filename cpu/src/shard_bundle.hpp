// The shard bundle of the oneTBB layer builder: up to interleaved_shards shards solved on one
// thread, their elimination steps interleaved (shard_interleave.hpp: one shard's elimination
// alone is a chain of dependent loads). The one solve of a shard that a shard range
// (solve_range) and build_many's layers 0 (solve_first_layers_together) share; the shards of a
// bundle may belong to different layers, even to different filters.
#pragma once

#include <cstdint>
#include <type_traits>

#include "build_workspace.hpp"
#include "ribbon/detail/shard_solver.hpp"

namespace ribbon::detail {

/// One shard of a bundle: its records (sorted, without repeats; its bumped ones are left at
/// the front) and the windows of its layer's sections that it writes, which begin at the
/// threshold word `threshold_origin` and the solution block `block_origin` of the layer.
template <class Record>
struct bundle_shard {
  const layer_geometry* g;
  std::uint64_t shard;
  Record* records;
  std::uint64_t count;
  section_windows windows;
  std::uint64_t threshold_origin;
  std::uint64_t block_origin;
};

/// Where a bundle's time went, in nanoseconds (added to).
struct bundle_times {
  std::int64_t eliminate_ns = 0;
  std::int64_t back_substitute_ns = 0;
};

/// Solves shards[0, count) (count <= interleaved_shards), shard i in lane i of `ws`: places an
/// eliminator per shard, interleaves their elimination, reads each outcome into outcomes[i],
/// and back-substitutes each solved shard into its windows. A shard's bytes are those it
/// gets solved alone. `times`: where to add the stages' time (none: not timed).
template <unsigned Width, class Result, class Record>
void solve_shard_bundle(const filter_params& p, const bundle_shard<Record>* shards, unsigned count,
                        workspace<Width, Result, Record>& ws, shard_outcome* outcomes,
                        bundle_times* times) {
  using eliminator = shard_eliminator<Width, Result, Record>;
  static_assert(std::is_trivially_destructible_v<eliminator>, "placed without destruction");
  alignas(eliminator) unsigned char storage[interleaved_shards * sizeof(eliminator)];
  auto* eliminators = reinterpret_cast<eliminator*>(storage);
  shard_workspace<Width, Result> lanes[interleaved_shards];
  auto t = times ? clock_type::now() : clock_type::time_point{};
  for (unsigned i = 0; i < count; ++i) {
    const bundle_shard<Record>& s = shards[i];
    lanes[i] = ws.lane(i, max_shard_columns(*s.g, Width), p.bucket_size);
    new (eliminators + i) eliminator(p, *s.g, s.shard, s.records, s.count, lanes[i],
                                     s.windows.thresholds, s.threshold_origin);
  }
  interleave(eliminators, count);
  if (times) {
    times->eliminate_ns += nanoseconds_since(t);
    t = clock_type::now();
  }
  for (unsigned i = 0; i < count; ++i) {
    const bundle_shard<Record>& s = shards[i];
    outcomes[i] = eliminators[i].outcome();
    if (!outcomes[i].solved) continue;
    back_substitute_shard<Width, Result>(p, *s.g, s.shard, lanes[i].coeffs, lanes[i].results,
                                         static_cast<word_t<Width>*>(s.windows.solution),
                                         s.block_origin);
  }
  if (times) times->back_substitute_ns += nanoseconds_since(t);
}

}  // namespace ribbon::detail
