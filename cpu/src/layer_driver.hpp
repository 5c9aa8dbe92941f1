// The layer driver of the oneTBB layer builder: the in-memory walk through the layers
// (build_rest, with memory_layers as the layer solver of build_layers()), layer 0's distinct
// records, a whole bumped or standard layer solved (solve_layer: sections allocated, shards
// solved, bumped keys gathered for the next layer), the layer 0 of several one-shard
// filters solved together (build_many()), and the entry points that run a build in a oneTBB
// arena.
// The members defined here are declared, with their contracts, in layered_builder_class.hpp.
#pragma once

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>
#include <tbb/task_arena.h>

#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "layered_builder_class.hpp"
#include "plain_layer.hpp"
#include "shard_bundle.hpp"
#include "shard_range_solve.hpp"

namespace ribbon::detail {

/// The layer solver of build_layers() (detail/layer_loop.hpp) over records in memory:
/// `records` holds those of the keys that reach the current layer (`count` of them).
template <unsigned Width, class Result, class Record>
class layered_builder<Width, Result, Record>::memory_layers {
 public:
  memory_layers(layered_builder& builder, aligned_array<Record> records, std::uint64_t count,
                std::vector<aligned_bytes>& buffers)
      : b_(builder), records_(std::move(records)), count_(count), buffers_(buffers) {}

  void bumped(const layer_step& step, format::layer_image& layer) {
    const std::uint64_t n = layer.input_keys;
    if (!step.remixes()) {  // the key records, sorted: already grouped by shard
      b_.solve_sorted_layer(0, n, records_.get(), layer, buffers_);  // a bumped layer solves
      return;
    }
    const auto start = clock_type::now();
    const Record* previous = records_.get();
    const std::uint64_t salt = layer.salt;
    auto source = [previous, salt](std::uint64_t i) {
      return with_hash(previous[i], remix(record_hash(previous[i]), salt));
    };
    // Only the bumped keys at the front are read from here on: the rest of the previous
    // layer's records (most of them after layer 0) need not stay resident while this layer
    // is built, which was the build's peak (bench/RESULTS.md, "Build memory at 10^7").
    release_tail(records_.get(), n * sizeof(Record), count_ * sizeof(Record));
    records_ = b_.bumped_layer(step.index, n, source, layer, buffers_);
    count_ = n;
    b_.stats_.later_layers_seconds += seconds_since(start);
  }

  /// A failed try keeps the records (permuted), so the next one rehashes and sorts them in
  /// place.
  bool standard(const layer_step& step, format::layer_image& layer) {
    const std::optional<std::uint64_t> salt =
        step.remixes() ? std::optional<std::uint64_t>(step.salt) : std::nullopt;
    if (salt != salt_) resalt(records_.get(), layer.input_keys, salt_, salt);
    salt_ = salt;
    return b_.solve_sorted_layer(0, layer.input_keys, records_.get(), layer, buffers_);
  }

  bool plain(const layer_step& step, format::layer_image& layer) {
    const auto start = clock_type::now();
    const bool solved = b_.plain_layer_try(step, records_.get(), layer, buffers_);
    b_.stats_.later_layers_seconds += seconds_since(start);
    return solved;
  }

