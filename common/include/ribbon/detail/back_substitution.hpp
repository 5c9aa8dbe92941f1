/// @file back_substitution.hpp
/// Back-substitution, the stage after elimination: one shard's pivot rows solved from the last
/// column down into interleaved solution blocks. Written once, against a tile (tile.hpp): the
/// GPU runs it with the tile that eliminated the shard, the CPU builder with a one-lane host
/// tile, whose loops the compiler flattens into the plain serial loop.
#pragma once

#include <cstdint>

#include "ribbon/config.hpp"
#include "ribbon/detail/bits.hpp"
#include "ribbon/detail/shard_rules.hpp"
#include "ribbon/detail/tile.hpp"
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

/// BACK-SUBSTITUTE for the columns shard `shard` owns (all but the first block of shards
/// k > 0, which the previous shard solves), written as interleaved blocks: per block of
/// `Width` columns, r (or r + 1) words whose bit j is the solution bit of column
/// block*Width + j. solution[0] is the first word of the layer's block `block_origin` (a
/// window, as for the threshold words). With fractional bits the solver's extra bit is
/// solved everywhere and stored in the upper blocks only: keys of the lower blocks carry 0
/// there, and no key of an upper block reaches a lower one.
///
/// Lane l of the tile carries result bits l, l + size, ...; the columns are read a chunk (one
/// per lane) at a time and broadcast. `Bits` > 0 says r at compile time (every block then holds
/// Bits words), which lets a compiler keep the state words in registers; 0 reads it at run
/// time (r = p.solver_bits(), blocks of the geometry's r or r + 1 words).
template <unsigned Width, class Result, std::uint32_t Bits, class Tile>
RIBBON_HD void back_substitute_with_tile(const Tile& tile, const filter_params& p,
                                         const layer_geometry& g, std::uint64_t shard,
                                         const word_t<Width>* coeffs, const Result* results,
                                         word_t<Width>* solution, std::uint64_t block_origin) {
  using word = word_t<Width>;
  constexpr unsigned bits_per_lane = ((Bits != 0 ? Bits : 32) + Tile::size - 1) / Tile::size;
  struct lane_state {
    word bits[bits_per_lane];
  };
  struct column_entry {
    word coeff;
    std::uint32_t result;
  };
  const std::uint64_t begin = g.shard_begin(shard);
  const std::uint64_t first = shard == 0 ? 0 : Width;
  const std::uint32_t r = Bits != 0 ? Bits : p.solver_bits();
  const std::uint64_t origin_word = g.block_word(block_origin, p.result_bits);
  typename Tile::template values<lane_state> state{};
  typename Tile::template values<column_entry> entries{};
  tile.for_each_lane([&](unsigned lane) {
    for (unsigned k = 0; k < bits_per_lane; ++k) state[lane].bits[k] = 0;
  });
  for (std::uint64_t top = shard_columns(g, shard, Width); top > first;) {
    const std::uint64_t chunk = top - first < Tile::size ? top - first : Tile::size;
    tile.for_each_lane([&](unsigned lane) {
      if (lane >= chunk) return;
      const std::uint64_t column = top - 1 - lane;
      const word coeff = coeffs[column];
      entries[lane] = {coeff, coeff != 0 ? static_cast<std::uint32_t>(results[column])
                                         : free_column_value(p, g, begin + column, r)};
    });
    for (unsigned i = 0; i < chunk; ++i) {
      const std::uint64_t column = top - 1 - i;
      const column_entry entry = tile.shuffle(entries, i);
      tile.for_each_lane([&](unsigned lane) {
        for (unsigned k = 0; k < bits_per_lane; ++k) {
          const unsigned j = lane + k * Tile::size;
          if (j >= r) break;
          const word shifted = state[lane].bits[k] << 1;
          const auto bit =
              static_cast<word>(parity(shifted & entry.coeff) ^ ((entry.result >> j) & 1u));
          state[lane].bits[k] = shifted | bit;
        }
      });
      if (column % Width != 0) continue;  // begin is a multiple of Width
      const std::uint64_t block = (begin + column) / Width;
      word* out = solution + (g.block_word(block, p.result_bits) - origin_word);
      const std::uint32_t bits = Bits != 0 ? Bits : g.block_bits(block, p.result_bits);
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

/// back_substitute_with_tile() on one CPU thread. The common sizes get their own code (r known
/// at compile time); others run the generic loop.
template <unsigned Width, class Result>
RIBBON_HD void back_substitute_shard(const filter_params& p, const layer_geometry& g,
                                     std::uint64_t shard, const word_t<Width>* coeffs,
                                     const Result* results, word_t<Width>* solution,
                                     std::uint64_t block_origin = 0) {
  const host_tile<1> one_lane;
  const std::uint32_t r = p.solver_bits();
  const bool uniform = p.extra_bit_fraction == 0;
  if (uniform && r == 8 && sizeof(Result) == 1) {
    back_substitute_with_tile<Width, Result, 8>(one_lane, p, g, shard, coeffs, results, solution,
                                                block_origin);
  } else if (uniform && r == 16 && sizeof(Result) == 2) {
    back_substitute_with_tile<Width, Result, 16>(one_lane, p, g, shard, coeffs, results, solution,
                                                 block_origin);
  } else {
    back_substitute_with_tile<Width, Result, 0>(one_lane, p, g, shard, coeffs, results, solution,
                                                block_origin);
  }
}

}  // namespace ribbon::detail
