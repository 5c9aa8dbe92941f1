// Stage: the out-of-core layer. One bumped layer of a bulk build whose keys are in
// partition files on disk, solved one shard range at a time within the memory plan.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <tbb/parallel_sort.h>

#include "layered_builder.hpp"
#include "memory_plan.hpp"
#include "ribbon/bulk_builder.hpp"
#include "ribbon/detail/records.hpp"
#include "ribbon/detail/xxhash64.hpp"
#include "ribbon/shard_range_solver.hpp"
#include "spill_files.hpp"

namespace ribbon::detail {

/// One out-of-core bumped layer: the keys come from partition files (by top hash bits); their
/// shards are solved in ranges that fit the budget (as many consecutive files to a range as
/// a pass holds, a file in pieces when it alone holds more). Shards are monotone in the hash,
/// so a file's keys fall in shards [first, limit], limit being the shard of the next file's
/// first possible hash; the keys of shard `limit` are carried to the next file. Each range
/// drops its repeated keys before it is solved (repeats share a shard). A `provisional` layer
/// 0 is sized for the input count n: at the first repeat it stops, reads the files again from
/// the start, counting the distinct keys and writing them to new partition files (by the same
/// top bits), and the caller builds the layer for that count from those.
template <unsigned Width, class Result, class Record>
class out_of_core_layer {
 public:
  using files = spill_files;

  /// Layer `step` (a bumped layer in ranges, layer_sequence) of the build.
  out_of_core_layer(spill_directory& directory, const memory_plan& plan,
                    layered_builder<Width, Result, Record>& builder,
                    shard_range_solver* range_solver, const filter_params& p,
                    const layer_step& step, bool provisional, limit_search smallest_limit)
      : directory_(directory),
        plan_(plan),
        smallest_limit_(std::move(smallest_limit)),
        builder_(builder),
        range_solver_(range_solver),
        p_(p),
        l_(step.index),
        provisional_(provisional) {
    const std::uint64_t n = step.keys;
    layer_.input_keys = n;
    layer_.salt = step.salt;
    layer_.geometry = step.geometry;
    const layer_geometry& g = layer_.geometry;
    thresholds_.file = directory.create("thresholds", 0);
    solution_.file = directory.create("solution", 0);
    bumped_file_ = directory.create("bumped", plan.io_buffer_bytes);
    sections_per_key_ = static_cast<double>(g.solution_bytes(p_.width, p_.result_bits) +
                                            g.threshold_words(p_.bucket_size) * 8) /
                        static_cast<double>(n);
    pass_keys_ = pass_keys(plan);
    read_buffer_.resize(std::min<std::uint64_t>(pass_keys_, plan.io_buffer_bytes / 8));
  }

  /// Keys per pass under `plan`: its budget at the pass's bytes per key (loaded and
  /// partitioned records, its share of the sections); the floor leaves room for two shards'
  /// keys. Nothing else of a pass grows with the layer: its shard counts are a few bytes a
  /// shard of one partition file.
  std::uint64_t pass_keys(const memory_plan& plan) const {
    std::uint64_t keys =
        std::max(static_cast<std::uint64_t>(static_cast<double>(plan.budget) /
                                            (2.0 * sizeof(Record) + sections_per_key_)),
                 min_pass_keys(p_));
    // With ranges in flight elsewhere while the next is read, the passes share the budget.
    if (range_solver_) {
      keys = std::max<std::uint64_t>(keys / (std::max(range_solver_->ranges_in_flight(), 1u) + 1),
                                     min_pass_keys(p_));
    }
    return keys;
  }

  /// Solves the layer over `parts` (2^bits files): image() then describes it (both sections
  /// stay in their spill files), unless counting_only().
  void run(const files& parts, std::uint32_t bits) {
    bits_ = bits;
    solve_files(parts);
    if (counting_only()) {  // a repeat: count and write the distinct keys, from the start
      for (auto& part : parts) part->release_buffer();
      const std::uint64_t buffer = plan_.partition_buffer_bytes(parts.size());
      for (std::size_t k = 0; k < parts.size(); ++k) {
        distinct_parts_.push_back(directory_.create("distinct", buffer));
      }
      distinct_ = 0;
      solve_files(parts);
      for (auto& part : distinct_parts_) part->release_buffer();
      return;  // to be built from take_distinct_parts() for distinct_keys()
    }
    bumped_file_->flush();
    layer_.bumped_keys = bumped_file_->template records<Record>();
    layer_.thresholds = nullptr;
    layer_.solution = nullptr;
    layer_.threshold_checksum = thresholds_.checksum.digest();
    layer_.solution_checksum = solution_.checksum.digest();
    const layer_geometry& g = layer_.geometry;
    if (thresholds_.file->size() != g.threshold_words(p_.bucket_size) * 8 ||
        solution_.file->size() != g.solution_bytes(p_.width, p_.result_bits)) {
      throw error("internal error: an out-of-core section has the wrong size");
    }
  }

