/// @file shard_interleave.hpp
/// Elimination on the CPU, several shards a thread: the steps of a few shard_eliminators
/// interleaved, so that one shard's chain of dependent loads overlaps the others'. CPU only:
/// the GPU hides latency with its many tiles instead.
#pragma once

#include "ribbon/config.hpp"

namespace ribbon::detail {

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

}  // namespace ribbon::detail
