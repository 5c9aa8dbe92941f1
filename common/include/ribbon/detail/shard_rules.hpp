/// @file shard_rules.hpp
/// The rules of solving one shard that both eliminators follow, written once: the CPU's
/// shard_eliminator (shard_eliminator.hpp) and the GPU's tile_eliminator (tile_solver.hpp)
/// differ only in how the hardware walks the rows, never in which row goes where, which
/// bucket gets which code, or which keys are bumped. Here: the working memory, a key's row,
/// the pivot step, the undo stack of a bucket, its code on failure and its bumped keys.
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

/// Local starts of `shard` below this are bumped by rule: the head of every shard but the
/// first, whose rows would reach into the previous shard's columns.
RIBBON_HD inline std::uint64_t rule_bump_limit(const layer_geometry& g, std::uint64_t shard,
                                               std::uint32_t width) {
  return g.sharded() && shard > 0 ? width : 0;
}

/// A key's equation in its shard: local start, coefficients, right side.
template <unsigned Width, class Result>
struct shard_row {
  std::uint64_t start;
  word_t<Width> coeff;
  Result result;
};

/// The equation of `record` in the shard whose first start is `shard_begin`; its right side
/// has r + 1 bits from start `upper_start` (upper_first_start()) on.
template <unsigned Width, class Result, class Record>
RIBBON_HD RIBBON_FORCE_INLINE shard_row<Width, Result> row_of(const filter_params& p,
                                                              const layer_geometry& g,
                                                              std::uint64_t shard_begin,
                                                              std::uint64_t upper_start,
                                                              const Record& record) {
  const std::uint64_t h = record_hash(record);
  const std::uint64_t start = local_start(h, g, shard_begin);
  const std::uint32_t bits = p.result_bits + (shard_begin + start >= upper_start ? 1u : 0u);
  return {start, coefficients<Width>(h), static_cast<Result>(record_rhs(p, bits, record))};
}

/// The rows of the current bucket that a failure may undo, most recent last: the column each
/// was stored at and the offset of its start in the bucket.
class undo_stack {
 public:
  RIBBON_HD undo_stack(std::uint32_t* columns, std::uint32_t* offsets, std::uint32_t capacity)
      : columns_(columns), offsets_(offsets), capacity_(capacity) {}

  RIBBON_HD void clear() { size_ = 0; }

  /// Notes a row stored at `column`; false, noting nothing, when the stack is full (the row
  /// then fails, see undo_capacity()).
  RIBBON_HD RIBBON_FORCE_INLINE bool push(std::uint64_t column, std::uint64_t offset) {
    if (RIBBON_UNLIKELY(size_ == capacity_)) return false;
    columns_[size_] = static_cast<std::uint32_t>(column);
    offsets_[size_] = static_cast<std::uint32_t>(offset);
    ++size_;
    return true;
  }

  /// Undoes the rows whose offset is below `threshold`, the most recent first: clear(column)
  /// for each.
  template <class Clear>
  RIBBON_HD void pop_below(std::uint32_t threshold, Clear&& clear) {
    while (size_ > 0 && offsets_[size_ - 1] < threshold) {
      --size_;
      clear(columns_[size_]);
    }
  }

 private:
  std::uint32_t* columns_;
  std::uint32_t* offsets_;
  std::uint32_t capacity_;
  std::uint32_t size_ = 0;
};

/// The code of a bucket whose first failure is a row at `offset`: the smallest threshold above
/// the offset, so that the failing row and every row below it are bumped.
RIBBON_HD inline unsigned bucket_code_for_failure(const filter_params& p, std::uint32_t offset) {
  return offset < p.threshold_light ? 1 : offset < p.threshold_heavy ? 2 : 3;
}

/// A bucket's answer to its first failing row, at `offset`: the code the writer allows
/// (bucket_code_for_failure() or above), and the undo of the rows below its threshold.
/// Returns the code.
template <class Clear>
RIBBON_HD unsigned fail_bucket(const filter_params& p, const shard_code_writer& codes,
                               std::uint64_t bucket, std::uint64_t offset, undo_stack& undo,
                               Clear&& clear) {
  const unsigned code = codes.code_for_failure(
      bucket, bucket_code_for_failure(p, static_cast<std::uint32_t>(offset)));
  undo.pop_below(p.threshold(code), clear);
  return code;
}

/// Local starts of the bucket at `bucket_begin` below this are bumped: those below its
/// code's threshold (a layer with thresholds), and those below `rule_limit`
/// (rule_bump_limit()).
RIBBON_HD inline std::uint64_t bump_limit(const filter_params& p, const layer_geometry& g,
                                          std::uint64_t bucket_begin, unsigned code,
                                          std::uint64_t rule_limit) {
  const std::uint64_t below = bucket_begin + (g.bumping() ? p.threshold(code) : 0);
  return below < rule_limit ? rule_limit : below;
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

/// What eliminating a shard derives once from its layer, the same for the CPU's
/// shard_eliminator and the GPU's tile_eliminator.
struct shard_frame {
  shard_code_writer codes;    ///< where the shard's buckets' threshold codes go
  std::uint64_t begin;        ///< first start position of the shard
  std::uint64_t rule_limit;   ///< local starts below this are bumped by rule
  std::uint64_t upper_start;  ///< starts from this on are in blocks of r + 1 bits
  undo_stack undo;            ///< the current bucket's rows, undone where it fails

  RIBBON_HD shard_frame(const filter_params& p, const layer_geometry& g, std::uint64_t shard,
                        std::uint64_t* threshold_words, std::uint64_t threshold_origin,
                        std::uint32_t* undo_columns, std::uint32_t* undo_offsets,
                        std::uint32_t width)
      : codes(code_writer_for(p, g, shard, threshold_words, threshold_origin)),
        begin(g.shard_begin(shard)),
        rule_limit(rule_bump_limit(g, shard, width)),
        upper_start(upper_first_start(g, width)),
        undo(undo_columns, undo_offsets, undo_capacity(p.bucket_size, width)) {}

  /// Finishes the bucket `bucket` (first start `base`) with code `code`: in a sharded layer
  /// its keys whose starts are below the bump limit (a prefix: keys are sorted by start) go to
  /// the front, by `move_bumped(limit)`, which each eliminator does its own way; a bumped
  /// layer records the code.
  template <class MoveBumped>
  RIBBON_HD void finish_bucket(const filter_params& p, const layer_geometry& g,
                               std::uint64_t bucket, std::uint64_t base, unsigned code,
                               MoveBumped&& move_bumped) {
    if (!g.sharded()) return;
    move_bumped(bump_limit(p, g, base, code, rule_limit));
    if (g.bumping()) codes.record(bucket, code);
  }
};

/// Outcome of eliminating one shard.
struct shard_outcome {
  std::uint64_t bumped = 0;  ///< keys passed on to the next layer
  bool solved = true;        ///< false only for a plain layer whose system is inconsistent
};

}  // namespace ribbon::detail