  const format::layer_image& image() const { return layer_; }

  std::unique_ptr<spill_file> take_threshold_file() { return std::move(thresholds_.file); }
  std::unique_ptr<spill_file> take_solution_file() { return std::move(solution_.file); }
  std::unique_ptr<spill_file> take_bumped_file() { return std::move(bumped_file_); }
  /// After counting_only(): the distinct keys, in partition files by the same top bits.
  files take_distinct_parts() { return std::move(distinct_parts_); }
  /// Bytes written to the solution and bumped-key files; shard ranges solved.
  std::uint64_t spilled_bytes() const { return spilled_bytes_; }
  std::uint64_t ranges() const { return ranges_; }
  /// Distinct keys of the layer (fewer than its step's keys after counting_only()), and
  /// whether it must be built again for that count.
  std::uint64_t distinct_keys() const { return counting_only() ? distinct_ : layer_.input_keys; }
  bool counting_only() const { return provisional_ && repeats_; }

 private:
  std::uint64_t shard_of(std::uint64_t hash) const { return layer_.geometry.shard_of(hash); }

  /// A repeat was found, and the files are not yet being read for the distinct keys.
  bool stopped() const { return counting_only() && distinct_parts_.empty(); }

  /// Solves (or, once stopped, skips; or counts and writes the distinct keys of) every shard
  /// range of the files, in order. Consecutive files whose keys fit a pass together are one
  /// range: a file of a few shards alone would leave threads idle and bundles short.
  void solve_files(const files& parts) {
    const layer_geometry& g = layer_.geometry;
    builder_.start_layer(l_, g.num_shards());
    std::vector<Record> carry;
    std::uint64_t next_shard = 0;
    for (std::size_t k = 0; k < parts.size() && !stopped();) {
      std::vector<const spill_file*> span;
      std::uint64_t keys = carry.size();
      do {
        parts[k]->flush();
        keys += parts[k]->template records<Record>();
        span.push_back(parts[k++].get());
      } while (k < parts.size() && keys + parts[k]->template records<Record>() <= pass_keys_);
      const std::uint64_t limit =
          k < parts.size() ? shard_of(std::uint64_t{k} << (64 - bits_)) : g.num_shards();
      std::vector<Record> next_carry;
      solve_span(span, carry, next_shard, limit, k < parts.size() ? &next_carry : nullptr);
      carry.swap(next_carry);
      next_shard = limit;
    }
    finish_pending_ranges();
    if (!carry.empty() && !stopped()) {
      throw error("internal error: keys left over after the last shard");
    }
  }

  /// A shard range's windows of the layer's two sections (shards own whole threshold words
  /// and solution blocks), in buffers of their own.
  struct range_windows {
    aligned_bytes thresholds, solution;
    std::uint64_t threshold_bytes = 0, solution_bytes = 0;
    range_windows(const layer_geometry& g, const filter_params& p, std::uint64_t lo,
                  std::uint64_t hi)
        : threshold_bytes(g.shard_range_threshold_bytes(lo, hi, p.bucket_size)),
          solution_bytes(g.shard_range_solution_bytes(lo, hi, Width, p.result_bits)) {
      thresholds = allocate_aligned(threshold_bytes);
      solution = allocate_aligned(solution_bytes);
    }
    std::uint64_t* threshold_words() { return reinterpret_cast<std::uint64_t*>(thresholds.get()); }
  };

  /// A section appended range by range to a spill file, with its running checksum.
  struct spilled_section {
    std::unique_ptr<spill_file> file;
    xxh64_stream checksum;
    void append(const unsigned char* data, std::uint64_t bytes) {
      file->write_bytes(data, bytes);
      checksum.update(data, bytes);
    }
  };

  /// Appends a solved range's outputs, in shard order: its section windows and its bumped
  /// keys.
  void write_range(const range_windows& windows, const Record* bumped, std::uint64_t bumped_count) {
    thresholds_.append(windows.thresholds.get(), windows.threshold_bytes);
    solution_.append(windows.solution.get(), windows.solution_bytes);
    bumped_file_->append(bumped, bumped_count);
    spilled_bytes_ +=
        windows.threshold_bytes + windows.solution_bytes + bumped_count * sizeof(Record);
    ++ranges_;
  }

