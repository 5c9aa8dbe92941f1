/// @file grouped_keys.hpp
/// Keys in groups, the input of build_many's tests (CPU and GPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ribbon/build_many.hpp"
#include "test_util.hpp"

namespace ribbon_test {

/// Keys of groups of these sizes, laid out group after group: group g from key family
/// first_family + g, so no two groups share a key.
struct grouped_keys {
  std::vector<std::uint64_t> keys;
  std::vector<std::uint64_t> offsets{0};

  explicit grouped_keys(const std::vector<std::uint64_t>& sizes, std::uint64_t first_family = 1) {
    for (std::size_t g = 0; g < sizes.size(); ++g) {
      for (std::uint64_t i = 0; i < sizes[g]; ++i) keys.push_back(key_at(first_family + g, i));
      offsets.push_back(keys.size());
    }
  }
  ribbon::key_groups groups(const std::uint64_t* order = nullptr) const {
    return {offsets.data(), offsets.size() - 1, order};
  }
  std::vector<std::uint64_t> group(std::size_t g) const {
    return {keys.begin() + static_cast<std::ptrdiff_t>(offsets[g]),
            keys.begin() + static_cast<std::ptrdiff_t>(offsets[g + 1])};
  }
};

}  // namespace ribbon_test
