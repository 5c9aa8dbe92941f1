/// @file build_many.hpp
/// Many standalone filters in one call: a filter per group of keys (per SSTable, Parquet file,
/// partition or segment), built across the cores. Each is byte for byte the filter that
/// filter::build() makes of that group's keys alone, with the same options.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "ribbon/filter.hpp"

namespace ribbon {

/// Where each group's keys lie in a key array: group g holds the keys at positions
/// `order[i]` (or `i`, where `order` is null) for i in [offsets[g], offsets[g + 1]).
/// `order` lets keys stay where they are (zero copy) when they come in another order, as
/// (group, key) pairs usually do: a stable sort of the pairs by group gives it.
struct key_groups {
  const std::uint64_t* offsets = nullptr;  ///< num_groups + 1 entries: 0, then non-decreasing
  std::uint64_t num_groups = 0;
  const std::uint64_t* order = nullptr;  ///< optional: offsets[num_groups] positions of keys

  /// Keys of group g.
  std::uint64_t size(std::uint64_t g) const { return offsets[g + 1] - offsets[g]; }
};

/// Builds one filter per group of `keys` (integer keys), in one arena of options.threads
/// threads: many small groups to a task, a large group sharded across the cores as
/// filter::build() shards it. A group of no keys gives an empty filter (which holds nothing).
/// Throws ribbon::error for bad options or bad groups (offsets that do not start at 0 or
/// decrease, positions in `order` beyond `key_count`), before any work.
std::vector<filter> build_many(const std::uint64_t* keys, std::uint64_t key_count,
                               const key_groups& groups, const build_options& options = {});
/// Byte-string keys.
std::vector<filter> build_many(const std::string_view* keys, std::uint64_t key_count,
                               const key_groups& groups, const build_options& options = {});
/// Key hashes (hashed with options.seed as the key kind `kind` hashes; for tools and
/// bindings that hash as they read).
std::vector<filter> build_many_from_hashes(const std::uint64_t* hashes, std::uint64_t key_count,
                                           key_kind kind, const key_groups& groups,
                                           const build_options& options = {});

namespace detail {
/// Throws ribbon::error for groups that do not describe positions in [0, key_count) (what
/// build_many() refuses before any work).
void check_groups(const key_groups& groups, std::uint64_t key_count);
}  // namespace detail

}  // namespace ribbon
