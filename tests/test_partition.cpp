// The CPU builders' grouping of records by shard and sorting of a shard
// (ribbon/detail/partition.hpp) against std::sort, on random, repeated and crowded (one-bin)
// inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ribbon/detail/partition.hpp"
#include "ribbon/detail/records.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"
#include "test_util.hpp"

namespace {

using ribbon::detail::keyed_value;
using ribbon_test::rng;

/// A w=64, r=8 layer of `shards` shards of the default size.
ribbon::layer_geometry layer_of(std::uint64_t shards) {
  const ribbon::filter_params p = ribbon::make_params(64, 8);
  return ribbon::bumped_geometry(shards * p.shard_size, p);
}

/// Groups `hashes` by shard with partition_by_shard, sorts each group with sort_shard, and
/// checks every group against std::sort of the hashes that belong to its shard.
template <class Record>
void check_grouped_and_sorted(const ribbon::layer_geometry& g, const std::vector<Record>& records) {
  std::vector<Record> out(records.size());
  std::vector<std::uint64_t> offsets;
  ribbon::detail::partition_by_shard(
      records.size(), [&](std::uint64_t i) { return records[i]; }, g, out.data(), offsets, nullptr,
      nullptr);
  ASSERT_EQ(offsets.size(), g.num_shards() + 1);
  ASSERT_EQ(offsets.back(), records.size());
  std::vector<std::vector<std::uint64_t>> expected(g.num_shards());
  for (const Record& r : records) {
    expected[g.shard_of(ribbon::detail::record_hash(r))].push_back(ribbon::detail::record_hash(r));
  }
  std::vector<Record> scratch;
  for (std::uint64_t s = 0; s < g.num_shards(); ++s) {
    SCOPED_TRACE("shard " + std::to_string(s));
    Record* group = out.data() + offsets[s];
    const std::uint64_t count = offsets[s + 1] - offsets[s];
    ribbon::detail::sort_shard(group, count, g, s, scratch);
    std::sort(expected[s].begin(), expected[s].end());
    std::vector<std::uint64_t> got;
    for (std::uint64_t i = 0; i < count; ++i) got.push_back(ribbon::detail::record_hash(group[i]));
    ASSERT_EQ(got, expected[s]);
  }
}

TEST(SortShard, RandomHashesOfEveryShardSize) {
  rng random(11);
  const ribbon::layer_geometry g = layer_of(3);
  for (std::uint64_t n : {0u, 1u, 63u, 64u, 65u, 1000u, 200000u, 400000u}) {
    SCOPED_TRACE("n " + std::to_string(n));
    std::vector<std::uint64_t> hashes(n);
    for (auto& h : hashes) h = random.next();
    check_grouped_and_sorted(g, hashes);
  }
}

TEST(SortShard, RepeatedHashesAndCrowdedBins) {
  rng random(12);
  const ribbon::layer_geometry g = layer_of(2);
  std::vector<std::uint64_t> hashes;
  for (int i = 0; i < 100000; ++i) hashes.push_back(random.next());
  // Many copies of a few hashes, and thousands of distinct hashes with one start position
  // (consecutive hashes share it): bins far above the insertion-sort size.
  for (int i = 0; i < 50000; ++i) hashes.push_back(hashes[random.below(20)]);
  const std::uint64_t base = hashes[7] & ~std::uint64_t{0xFFFF};
  for (std::uint64_t i = 0; i < 20000; ++i) hashes.push_back(base + ((i * 7919) & 0xFFFF));
  for (std::uint64_t i = hashes.size(); i > 1; --i)
    std::swap(hashes[i - 1], hashes[random.below(i)]);
  check_grouped_and_sorted(g, hashes);
}

TEST(SortShard, KeyedValuesSortByHash) {
  rng random(13);
  const ribbon::layer_geometry g = layer_of(2);
  std::vector<keyed_value> records(150000);
  for (auto& r : records) r = {random.next(), random.below(256)};
  check_grouped_and_sorted(g, records);
}

}  // namespace