 private:
  layered_builder& b_;
  aligned_array<Record> records_;
  std::uint64_t count_;  // records in records_ (its allocated size, or less)
  std::vector<aligned_bytes>& buffers_;
  // The remix salt of the layer-0 records of a standard layer's tries (none: key records).
  std::optional<std::uint64_t> salt_;
};

template <unsigned Width, class Result, class Record>
inline void layered_builder<Width, Result, Record>::build_rest(
    std::uint32_t first_layer, aligned_array<Record> previous, std::uint64_t remaining,
    std::vector<format::layer_image>& layers, std::vector<aligned_bytes>& buffers) {
  memory_layers solver(*this, std::move(previous), remaining, buffers);
  build_layers(solver, p_, sizing_, first_layer, remaining, layers, stats_);
  finish_stats();
}

template <unsigned Width, class Result, class Record>
template <class Source>
inline aligned_array<Record> layered_builder<Width, Result, Record>::bumped_layer(
    std::uint32_t l, std::uint64_t n, const Source& source, format::layer_image& layer,
    std::vector<aligned_bytes>& buffers) {
  aligned_array<Record> hashes = allocate_array<Record>(n);
  std::vector<std::uint64_t> offsets;
  partition_polled(n, source, layer.geometry, hashes.get(), offsets, nullptr, nullptr);
  solve_layer(l, n, hashes.get(), offsets, false, layer, buffers);  // a bumped layer solves
  return hashes;
}

template <unsigned Width, class Result, class Record>
template <class Source>
inline std::uint64_t layered_builder<Width, Result, Record>::distinct_records(std::uint64_t n,
                                                                              const Source& source,
                                                                              Record* out) {
  const layer_geometry g = bumped_layer_geometry(n, p_, default_sizing(p_.width));
  std::vector<std::uint64_t> offsets, distinct_counts;
  partition_polled(n, source, g, out, offsets, &stats_.hash_seconds, &stats_.partition_seconds);
  drop_repeats(g, 0, g.num_shards(), out, offsets, distinct_counts);
  return gather_fronts(out, offsets, distinct_counts);
}

template <unsigned Width, class Result, class Record>
inline void layered_builder<Width, Result, Record>::resalt(Record* records, std::uint64_t n,
                                                           std::optional<std::uint64_t> from,
                                                           std::optional<std::uint64_t> to) {
  tbb::parallel_for(std::uint64_t{0}, n, [&](std::uint64_t i) {
    const std::uint64_t h = record_hash(records[i]);
    const std::uint64_t key_hash = from ? unmix64(h) ^ *from : h;
    records[i] = with_hash(records[i], to ? remix(key_hash, *to) : key_hash);
  });
  tbb::parallel_sort(records, records + n, record_less{});
}

template <unsigned Width, class Result, class Record>
inline bool layered_builder<Width, Result, Record>::solve_sorted_layer(
    std::uint32_t l, std::uint64_t n, Record* sorted_records, format::layer_image& layer,
    std::vector<aligned_bytes>& buffers) {
  const std::vector<std::uint64_t> offsets =
      sorted_shard_offsets(sorted_records, n, layer.geometry);
  return solve_layer(l, n, sorted_records, offsets, true, layer, buffers);
}

template <unsigned Width, class Result, class Record>
inline bool layered_builder<Width, Result, Record>::solve_layer(
    std::uint32_t l, std::uint64_t n, Record* hashes, const std::vector<std::uint64_t>& offsets,
    bool sorted, format::layer_image& layer, std::vector<aligned_bytes>& buffers) {
  layer.input_keys = n;
  const layer_geometry& g = layer.geometry;
  start_layer(l, g.num_shards());
  const auto solve_start = clock_type::now();
  layer_sections sections(p_, g);
  std::vector<std::uint64_t> bumped_counts;
  const bool solved =
      solve_range(g, 0, g.num_shards(), hashes, offsets, sorted, sections.windows(), bumped_counts);
  if (l == 0) stats_.solve_seconds += seconds_since(solve_start);
  if (!solved) return false;
  sections.hand_over(layer, buffers);

  // Gather the bumped hashes (each shard left them at the front of its range) at the front
  // of the same array: no second buffer at the layer's peak. Sequential, because the
  // ranges overlap; the bumped keys are a few percent of the layer.
  const auto gather_start = clock_type::now();
  layer.bumped_keys = gather_fronts(hashes, offsets, bumped_counts);
  if (l == 0) stats_.gather_seconds += seconds_since(gather_start);
  return true;
}

/// Solves layer 0 of `count` (at most interleaved_shards) started builds whose layer 0 is one
/// bumped shard (layered_builder::first_layer_is_one_shard()) on this thread, as one shard
/// bundle (shard_bundle.hpp). layers[i] and buffers[i] receive build i's layer 0 for finish();
/// the records of its bumped keys are left at the front of its records. Each layer is the one
/// solve_range() makes of that shard alone.
template <unsigned Width, class Result, class Record>
void solve_first_layers_together(
    const filter_params& p, typename layered_builder<Width, Result, Record>::started_build* builds,
    unsigned count, workspace<Width, Result, Record>& ws, format::layer_image* layers,
    std::vector<aligned_bytes>* buffers) {
  std::optional<layer_sections> sections[interleaved_shards];
  bundle_shard<Record> bundle[interleaved_shards];
  for (unsigned i = 0; i < count; ++i) {
    const layer_step& step = *builds[i].layer0;
    layers[i] = format::layer_image{};
    layers[i].input_keys = step.keys;
    layers[i].salt = step.salt;
    layers[i].geometry = step.geometry;
    sections[i].emplace(p, step.geometry);
    bundle[i] = {
        &layers[i].geometry, 0, builds[i].records.get(), step.keys, sections[i]->windows(), 0, 0};
  }
  shard_outcome outcomes[interleaved_shards];
  solve_shard_bundle<Width, Result, Record>(p, bundle, count, ws, outcomes, nullptr);
  for (unsigned i = 0; i < count; ++i) {
    if (!outcomes[i].solved) throw error("internal error: a bumped layer failed to solve");
    sections[i]->hand_over(layers[i], buffers[i]);
    layers[i].bumped_keys = outcomes[i].bumped;
  }
}

/// Runs f() in an arena of `threads` threads (0: all). An explicit count above the machine's
/// is honoured too (tests use it to check that the output does not depend on it).
template <class F>
decltype(auto) run_with_threads(std::uint32_t threads, F&& f) {
  std::optional<tbb::global_control> allow;
  if (static_cast<int>(threads) > tbb::this_task_arena::max_concurrency()) {
    allow.emplace(tbb::global_control::max_allowed_parallelism, threads);
  }
  tbb::task_arena arena(threads == 0 ? tbb::task_arena::automatic : static_cast<int>(threads));
  return arena.execute(std::forward<F>(f));
}

/// In-memory build of every layer from the distinct records key_hash(i), i < n (`p` from
/// build_params() of `options`), in the calling thread's arena
/// (build_many() runs many of them in one).
template <class Source>
filter build_in_this_arena(const filter_params& p, const build_options& options, std::uint64_t n,
                           const Source& key_hash, build_stats* stats, build_progress* progress) {
  using record = std::decay_t<decltype(key_hash(std::uint64_t{0}))>;
  build_stats local_stats;
  build_stats& s = stats ? *stats : local_stats;
  s = build_stats{};
  return dispatch_layout(p, [&](auto width_tag, auto result_tag) -> filter {
    constexpr unsigned width = decltype(width_tag)::value;
    using result = decltype(result_tag);
    return layered_builder<width, result, record>(p, options, s, progress).build(n, key_hash);
  });
}

/// build_in_this_arena() in an arena of options.threads threads.
template <class Source>
filter build_in_memory(const filter_params& p, const build_options& options, std::uint64_t n,
                       const Source& key_hash, build_stats* stats, build_progress* progress) {
  return run_with_threads(options.threads, [&]() -> filter {
    return build_in_this_arena(p, options, n, key_hash, stats, progress);
  });
}

}  // namespace ribbon::detail
