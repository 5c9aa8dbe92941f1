// Determinism: the file bytes are a pure function of (key multiset, parameters, seed), whatever
// the thread count, the input order or the route (keys or key hashes); save/load round trips.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "ribbon/filter.hpp"
#include "ribbon/format.hpp"
#include "test_util.hpp"

namespace {

using ribbon_test::rng;

struct det_case {
  unsigned width;
  std::uint32_t r;
  std::uint64_t n;
  std::uint64_t shard_size;  // 0: default
};

std::string case_name(const det_case& c) {
  return "w" + std::to_string(c.width) + "_r" + std::to_string(c.r) + "_n" + std::to_string(c.n) +
         "_S" + std::to_string(c.shard_size);
}

void PrintTo(const det_case& c, std::ostream* os) {
  *os << case_name(c);
}

ribbon::build_options options_for(const det_case& c, std::uint32_t threads, std::uint64_t seed) {
  ribbon::build_options o;
  o.width = c.width;
  o.result_bits = c.r;
  o.shard_size = c.shard_size;
  o.seed = seed;
  o.threads = threads;
  return o;
}

std::vector<det_case> cases() {
  const std::uint64_t big = ribbon_test::scaled(300000, 60000);
  return {
      {64, 8, 3000, 0},                           // one bumped layer and a plain one
      {32, 5, 5000, 1024},                        // a few small shards
      {64, 8, 50000, 4096},                       // ~12 shards per layer 0
      {128, 16, 60000, 16384}, {64, 16, big, 0},  // default shards
      {64, 1, big, 4096},                         // ~70 shards
      {32, 32, big, 4096},     {128, 8, big, 16384},
  };
}

class Determinism : public ::testing::TestWithParam<det_case> {};

TEST_P(Determinism, SameBytesForEveryThreadCountAndRepeatedBuilds) {
  const det_case c = GetParam();
  const std::vector<std::uint64_t> keys = ribbon_test::keys_range(11, 0, c.n);
  const ribbon::filter reference = ribbon::filter::build(keys.data(), c.n, options_for(c, 1, 9));
  const std::vector<unsigned char> bytes = reference.serialize();
  ASSERT_GT(reference.num_layers(), 1u) << "the case should have several layers";
  for (std::uint32_t threads : {1u, 2u, 8u, 0u, 1u, 8u}) {
    const ribbon::filter f = ribbon::filter::build(keys.data(), c.n, options_for(c, threads, 9));
    EXPECT_TRUE(f.serialize() == bytes) << "threads " << threads;
  }
}

TEST_P(Determinism, SameBytesForAnyInputOrderAndForKeyHashes) {
  const det_case c = GetParam();
  std::vector<std::uint64_t> keys = ribbon_test::keys_range(12, 0, c.n);
  const ribbon::build_options o = options_for(c, 2, 10);
  const std::vector<unsigned char> bytes = ribbon::filter::build(keys.data(), c.n, o).serialize();
  // Reversed and shuffled inputs: the same set, so the same file.
  std::reverse(keys.begin(), keys.end());
  EXPECT_TRUE(ribbon::filter::build(keys.data(), c.n, o).serialize() == bytes) << "reversed";
  rng random(c.n);
  for (std::size_t i = keys.size(); i > 1; --i) std::swap(keys[i - 1], keys[random.below(i)]);
  EXPECT_TRUE(ribbon::filter::build(keys.data(), c.n, o).serialize() == bytes) << "shuffled";
  // Building from the key hashes gives the same file.
  std::vector<std::uint64_t> hashes(c.n);
  const std::uint64_t mixed = ribbon::seed_mix(o.seed);
  for (std::uint64_t i = 0; i < c.n; ++i) hashes[i] = ribbon::hash_u64(keys[i], mixed);
  EXPECT_TRUE(
      ribbon::filter::build_from_hashes(hashes.data(), c.n, ribbon::key_kind::u64, o).serialize() ==
      bytes)
      << "from hashes";
}

TEST_P(Determinism, DifferentSeedsGiveDifferentFiles) {
  const det_case c = GetParam();
  const std::vector<std::uint64_t> keys = ribbon_test::keys_range(13, 0, c.n);
  const ribbon::filter a = ribbon::filter::build(keys.data(), c.n, options_for(c, 0, 1));
  const ribbon::filter b = ribbon::filter::build(keys.data(), c.n, options_for(c, 0, 2));
  const std::vector<unsigned char> x = a.serialize(), y = b.serialize();
  EXPECT_NE(x, y);
  // Not only the header's seed: the layer-0 solutions differ (in most of their bytes).
  const auto& la = a.layers()[0];
  const auto& lb = b.layers()[0];
  ASSERT_EQ(la.geometry.num_starts, lb.geometry.num_starts);
  const std::uint64_t solution_bytes = la.geometry.solution_bytes(c.width, c.r);
  const auto* sa = static_cast<const unsigned char*>(la.solution);
  const auto* sb = static_cast<const unsigned char*>(lb.solution);
  std::uint64_t differing = 0;
  for (std::uint64_t i = 0; i < solution_bytes; ++i) differing += sa[i] != sb[i];
  EXPECT_GT(differing, solution_bytes / 4) << differing << " of " << solution_bytes;
  // Both are correct filters.
  for (std::uint64_t k : keys) {
    ASSERT_TRUE(a.contains(k));
    ASSERT_TRUE(b.contains(k));
  }
}

TEST_P(Determinism, SaveLoadRoundTrip) {
  const det_case c = GetParam();
  const std::vector<std::uint64_t> keys = ribbon_test::keys_range(14, 0, c.n);
  const std::vector<std::uint64_t> others = ribbon_test::keys_range(14, c.n, 100000);
  ribbon::filter f = ribbon::filter::build(keys.data(), c.n, options_for(c, 0, 3));
  const std::vector<unsigned char> bytes = f.serialize();
  ribbon_test::temp_dir dir;
  const std::string path = dir.file("filter.rbn");
  f.save(path);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"filter.rbn"}) << "no temporary file left";
  {
    std::ifstream in(path, std::ios::binary);
    const std::vector<unsigned char> on_disk((std::istreambuf_iterator<char>(in)),
                                             std::istreambuf_iterator<char>());
    EXPECT_TRUE(on_disk == bytes) << "the file holds serialize()'s bytes";
  }
  std::unique_ptr<bool[]> expected_members(new bool[keys.size()]);
  std::unique_ptr<bool[]> expected_others(new bool[others.size()]);
  f.contains(keys.data(), keys.size(), expected_members.get());
  f.contains(others.data(), others.size(), expected_others.get());
  for (bool use_mmap : {true, false}) {
    for (bool verify : {true, false}) {
      SCOPED_TRACE(std::string(use_mmap ? "mmap" : "read") + (verify ? " verified" : ""));
      ribbon::load_options lo;
      lo.use_mmap = use_mmap;
      lo.verify_checksums = verify;
      ribbon::filter g = ribbon::filter::load(path, lo);
      EXPECT_TRUE(g.serialize() == bytes);
      EXPECT_EQ(g.key_count(), f.key_count());
      EXPECT_EQ(g.num_layers(), f.num_layers());
      EXPECT_EQ(g.size_bytes(), f.size_bytes());
      EXPECT_DOUBLE_EQ(g.bits_per_key(), f.bits_per_key());
      for (std::size_t l = 0; l < f.layers().size(); ++l) {
        EXPECT_EQ(g.layers()[l].input_keys, f.layers()[l].input_keys);
        EXPECT_EQ(g.layers()[l].bumped_keys, f.layers()[l].bumped_keys);
        EXPECT_EQ(g.layers()[l].salt, f.layers()[l].salt);
        EXPECT_EQ(g.layers()[l].geometry.num_starts, f.layers()[l].geometry.num_starts);
      }
      std::unique_ptr<bool[]> out(new bool[std::max(keys.size(), others.size())]);
      g.contains(keys.data(), keys.size(), out.get());
      for (std::size_t i = 0; i < keys.size(); ++i) {
        ASSERT_TRUE(out[i]) << "member " << i;
        ASSERT_TRUE(g.contains(keys[i])) << "member " << i;
      }
      g.contains(others.data(), others.size(), out.get());
      for (std::size_t i = 0; i < others.size(); ++i) {
        ASSERT_EQ(out[i], expected_others[i]) << "non-member " << i;
        ASSERT_EQ(g.contains(others[i]), expected_others[i]) << "non-member " << i;
      }
      // from_bytes adopts the same image.
      ribbon::filter h = ribbon::filter::from_bytes(bytes.data(), bytes.size(), lo);
      EXPECT_TRUE(h.serialize() == bytes);
      for (std::size_t i = 0; i < others.size(); ++i) {
        ASSERT_EQ(h.contains(others[i]), expected_others[i]) << "non-member " << i;
      }
      // A loaded filter saves to the same bytes.
      const std::string copy = dir.file("copy.rbn");
      g.save(copy);
      EXPECT_TRUE(ribbon::filter::load(copy).serialize() == bytes);
    }
  }
  // Saving over an existing file replaces it.
  const std::vector<std::uint64_t> few = ribbon_test::keys_range(15, 0, 10);
  ribbon::filter::build(few.data(), few.size()).save(path);
  EXPECT_EQ(ribbon::filter::load(path).key_count(), 10u);
  EXPECT_EQ((dir.entries()), (std::vector<std::string>{"copy.rbn", "filter.rbn"}));
}

