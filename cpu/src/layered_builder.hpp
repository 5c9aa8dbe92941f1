// The oneTBB layer builder shared by the in-memory build (builder.cpp) and the out-of-core
// bulk build (bulk_builder.cpp): hash -> partition by shard -> per shard (sort, eliminate,
// back-substitute) -> gather bumped keys -> next layer; the last layer is plain and retried.
#pragma once

#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "partition.hpp"
#include "ribbon/build_progress.hpp"
#include "ribbon/detail/layer_loop.hpp"
#include "ribbon/detail/shard_solver.hpp"
#include "ribbon/error.hpp"
#include "ribbon/filter.hpp"
#include "storage.hpp"

namespace ribbon::detail {

using clock_type = std::chrono::steady_clock;

inline double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

inline std::int64_t nanoseconds_since(clock_type::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - start).count();
}

/// Shards whose elimination steps one thread interleaves: 3 kept the rows in registers and
/// built fastest at 10^7 keys, 1 and 2 threads, of 2, 3, 4 and 8 (bench/RESULTS.md,
/// "Rows in registers").
inline constexpr unsigned interleaved_shards = 3;

/// Per-thread working memory of the shard solver: one set of arrays per interleaved shard.
template <unsigned Width, class Result, class Record>
struct workspace {
  struct lane_arrays {
    std::vector<word_t<Width>> coeffs;
    std::vector<Result> results;
    std::vector<std::uint32_t> undo_columns, undo_offsets;
  };
  lane_arrays lanes[interleaved_shards];
  std::vector<Record> scratch;

  shard_workspace<Width, Result> lane(unsigned index, std::uint64_t columns,
                                      std::uint32_t bucket_size) {
    lane_arrays& a = lanes[index];
    if (a.coeffs.size() < columns) {
      a.coeffs.resize(columns);
      a.results.resize(columns);
    }
    const std::uint32_t undo = undo_capacity(bucket_size, Width);
    if (a.undo_columns.size() < undo) {
      a.undo_columns.resize(undo);
      a.undo_offsets.resize(undo);
    }
    return {a.coeffs.data(), a.results.data(), a.undo_columns.data(), a.undo_offsets.data()};
  }
};

/// Where a shard range's output goes: windows of the layer's two sections that start at the
/// range's first threshold word and first solution block.
struct section_windows {
  std::uint64_t* thresholds;
  void* solution;
};

/// Moves the first counts[s] records of each shard's group (its bumped keys, or its distinct
/// keys) to the front of `hashes`, in shard order; returns how many there are.
template <class Record>
std::uint64_t gather_fronts(Record* hashes, const std::vector<std::uint64_t>& offsets,
                            const std::vector<std::uint64_t>& counts) {
  std::uint64_t gathered = 0;
  for (std::size_t s = 0; s < counts.size(); ++s) {
    if (offsets[s] != gathered) std::copy_n(hashes + offsets[s], counts[s], hashes + gathered);
    gathered += counts[s];
  }
  return gathered;
}

/// Builds the layers of one filter for one (width, result type, record) combination. Records
/// are layer hashes (filters) or hashes with values (retrieval; see detail/records.hpp).
template <unsigned Width, class Result, class Record = std::uint64_t>
class layered_builder {
 public:
  /// `options` give the layer sizing, which a standard layer 0 takes from the key count.
  layered_builder(const filter_params& p, const build_options& options, build_stats& stats,
                  build_progress* progress)
      : p_(p),
        options_(options),
        sizing_(sizing_from(options, p, 0)),
        stats_(stats),
        progress_(progress) {}

  /// In-memory build of every layer; layer 0's records are the distinct key_hash(i), i < n.
  template <class Source>
  filter build(std::uint64_t n, const Source& key_hash) {
    started_build b = start(n, key_hash);
    return finish(b, nullptr, {});
  }

