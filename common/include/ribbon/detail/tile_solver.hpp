/// @file tile_solver.hpp
/// Elimination, the GPU's way: one shard solved by a tile of lanes (tile.hpp), run on the host
/// in lockstep by the TBB build of the GPU pipeline. It follows the bucket rules of
/// shard_rules.hpp, as the CPU's shard_eliminator does, and back-substitutes with the parts
/// of back_substitution.hpp, as the CPU does, so its files are byte-identical to the CPU
/// builder's. What differs is only what the hardware demands: the band below.
///
/// The band. Rows of bucket k start in [kB, kB + B) and reach at most w - 1 columns further,
/// and rows of later buckets start at (k+1)B or later, so while bucket k is eliminated only
/// columns [kB, kB + B + w) change: the band. The tile keeps it in a ring of band_slots()
/// pivot rows in fast memory (the GPU's shared memory) and, once it moves on to bucket k+1,
/// flushes the B finished columns to the shard's column arrays in one coalesced pass. The
/// undo stack of the bucket lives beside the ring.
///
/// The work of a bucket: the lanes find its keys (a ballot over sorted hashes) and turn them
/// into rows, a lane a row; the pivot chain of each row (INSERT-ROW: xor with the pivot at the
/// leading column, shift to the next set bit) is uniform, every lane runs it on the row
/// broadcast by a shuffle, so the tile never diverges; bumped keys are moved to the front a
/// lane a key.
///
/// Buckets and the order of rows are those of shard_eliminator, so thresholds, bumped keys
/// and (free columns being 0) the solution are the same. Layers without thresholds (plain and
/// standard) are eliminated in buckets too: whether their system is consistent and what its
/// solution is do not depend on the order of the rows.
#pragma once

#include <cstdint>

#include "ribbon/config.hpp"
#include "ribbon/detail/back_substitution.hpp"
#include "ribbon/detail/bits.hpp"
#include "ribbon/detail/records.hpp"
#include "ribbon/detail/shard_rules.hpp"
#include "ribbon/detail/threshold_codes.hpp"
#include "ribbon/detail/tile.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"

namespace ribbon::detail {

/// Pivot rows in a tile's band ring: a power of two of at least B + w.
RIBBON_HD constexpr std::uint32_t band_slots(std::uint32_t bucket_size, std::uint32_t width) {
  std::uint32_t slots = 1;
  while (slots < bucket_size + width) slots *= 2;
  return slots;
}

/// A tile's band: the pivot rows of the band's columns (column c in slot c mod band_slots():
/// coeffs and results hold band_slots() entries), and the undo stack of the current bucket.
template <unsigned Width, class Result>
struct tile_band : shard_workspace<Width, Result> {
  /// Bytes of one band (arrays 16-byte aligned) for buckets of `bucket_size`.
  RIBBON_HD static constexpr std::uint64_t bytes(std::uint32_t bucket_size) {
    const std::uint64_t slots = band_slots(bucket_size, Width);
    const std::uint64_t undo = undo_capacity(bucket_size, Width);
    return slots * sizeof(word_t<Width>) + round_up(slots * sizeof(Result), 16) + 2 * undo * 4;
  }
  /// The band laid out in `memory` (16-byte aligned, bytes(bucket_size) long).
  RIBBON_HD static tile_band in(void* memory, std::uint32_t bucket_size) {
    const std::uint64_t slots = band_slots(bucket_size, Width);
    const std::uint64_t undo = undo_capacity(bucket_size, Width);
    auto* bytes = static_cast<unsigned char*>(memory);
    auto* results = bytes + slots * sizeof(word_t<Width>);
    auto* undo_columns = results + round_up(slots * sizeof(Result), 16);
    return {{reinterpret_cast<word_t<Width>*>(bytes), reinterpret_cast<Result*>(results),
             reinterpret_cast<std::uint32_t*>(undo_columns),
             reinterpret_cast<std::uint32_t*>(undo_columns) + undo}};
  }
};

/// What a tile needs to solve a shard: its band (fast memory) and the shard's column arrays
/// (shard_columns() entries each), where finished columns go for back-substitution.
template <unsigned Width, class Result>
struct tile_workspace {
  tile_band<Width, Result> band;
  word_t<Width>* coeffs;
  Result* results;
};

/// Eliminates the rows of one shard with a tile (the file's comment says how). Arguments and
/// outcome as for shard_eliminator.
template <unsigned Width, class Result, class Record, class Tile>
class tile_eliminator {
 public:
  using word = word_t<Width>;