  /// Solves shards [lo, hi) from the keys of the `span` of files and `carry` in those shards. With
  /// `next_carry`, keys in shards >= hi go there. When the span's keys exceed a pass, the
  /// read goes on counting keys per shard only, and the span is cut where the counts say
  /// (one more read per piece); a single shard is always solved, however many keys it has.
  void solve_span(const std::vector<const spill_file*>& span, const std::vector<Record>& carry,
                  std::uint64_t lo, std::uint64_t hi, std::vector<Record>* next_carry) {
    std::vector<Record> keys;
    std::vector<std::uint64_t> shard_counts(hi - lo);
    bool overflow = false;
    std::uint64_t dropped = 0;  // exact repeats dropped from one shard's keys to fit a pass
    bool compacting = true;     // (at the floor, only until that does not help)
    auto take = [&](const Record* hashes, std::uint64_t count) {
      for (std::uint64_t i = 0; i < count; ++i) {
        const std::uint64_t shard = shard_of(record_hash(hashes[i]));
        if (shard >= hi) {
          if (next_carry) next_carry->push_back(hashes[i]);
        } else if (shard >= lo) {
          ++shard_counts[shard - lo];
          if (!overflow) keys.push_back(hashes[i]);
        }
      }
      if (overflow || keys.size() <= pass_keys_) return;
      // One shard is not cut: its repeated keys (a multiset's) go now, and only more distinct
      // keys than a pass holds make it too much, unless the build works at the floor.
      if (hi - lo == 1) {
        if (compacting) dropped += drop_exact_repeats(keys);
        if (keys.size() <= pass_keys_) return;
        if (!plan_.strict()) {
          compacting = false;
          return;
        }
      }
      overflow = true;
      std::vector<Record>().swap(keys);  // freed: `keys = {}` would keep the capacity
    };
    // Room for all of them, or for a pass and the piece that shows it is too much: the
    // vector never grows past the budget by doubling.
    std::uint64_t records = 0;
    for (const spill_file* file : span) records += file->template records<Record>();
    keys.reserve(std::min<std::uint64_t>(records + carry.size(),
                                         pass_keys_ + read_buffer_.size() + carry.size()));
    take(carry.data(), carry.size());
    for (const spill_file* file : span) file->for_each_piece(read_buffer_, take);
    if (!overflow) {
      if (lo < hi) solve_range(keys, lo, hi, dropped);
      return;
    }
    if (hi - lo == 1) throw_shard_too_big(lo, shard_counts[0]);
    // Skewed keys or a low estimate: solve the span in pieces that fit a pass. The carry
    // for the next file is complete already.
    for (std::uint64_t first = lo; first < hi;) {
      std::uint64_t end = first + 1, in_piece = shard_counts[first - lo];
      while (end < hi && in_piece + shard_counts[end - lo] <= pass_keys_) {
        in_piece += shard_counts[end - lo];
        ++end;
      }
      solve_span(span, carry, first, end, nullptr);
      first = end;
    }
  }

  /// Drops the exact repeats of `keys` (records equal in hash and value: a key with two values
  /// stays to be found), leaving them in another order; returns how many went.
  static std::uint64_t drop_exact_repeats(std::vector<Record>& keys) {
    const std::uint64_t before = keys.size();
    if constexpr (std::is_same_v<Record, std::uint64_t>) {
      tbb::parallel_sort(keys.begin(), keys.end());
    } else {
      tbb::parallel_sort(keys.begin(), keys.end(), [](const Record& a, const Record& b) {
        return record_hash(a) != record_hash(b) ? record_hash(a) < record_hash(b)
                                                : a.value < b.value;
      });
    }
    keys.erase(std::unique(keys.begin(), keys.end(), record_equal{}), keys.end());
    return before - keys.size();
  }

  /// A shard with more distinct keys than a pass holds (hashes crowded into it): the limit
  /// that holds all `records` of it in one pass is named.
  [[noreturn]] void throw_shard_too_big(std::uint64_t shard, std::uint64_t records) const {
    const std::uint64_t mib =
        smallest_limit_
            ? smallest_limit_([&](const memory_plan& plan) { return pass_keys(plan) >= records; })
            : 0;
    throw memory_limit_error(
        "the memory limit is too small for this input: shard " + std::to_string(shard) +
            " of layer " + std::to_string(l_) + " holds " + std::to_string(records) +
            " keys (more distinct ones than the " + std::to_string(pass_keys_) +
            " a pass holds), and a shard is solved in one pass: it needs " + needed_limit_text(mib),
        mib);
  }

