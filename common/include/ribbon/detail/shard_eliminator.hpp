/// @file shard_eliminator.hpp
/// Elimination, the CPU's way: one shard's rows inserted one pivot step at a time by a state
/// machine, so that a thread can interleave several shards (shard_interleave.hpp). It follows
/// the bucket rules of shard_rules.hpp, as the GPU's tile_eliminator does.
#pragma once

#include <cstdint>

#include "ribbon/config.hpp"
#include "ribbon/detail/records.hpp"
#include "ribbon/detail/rows.hpp"
#include "ribbon/detail/shard_rules.hpp"
#include "ribbon/detail/threshold_codes.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"

namespace ribbon::detail {

/// Eliminates the rows of one shard, one pivot step at a time.
///
/// `hashes` holds the shard's records (layer hashes, with values in retrieval) sorted by hash
/// (so by start).
/// Buckets are processed in ascending order, and each bucket's keys in descending start
/// order: at the first failure in a bucket the smallest threshold above the failing offset is
/// chosen, the bucket's rows below it (the most recent insertions) are undone, and those keys
/// are bumped. Keys bumped (by threshold or, at the head of shards k > 0, by rule) are moved
/// to the front of `hashes`, in ascending order. Bucket codes go to `threshold_words`, whose
/// element 0 is the layer's threshold word `threshold_origin` (a window of the layer's array,
/// e.g. one shard range of an out-of-core build); the shard writes its own words only. A plain
/// layer is one bucket that may not bump; a standard layer's shard is one bucket that bumps
/// only its head keys (by rule) and fails, like a plain layer, on an inconsistent row.
///
/// The work is a state machine advanced by step(): one xor with one pivot in the common case.
/// A step's latency is a chain of dependent loads, so a CPU thread interleaves the steps of
/// several shards (independent by construction) to keep its pipeline full; eliminate_shard()
/// runs one shard alone.
///
/// Contract. Between any two steps:
///  - Echelon form: for every column c of the shard, ws.coeffs[c] is 0 (a free column) or a
///    pivot row whose bit 0 is set and stands for column c (bit i for column c + i), with
///    ws.results[c] its right side; pivots are only ever added, except that a failing
///    bucket removes the ones it added itself (below). The pivot rows span exactly the rows
///    of the keys kept so far: back-substitution over them (back_substitution.hpp) satisfies
///    every kept key.
///  - The current row (row(): column, coeff, result), unless done(): a kept-so-far key's row
///    reduced by pivots at columns below `column`, shifted so that bit 0 of coeff is set and
///    stands for `column`, with the right side reduced alike. It is equivalent, given the
///    pivots, to the key's original equation.
///  - The undo stack holds the pivot columns the current bucket added, with the offsets of
///    their keys' starts in the bucket; a bucket that fails removes those whose keys it
///    bumps (fail_bucket(), shard_rules.hpp), so the echelon form stays that of the kept keys.
///  - Keys [0, kept) of `hashes` are the bumped keys so far (ascending); keys of buckets not
///    yet finished are where they were given.
/// A step either xors the pivot of the current column into the row (reduce_with_pivot), or
/// stores the row as that column's pivot and loads the next key, or ends the row as redundant
/// (it reduced to 0 = 0: a repeat) or inconsistent (0 = non-zero: the bucket fails, or a
/// layer without thresholds has failed, outcome().solved false). done() after the last bucket.
template <unsigned Width, class Result, class Record = std::uint64_t>
class shard_eliminator {
 public:
  using word = word_t<Width>;
  using result_type = Result;