  RIBBON_HD tile_eliminator(const Tile& tile, const filter_params& p, const layer_geometry& g,
                            std::uint64_t shard, Record* hashes, std::uint64_t count,
                            tile_workspace<Width, Result> ws, std::uint64_t* threshold_words,
                            std::uint64_t threshold_origin)
      : tile_(tile),
        p_(p),
        g_(g),
        ws_(ws),
        hashes_(hashes),
        count_(count),
        frame_(p, g, shard, threshold_words, threshold_origin, ws.band.undo_columns,
               ws.band.undo_offsets, Width),
        starts_(g.shard_end(shard) - g.shard_begin(shard)),
        columns_(shard_columns(g, shard, Width)),
        slot_mask_(band_slots(p.bucket_size, Width) - 1) {}

  RIBBON_HD shard_outcome run() {
    clear_band();
    const std::uint64_t buckets = divide_round_up(starts_, p_.bucket_size);
    for (std::uint64_t bucket = 0; bucket < buckets; ++bucket) {
      base_ = bucket * p_.bucket_size;
      eliminate_bucket();
      if (failed_) return {kept_, false};
      frame_.finish_bucket(p_, g_, bucket, base_, code_, [this](std::uint64_t limit) {
        move_to_front(bucket_first_, end_of_starts_below(bucket_first_, limit));
      });
      flush_columns(base_, base_ + p_.bucket_size);
    }
    flush_columns(buckets * p_.bucket_size, columns_);
    return {kept_, true};
  }

 private:
  using row = shard_row<Width, Result>;

  RIBBON_HD std::uint64_t start_of(std::uint64_t i) const {
    return local_start(record_hash(hashes_[i]), g_, frame_.begin);
  }

  /// The end of the run of keys from `first` on whose local start is below `limit` (the keys
  /// are sorted by start): a ballot of the lanes per step.
  RIBBON_HD std::uint64_t end_of_starts_below(std::uint64_t first, std::uint64_t limit) const {
    for (std::uint64_t i = first;; i += Tile::size) {
      const std::uint32_t below = tile_.ballot(
          [&](unsigned lane) { return i + lane < count_ && start_of(i + lane) < limit; });
      const auto run = static_cast<unsigned>(count_trailing_zeros(~std::uint64_t{below}));
      if (run < Tile::size) return i + run;
    }
  }

  RIBBON_HD void clear_band() {
    const std::uint32_t slots = slot_mask_ + 1;
    tile_.for_each_lane([&](unsigned lane) {
      for (std::uint32_t s = lane; s < slots; s += Tile::size) ws_.band.coeffs[s] = 0;
    });
    tile_.sync();
  }

  /// Inserts the keys of the bucket at base_ in descending start order, a chunk of rows (one
  /// per lane) at a time, until one fails or only rule-bumped keys are left.
  RIBBON_HD void eliminate_bucket() {
    frame_.undo.clear();
    code_ = 0;
    bucket_first_ = bucket_end_;
    bucket_end_ = end_of_starts_below(bucket_first_, base_ + p_.bucket_size);
    typename Tile::template values<row> rows{};
    for (std::uint64_t end = bucket_end_; end > bucket_first_;) {
      const std::uint64_t chunk =
          end - bucket_first_ < Tile::size ? end - bucket_first_ : Tile::size;
      tile_.for_each_lane([&](unsigned lane) {
        if (lane < chunk) {
          rows[lane] = row_of<Width, Result>(p_, g_, frame_.begin, frame_.upper_start,
                                             hashes_[end - 1 - lane]);
        }
      });
      for (unsigned i = 0; i < chunk; ++i) {
        const row next = tile_.shuffle(rows, i);
        if (next.start < frame_.rule_limit) return;  // the rest of the bucket is bumped by rule
        if (!insert(next)) return;
      }
      end -= chunk;
    }
  }

