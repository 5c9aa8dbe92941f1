// The shard-range stage of the oneTBB layer builder: shards [first, end) of a layer solved
// into windows of its sections (solve_range), a task taking up to three shards
// (interleaved_shards), sorting each (finding a key with two values) and solving them as one
// shard bundle (shard_bundle.hpp). Also the sort and repeat drop of a range (drop_repeats) and
// the out-of-core/distributed range step (solve_shard_range) built on the two.
// The members defined here are declared, with their contracts, in layered_builder_class.hpp.
#pragma once

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "layered_builder_class.hpp"
#include "shard_bundle.hpp"

namespace ribbon::detail {

template <unsigned Width, class Result, class Record>
inline std::uint64_t layered_builder<Width, Result, Record>::drop_repeats(
    const layer_geometry& g, std::uint64_t first_shard, std::uint64_t end_shard, Record* hashes,
    const std::vector<std::uint64_t>& offsets, std::vector<std::uint64_t>& distinct_counts) {
  const auto start = clock_type::now();
  const std::uint64_t shards = end_shard - first_shard;
  distinct_counts.assign(shards, 0);
  std::atomic<std::uint64_t> conflict{no_conflict};  // smallest conflicting hash
  tbb::parallel_for(std::uint64_t{0}, shards, [&](std::uint64_t s) {
    const auto t = clock_type::now();
    Record* group = hashes + offsets[s];
    const std::uint64_t count = offsets[s + 1] - offsets[s];
    sort_shard(group, count, g, first_shard + s, workspaces_.local().scratch);
    const std::uint64_t at = find_conflict(group, count);
    if (at != count) note_conflict(conflict, record_hash(group[at]));
    distinct_counts[s] =
        static_cast<std::uint64_t>(std::unique(group, group + count, record_equal{}) - group);
    sort_ns_ += nanoseconds_since(t);
  });
  // The smallest conflicting hash, so that every thread count and builder names the same key.
  if (conflict != no_conflict) throw_conflicting_values(p_, conflict);
  std::uint64_t distinct = 0;
  for (const std::uint64_t d : distinct_counts) distinct += d;
  stats_.distinct_seconds += seconds_since(start);
  return distinct;
}

template <unsigned Width, class Result, class Record>
inline bool layered_builder<Width, Result, Record>::solve_range(
    const layer_geometry& g, std::uint64_t first_shard, std::uint64_t end_shard, Record* hashes,
    const std::vector<std::uint64_t>& offsets, bool sorted, section_windows windows,
    std::vector<std::uint64_t>& bumped_counts) {
  const std::uint64_t threshold_origin = g.shard_first_threshold_word(first_shard, p_.bucket_size);
  const std::uint64_t block_origin = g.shard_first_block(first_shard, Width);
  std::atomic<bool> solved{true};
  const std::uint64_t shards = end_shard - first_shard;
  bumped_counts.assign(shards, 0);
  // Fewer shards per bundle when a layer has too few to keep every thread busy (the later,
  // smaller layers). The grouping does not change the output: shards are independent.
  const auto threads = static_cast<std::uint64_t>(tbb::this_task_arena::max_concurrency());
  const std::uint64_t per_bundle =
      std::clamp<std::uint64_t>(divide_round_up(shards, threads), 1, interleaved_shards);
  const std::uint64_t bundles = divide_round_up(shards, per_bundle);
  std::atomic<std::uint64_t> conflict{no_conflict};  // smallest conflicting hash
  auto solve_bundle = [&](std::uint64_t index) {
    throw_if_cancelled();
    workspace<Width, Result, Record>& ws = workspaces_.local();
    const std::uint64_t first = index * per_bundle;  // relative to first_shard
    const auto lanes = static_cast<unsigned>(std::min<std::uint64_t>(per_bundle, shards - first));
    const auto t = clock_type::now();
    bundle_shard<Record> bundle[interleaved_shards];
    for (unsigned lane = 0; lane < lanes; ++lane) {
      const std::uint64_t s = first + lane;
      Record* records = hashes + offsets[s];
      const std::uint64_t count = offsets[s + 1] - offsets[s];
      if (!sorted) {
        sort_shard(records, count, g, first_shard + s, ws.scratch);
        const std::uint64_t at = find_conflict(records, count);
        if (at != count) note_conflict(conflict, record_hash(records[at]));
      }
      bundle[lane] = {&g, first_shard + s, records, count, windows, threshold_origin, block_origin};
    }
    sort_ns_ += nanoseconds_since(t);
    shard_outcome outcomes[interleaved_shards];
    bundle_times times;
    solve_shard_bundle<Width, Result, Record>(p_, bundle, lanes, ws, outcomes, &times);
    eliminate_ns_ += times.eliminate_ns;
    back_substitute_ns_ += times.back_substitute_ns;
    for (unsigned lane = 0; lane < lanes; ++lane) {
      if (!outcomes[lane].solved) solved = false;
      bumped_counts[first + lane] = outcomes[lane].bumped;
    }
    if (progress_) progress_->done.fetch_add(lanes, std::memory_order_relaxed);
  };
  if (bundles == 1) {
    solve_bundle(0);
  } else {
    tbb::parallel_for(std::uint64_t{0}, bundles, solve_bundle);
  }
  // The smallest conflicting hash, so that every thread count and builder names the same key.
  if (conflict != no_conflict) throw_conflicting_values(p_, conflict);
  return solved;
}

template <unsigned Width, class Result, class Record>
template <class MakeWindows, class Proceed>
inline std::uint64_t layered_builder<Width, Result, Record>::solve_shard_range(
    const layer_geometry& g, std::uint64_t lo, std::uint64_t hi, std::vector<Record>& keys,
    const MakeWindows& make_windows, const Proceed& proceed) {
  const std::uint64_t n = keys.size();
  auto partitioned = allocate_array<Record>(std::max<std::uint64_t>(n, 1));
  std::vector<std::uint64_t> offsets, counts;
  const Record* loaded = keys.data();
  partition_shard_range(
      n, [loaded](std::uint64_t i) { return loaded[i]; }, g, lo, hi, partitioned.get(), offsets,
      nullptr, nullptr);
  keys = {};
  const std::uint64_t distinct = drop_repeats(g, lo, hi, partitioned.get(), offsets, counts);
  if (distinct != n) {  // close the gaps: each group's distinct keys lead it
    gather_fronts(partitioned.get(), offsets, counts);
    for (std::size_t s = 0; s < counts.size(); ++s) offsets[s + 1] = offsets[s] + counts[s];
  }
  if (!proceed(static_cast<const Record*>(partitioned.get()), distinct)) return distinct;
  std::vector<std::uint64_t> bumped_counts;
  if (!solve_range(g, lo, hi, partitioned.get(), offsets, true, make_windows(), bumped_counts)) {
    throw error("internal error: a bumped layer failed to solve");
  }
  const std::uint64_t bumped = gather_fronts(partitioned.get(), offsets, bumped_counts);
  keys.assign(partitioned.get(), partitioned.get() + bumped);
  return distinct;
}

}  // namespace ribbon::detail