  RIBBON_HD shard_eliminator(const filter_params& p, const layer_geometry& g, std::uint64_t shard,
                             Record* hashes, std::uint64_t count, shard_workspace<Width, Result> ws,
                             std::uint64_t* threshold_words, std::uint64_t threshold_origin = 0)
      : p_(p),
        g_(g),
        ws_(ws),
        hashes_(hashes),
        count_(count),
        frame_(p, g, shard, threshold_words, threshold_origin, ws.undo_columns, ws.undo_offsets,
               Width),
        bucket_size_(g.bumping() ? p.bucket_size : g.shard_end(shard) - g.shard_begin(shard)),
        num_buckets_(g.bumping() ? (g.shard_end(shard) - g.shard_begin(shard)) / p.bucket_size
                                 : 1) {
    const std::uint64_t columns = shard_columns(g, shard, Width);
    for (std::uint64_t c = 0; c < columns; ++c) {
      ws_.coeffs[c] = 0;
      ws_.results[c] = 0;
    }
    bucket_ = no_bucket;
    bucket_end_ = 0;
    next_bucket();
  }

  RIBBON_HD bool done() const { return done_; }

  /// Advances by one pivot step. Must not be called once done().
  RIBBON_HD RIBBON_FORCE_INLINE void step() {
    const word pivot = ws_.coeffs[column_];
    if (RIBBON_LIKELY(pivot != 0)) {
      if (RIBBON_LIKELY(reduce_with_pivot(pivot, ws_.results[column_], column_, coeff_, result_))) {
        return;
      }
      if (result_ == 0) {
        next_row();  // redundant: a duplicate key, or a combination of inserted rows
      } else {
        fail_row();
      }
      return;
    }
    // A plain layer never undoes rows.
    if (g_.bumping() && !frame_.undo.push(column_, row_start_ - bucket_begin())) {
      fail_row();
      return;
    }
    ws_.coeffs[column_] = coeff_;
    ws_.results[column_] = result_;
    next_row();
  }

  RIBBON_HD shard_outcome outcome() const { return {kept_, !failed_}; }

  /// The row being inserted, for drivers that keep it in registers (see interleave()).
  struct row_state {
    std::uint64_t column;
    word coeff;
    Result result;
  };
  RIBBON_HD row_state row() const { return {column_, coeff_, result_}; }

  /// The pivot rows, which a driver may read (never write) between steps.
  RIBBON_HD const word* pivot_coeffs() const { return ws_.coeffs; }
  RIBBON_HD const Result* pivot_results() const { return ws_.results; }

  /// The common step on a row held by the caller, given pivot_coeffs() and pivot_results():
  /// xor with an occupied pivot that leaves a non-zero row. Returns false, changing nothing,
  /// for any other step (call slow_step()). Pre: `r` is the current row, as row() gave it or
  /// as fast_step() left it (the eliminator's own copy may be stale meanwhile: slow_step()
  /// takes the caller's). Post (true): `r` is reduced by one pivot, still the current row.
  RIBBON_HD RIBBON_FORCE_INLINE static bool fast_step(const word* coeffs, const Result* results,
                                                      row_state& r) {
    const word pivot = coeffs[r.column];
    if (pivot == 0 || pivot == r.coeff) return false;  // free column, or the row becomes 0
    return reduce_with_pivot(pivot, results[r.column], r.column, r.coeff, r.result);
  }

  /// Any step, on a row held by the caller; returns the row to go on with (meaningless once
  /// done()). Kept out of line: it runs about once a key, and the driver's loop stays small.
  /// Pre: `r` is the current row (as for fast_step()); post: the contract above, with the
  /// returned row the current one.
  RIBBON_HD RIBBON_NOINLINE row_state slow_step(row_state r) {
    column_ = r.column;
    coeff_ = r.coeff;
    result_ = r.result;
    step();
    return row();
  }

 private:
  RIBBON_HD std::uint64_t bucket_begin() const { return bucket_ * bucket_size_; }

  /// Loads the next key of the current bucket (descending) as the current row; false when
  /// the bucket has none left.
  RIBBON_HD bool load_row() {
    if (row_ == bucket_first_) return false;
    const shard_row<Width, Result> r =
        row_of<Width, Result>(p_, g_, frame_.begin, frame_.upper_start, hashes_[row_ - 1]);
    if (r.start < frame_.rule_limit) return false;  // the rest of the bucket is bumped by rule
    --row_;
    row_start_ = r.start;
    column_ = r.start;
    coeff_ = r.coeff;
    result_ = r.result;
    return true;
  }

