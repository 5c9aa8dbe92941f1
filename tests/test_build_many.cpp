// build_many(): each group's filter is the bytes filter::build() makes of that group's keys
// alone, whatever the threads, the key order and the key kind; every member is found; bad
// groups are refused before any work.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "grouped_keys.hpp"
#include "ribbon/build_many.hpp"
#include "ribbon/error.hpp"
#include "ribbon/filter.hpp"
#include "test_util.hpp"

namespace {

using ribbon_test::grouped_keys;
using ribbon_test::rng;
using ribbon_test::scaled;

/// Sizes around the structure's edges: empty, one key, two, the width, a few shards' worth.
std::vector<std::uint64_t> edge_sizes() {
  return {0, 1, 2, 64, 1000, 0, 3, scaled(100000, 20000), 127, 128, 129, 5000};
}

ribbon::build_options options_with(std::uint32_t threads) {
  ribbon::build_options o;
  o.threads = threads;
  o.shard_size = 4096;  // several shards in the largest group
  return o;
}

TEST(BuildMany, EachGroupIsItsOwnFilterByteForByte) {
  const grouped_keys data(edge_sizes());
  for (std::uint32_t threads : {1u, 2u, 8u}) {
    const auto filters = ribbon::build_many(data.keys.data(), data.keys.size(), data.groups(),
                                            options_with(threads));
    ASSERT_EQ(filters.size(), edge_sizes().size());
    for (std::size_t g = 0; g < filters.size(); ++g) {
      const std::vector<std::uint64_t> keys = data.group(g);
      const ribbon::filter alone = ribbon::filter::build(keys.data(), keys.size(), options_with(1));
      EXPECT_EQ(filters[g].serialize(), alone.serialize())
          << "group " << g << ", " << threads << " threads";
      EXPECT_EQ(filters[g].key_count(), keys.size());
      for (std::uint64_t k : keys) ASSERT_TRUE(filters[g].contains(k)) << "group " << g;
    }
  }
}

TEST(BuildMany, FiltersOfOneShardSolvedTogetherAreEachTheirOwn) {
  // At the default shard size, groups up to about 10^5 keys have a one-shard layer 0 with
  // bumped keys, which build_many eliminates a few at a time on one thread; the rest, and
  // groups of several shards, go the way of a lone build. Runs of such groups, broken by
  // empty, tiny and large ones, and every variant (a standard layer 0 is not shared).
  const grouped_keys data({3000, 10'000, 20'000, 0, 50'000, 7000, 1, scaled(300'000, 300'000), 9000,
                           12'000, 4000, 2, 30'000, 60'000, 11'000});
  for (ribbon::filter_variant variant :
       {ribbon::filter_variant::bumped, ribbon::filter_variant::standard}) {
    for (std::uint32_t threads : {1u, 2u}) {
      ribbon::build_options o;
      o.threads = threads;
      o.variant = variant;
      const auto filters = ribbon::build_many(data.keys.data(), data.keys.size(), data.groups(), o);
      ASSERT_EQ(filters.size(), data.offsets.size() - 1);
      for (std::size_t g = 0; g < filters.size(); ++g) {
        const std::vector<std::uint64_t> keys = data.group(g);
        const ribbon::filter alone = ribbon::filter::build(keys.data(), keys.size(), o);
        ASSERT_EQ(filters[g].serialize(), alone.serialize())
            << "group " << g << ", " << threads << " threads";
      }
    }
  }
}

TEST(BuildMany, KeysInAnyOrderThroughTheOrderArray) {
  // Pairs as they come: shuffled, then a stable sort by group gives `order`.
  const grouped_keys data({300, 0, 2000, 1, 70});
  std::vector<std::uint64_t> shuffled = data.keys;
  std::vector<std::uint64_t> group_of(data.keys.size());
  for (std::size_t g = 0; g + 1 < data.offsets.size(); ++g) {
    for (std::uint64_t i = data.offsets[g]; i < data.offsets[g + 1]; ++i) group_of[i] = g;
  }
  rng random(7);
  std::vector<std::uint64_t> permutation(data.keys.size());
  std::iota(permutation.begin(), permutation.end(), 0);
  for (std::size_t i = permutation.size(); i > 1; --i) {
    std::swap(permutation[i - 1], permutation[random.below(i)]);
  }
  std::vector<std::uint64_t> position_of(data.keys.size());  // where key i went
  for (std::size_t i = 0; i < permutation.size(); ++i) {
    shuffled[i] = data.keys[permutation[i]];
    position_of[permutation[i]] = i;
  }
  std::vector<std::uint64_t> order(data.keys.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = position_of[i];
  const auto in_place =
      ribbon::build_many(data.keys.data(), data.keys.size(), data.groups(), options_with(2));
  const auto through_order = ribbon::build_many(shuffled.data(), shuffled.size(),
                                                data.groups(order.data()), options_with(2));
  ASSERT_EQ(in_place.size(), through_order.size());
  for (std::size_t g = 0; g < in_place.size(); ++g) {
    EXPECT_EQ(in_place[g].serialize(), through_order[g].serialize()) << "group " << g;
  }
}

TEST(BuildMany, ByteStringKeysAndHashes) {
  std::vector<std::string> texts;
  std::vector<std::uint64_t> offsets{0};
  for (std::uint64_t size : {5u, 0u, 900u, 64u}) {
    for (std::uint64_t i = 0; i < size; ++i)
      texts.push_back("g" + std::to_string(offsets.size()) + ":" + std::to_string(i));
    offsets.push_back(texts.size());
  }
  const std::vector<std::string_view> views(texts.begin(), texts.end());
  const ribbon::key_groups groups{offsets.data(), offsets.size() - 1, nullptr};
  const auto filters = ribbon::build_many(views.data(), views.size(), groups, options_with(2));
  std::vector<std::uint64_t> hashes(views.size());
  for (std::size_t i = 0; i < views.size(); ++i) {
    hashes[i] = ribbon::hash_bytes(views[i].data(), views[i].size(), 0);
  }
  const auto from_hashes = ribbon::build_many_from_hashes(
      hashes.data(), hashes.size(), ribbon::key_kind::bytes, groups, options_with(1));
  for (std::size_t g = 0; g + 1 < offsets.size(); ++g) {
    const ribbon::filter alone = ribbon::filter::build(
        views.data() + offsets[g], offsets[g + 1] - offsets[g], options_with(1));
    EXPECT_EQ(filters[g].serialize(), alone.serialize()) << "group " << g;
    EXPECT_EQ(from_hashes[g].serialize(), alone.serialize()) << "group " << g;
    for (std::uint64_t i = offsets[g]; i < offsets[g + 1]; ++i) {
      ASSERT_TRUE(filters[g].contains(views[i]));
    }
  }
}

TEST(BuildMany, BadGroupsAreRefused) {
  const std::vector<std::uint64_t> keys{1, 2, 3};
  const std::vector<std::uint64_t> not_from_zero{1, 3};
  const std::vector<std::uint64_t> decreasing{0, 3, 2};
  const std::vector<std::uint64_t> too_many{0, 4};
  const std::vector<std::uint64_t> whole{0, 3};
  const std::vector<std::uint64_t> bad_order{0, 1, 3};
  for (const auto& [offsets, order, text] :
       {std::tuple{&not_from_zero, (const std::uint64_t*)nullptr, "first group offset"},
        std::tuple{&decreasing, (const std::uint64_t*)nullptr, "decrease"},
        std::tuple{&too_many, (const std::uint64_t*)nullptr, "more than"},
        std::tuple{&whole, bad_order.data() + 1, "not a key position"}}) {
    const ribbon::key_groups groups{offsets->data(), offsets->size() - 1, order};
    try {
      (void)ribbon::build_many(keys.data(), keys.size(), groups);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const ribbon::error& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  }
  const ribbon::key_groups none{whole.data(), 0, nullptr};
  EXPECT_TRUE(ribbon::build_many(keys.data(), keys.size(), none).empty());
}

}  // namespace
