// What every stage of the oneTBB layer builder (layered_builder.hpp) shares: the stage clocks,
// the per-thread working memory of the shard solver, a layer's sections in memory and the
// windows of them that a shard range writes, and the gather of each shard's front records (its
// bumped keys, or its distinct keys) into one run.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "ribbon/detail/aligned_memory.hpp"
#include "ribbon/detail/shard_solver.hpp"
#include "ribbon/format.hpp"

namespace ribbon::detail {

using clock_type = std::chrono::steady_clock;

inline double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

inline std::int64_t nanoseconds_since(clock_type::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - start).count();
}

/// Shards whose elimination steps one thread interleaves: 3 kept the rows in registers and
/// built fastest at 10^7 keys, 1 and 2 threads, of 2, 3, 4 and 8 (bench/RESULTS.md,
/// "Rows in registers").
inline constexpr unsigned interleaved_shards = 3;

/// Per-thread working memory of the shard solver: one set of arrays per interleaved shard.
template <unsigned Width, class Result, class Record>
struct workspace {
  struct lane_arrays {
    std::vector<word_t<Width>> coeffs;
    std::vector<Result> results;
    std::vector<std::uint32_t> undo_columns, undo_offsets;
  };
  lane_arrays lanes[interleaved_shards];
  std::vector<Record> scratch;

  shard_workspace<Width, Result> lane(unsigned index, std::uint64_t columns,
                                      std::uint32_t bucket_size) {
    lane_arrays& a = lanes[index];
    if (a.coeffs.size() < columns) {
      a.coeffs.resize(columns);
      a.results.resize(columns);
    }
    const std::uint32_t undo = undo_capacity(bucket_size, Width);
    if (a.undo_columns.size() < undo) {
      a.undo_columns.resize(undo);
      a.undo_offsets.resize(undo);
    }
    return {a.coeffs.data(), a.results.data(), a.undo_columns.data(), a.undo_offsets.data()};
  }
};

/// Where a shard range's output goes: windows of the layer's two sections that start at the
/// range's first threshold word and first solution block.
struct section_windows {
  std::uint64_t* thresholds;
  void* solution;
};

/// A layer's two sections in memory, allocated for its geometry, until the layer is solved
/// and they are handed over.
class layer_sections {
 public:
  layer_sections(const filter_params& p, const layer_geometry& g)
      : thresholds_(allocate_aligned(g.threshold_words(p.bucket_size) * 8)),
        solution_(allocate_aligned(g.solution_bytes(p.width, p.result_bits))),
        bumping_(g.bumping()) {}

  /// The windows of the whole layer (from shard 0).
  section_windows windows() const {
    return {reinterpret_cast<std::uint64_t*>(thresholds_.get()), solution_.get()};
  }

  /// Points `layer` at the sections and moves them into `buffers`, which keep them for the
  /// filter. A layer without bumping has no thresholds (a null section, as a file gives).
  void hand_over(format::layer_image& layer, std::vector<aligned_bytes>& buffers) {
    layer.thresholds = bumping_ ? thresholds_.get() : nullptr;
    layer.solution = solution_.get();
    if (bumping_) buffers.push_back(std::move(thresholds_));
    buffers.push_back(std::move(solution_));
  }

 private:
  aligned_bytes thresholds_;
  aligned_bytes solution_;
  bool bumping_;
};

/// Moves the first counts[s] records of each shard's group (its bumped keys, or its distinct
/// keys) to the front of `hashes`, in shard order; returns how many there are.
template <class Record>
std::uint64_t gather_fronts(Record* hashes, const std::vector<std::uint64_t>& offsets,
                            const std::vector<std::uint64_t>& counts) {
  std::uint64_t gathered = 0;
  for (std::size_t s = 0; s < counts.size(); ++s) {
    if (offsets[s] != gathered) std::copy_n(hashes + offsets[s], counts[s], hashes + gathered);
    gathered += counts[s];
  }
  return gathered;
}

}  // namespace ribbon::detail
