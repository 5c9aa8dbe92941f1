/// @file shard_solver.hpp
/// Solving one shard of one layer: banded Gaussian elimination with bucket thresholds
/// (bumping), then back-substitution into interleaved solution blocks. Shards touch disjoint
/// output words, so any number of them can be solved at once (CPU tasks; GPU tiles run the same
/// algorithm cooperatively, see tile_solver.hpp).
#pragma once

#include <cstdint>

#include "ribbon/config.hpp"
#include "ribbon/detail/bits.hpp"
#include "ribbon/detail/records.hpp"
#include "ribbon/detail/rows.hpp"
#include "ribbon/detail/threshold_codes.hpp"
#include "ribbon/hash.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"

namespace ribbon::detail {

/// One round of INSERT-ROW: eliminate the row's leading column with the (non-zero) pivot
/// stored there, then shift the row to its next set bit. Returns false when the row has
/// become zero (then `result` says redundant, 0, or inconsistent, non-zero).
template <class Word, class Result>
RIBBON_HD RIBBON_FORCE_INLINE bool reduce_with_pivot(Word pivot, Result pivot_result,
                                                     std::uint64_t& column, Word& coeff,
                                                     Result& result) {
  coeff ^= pivot;
  result ^= pivot_result;
  if (coeff == 0) return false;
  const int shift = count_trailing_zeros(coeff);
  coeff >>= shift;
  column += static_cast<std::uint64_t>(shift);
  return true;
}

/// The working memory one shard needs, owned by the caller.
template <unsigned Width, class Result>
struct shard_workspace {
  word_t<Width>* coeffs;        ///< shard_columns() entries
  Result* results;              ///< shard_columns() entries
  std::uint32_t* undo_columns;  ///< undo_capacity() entries
  std::uint32_t* undo_offsets;  ///< undo_capacity() entries
};

/// Rows of one bucket that can be undone. A bucket stores about B rows; one that would store
/// more than this (only possible with adversarial keys) fails at that row, which bumps it
/// like any other failure.
RIBBON_HD constexpr std::uint32_t undo_capacity(std::uint32_t bucket_size, std::uint32_t width) {
  return 2 * bucket_size + width;
}

/// Columns a shard's working arrays cover: its start positions plus one block.
RIBBON_HD inline std::uint64_t shard_columns(const layer_geometry& g, std::uint64_t shard,
                                             std::uint32_t width) {
  return g.shard_end(shard) - g.shard_begin(shard) + width;
}

/// The largest shard_columns() of any shard of a layer.
RIBBON_HD inline std::uint64_t max_shard_columns(const layer_geometry& g, std::uint32_t width) {
  const std::uint64_t starts = g.num_starts < g.shard_size() ? g.num_starts : g.shard_size();
  return starts + width;
}

/// Local start (relative to the shard) of a layer hash known to lie in `shard`.
RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t local_start(std::uint64_t hash, const layer_geometry& g,
                                                        std::uint64_t shard_begin) {
  return fastrange64(hash, g.num_starts) - shard_begin;
}

/// The first start position in a block of r + 1 bits (past every start if there is none).
RIBBON_HD inline std::uint64_t upper_first_start(const layer_geometry& g, std::uint32_t width) {
  const std::uint64_t none = ~std::uint64_t{0};
  return g.upper_start_block >= none / width ? none : g.upper_start_block * width;
}

/// The code of a bucket whose first failure is a row at `offset`: the smallest threshold above
/// the offset, so that the failing row and every row below it are bumped.
RIBBON_HD inline unsigned bucket_code_for_failure(const filter_params& p, std::uint32_t offset) {
  return offset < p.threshold_light ? 1 : offset < p.threshold_heavy ? 2 : 3;
}

/// The writer of shard `shard`'s threshold codes, where `threshold_words[0]` is the layer's
/// threshold word `threshold_origin` (a window of the layer's array); none for layers
/// without thresholds.
RIBBON_HD inline shard_code_writer code_writer_for(const filter_params& p, const layer_geometry& g,
                                                   std::uint64_t shard,
                                                   std::uint64_t* threshold_words,
                                                   std::uint64_t threshold_origin) {
  if (!g.bumping()) return {};
  std::uint64_t* words =
      threshold_words + (g.shard_first_threshold_word(shard, p.bucket_size) - threshold_origin);
  const std::uint64_t buckets = g.shard_buckets(shard, p.bucket_size);
  if (g.codes == threshold_encoding::two_bit) return shard_code_writer::two_bit(words, buckets);
  return {words, buckets, g.code_index_bits(p.bucket_size)};
}

/// Outcome of eliminating one shard.
struct shard_outcome {
  std::uint64_t bumped = 0;  ///< keys passed on to the next layer
  bool solved = true;        ///< false only for a plain layer whose system is inconsistent
};

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
        codes_(code_writer_for(p, g, shard, threshold_words, threshold_origin)),
        begin_(g.shard_begin(shard)),
        bucket_size_(g.bumping() ? p.bucket_size : g.shard_end(shard) - g.shard_begin(shard)),
        num_buckets_(g.bumping() ? (g.shard_end(shard) - g.shard_begin(shard)) / p.bucket_size : 1),
        rule_limit_(g.sharded() && shard > 0 ? Width : 0),
        upper_start_(upper_first_start(g, Width)),
        undo_capacity_(undo_capacity(p.bucket_size, Width)) {
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
    if (g_.bumping()) {  // a plain layer never undoes rows
      if (RIBBON_UNLIKELY(undo_size_ == undo_capacity_)) {
        fail_row();
        return;
      }
      ws_.undo_columns[undo_size_] = static_cast<std::uint32_t>(column_);
      ws_.undo_offsets[undo_size_] = static_cast<std::uint32_t>(row_start_ - bucket_begin());
      ++undo_size_;
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
  /// for any other step (call slow_step()).
  RIBBON_HD RIBBON_FORCE_INLINE static bool fast_step(const word* coeffs, const Result* results,
                                                      row_state& r) {
    const word pivot = coeffs[r.column];
    if (pivot == 0 || pivot == r.coeff) return false;  // free column, or the row becomes 0
    return reduce_with_pivot(pivot, results[r.column], r.column, r.coeff, r.result);
  }

  /// Any step, on a row held by the caller; returns the row to go on with (meaningless once
  /// done()). Kept out of line: it runs about once a key, and the driver's loop stays small.
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
    const Record& record = hashes_[row_ - 1];
    const std::uint64_t h = record_hash(record);
    const std::uint64_t start = local_start(h, g_, begin_);
    if (start < rule_limit_) return false;  // the rest of the bucket is bumped by rule
    --row_;
    row_start_ = start;
    column_ = start;
    coeff_ = coefficients<Width>(h);
    const std::uint32_t bits = p_.result_bits + (begin_ + start >= upper_start_ ? 1u : 0u);
    result_ = static_cast<Result>(record_rhs(p_, bits, record));
    return true;
  }

  /// The current row is done (stored or redundant): load the next one.
  RIBBON_HD void next_row() {
    if (!load_row()) next_bucket();
  }

  RIBBON_HD void fail_row() {
    if (!g_.bumping()) {
      failed_ = true;
      done_ = true;
      return;
    }
    code_ = codes_.code_for_failure(
        bucket_,
        bucket_code_for_failure(p_, static_cast<std::uint32_t>(row_start_ - bucket_begin())));
    const std::uint32_t threshold = p_.threshold(code_);
    while (undo_size_ > 0 && ws_.undo_offsets[undo_size_ - 1] < threshold) {
      --undo_size_;
      ws_.coeffs[ws_.undo_columns[undo_size_]] = 0;
    }
    next_bucket();
  }

  /// Finishes the current bucket and moves on to the next bucket that has a row to insert
  /// (a loop, not recursion: runs of empty buckets can be long); done after the last.
  RIBBON_HD void next_bucket() {
    for (;;) {
      if (bucket_ != no_bucket) finish_bucket();
      if (++bucket_ == num_buckets_) {
        done_ = true;
        return;
      }
      code_ = 0;
      undo_size_ = 0;
      bucket_first_ = bucket_end_;
      std::uint64_t end = bucket_first_;
      const std::uint64_t limit = bucket_begin() + bucket_size_;
      while (end < count_ && local_start(record_hash(hashes_[end]), g_, begin_) < limit) ++end;
      bucket_end_ = end;
      row_ = end;
      if (load_row()) return;
    }
  }

  /// Records the bucket's code and moves its bumped keys (a prefix, sorted by start) to the
  /// front.
  RIBBON_HD void finish_bucket() {
    if (!g_.sharded()) return;
    std::uint64_t bump_below = bucket_begin() + (g_.bumping() ? p_.threshold(code_) : 0);
    if (bump_below < rule_limit_) bump_below = rule_limit_;
    for (std::uint64_t i = bucket_first_;
         i < bucket_end_ && local_start(record_hash(hashes_[i]), g_, begin_) < bump_below; ++i) {
      hashes_[kept_++] = hashes_[i];
    }
    if (!g_.bumping()) return;
    codes_.record(bucket_, code_);
  }

  static constexpr std::uint64_t no_bucket = ~std::uint64_t{0};

  filter_params p_;
  layer_geometry g_;
  shard_workspace<Width, Result> ws_;
  Record* hashes_;
  std::uint64_t count_;
  shard_code_writer codes_;
  std::uint64_t begin_;  // first start position of the shard
  std::uint64_t bucket_size_;
  std::uint64_t num_buckets_;
  std::uint64_t rule_limit_;   // local starts below this are bumped by rule
  std::uint64_t upper_start_;  // starts from this on are in blocks of r + 1 bits
  std::uint32_t undo_capacity_;

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
  std::uint32_t undo_size_ = 0;
  unsigned code_ = 0;
  bool done_ = false;
  bool failed_ = false;
};

/// Runs `Lanes` eliminators to the end, interleaving their steps so that the dependent loads
/// of one shard overlap with those of the others. The rows being inserted and the pivot
/// arrays stay in registers (the loop over lanes is unrolled, and the steps that change an
/// eliminator's state are out of line), so a step's chain is one load, an xor, a count of
/// trailing zeros and an add. When a lane finishes, the others go on with one lane fewer.
/// `rows` holds each lane's current row on entry.
template <unsigned Lanes, class Eliminator>
RIBBON_HD void interleave_lanes(Eliminator** lanes, typename Eliminator::row_state* rows) {
  if constexpr (Lanes > 0) {
    using row_state = typename Eliminator::row_state;
    using word = typename Eliminator::word;
    using result_type = typename Eliminator::result_type;
    row_state row[Lanes];
    const word* coeffs[Lanes];
    const result_type* results[Lanes];
    RIBBON_UNROLL
    for (unsigned lane = 0; lane < Lanes; ++lane) {
      row[lane] = rows[lane];
      coeffs[lane] = lanes[lane]->pivot_coeffs();
      results[lane] = lanes[lane]->pivot_results();
    }
    unsigned finished = 0;
    for (bool running = true; running;) {
      RIBBON_UNROLL
      for (unsigned lane = 0; lane < Lanes; ++lane) {
        if (RIBBON_LIKELY(Eliminator::fast_step(coeffs[lane], results[lane], row[lane]))) continue;
        row[lane] = lanes[lane]->slow_step(row[lane]);
        if (lanes[lane]->done()) {
          finished = lane;
          running = false;
          break;
        }
      }
    }
    RIBBON_UNROLL
    for (unsigned lane = 0; lane < Lanes; ++lane) rows[lane] = row[lane];
    // The last lane takes the finished one's place.
    lanes[finished] = lanes[Lanes - 1];
    rows[finished] = rows[Lanes - 1];
    interleave_lanes<Lanes - 1>(lanes, rows);
  }
}

/// Runs `count` eliminators to the end, interleaving the steps of up to 8 at a time
/// (interleave_lanes).
template <class Eliminator>
RIBBON_HD void interleave(Eliminator* eliminators, unsigned count) {
  constexpr unsigned max_lanes = 8;
  for (unsigned first = 0; first < count; first += max_lanes) {
    Eliminator* lanes[max_lanes];
    typename Eliminator::row_state rows[max_lanes];
    unsigned active = 0;
    for (unsigned i = first; i < count && i < first + max_lanes; ++i) {
      if (eliminators[i].done()) continue;
      lanes[active] = eliminators + i;
      rows[active] = eliminators[i].row();
      ++active;
    }
    switch (active) {
      case 0: break;
      case 1: interleave_lanes<1>(lanes, rows); break;
      case 2: interleave_lanes<2>(lanes, rows); break;
      case 3: interleave_lanes<3>(lanes, rows); break;
      case 4: interleave_lanes<4>(lanes, rows); break;
      case 5: interleave_lanes<5>(lanes, rows); break;
      case 6: interleave_lanes<6>(lanes, rows); break;
      case 7: interleave_lanes<7>(lanes, rows); break;
      default: interleave_lanes<8>(lanes, rows); break;
    }
  }
}

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

/// The value a free (pivot-less) column gets: 0, which makes the solution the unique one with
/// zeros there, a function of the kept rows alone and not of the order they were eliminated
/// in. A homogeneous filter needs a random member of its solution space instead (all right
/// sides are 0, so zeros everywhere would accept every key): pseudo-random bits, a function of
/// the seed, the layer's size and the column, the same for every builder.
RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t free_column_value(const filter_params& p,
                                                              const layer_geometry& g,
                                                              std::uint64_t column,
                                                              std::uint32_t bits) {
  if (p.variant != filter_variant::homogeneous) return 0;
  const std::uint64_t layer_key = mix64(p.seed ^ (g.num_starts * 0x9E3779B97F4A7C15ULL));
  return static_cast<std::uint32_t>(mix64(layer_key + column) >> (64 - bits));
}

/// Back-substitution with the number of result bits known at compile time (`Bits` > 0, every
/// block holds Bits words) or at run time (`Bits` == 0: r = p.solver_bits(), blocks hold the
/// geometry's r or r + 1 words); a constant lets the compiler keep the state words in
/// registers. Columns [first_column, end_column) of the shard starting at start `begin`.
template <unsigned Width, class Result, std::uint32_t Bits>
RIBBON_HD void back_substitute_columns(const filter_params& p, const layer_geometry& g,
                                       std::uint64_t begin, std::uint64_t end_column,
                                       std::uint64_t first_column, const word_t<Width>* coeffs,
                                       const Result* results, word_t<Width>* solution,
                                       std::uint64_t block_origin) {
  using word = word_t<Width>;
  const std::uint32_t r = Bits != 0 ? Bits : p.solver_bits();
  const std::uint64_t origin_word = g.block_word(block_origin, p.result_bits);
  word state[Bits != 0 ? Bits : 32];
  for (std::uint32_t j = 0; j < r; ++j) state[j] = 0;
  for (std::uint64_t column = end_column; column-- > first_column;) {
    const word coeff = coeffs[column];
    const std::uint32_t result =
        coeff != 0 ? results[column] : free_column_value(p, g, begin + column, r);
    for (std::uint32_t j = 0; j < r; ++j) {
      const word shifted = state[j] << 1;
      const word bit = static_cast<word>(parity(shifted & coeff) ^ ((result >> j) & 1u));
      state[j] = shifted | bit;
    }
    if (column % Width == 0) {  // begin is a multiple of Width
      const std::uint64_t block = (begin + column) / Width;
      word* out = solution + (g.block_word(block, p.result_bits) - origin_word);
      const std::uint32_t bits = Bits != 0 ? Bits : g.block_bits(block, p.result_bits);
      for (std::uint32_t j = 0; j < bits; ++j) out[j] = state[j];
    }
  }
}

/// BACK-SUBSTITUTE for the columns a shard owns, written as interleaved blocks: per block of
/// `Width` columns, r (or r + 1) words whose bit j is the solution bit of column
/// block*Width + j. solution[0] is the first word of the layer's block `block_origin` (a
/// window, as for the threshold words). With fractional bits the solver's extra bit is
/// solved everywhere and stored in the upper blocks only: keys of the lower blocks carry 0
/// there, and no key of an upper block reaches a lower one.
template <unsigned Width, class Result>
RIBBON_HD void back_substitute_shard(const filter_params& p, const layer_geometry& g,
                                     std::uint64_t shard, const word_t<Width>* coeffs,
                                     const Result* results, word_t<Width>* solution,
                                     std::uint64_t block_origin = 0) {
  const std::uint64_t begin = g.shard_begin(shard);
  const std::uint64_t end = shard_columns(g, shard, Width);
  const std::uint64_t first = shard == 0 ? 0 : Width;
  const std::uint32_t r = p.solver_bits();
  // The common sizes get their own code; others run the generic loop.
  const bool uniform = p.extra_bit_fraction == 0;
  if (uniform && r == 8 && sizeof(Result) == 1) {
    back_substitute_columns<Width, Result, 8>(p, g, begin, end, first, coeffs, results, solution,
                                              block_origin);
  } else if (uniform && r == 16 && sizeof(Result) == 2) {
    back_substitute_columns<Width, Result, 16>(p, g, begin, end, first, coeffs, results, solution,
                                               block_origin);
  } else {
    back_substitute_columns<Width, Result, 0>(p, g, begin, end, first, coeffs, results, solution,
                                              block_origin);
  }
}

}  // namespace ribbon::detail
