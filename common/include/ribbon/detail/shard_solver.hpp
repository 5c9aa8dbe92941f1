/// @file shard_solver.hpp
/// Solving one shard of one layer: banded Gaussian elimination with bucket thresholds
/// (bumping), then back-substitution into interleaved solution blocks. Shards touch disjoint
/// output words, so any number of them can be solved at once (CPU tasks, GPU threads).
#pragma once

#include <cstdint>

#include "ribbon/config.hpp"
#include "ribbon/detail/bits.hpp"
#include "ribbon/detail/rows.hpp"
#include "ribbon/hash.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"

namespace ribbon::detail {

enum class insert_outcome { stored, redundant, failed };

/// INSERT-ROW of the seeds on row-major working arrays indexed by local column: eliminate
/// `coeff` (relative to `column`, bit 0 set) against stored pivots until it finds a free
/// pivot column. A row that reduces to 0 = 0 is redundant (a duplicate key); 0 = f != 0 fails.
/// On `stored`, `column` is the pivot column used.
template <class Word, class Result>
RIBBON_HD RIBBON_FORCE_INLINE insert_outcome insert_row(Word* coeffs, Result* results,
                                                        std::uint64_t& column, Word coeff,
                                                        Result result) {
  for (;;) {
    const Word pivot = coeffs[column];
    if (pivot == 0) {
      coeffs[column] = coeff;
      results[column] = result;
      return insert_outcome::stored;
    }
    coeff ^= pivot;
    result ^= results[column];
    if (coeff == 0) return result == 0 ? insert_outcome::redundant : insert_outcome::failed;
    const int shift = count_trailing_zeros(coeff);
    coeff >>= shift;
    column += static_cast<std::uint64_t>(shift);
  }
}

/// The working memory one shard needs, owned by the caller.
template <unsigned Width, class Result>
struct shard_workspace {
  word_t<Width>* coeffs;  ///< shard_columns() entries
  Result* results;        ///< shard_columns() entries
  std::uint32_t* undo_columns;  ///< bucket_size + Width entries
  std::uint32_t* undo_offsets;  ///< bucket_size + Width entries
};

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
RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t local_start(std::uint64_t hash,
                                                       const layer_geometry& g,
                                                       std::uint64_t shard_begin) {
  return fastrange64(hash, g.num_starts) - shard_begin;
}

/// Outcome of eliminating one shard.
struct shard_outcome {
  std::uint64_t bumped = 0;  ///< keys passed on to the next layer
  bool solved = true;        ///< false only for a plain layer whose system is inconsistent
};

/// Eliminates the rows of one shard.
///
/// `hashes` holds the layer hashes of the shard's keys sorted ascending (so by start).
/// Buckets are processed in ascending order, and each bucket's keys in descending start
/// order: at the first failure in a bucket the smallest threshold above the failing offset is
/// chosen, the bucket's rows below it (the most recent insertions) are undone, and those keys
/// are bumped. Keys bumped (by threshold or, at the head of shards k > 0, by rule) are moved
/// to the front of `hashes`, in ascending order. Bucket codes go to `threshold_words` (the
/// layer's array; this shard's words only).
template <unsigned Width, class Result>
RIBBON_HD shard_outcome eliminate_shard(const filter_params& p, const layer_geometry& g,
                                        std::uint64_t shard, std::uint64_t* hashes,
                                        std::uint64_t count, shard_workspace<Width, Result> ws,
                                        std::uint64_t* threshold_words) {
  const std::uint64_t begin = g.shard_begin(shard);
  const std::uint64_t columns = shard_columns(g, shard, Width);
  for (std::uint64_t c = 0; c < columns; ++c) {
    ws.coeffs[c] = 0;
    ws.results[c] = 0;
  }
  const std::uint32_t r = p.result_bits;
  shard_outcome outcome;

  if (!g.bumping()) {
    for (std::uint64_t i = count; i-- > 0;) {
      const std::uint64_t h = hashes[i];
      std::uint64_t column = local_start(h, g, begin);
      const auto result = static_cast<Result>(fingerprint(h, r));
      if (insert_row(ws.coeffs, ws.results, column, coefficients<Width>(h), result) ==
          insert_outcome::failed) {
        outcome.solved = false;
        return outcome;
      }
    }
    return outcome;
  }

  const std::uint64_t bucket_size = p.bucket_size;
  const std::uint64_t rule_limit = shard > 0 ? Width : 0;  // local starts bumped by rule
  const std::uint64_t num_buckets = (g.shard_end(shard) - begin) / bucket_size;
  const std::uint64_t first_bucket = begin / bucket_size;
  std::uint64_t next = 0;    // first key of the current bucket
  std::uint64_t kept = 0;    // bumped keys compacted to the front so far
  std::uint64_t code_word = 0;
  for (std::uint64_t bucket = 0; bucket < num_buckets; ++bucket) {
    const std::uint64_t bucket_begin = bucket * bucket_size;
    std::uint64_t end = next;
    while (end < count && local_start(hashes[end], g, begin) < bucket_begin + bucket_size) ++end;

    unsigned code = 0;
    std::uint32_t undo_size = 0;
    for (std::uint64_t i = end; i-- > next;) {
      const std::uint64_t h = hashes[i];
      const std::uint64_t start = local_start(h, g, begin);
      if (start < rule_limit) break;  // the rest of the bucket is bumped by rule
      const auto offset = static_cast<std::uint32_t>(start - bucket_begin);
      std::uint64_t column = start;
      const auto result = static_cast<Result>(fingerprint(h, r));
      const insert_outcome inserted =
          insert_row(ws.coeffs, ws.results, column, coefficients<Width>(h), result);
      if (inserted == insert_outcome::stored) {
        ws.undo_columns[undo_size] = static_cast<std::uint32_t>(column);
        ws.undo_offsets[undo_size] = offset;
        ++undo_size;
      } else if (inserted == insert_outcome::failed) {
        code = offset < p.threshold_light ? 1 : offset < p.threshold_heavy ? 2 : 3;
        const std::uint32_t threshold = p.threshold(code);
        while (undo_size > 0 && ws.undo_offsets[undo_size - 1] < threshold) {
          --undo_size;
          ws.coeffs[ws.undo_columns[undo_size]] = 0;
        }
        break;
      }
    }

    // The bumped keys of a bucket are a prefix of it (sorted by start).
    std::uint64_t bump_below = bucket_begin + p.threshold(code);
    if (bump_below < rule_limit) bump_below = rule_limit;
    for (std::uint64_t i = next; i < end && local_start(hashes[i], g, begin) < bump_below; ++i) {
      hashes[kept++] = hashes[i];
    }
    code_word |= std::uint64_t{code} << (2 * ((first_bucket + bucket) % 32));
    if ((first_bucket + bucket) % 32 == 31 || bucket + 1 == num_buckets) {
      threshold_words[(first_bucket + bucket) / 32] = code_word;
      code_word = 0;
    }
    next = end;
  }
  outcome.bumped = kept;
  return outcome;
}

/// BACK-SUBSTITUTE for the columns a shard owns, written as interleaved blocks: per block of
/// `Width` columns, r words whose bit j is the solution bit of column block*Width + j.
/// Empty columns get 0 (any value would do).
template <unsigned Width, class Result>
RIBBON_HD void back_substitute_shard(const filter_params& p, const layer_geometry& g,
                                     std::uint64_t shard, const word_t<Width>* coeffs,
                                     const Result* results, word_t<Width>* solution) {
  using word = word_t<Width>;
  const std::uint32_t r = p.result_bits;
  const std::uint64_t begin = g.shard_begin(shard);
  const std::uint64_t first_owned = shard == 0 ? 0 : Width;
  word state[32];
  for (std::uint32_t j = 0; j < r; ++j) state[j] = 0;
  for (std::uint64_t column = shard_columns(g, shard, Width); column-- > first_owned;) {
    const word coeff = coeffs[column];
    const std::uint32_t result = results[column];
    for (std::uint32_t j = 0; j < r; ++j) {
      const word shifted = state[j] << 1;
      const word bit = static_cast<word>(parity(shifted & coeff) ^ ((result >> j) & 1u));
      state[j] = shifted | bit;
    }
    if (column % Width == 0) {  // begin is a multiple of Width
      word* block = solution + (begin + column) / Width * r;
      for (std::uint32_t j = 0; j < r; ++j) block[j] = state[j];
    }
  }
}

}  // namespace ribbon::detail