  /// Counts a range's distinct keys (n of them with repeats).
  void count_distinct(std::uint64_t distinct, std::uint64_t n) {
    distinct_ += distinct;
    if (distinct != n) repeats_ = true;
  }

  /// Solves shards [lo, hi) over `keys`, which had `dropped` more (exact repeats).
  void solve_range(std::vector<Record>& keys, std::uint64_t lo, std::uint64_t hi,
                   std::uint64_t dropped) {
    if (stopped()) return;
    if constexpr (std::is_same_v<Record, std::uint64_t>) {  // solvers elsewhere take hashes
      if (range_solver_ && !counting_only()) return solve_range_elsewhere(keys, lo, hi, dropped);
    }
    const std::uint64_t n = keys.size() + dropped;
    std::optional<range_windows> windows;  // made only when the range is solved
    auto make_windows = [&] {
      windows.emplace(layer_.geometry, p_, lo, hi);
      return section_windows{windows->threshold_words(), windows->solution.get()};
    };
    auto proceed = [&](const Record* distinct_keys, std::uint64_t distinct) {
      count_distinct(distinct, n);
      if (stopped()) return false;
      if (!counting_only()) return true;
      for (std::uint64_t i = 0; i < distinct; ++i) {
        distinct_parts_[record_hash(distinct_keys[i]) >> (64 - bits_)]->push(distinct_keys[i]);
      }
      return false;
    };
    builder_.solve_shard_range(layer_.geometry, lo, hi, keys, make_windows, proceed);
    if (windows) write_range(*windows, keys.data(), keys.size());
  }

  /// The range on the caller's solver (e.g. the GPU), in a background thread: while it
  /// solves, this thread reads the next partition file. Up to the solver's
  /// ranges_in_flight() ranges run at once (on a GPU their copies and kernels overlap); their
  /// outputs are written in order.
  void solve_range_elsewhere(std::vector<Record>& keys, std::uint64_t lo, std::uint64_t hi,
                             std::uint64_t dropped) {
    while (pending_.size() >= std::max(range_solver_->ranges_in_flight(), 1u)) {
      finish_oldest_range();
    }
    auto range = std::make_unique<pending_range>(layer_.geometry, p_, lo, hi);
    range->keys = std::move(keys);
    range->input_keys = range->keys.size() + dropped;
    pending_range* r = range.get();
    r->done = std::async(std::launch::async, [this, lo, hi, r] {
      r->distinct_keys =
          range_solver_->solve(p_, layer_.geometry, lo, hi, r->keys, r->windows.threshold_words(),
                               r->windows.solution.get());
    });
    pending_.push_back(std::move(range));
  }

  /// Waits for the oldest range in flight and writes its outputs.
  void finish_oldest_range() {
    pending_range& r = *pending_.front();
    r.done.get();  // rethrows the solver's exception
    builder_.count_solved_shards(r.shards);
    count_distinct(r.distinct_keys, r.input_keys);
    if (!counting_only()) write_range(r.windows, r.keys.data(), r.keys.size());
    pending_.pop_front();
  }

  /// Waits for every range in flight, in order.
  void finish_pending_ranges() {
    while (!pending_.empty()) finish_oldest_range();
  }

  /// A range being solved elsewhere.
  struct pending_range {
    pending_range(const layer_geometry& g, const filter_params& p, std::uint64_t lo,
                  std::uint64_t hi)
        : windows(g, p, lo, hi), shards(hi - lo) {}
    std::vector<Record> keys;  // its keys, then its bumped keys
    range_windows windows;
    std::uint64_t shards;
    std::uint64_t input_keys = 0, distinct_keys = 0;
    std::future<void> done;  // last: joins the solving thread before the buffers go
  };

  spill_directory& directory_;
  const memory_plan& plan_;
  limit_search smallest_limit_;
  layered_builder<Width, Result, Record>& builder_;
  shard_range_solver* range_solver_;
  filter_params p_;
  std::uint32_t l_;
  bool provisional_;
  bool repeats_ = false;
  std::uint64_t distinct_ = 0;
  std::uint32_t bits_ = 0;
  files distinct_parts_;  // the distinct keys, once counting_only()
  format::layer_image layer_;
  spilled_section thresholds_, solution_;
  std::unique_ptr<spill_file> bumped_file_;
  double sections_per_key_ = 0;
  std::uint64_t pass_keys_ = 0;
  std::uint64_t spilled_bytes_ = 0, ranges_ = 0;
  std::vector<Record> read_buffer_;
  // The last member: destroyed (their threads joined) first.
  std::deque<std::unique_ptr<pending_range>> pending_;
};

}  // namespace ribbon::detail