  /// build() in two halves around layer 0, for build_many(), which eliminates the layer 0 of
  /// several one-shard filters together on one thread (solve_first_layers_together()), as
  /// solve_range() interleaves the shards of one layer: a filter of up to about 10^5 keys
  /// has one shard, whose elimination alone is a chain of dependent loads.
  struct started_build {
    clock_type::time_point start;
    aligned_array<Record> records;  // the distinct key records, sorted
    std::uint64_t distinct = 0;
    std::optional<layer_step> layer0;  // nothing for no keys
  };

  /// The first half: the distinct key records, sorted, and layer 0 planned for them.
  template <class Source>
  started_build start(std::uint64_t n, const Source& key_hash) {
    started_build b;
    b.start = clock_type::now();
    b.records = allocate_array<Record>(n);
    b.distinct = n > 0 ? distinct_records(n, key_hash, b.records.get()) : 0;
    size_for(n, b.distinct);
    b.layer0 = layer_sequence(p_, sizing_).next(b.distinct);
    return b;
  }

  /// The second half: the layers after `layer0`, solved by the caller (its sections in
  /// `buffers`, the records of its bumped keys at the front of b.records), or, given no
  /// layer0, every layer.
  filter finish(started_build& b, const format::layer_image* layer0,
                std::vector<aligned_bytes> buffers) {
    std::vector<format::layer_image> layers;
    if (layer0) layers.push_back(*layer0);
    build_rest(layer0 ? 1 : 0, std::move(b.records), layer0 ? layer0->bumped_keys : b.distinct,
               layers, buffers);
    stats_.total_seconds = seconds_since(b.start);
    return builder_access::make(p_, b.distinct, std::move(layers), std::move(buffers));
  }

  /// Whether a started build's layer 0 is one bumped shard (what
  /// solve_first_layers_together() takes).
  static bool first_layer_is_one_shard(const started_build& b) {
    return b.layer0 && b.layer0->kind == layer_kind::bumped && b.layer0->geometry.num_shards() == 1;
  }

  /// Records the key counts and sizes the layers for the distinct keys.
  void size_for(std::uint64_t input_keys, std::uint64_t distinct_keys) {
    stats_.input_keys = input_keys;
    stats_.distinct_keys = distinct_keys;
    sizing_ = sizing_from(options_, p_, distinct_keys);
  }

