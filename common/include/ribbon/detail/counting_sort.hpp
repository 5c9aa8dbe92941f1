/// @file counting_sort.hpp
/// The stable counting sort of items by a small key, as places: the one serial form (the
/// distributed build's ranges, the CLI's groups); partition.hpp keeps the parallel one.
#pragma once

#include <cstdint>
#include <vector>

namespace ribbon::detail {

/// Where a stable counting sort of items 0..n-1 by key_of(i) < keys puts each item:
/// places[i]. `offsets` (keys + 1 entries) receives where each key's items begin, and n last.
template <class KeyOf>
std::vector<std::uint64_t> counting_sort_places(std::uint64_t n, std::uint64_t keys,
                                                const KeyOf& key_of,
                                                std::vector<std::uint64_t>& offsets) {
  offsets.assign(keys + 1, 0);
  for (std::uint64_t i = 0; i < n; ++i) ++offsets[key_of(i) + 1];
  for (std::uint64_t k = 0; k < keys; ++k) offsets[k + 1] += offsets[k];
  std::vector<std::uint64_t> next(offsets.begin(), offsets.end() - 1), places(n);
  for (std::uint64_t i = 0; i < n; ++i) places[i] = next[key_of(i)]++;
  return places;
}

}  // namespace ribbon::detail
