// The oneTBB layer builder's class, shared by the in-memory build (builder.cpp) and the
// out-of-core bulk build (bulk_builder.cpp): its state, its small members, and the
// declarations of its stages, each defined in its own header (layered_builder.hpp lists
// them). Include layered_builder.hpp, not this.
#pragma once

#include <tbb/enumerable_thread_specific.h>

#include <atomic>
#include <optional>
#include <vector>

#include "build_workspace.hpp"
#include "ribbon/build_progress.hpp"
#include "ribbon/detail/layer_loop.hpp"
#include "ribbon/detail/partition.hpp"
#include "ribbon/detail/shard_solver.hpp"
#include "ribbon/error.hpp"
#include "ribbon/filter.hpp"
#include "storage.hpp"

namespace ribbon::detail {

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
        sizing_(build_sizing(options, p, 0)),
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
    sizing_ = build_sizing(options_, p_, distinct_keys);
  }

  /// Sorts each shard [first_shard, end_shard) of `hashes` (grouped at `offsets`, relative to
  /// first_shard) and drops its repeated records: the first distinct_counts[s] records of
  /// group s are its distinct ones, in order. Throws conflicting_values_error for a key with
  /// two values. Returns the distinct count of the range.
  std::uint64_t drop_repeats(const layer_geometry& g, std::uint64_t first_shard,
                             std::uint64_t end_shard, Record* hashes,
                             const std::vector<std::uint64_t>& offsets,
                             std::vector<std::uint64_t>& distinct_counts);

  /// Layers `first_layer`, ... for the `remaining` keys whose previous-layer records are in
  /// `previous` (for first_layer 0, the distinct key records, sorted).
  void build_rest(std::uint32_t first_layer, aligned_array<Record> previous,
                  std::uint64_t remaining, std::vector<format::layer_image>& layers,
                  std::vector<aligned_bytes>& buffers);

  /// Solves shards [first_shard, end_shard) of a layer with geometry `g` over `hashes` into
  /// `windows`, a shard bundle (shard_bundle.hpp) of up to interleaved_shards shards a task.
  /// The one contract of every caller (a whole layer, a plain layer's try, a shard range out of
  /// core or on a cluster):
  ///
  /// Pre: group s (hashes[offsets[s], offsets[s + 1])) holds exactly the records whose starts
  /// fall in shard first_shard + s; if `sorted`, sorted and without repeats (else sorted here,
  /// and repeats of a key with two values found); `windows` begin at the threshold word and
  /// solution block of shard first_shard (shard_first_threshold_word, shard_first_block) and
  /// hold the whole range.
  /// Post (true): every shard of the range has its blocks and codes written, and no other
  /// word of the windows is touched; bumped_counts[s] keys of group s, at its front, are
  /// passed on to the next layer, and every record after them answers as it says (a
  /// filter's fingerprint, a retrieval value); the output is the same for every thread count
  /// and grouping of shards (shards are independent). (false): a shard of a layer without
  /// thresholds (standard or plain) was inconsistent; the windows are then undefined and the
  /// caller retries. Throws conflicting_values_error naming the smallest conflicting hash,
  /// whatever the order.
  bool solve_range(const layer_geometry& g, std::uint64_t first_shard, std::uint64_t end_shard,
                   Record* hashes, const std::vector<std::uint64_t>& offsets, bool sorted,
                   section_windows windows, std::vector<std::uint64_t>& bumped_counts);

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
                                  const Proceed& proceed);

  /// A source whose readers look at the cancel flag every 2^16 keys (the partition passes
  /// read every key); its sequential reader is the source's own.
  template <class Source>
  struct polled_source {
    const Source& source;
    const layered_builder& builder;

    auto operator()(std::uint64_t i) const {
      if ((i & 0xFFFF) == 0) builder.throw_if_cancelled();
      return source(i);
    }
    auto sequential() const {
      return [read = sequential_reader(source), this](std::uint64_t i) mutable {
        if ((i & 0xFFFF) == 0) builder.throw_if_cancelled();
        return read(i);
      };
    }
  };

  /// partition_by_shard() of a polled_source.
  template <class Source>
  void partition_polled(std::uint64_t n, const Source& source, const layer_geometry& g, Record* out,
                        std::vector<std::uint64_t>& offsets, double* hash_seconds,
                        double* partition_seconds) {
    partition_by_shard(n, polled_source<Source>{source, *this}, g, out, offsets, hash_seconds,
                       partition_seconds);
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
  /// The layer solver of build_layers() over records in memory (layer_driver.hpp).
  class memory_layers;

  /// Builds bumped layer `l` (l > 0; salt and geometry in `layer`) over source(i), i < n, into
  /// `layer` and `buffers`; returns the layer-l hashes of the bumped keys (the first
  /// layer.bumped_keys entries).
  template <class Source>
  aligned_array<Record> bumped_layer(std::uint32_t l, std::uint64_t n, const Source& source,
                                     format::layer_image& layer,
                                     std::vector<aligned_bytes>& buffers);

  /// Sorts and groups by shard source(i), i < n (at `out`), keeping one record of each
  /// repeated one (record_equal): the distinct records, sorted, at the front of `out`.
  /// Returns their count. Any geometry groups them for the sort (shard_of is monotone in the
  /// hash): the bumped layer's of n keys, so that an input without repeats is grouped for
  /// its layer 0 already.
  template <class Source>
  std::uint64_t distinct_records(std::uint64_t n, const Source& source, Record* out);

  /// Rehashes layer-0 records remixed with salt `from` (none: the key records) to salt `to`
  /// (none: back to the key records), in place, and sorts them.
  static void resalt(Record* records, std::uint64_t n, std::optional<std::uint64_t> from,
                     std::optional<std::uint64_t> to);

  /// solve_layer() over n records sorted by hash, cut into the layer's shards here.
  bool solve_sorted_layer(std::uint32_t l, std::uint64_t n, Record* sorted_records,
                          format::layer_image& layer, std::vector<aligned_bytes>& buffers);

  /// Solves layer `l` (any kind; its salt and geometry already in `layer`) over the n
  /// layer-l records at `hashes`, grouped by shard at `offsets` (`sorted`: each group sorted),
  /// into `layer` (its sections allocated here) and `buffers`, leaving at the front of
  /// `hashes` the records of the keys passed on (layer.bumped_keys of them). Returns false,
  /// adding nothing, if a shard of a layer without thresholds (standard, plain) failed.
  bool solve_layer(std::uint32_t l, std::uint64_t n, Record* hashes,
                   const std::vector<std::uint64_t>& offsets, bool sorted,
                   format::layer_image& layer, std::vector<aligned_bytes>& buffers);

  /// One try `step` of the final plain layer (salt and geometry also in `layer`) over the
  /// previous layer's records `previous` of its layer.input_keys keys. Returns false, adding
  /// nothing, if it failed.
  bool plain_layer_try(const layer_step& step, const Record* previous, format::layer_image& layer,
                       std::vector<aligned_bytes>& buffers);

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

}  // namespace ribbon::detail