  /// Sorts each shard [first_shard, end_shard) of `hashes` (grouped at `offsets`, relative to
  /// first_shard) and drops its repeated records: the first distinct_counts[s] records of
  /// group s are its distinct ones, in order. Throws conflicting_values_error for a key with
  /// two values. Returns the distinct count of the range.
  std::uint64_t drop_repeats(const layer_geometry& g, std::uint64_t first_shard,
                             std::uint64_t end_shard, Record* hashes,
                             const std::vector<std::uint64_t>& offsets,
                             std::vector<std::uint64_t>& distinct_counts) {
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

  /// Layers `first_layer`, ... for the `remaining` keys whose previous-layer records are in
  /// `previous` (for first_layer 0, the distinct key records, sorted).
  void build_rest(std::uint32_t first_layer, aligned_array<Record> previous,
                  std::uint64_t remaining, std::vector<format::layer_image>& layers,
                  std::vector<aligned_bytes>& buffers) {
    memory_layers solver(*this, std::move(previous), remaining, buffers);
    build_layers(solver, p_, sizing_, first_layer, remaining, layers, stats_);
    finish_stats();
  }

  /// Solves shards [first_shard, end_shard) of a layer with geometry `g` over `hashes`,
  /// grouped by shard at `offsets` (relative to first_shard), into `windows`; `sorted`: each
  /// group is sorted already. Per shard, the bumped keys are left at the front of its group
  /// and counted in bumped_counts (relative). Returns false if a plain layer failed.
  ///
  /// Pre: group s (hashes[offsets[s], offsets[s + 1])) holds exactly the records whose starts
  /// fall in shard first_shard + s; if `sorted`, sorted and without repeats (else sorted here,
  /// and repeats of a key with two values found); `windows` begin at the threshold word and
  /// solution block of shard first_shard (shard_first_threshold_word, shard_first_block) and
  /// hold the whole range.
  /// Post (true): every shard of the range has its blocks and codes written, and no other
  /// word of the windows is touched; every record left in a group past its bumped prefix
  /// answers as it says (a filter's fingerprint, a retrieval value); the output is the same for
  /// every thread count and grouping of shards (shards are independent, each eliminated and
  /// back-substituted alone, shard_eliminator.hpp). (false): a shard of a layer without
  /// thresholds was inconsistent; the windows are then undefined and the caller retries.
  /// Throws conflicting_values_error naming the smallest conflicting hash, whatever the order.
  bool solve_range(const layer_geometry& g, std::uint64_t first_shard, std::uint64_t end_shard,
                   Record* hashes, const std::vector<std::uint64_t>& offsets, bool sorted,
                   section_windows windows, std::vector<std::uint64_t>* bumped_counts) {
    auto* solution_words = static_cast<word_t<Width>*>(windows.solution);
    const std::uint64_t threshold_origin =
        g.shard_first_threshold_word(first_shard, p_.bucket_size);
    const std::uint64_t block_origin = g.shard_first_block(first_shard, Width);
    const std::uint64_t columns = max_shard_columns(g, Width);
    std::atomic<bool> solved{true};
    const std::uint64_t shards = end_shard - first_shard;
    // Fewer shards per group when a layer has too few to keep every thread busy (the later,
    // smaller layers). The grouping does not change the output: shards are independent.
    const auto threads = static_cast<std::uint64_t>(tbb::this_task_arena::max_concurrency());
    const std::uint64_t per_group =
        std::clamp<std::uint64_t>(divide_round_up(shards, threads), 1, interleaved_shards);
    const std::uint64_t groups = divide_round_up(shards, per_group);
    std::atomic<std::uint64_t> conflict{no_conflict};  // smallest conflicting hash
    auto solve_group = [&](std::uint64_t group) {
      throw_if_cancelled();
      workspace<Width, Result, Record>& ws = workspaces_.local();
      const std::uint64_t first = group * per_group;  // relative to first_shard
      const auto lanes = static_cast<unsigned>(std::min<std::uint64_t>(per_group, shards - first));
      auto t = clock_type::now();
      for (unsigned lane = 0; lane < lanes && !sorted; ++lane) {
        const std::uint64_t s = first + lane;
        const std::uint64_t count = offsets[s + 1] - offsets[s];
        sort_shard(hashes + offsets[s], count, g, first_shard + s, ws.scratch);
        const std::uint64_t at = find_conflict(hashes + offsets[s], count);
        if (at != count) note_conflict(conflict, record_hash(hashes[offsets[s] + at]));
      }
      sort_ns_ += nanoseconds_since(t);
      t = clock_type::now();
      using eliminator = shard_eliminator<Width, Result, Record>;
      static_assert(std::is_trivially_destructible_v<eliminator>, "placed without destruction");
      alignas(eliminator) unsigned char storage[interleaved_shards * sizeof(eliminator)];
      auto* eliminators = reinterpret_cast<eliminator*>(storage);
      for (unsigned lane = 0; lane < lanes; ++lane) {
        const std::uint64_t s = first + lane;
        new (eliminators + lane) eliminator(
            p_, g, first_shard + s, hashes + offsets[s], offsets[s + 1] - offsets[s],
            ws.lane(lane, columns, p_.bucket_size), windows.thresholds, threshold_origin);
      }
      interleave(eliminators, lanes);
      eliminate_ns_ += nanoseconds_since(t);
      t = clock_type::now();
      for (unsigned lane = 0; lane < lanes; ++lane) {
        const std::uint64_t s = first + lane;
        const shard_outcome outcome = eliminators[lane].outcome();
        if (!outcome.solved) {
          solved = false;
          continue;
        }
        if (bumped_counts) (*bumped_counts)[s] = outcome.bumped;
        const auto view = ws.lane(lane, columns, p_.bucket_size);
        back_substitute_shard<Width, Result>(p_, g, first_shard + s, view.coeffs, view.results,
                                             solution_words, block_origin);
      }
      back_substitute_ns_ += nanoseconds_since(t);
      if (progress_) progress_->done.fetch_add(lanes, std::memory_order_relaxed);
    };
    if (groups == 1) {
      solve_group(0);
    } else {
      tbb::parallel_for(std::uint64_t{0}, groups, solve_group);
    }
    // The smallest conflicting hash, so that every thread count and builder names the same key.
    if (conflict != no_conflict) throw_conflicting_values(p_, conflict);
    return solved;
  }

  /// The shard-range step of the out-of-core and distributed builds: over `keys` (layer
  /// hashes of shards [lo, hi) of a bumped layer, any order), groups them by shard, sorts each
  /// shard and drops its repeats (drop_repeats). Then, if proceed(distinct, count) agrees
  /// (`distinct`: the range's distinct records, sorted), solves them into the windows that
  /// make_windows() returns (called once the keys are released, so the peak is the
  /// partitioned copy plus the windows) and leaves the range's bumped keys in `keys`, in shard
  /// order. Returns the distinct count.
  template <class MakeWindows, class Proceed>
  std::uint64_t solve_shard_range(const layer_geometry& g, std::uint64_t lo, std::uint64_t hi,
                                  std::vector<Record>& keys, const MakeWindows& make_windows,
                                  const Proceed& proceed) {
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
    std::vector<std::uint64_t> bumped_counts(hi - lo);
    if (!solve_range(g, lo, hi, partitioned.get(), offsets, true, make_windows(), &bumped_counts)) {
      throw error("internal error: a bumped layer failed to solve");
    }
    const std::uint64_t bumped = gather_fronts(partitioned.get(), offsets, bumped_counts);
    keys.assign(partitioned.get(), partitioned.get() + bumped);
    return distinct;
  }

  /// partition_by_shard(), looking at the cancel flag every 2^16 keys: the partition passes
  /// read every key.
  template <class Source>
  void partition_polled(std::uint64_t n, const Source& source, const layer_geometry& g, Record* out,
                        std::vector<std::uint64_t>& offsets, double* hash_seconds,
                        double* partition_seconds) {
    auto polled = [&](std::uint64_t i) {
      if ((i & 0xFFFF) == 0) throw_if_cancelled();
      return source(i);
    };
    partition_by_shard(n, polled, g, out, offsets, hash_seconds, partition_seconds);
  }

  /// Stops the build when another thread set progress->cancel (Ctrl-C in the Python module).
  void throw_if_cancelled() const {
    if (progress_ && progress_->cancel.load(std::memory_order_relaxed)) {
      throw error("build cancelled");
    }
  }

  /// Announces a layer to the progress display.
  void start_layer(std::uint32_t l, std::uint64_t shards) {
    if (!progress_) return;
    progress_->layer.store(l, std::memory_order_relaxed);
    progress_->done.store(0, std::memory_order_relaxed);
    progress_->total.store(shards, std::memory_order_relaxed);
    progress_->current.store(build_progress::solving, std::memory_order_relaxed);
  }

  /// Adds shards solved elsewhere to the progress display.
  void count_solved_shards(std::uint64_t shards) {
    if (progress_) progress_->done.fetch_add(shards, std::memory_order_relaxed);
  }

  const layer_sizing& sizing() const { return sizing_; }

 private:
  /// The layer solver of build_layers() (detail/layer_loop.hpp) over records in memory:
  /// `records` holds those of the keys that reach the current layer (`count` of them).
  class memory_layers {
   public:
    memory_layers(layered_builder& builder, aligned_array<Record> records, std::uint64_t count,
                  std::vector<aligned_bytes>& buffers)
        : b_(builder), records_(std::move(records)), count_(count), buffers_(buffers) {}

    void bumped(std::uint32_t l, format::layer_image& layer) {
      const std::uint64_t n = layer.input_keys;
      if (l == 0) {  // the key records, sorted: already grouped by shard
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
      records_ = b_.bumped_layer(l, n, source, layer, buffers_);
      count_ = n;
      b_.stats_.later_layers_seconds += seconds_since(start);
    }

    /// A failed try keeps the records (permuted), so the next one rehashes and sorts them in
    /// place.
    bool standard(format::layer_image& layer) {
      if (layer.salt != salt_) resalt(records_.get(), layer.input_keys, salt_, layer.salt);
      salt_ = layer.salt;
      return b_.solve_sorted_layer(0, layer.input_keys, records_.get(), layer, buffers_);
    }

    bool plain(std::uint32_t l, format::layer_image& layer) {
      const auto start = clock_type::now();
      const bool solved = b_.plain_layer_try(l, records_.get(), layer, buffers_);
      b_.stats_.later_layers_seconds += seconds_since(start);
      return solved;
    }

   private:
    layered_builder& b_;
    aligned_array<Record> records_;
    std::uint64_t count_;  // records in records_ (its allocated size, or less)
    std::vector<aligned_bytes>& buffers_;
    std::uint64_t salt_ = 0;  // of the layer-0 records of a standard layer's tries
  };

  /// Builds bumped layer `l` (l > 0; salt and geometry in `layer`) over source(i), i < n, into
  /// `layer` and `buffers`; returns the layer-l hashes of the bumped keys (the first
  /// layer.bumped_keys entries).
  template <class Source>
  aligned_array<Record> bumped_layer(std::uint32_t l, std::uint64_t n, const Source& source,
                                     format::layer_image& layer,
                                     std::vector<aligned_bytes>& buffers) {
    aligned_array<Record> hashes = allocate_array<Record>(n);
    std::vector<std::uint64_t> offsets;
    partition_polled(n, source, layer.geometry, hashes.get(), offsets, nullptr, nullptr);
    solve_layer(l, n, hashes.get(), offsets, false, layer, buffers);  // a bumped layer solves
    return hashes;
  }

  /// Sorts and groups by shard source(i), i < n (at `out`), keeping one record of each
  /// repeated one (record_equal): the distinct records, sorted, at the front of `out`.
  /// Returns their count. Any geometry groups them for the sort (shard_of is monotone in the
  /// hash): the bumped layer's of n keys, so that an input without repeats is grouped for
  /// its layer 0 already.
  template <class Source>
  std::uint64_t distinct_records(std::uint64_t n, const Source& source, Record* out) {
    const layer_geometry g = bumped_layer_geometry(n, p_, default_sizing(p_.width));
    std::vector<std::uint64_t> offsets, distinct_counts;
    partition_polled(n, source, g, out, offsets, &stats_.hash_seconds, &stats_.partition_seconds);
    drop_repeats(g, 0, g.num_shards(), out, offsets, distinct_counts);
    return gather_fronts(out, offsets, distinct_counts);
  }

  /// Rehashes layer-0 records salted with `from` (0: none) to salt `to`, in place, and sorts
  /// them.
  static void resalt(Record* records, std::uint64_t n, std::uint64_t from, std::uint64_t to) {
    tbb::parallel_for(std::uint64_t{0}, n, [&](std::uint64_t i) {
      const std::uint64_t h = record_hash(records[i]);
      const std::uint64_t key_hash = from == 0 ? h : unmix64(h) ^ from;
      records[i] = with_hash(records[i], to == 0 ? key_hash : remix(key_hash, to));
    });
    tbb::parallel_sort(records, records + n, record_less{});
  }

  /// solve_layer() over n records sorted by hash, cut into the layer's shards here.
  bool solve_sorted_layer(std::uint32_t l, std::uint64_t n, Record* sorted_records,
                          format::layer_image& layer, std::vector<aligned_bytes>& buffers) {
    const std::vector<std::uint64_t> offsets =
        sorted_shard_offsets(sorted_records, n, layer.geometry);
    return solve_layer(l, n, sorted_records, offsets, true, layer, buffers);
  }

  /// Solves layer `l` (bumped or standard; its salt and geometry already in `layer`) over the
  /// n layer-l records at `hashes`, grouped by shard at `offsets` (`sorted`: each group
  /// sorted), into `layer` and `buffers`, leaving at the front of `hashes` the records of the
  /// keys passed on (layer.bumped_keys of them). Returns false, adding nothing, if a standard
  /// layer's shard failed.
  bool solve_layer(std::uint32_t l, std::uint64_t n, Record* hashes,
                   const std::vector<std::uint64_t>& offsets, bool sorted,
                   format::layer_image& layer, std::vector<aligned_bytes>& buffers) {
    layer.input_keys = n;
    const layer_geometry& g = layer.geometry;
    start_layer(l, g.num_shards());
    const auto solve_start = clock_type::now();
    aligned_bytes thresholds = allocate_aligned(g.threshold_words(p_.bucket_size) * 8);
    aligned_bytes solution = allocate_aligned(g.solution_bytes(p_.width, p_.result_bits));
    std::vector<std::uint64_t> bumped_counts(g.num_shards());
    const bool solved = solve_range(
        g, 0, g.num_shards(), hashes, offsets, sorted,
        {reinterpret_cast<std::uint64_t*>(thresholds.get()), solution.get()}, &bumped_counts);
    if (l == 0) stats_.solve_seconds += seconds_since(solve_start);
    if (!solved) return false;
    layer.thresholds = g.bumping() ? thresholds.get() : nullptr;
    layer.solution = solution.get();
    if (g.bumping()) buffers.push_back(std::move(thresholds));
    buffers.push_back(std::move(solution));

    // Gather the bumped hashes (each shard left them at the front of its range) at the front
    // of the same array: no second buffer at the layer's peak. Sequential, because the
    // ranges overlap; the bumped keys are a few percent of the layer.
    const auto gather_start = clock_type::now();
    layer.bumped_keys = gather_fronts(hashes, offsets, bumped_counts);
    if (l == 0) stats_.gather_seconds += seconds_since(gather_start);
    return true;
  }

  /// One try of the final plain layer (salt and geometry in `layer`) over the previous
  /// layer's records `previous` of its layer.input_keys keys. Returns false, adding nothing,
  /// if it failed.
  bool plain_layer_try(std::uint32_t l, const Record* previous, format::layer_image& layer,
                       std::vector<aligned_bytes>& buffers) {
    const std::uint64_t n = layer.input_keys;
    std::vector<Record> hashes(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      hashes[i] = with_hash(previous[i], remix(record_hash(previous[i]), layer.salt));
    }
    std::sort(hashes.begin(), hashes.end(), record_less{});
    const layer_geometry& g = layer.geometry;
    start_layer(l, 1);
    aligned_bytes thresholds = allocate_aligned(g.threshold_words(p_.bucket_size) * 8);
    aligned_bytes solution = allocate_aligned(g.solution_bytes(p_.width, p_.result_bits));
    const std::vector<std::uint64_t> offsets{0, n};
    if (!solve_range(g, 0, 1, hashes.data(), offsets, true,
                     {reinterpret_cast<std::uint64_t*>(thresholds.get()), solution.get()},
                     nullptr)) {
      return false;
    }
    layer.thresholds = thresholds.get();
    layer.solution = solution.get();
    buffers.push_back(std::move(thresholds));
    buffers.push_back(std::move(solution));
    return true;
  }

  void finish_stats() {
    stats_.sort_thread_seconds = 1e-9 * static_cast<double>(sort_ns_);
    stats_.eliminate_thread_seconds = 1e-9 * static_cast<double>(eliminate_ns_);
    stats_.back_substitute_thread_seconds = 1e-9 * static_cast<double>(back_substitute_ns_);
  }

  static constexpr std::uint64_t no_conflict = ~std::uint64_t{0};

  /// Lowers `conflict` to `hash` (a hash of ~0 cannot be reported; it is as rare as any).
  static void note_conflict(std::atomic<std::uint64_t>& conflict, std::uint64_t hash) {
    std::uint64_t seen = conflict.load();
    while (hash < seen && !conflict.compare_exchange_weak(seen, hash)) {
    }
  }

  filter_params p_;
  build_options options_;
  layer_sizing sizing_;
  build_stats& stats_;
  build_progress* progress_;
  std::atomic<std::int64_t> sort_ns_{0}, eliminate_ns_{0}, back_substitute_ns_{0};
  tbb::enumerable_thread_specific<workspace<Width, Result, Record>> workspaces_;
};

/// Solves layer 0 of `count` (at most interleaved_shards) started builds whose layer 0 is one
/// bumped shard (layered_builder::first_layer_is_one_shard()) on this thread, their
/// eliminations interleaved (shard_interleave.hpp). layers[i] and buffers[i] receive build
/// i's layer 0 for finish(); the records of its bumped keys are left at the front of its
/// records. Each layer is the one solve_range() makes of that shard alone.
template <unsigned Width, class Result, class Record>
void solve_first_layers_together(
    const filter_params& p, typename layered_builder<Width, Result, Record>::started_build* builds,
    unsigned count, workspace<Width, Result, Record>& ws, format::layer_image* layers,
    std::vector<aligned_bytes>* buffers) {
  using eliminator = shard_eliminator<Width, Result, Record>;
  static_assert(std::is_trivially_destructible_v<eliminator>, "placed without destruction");
  alignas(eliminator) unsigned char storage[interleaved_shards * sizeof(eliminator)];
  auto* eliminators = reinterpret_cast<eliminator*>(storage);
  aligned_bytes thresholds[interleaved_shards], solutions[interleaved_shards];
  for (unsigned i = 0; i < count; ++i) {
    const layer_step& step = *builds[i].layer0;
    const layer_geometry& g = step.geometry;
    layers[i] = format::layer_image{};
    layers[i].input_keys = step.keys;
    layers[i].salt = step.salt;
    layers[i].geometry = g;
    thresholds[i] = allocate_aligned(g.threshold_words(p.bucket_size) * 8);
    solutions[i] = allocate_aligned(g.solution_bytes(p.width, p.result_bits));
    new (eliminators + i) eliminator(p, g, 0, builds[i].records.get(), step.keys,
                                     ws.lane(i, max_shard_columns(g, Width), p.bucket_size),
                                     reinterpret_cast<std::uint64_t*>(thresholds[i].get()), 0);
  }
  interleave(eliminators, count);
  for (unsigned i = 0; i < count; ++i) {
    const shard_outcome outcome = eliminators[i].outcome();
    if (!outcome.solved) throw error("internal error: a bumped layer failed to solve");
    const auto view = ws.lane(i, 0, p.bucket_size);
    back_substitute_shard<Width, Result>(p, layers[i].geometry, 0, view.coeffs, view.results,
                                         reinterpret_cast<word_t<Width>*>(solutions[i].get()), 0);
    layers[i].thresholds = thresholds[i].get();
    layers[i].solution = solutions[i].get();
    layers[i].bumped_keys = outcome.bumped;
    buffers[i].push_back(std::move(thresholds[i]));
    buffers[i].push_back(std::move(solutions[i]));
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
/// params_from() or retrieval_params_from() of `options`), in the calling thread's arena
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