  /// The current row is done (stored or redundant): load the next one.
  RIBBON_HD void next_row() {
    if (!load_row()) next_bucket();
  }

  /// Out of line: it runs about once a bucket, and inlined into slow_step() it costs the
  /// common path registers.
  RIBBON_HD RIBBON_NOINLINE void fail_row() {
    if (!g_.bumping()) {
      failed_ = true;
      done_ = true;
      return;
    }
    code_ = fail_bucket(p_, frame_.codes, bucket_, row_start_ - bucket_begin(), frame_.undo,
                        [this](std::uint32_t column) { ws_.coeffs[column] = 0; });
    next_bucket();
  }

  /// Finishes the current bucket and moves on to the next bucket that has a row to insert
  /// (a loop, not recursion: runs of empty buckets can be long); done after the last.
  RIBBON_HD void next_bucket() {
    for (;;) {
      if (bucket_ != no_bucket) {
        frame_.finish_bucket(p_, g_, bucket_, bucket_begin(), code_,
                             [this](std::uint64_t limit) { move_to_front(limit); });
      }
      if (++bucket_ == num_buckets_) {
        done_ = true;
        return;
      }
      code_ = 0;
      frame_.undo.clear();
      bucket_first_ = bucket_end_;
      std::uint64_t end = bucket_first_;
      const std::uint64_t limit = bucket_begin() + bucket_size_;
      while (end < count_ && local_start(record_hash(hashes_[end]), g_, frame_.begin) < limit)
        ++end;
      bucket_end_ = end;
      row_ = end;
      if (load_row()) return;
    }
  }

  /// Moves the current bucket's keys whose local starts are below `limit` (a prefix: they
  /// are sorted by start) to the front, after the keys moved before.
  RIBBON_HD void move_to_front(std::uint64_t limit) {
    for (std::uint64_t i = bucket_first_;
         i < bucket_end_ && local_start(record_hash(hashes_[i]), g_, frame_.begin) < limit; ++i) {
      hashes_[kept_++] = hashes_[i];
    }
  }

  static constexpr std::uint64_t no_bucket = ~std::uint64_t{0};

  filter_params p_;
  layer_geometry g_;
  shard_workspace<Width, Result> ws_;
  Record* hashes_;
  std::uint64_t count_;
  shard_frame frame_;
  std::uint64_t bucket_size_;
  std::uint64_t num_buckets_;

  // Current row.
  std::uint64_t column_ = 0;
  word coeff_ = 0;
  Result result_ = 0;
  std::uint64_t row_start_ = 0;
  // Progress.
  std::uint64_t bucket_ = 0;        // local bucket index
  std::uint64_t bucket_first_ = 0;  // first key of the bucket
  std::uint64_t bucket_end_ = 0;    // one past its last key
  std::uint64_t row_ = 0;           // keys [bucket_first_, row_) are still to insert
  std::uint64_t kept_ = 0;          // bumped keys moved to the front so far
  unsigned code_ = 0;
  bool done_ = false;
  bool failed_ = false;
};

/// Eliminates the rows of one shard (see shard_eliminator, also for `threshold_origin`).
template <unsigned Width, class Result, class Record>
RIBBON_HD shard_outcome eliminate_shard(const filter_params& p, const layer_geometry& g,
                                        std::uint64_t shard, Record* hashes, std::uint64_t count,
                                        shard_workspace<Width, Result> ws,
                                        std::uint64_t* threshold_words,
                                        std::uint64_t threshold_origin = 0) {
  shard_eliminator<Width, Result, Record> eliminator(p, g, shard, hashes, count, ws,
                                                     threshold_words, threshold_origin);
  while (!eliminator.done()) eliminator.step();
  return eliminator.outcome();
}

}  // namespace ribbon::detail
