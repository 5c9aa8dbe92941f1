// Stage: memory planning. How a bulk build shares its memory limit among the solver
// workspaces, the I/O buffers, the partition files and the keys (docs/cli.md, "Memory").
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "ribbon/detail/records.hpp"
#include "ribbon/params.hpp"

namespace ribbon::detail {

/// In-memory hashes are kept in chunks of this many (no reallocation copies).
constexpr std::uint64_t chunk_shift = 20;
constexpr std::uint64_t chunk_hashes = std::uint64_t{1} << chunk_shift;

/// Partition files of a layer: at most this many (one buffer each).
constexpr std::uint32_t max_partition_bits = 10;

/// The smallest I/O buffer (partition-file reads, bumped keys, the file write) and the
/// smallest write buffer of a partition file.
constexpr std::uint64_t min_io_buffer_bytes = 64 << 10;
constexpr std::uint64_t min_partition_buffer_bytes = 4 << 10;

/// Bytes of a key's record: its hash, and in retrieval its value (packed_keyed_value).
inline std::uint64_t record_bytes(const filter_params& p) {
  return is_retrieval(p.variant) ? sizeof(packed_keyed_value) : sizeof(std::uint64_t);
}

/// Bytes per key of the in-memory build: the key records, the layer's partitioned copy and
/// the solution (r bits per slot, slots about equal to keys) plus a byte of slack.
inline std::uint64_t in_memory_bytes_per_key(const filter_params& p) {
  return 2 * record_bytes(p) + divide_round_up(p.result_bits, 8) + 1;
}

/// Keys of the smallest shard-range pass (two shards' keys; a shard holds about S keys).
inline std::uint64_t min_pass_keys(const filter_params& p) {
  return 2 * p.shard_size + (p.shard_size >> 2);
}

/// How a bulk build shares its memory limit among its consumers (docs/cli.md, "Memory"). What it
/// does not count (code, libraries, thread stacks, small allocations) is the documented
/// constant above the limit.
struct memory_plan {
  std::uint64_t limit = 0;            ///< the caller's limit
  std::uint64_t floor = 0;            ///< the smallest limit this build can honour
  std::uint32_t solver_threads = 1;   ///< threads whose solver workspaces fit
  std::uint64_t workspace_bytes = 0;  ///< all of their workspaces
  std::uint64_t io_buffer_bytes = 0;  ///< each of the three I/O buffers
  std::uint64_t partition_bytes = 0;  ///< the write buffers of all partition files together
  /// For key hashes, partitioned copies, carried keys and sections: max(limit, floor) less
  /// the above.
  std::uint64_t budget = 0;
  /// The same from the caller's limit (0 below the floor): past it the hashes spill.
  std::uint64_t spill_budget = 0;

  /// Keys whose layer fits the budget in memory (in_memory_bytes_per_key each).
  std::uint64_t in_memory_keys(const filter_params& p) const {
    return budget / in_memory_bytes_per_key(p);
  }
  /// Write-buffer bytes of each of `files` partition files.
  std::uint64_t partition_buffer_bytes(std::uint64_t files) const;
  /// Whether the caller's limit is honoured (at least the floor). Below the floor a build
  /// works at the floor, as best it can (bulk_options::memory_limit).
  bool strict() const { return limit >= floor; }
};

/// The plan for `limit` bytes and `threads` threads (0: all).
memory_plan plan_memory(const filter_params& p, std::uint64_t limit, std::uint32_t threads);

/// Finds the smallest limit (in whole MiB) whose plan fits: smallest_limit_mib() with the
/// build's parameters, threads and caller.
using limit_search = std::function<std::uint64_t(const std::function<bool(const memory_plan&)>&)>;

/// "a memory limit of at least 123M", for memory_limit_error (0 MiB: none suffices).
inline std::string needed_limit_text(std::uint64_t mib) {
  return mib ? "a memory limit of at least " + std::to_string(mib) + "M"
             : "more memory than any limit";
}

/// The smallest limit, in whole MiB, of the builder's caller (`of_caller` maps it to the
/// builder's limit; empty: the same) whose plan `fits`; 0 if none up to 2^40 MiB does.
std::uint64_t smallest_limit_mib(const filter_params& p, std::uint32_t threads,
                                 const std::function<std::uint64_t(std::uint64_t)>& of_caller,
                                 const std::function<bool(const memory_plan&)>& fits);

}  // namespace ribbon::detail