  /// INSERT-ROW on the band: false when the row fails (the bucket's code is then set, or the
  /// layer has failed).
  RIBBON_HD bool insert(row r) {
    std::uint64_t column = r.start;
    for (;;) {
      const std::uint32_t slot = static_cast<std::uint32_t>(column) & slot_mask_;
      const word pivot = ws_.band.coeffs[slot];
      if (pivot == 0) break;
      if (!reduce_with_pivot(pivot, ws_.band.results[slot], column, r.coeff, r.result)) {
        return r.result == 0 || fail(r.start);  // redundant (a repeat) or inconsistent
      }
    }
    tile_.sync();  // every lane has read the band before it changes
    // A layer without thresholds never undoes rows.
    if (g_.bumping() && !frame_.undo.push(column, r.start - base_)) return fail(r.start);
    const std::uint32_t slot = static_cast<std::uint32_t>(column) & slot_mask_;
    ws_.band.coeffs[slot] = r.coeff;
    ws_.band.results[slot] = r.result;
    return true;
  }

  /// A row starting at `start` failed: a layer without thresholds has failed; a bucket gets
  /// the code that bumps the row, and its insertions below the threshold are undone.
  RIBBON_HD bool fail(std::uint64_t start) {
    tile_.sync();
    if (!g_.bumping()) {
      failed_ = true;
      return false;
    }
    code_ = fail_bucket(p_, frame_.codes, base_ / p_.bucket_size, start - base_, frame_.undo,
                        [this](std::uint32_t column) { ws_.band.coeffs[column & slot_mask_] = 0; });
    return false;
  }

  /// Moves keys [first, end) to the front (after the keys moved before), a chunk a lane a key:
  /// every lane reads its key before any lane writes, and the front is below `first`.
  RIBBON_HD void move_to_front(std::uint64_t first, std::uint64_t end) {
    typename Tile::template values<Record> keys{};
    for (std::uint64_t i = first; i < end; i += Tile::size) {
      tile_.for_each_lane([&](unsigned lane) {
        if (i + lane < end) keys[lane] = hashes_[i + lane];
      });
      tile_.sync();
      const std::uint64_t to = kept_ + (i - first);
      tile_.for_each_lane([&](unsigned lane) {
        if (i + lane < end) hashes_[to + lane] = keys[lane];
      });
      tile_.sync();
    }
    kept_ += end - first;
  }

  /// Copies the finished columns [from, to) (clipped to the shard) to the column arrays and
  /// frees their slots for the columns B + w further on.
  RIBBON_HD void flush_columns(std::uint64_t from, std::uint64_t to) {
    if (to > columns_) to = columns_;
    tile_.sync();
    tile_.for_each_lane([&](unsigned lane) {
      for (std::uint64_t c = from + lane; c < to; c += Tile::size) {
        const std::uint32_t slot = static_cast<std::uint32_t>(c) & slot_mask_;
        ws_.coeffs[c] = ws_.band.coeffs[slot];
        ws_.results[c] = ws_.band.results[slot];
        ws_.band.coeffs[slot] = 0;
      }
    });
    tile_.sync();
  }

  const Tile& tile_;
  filter_params p_;
  layer_geometry g_;
  tile_workspace<Width, Result> ws_;
  Record* hashes_;
  std::uint64_t count_;
  shard_frame frame_;
  std::uint64_t starts_;     // start positions of the shard
  std::uint64_t columns_;    // shard_columns()
  std::uint32_t slot_mask_;  // band_slots() - 1

  std::uint64_t base_ = 0;          // first column (and start) of the current bucket
  std::uint64_t bucket_first_ = 0;  // first key of the bucket
  std::uint64_t bucket_end_ = 0;    // one past its last key
  std::uint64_t kept_ = 0;          // bumped keys moved to the front so far
  unsigned code_ = 0;
  bool failed_ = false;
};

/// Eliminates and back-substitutes one shard with a tile; the solution is written only if the
/// shard solved (see shard_eliminator and back_substitute_shard for the arguments).
template <unsigned Width, class Result, class Record, class Tile>
RIBBON_HD shard_outcome solve_shard_with_tile(const Tile& tile, const filter_params& p,
                                              const layer_geometry& g, std::uint64_t shard,
                                              Record* hashes, std::uint64_t count,
                                              tile_workspace<Width, Result> ws,
                                              std::uint64_t* threshold_words,
                                              std::uint64_t threshold_origin,
                                              word_t<Width>* solution, std::uint64_t block_origin) {
  const shard_outcome outcome =
      tile_eliminator<Width, Result, Record, Tile>(tile, p, g, shard, hashes, count, ws,
                                                   threshold_words, threshold_origin)
          .run();
  if (outcome.solved) {
    back_substitute_with_tile<Width, Result>(tile, p, g, shard, ws.coeffs, ws.results, solution,
                                             block_origin);
  }
  return outcome;
}

}  // namespace ribbon::detail
