/// @file back_substitution.hpp
/// Back-substitution, the stage after elimination: one shard's pivot rows solved from the last
/// column down into interleaved solution blocks. Its parts are written once (the columns a
/// shard owns, a column's right side, the step of one result bit, where a block's words go);
/// two walks put them together: one thread over every result bit (the CPU builder), or a tile
/// whose lanes carry a few result bits each (the GPU, tile_solver.hpp).
#pragma once

#include <cstdint>

#include "ribbon/config.hpp"
#include "ribbon/detail/bits.hpp"
#include "ribbon/detail/shard_rules.hpp"
#include "ribbon/hash.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"

namespace ribbon::detail {

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

/// The first column shard `shard` back-substitutes: the first block of shards k > 0 belongs to
/// the previous shard, whose rows reach into it.
RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t first_owned_column(std::uint64_t shard,
                                                               std::uint32_t width) {
  return shard == 0 ? 0 : width;
}

/// Column `column` of the shard starting at `begin`, as back-substitution reads it: its pivot
/// row's coefficients and right side, or for a free column no coefficients and
/// free_column_value().
template <unsigned Width>
struct substitution_column {
  word_t<Width> coeff;
  std::uint32_t result;
};
template <unsigned Width, class Result>
RIBBON_HD RIBBON_FORCE_INLINE substitution_column<Width> substitution_column_at(
    const filter_params& p, const layer_geometry& g, std::uint64_t begin, std::uint64_t column,
    const word_t<Width>* coeffs, const Result* results, std::uint32_t r) {
  const word_t<Width> coeff = coeffs[column];
  return {coeff, coeff != 0 ? static_cast<std::uint32_t>(results[column])
                            : free_column_value(p, g, begin + column, r)};
}

/// One step of BACK-SUBSTITUTE for result bit j: `state` holds bit j of the solution of the
/// next w - 1 columns; the column's bit is the parity of its row against them, plus bit j of
/// its right side. Returns the state with that bit shifted in.
template <class Word>
RIBBON_HD RIBBON_FORCE_INLINE Word substitute_bit(Word state, Word coeff, std::uint32_t result,
                                                  std::uint32_t j) {
  const Word shifted = state << 1;
  return shifted | static_cast<Word>(parity(shifted & coeff) ^ ((result >> j) & 1u));
}

/// The words of block `block` in a window of the solution whose first word is the layer's
/// word `origin_word` (g.block_word() of the window's first block).
template <unsigned Width>
RIBBON_HD RIBBON_FORCE_INLINE word_t<Width>* block_words(const filter_params& p,
                                                         const layer_geometry& g,
                                                         std::uint64_t block,
                                                         word_t<Width>* solution,
                                                         std::uint64_t origin_word) {
  return solution + (g.block_word(block, p.result_bits) - origin_word);
}

/// The walk of one thread, with the number of result bits known at compile time (`Bits` > 0,
/// every block holds Bits words) or at run time (`Bits` == 0: r = p.solver_bits(), blocks hold
/// the geometry's r or r + 1 words); a constant lets the compiler keep the state words in
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
    const substitution_column<Width> c =
        substitution_column_at<Width>(p, g, begin, column, coeffs, results, r);
    for (std::uint32_t j = 0; j < r; ++j) state[j] = substitute_bit(state[j], c.coeff, c.result, j);
    if (column % Width == 0) {  // begin is a multiple of Width
      const std::uint64_t block = (begin + column) / Width;
      word* out = block_words<Width>(p, g, block, solution, origin_word);
      const std::uint32_t bits = Bits != 0 ? Bits : g.block_bits(block, p.result_bits);
      for (std::uint32_t j = 0; j < bits; ++j) out[j] = state[j];
    }
  }
}

/// BACK-SUBSTITUTE for the columns shard `shard` owns (first_owned_column() on), written as
/// interleaved blocks: per block of `Width` columns, r (or r + 1) words whose bit j is the
/// solution bit of column block*Width + j. solution[0] is the first word of the layer's block
/// `block_origin` (a window, as for the threshold words). With fractional bits the solver's
/// extra bit is solved everywhere and stored in the upper blocks only: keys of the lower blocks
/// carry 0 there, and no key of an upper block reaches a lower one.
template <unsigned Width, class Result>
RIBBON_HD void back_substitute_shard(const filter_params& p, const layer_geometry& g,
                                     std::uint64_t shard, const word_t<Width>* coeffs,
                                     const Result* results, word_t<Width>* solution,
                                     std::uint64_t block_origin = 0) {
  const std::uint64_t begin = g.shard_begin(shard);
  const std::uint64_t end = shard_columns(g, shard, Width);
  const std::uint64_t first = first_owned_column(shard, Width);
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

/// back_substitute_shard() with a tile (tile.hpp): lane l carries result bits l, l + size, ...;
/// the columns are read a chunk (one per lane) at a time and broadcast.
template <unsigned Width, class Result, class Tile>
RIBBON_HD void back_substitute_with_tile(const Tile& tile, const filter_params& p,
                                         const layer_geometry& g, std::uint64_t shard,
                                         const word_t<Width>* coeffs, const Result* results,
                                         word_t<Width>* solution, std::uint64_t block_origin) {
  using word = word_t<Width>;
  constexpr unsigned bits_per_lane = (32 + Tile::size - 1) / Tile::size;
  struct lane_state {
    word bits[bits_per_lane];
  };
  const std::uint64_t begin = g.shard_begin(shard);
  const std::uint64_t first = first_owned_column(shard, Width);
  const std::uint32_t r = p.solver_bits();
  const std::uint64_t origin_word = g.block_word(block_origin, p.result_bits);
  typename Tile::template values<lane_state> state{};
  typename Tile::template values<substitution_column<Width>> entries{};
  tile.for_each_lane([&](unsigned lane) {
    for (unsigned k = 0; k < bits_per_lane; ++k) state[lane].bits[k] = 0;
  });
  for (std::uint64_t top = shard_columns(g, shard, Width); top > first;) {
    const std::uint64_t chunk = top - first < Tile::size ? top - first : Tile::size;
    tile.for_each_lane([&](unsigned lane) {
      if (lane >= chunk) return;
      entries[lane] =
          substitution_column_at<Width>(p, g, begin, top - 1 - lane, coeffs, results, r);
    });
    for (unsigned i = 0; i < chunk; ++i) {
      const std::uint64_t column = top - 1 - i;
      const substitution_column<Width> entry = tile.shuffle(entries, i);
      tile.for_each_lane([&](unsigned lane) {
        for (unsigned k = 0; k < bits_per_lane; ++k) {
          const unsigned j = lane + k * Tile::size;
          if (j >= r) break;
          state[lane].bits[k] = substitute_bit(state[lane].bits[k], entry.coeff, entry.result, j);
        }
      });
      if (column % Width != 0) continue;  // begin is a multiple of Width
      const std::uint64_t block = (begin + column) / Width;
      word* out = block_words<Width>(p, g, block, solution, origin_word);
      const std::uint32_t bits = g.block_bits(block, p.result_bits);
      tile.for_each_lane([&](unsigned lane) {
        for (unsigned k = 0; k < bits_per_lane; ++k) {
          const unsigned j = lane + k * Tile::size;
          if (j < bits) out[j] = state[lane].bits[k];
        }
      });
    }
    top -= chunk;
  }
}

}  // namespace ribbon::detail