INSTANTIATE_TEST_SUITE_P(Cases, Determinism, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<det_case>& param_info) {
                           return case_name(param_info.param);
                         });

TEST(DeterminismBytes, StringKeysAcrossThreadsAndOrder) {
  const std::uint64_t n = ribbon_test::scaled(100000, 30000);
  const std::vector<std::string> keys = ribbon_test::string_keys(16, 0, n);
  std::vector<std::string_view> views = ribbon_test::views(keys);
  ribbon::build_options o;
  o.width = 64;
  o.result_bits = 12;
  o.shard_size = 4096;
  o.threads = 1;
  const std::vector<unsigned char> bytes = ribbon::filter::build(views.data(), n, o).serialize();
  for (std::uint32_t threads : {2u, 8u}) {
    o.threads = threads;
    EXPECT_TRUE(ribbon::filter::build(views.data(), n, o).serialize() == bytes) << threads;
  }
  std::reverse(views.begin(), views.end());
  EXPECT_TRUE(ribbon::filter::build(views.data(), n, o).serialize() == bytes) << "reversed";
  // The key hashes route gives the same file for byte strings too.
  std::vector<std::uint64_t> hashes(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    hashes[i] = ribbon::hash_bytes(views[i].data(), views[i].size(), o.seed);
  }
  EXPECT_TRUE(
      ribbon::filter::build_from_hashes(hashes.data(), n, ribbon::key_kind::bytes, o).serialize() ==
      bytes);
  // Save/load keeps the kind.
  ribbon_test::temp_dir dir;
  ribbon::filter::build(views.data(), n, o).save(dir.file("s.rbn"));
  const ribbon::filter g = ribbon::filter::load(dir.file("s.rbn"));
  EXPECT_EQ(g.params().keys, ribbon::key_kind::bytes);
  for (std::string_view v : views) ASSERT_TRUE(g.contains(v));
}

TEST(DeterminismDuplicates, MultisetWithDuplicatesIsOrderIndependent) {
  // Duplicates are part of the multiset: the same multiset in another order gives the same
  // bytes, across thread counts.
  std::vector<std::uint64_t> keys = ribbon_test::keys_range(17, 0, 20000);
  keys.insert(keys.end(), keys.begin(), keys.begin() + 5000);
  ribbon::build_options o;
  o.shard_size = 4096;
  o.threads = 1;
  const std::vector<unsigned char> bytes =
      ribbon::filter::build(keys.data(), keys.size(), o).serialize();
  rng random(3);
  for (std::size_t i = keys.size(); i > 1; --i) std::swap(keys[i - 1], keys[random.below(i)]);
  o.threads = 8;
  EXPECT_TRUE(ribbon::filter::build(keys.data(), keys.size(), o).serialize() == bytes);
}

}  // namespace
