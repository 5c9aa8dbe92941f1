// Repeated keys: every builder drops repeated key hashes before it sizes layer 0, so the file
// of a multiset is byte-identical to the file of its set (in memory, out of core, any thread
// count, every variant), and the counts say how many keys came in and how many are distinct.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "ribbon/bulk_builder.hpp"
#include "ribbon/error.hpp"
#include "ribbon/filter.hpp"
#include "ribbon/hash.hpp"
#include "test_util.hpp"

namespace {

using ribbon_test::rng;
using bytes = std::vector<unsigned char>;

bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

template <class T>
void shuffle(std::vector<T>& v, std::uint64_t seed) {
  rng random(seed);
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[random.below(i)]);
}

/// A multiset of `set` with a name saying how its keys repeat.
template <class T>
struct multiset {
  std::string name;
  std::vector<T> keys;
};

/// The repetition patterns of the issue: every key twice, one key 10^6 times (scaled) among
/// the others, a Zipf-like mix (key i about 1000 / (i + 1) times), and a single repeat.
template <class T>
std::vector<multiset<T>> multisets_of(const std::vector<T>& set) {
  std::vector<multiset<T>> out;
  multiset<T> twice{"every key twice", set};
  twice.keys.insert(twice.keys.end(), set.begin(), set.end());
  shuffle(twice.keys, 1);
  out.push_back(twice);

  multiset<T> one_heavy{"one key 10^6 times", set};
  one_heavy.keys.insert(one_heavy.keys.end(), ribbon_test::scaled(1'000'000, 100'000),
                        set[set.size() / 2]);
  shuffle(one_heavy.keys, 2);
  out.push_back(one_heavy);

  multiset<T> zipf{"Zipf-like", {}};
  for (std::size_t i = 0; i < set.size(); ++i) {
    zipf.keys.insert(zipf.keys.end(), std::max<std::size_t>(1, 1000 / (i + 1)), set[i]);
  }
  shuffle(zipf.keys, 3);
  out.push_back(zipf);

  multiset<T> single{"one key twice", set};
  single.keys.push_back(set.front());
  out.push_back(single);
  return out;
}

bytes build_bytes(const std::vector<std::uint64_t>& keys, const ribbon::build_options& o,
                  ribbon::build_stats* stats = nullptr) {
  return ribbon::filter::build(keys.data(), keys.size(), o, stats).serialize();
}

bytes build_bytes(const std::vector<std::string>& keys, const ribbon::build_options& o,
                  ribbon::build_stats* stats = nullptr) {
  const std::vector<std::string_view> views = ribbon_test::views(keys);
  return ribbon::filter::build(views.data(), views.size(), o, stats).serialize();
}

/// Every multiset of `set` builds the set's bytes, on 1 and 3 threads, and reports its input
/// and distinct counts.
template <class T>
void expect_set_bytes(const std::vector<T>& set, ribbon::build_options o) {
  o.threads = 1;
  const bytes expected = build_bytes(set, o);
  for (const multiset<T>& m : multisets_of(set)) {
    for (std::uint32_t threads : {1u, 3u}) {
      SCOPED_TRACE(m.name + ", " + std::to_string(threads) +
                   " threads, w=" + std::to_string(o.width));
      o.threads = threads;
      ribbon::build_stats stats;
      EXPECT_TRUE(build_bytes(m.keys, o, &stats) == expected) << "multiset and set differ";
      EXPECT_EQ(stats.input_keys, m.keys.size());
      EXPECT_EQ(stats.distinct_keys, set.size());
    }
  }
}

TEST(Dedup, IntegerMultisetsGiveTheFileOfTheirSet) {
  const auto set = ribbon_test::keys_range(21, 0, ribbon_test::scaled(60'000, 20'000));
  for (std::uint32_t width : {32u, 64u, 128u}) {
    ribbon::build_options o;
    o.width = width;
    o.shard_size = 32 * ribbon::detail::default_bucket_size(width);  // many shards
    o.seed = width;
    expect_set_bytes(set, o);
  }
  expect_set_bytes(set, ribbon::build_options{});  // the default shard size
}

TEST(Dedup, StringMultisetsGiveTheFileOfTheirSet) {
  const auto set = ribbon_test::string_keys(22, 0, ribbon_test::scaled(40'000, 20'000));
  ribbon::build_options o;
  o.shard_size = 4096;
  expect_set_bytes(set, o);
}

TEST(Dedup, EveryVariant) {
  const auto set = ribbon_test::keys_range(23, 0, ribbon_test::scaled(30'000, 20'000));
  for (ribbon::filter_variant v :
       {ribbon::filter_variant::standard, ribbon::filter_variant::homogeneous}) {
    ribbon::build_options o;
    o.variant = v;
    o.shard_size = 4096;
    expect_set_bytes(set, o);
  }
  ribbon::build_options fractional;
  fractional.target_fpr = 0.01;
  fractional.shard_size = 4096;
  expect_set_bytes(set, fractional);
}

TEST(Dedup, RetrievalKeepsAKeyRepeatedWithItsValueOnce) {
  const auto set = ribbon_test::keys_range(24, 0, ribbon_test::scaled(30'000, 20'000));
  std::vector<std::uint32_t> values(set.size());
  for (std::size_t i = 0; i < set.size(); ++i) values[i] = static_cast<std::uint32_t>(i % 251);
  for (ribbon::filter_variant v :
       {ribbon::filter_variant::bumped, ribbon::filter_variant::standard}) {
    ribbon::build_options o;
    o.variant = v;
    o.shard_size = 4096;
    const bytes expected =
        ribbon::filter::build(set.data(), values.data(), set.size(), o).serialize();
    // Every pair three times, shuffled together.
    std::vector<std::uint64_t> order(3 * set.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i % set.size();
    shuffle(order, 5);
    std::vector<std::uint64_t> keys;
    std::vector<std::uint32_t> repeated_values;
    for (std::uint64_t i : order) {
      keys.push_back(set[i]);
      repeated_values.push_back(values[i]);
    }
    ribbon::build_stats stats;
    EXPECT_TRUE(ribbon::filter::build(keys.data(), repeated_values.data(), keys.size(), o, &stats)
                    .serialize() == expected);
    EXPECT_EQ(stats.distinct_keys, set.size());

    // One of the copies with another value: the clear error it always was.
    repeated_values[keys.size() / 2] ^= 1;
    try {
      ribbon::filter::build(keys.data(), repeated_values.data(), keys.size(), o);
      FAIL() << "expected conflicting_values_error";
    } catch (const ribbon::conflicting_values_error& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(keys[keys.size() / 2])),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Dedup, TheFileCountsDistinctKeys) {
  const auto set = ribbon_test::keys_range(25, 0, 20'000);
  std::vector<std::uint64_t> keys = set;
  keys.insert(keys.end(), set.begin(), set.end());
  keys.insert(keys.end(), 30'000, set[7]);
  ribbon::build_stats stats;
  const ribbon::filter f = ribbon::filter::build(keys.data(), keys.size(), {}, &stats);
  EXPECT_EQ(f.key_count(), set.size());
  EXPECT_EQ(f.layers()[0].input_keys, set.size());
  EXPECT_EQ(stats.input_keys, keys.size());
  EXPECT_EQ(stats.distinct_keys, set.size());
  // Space per distinct key, as for the set: near r = 8 bits, not a quarter of it.
  EXPECT_GT(f.bits_per_key(), 8.0);
  EXPECT_LT(f.bits_per_key(), 8.5);
  for (std::uint64_t k : set) ASSERT_TRUE(f.contains(k));

  // One key, many times: the file of one key.
  const std::vector<std::uint64_t> one(100'000, 42);
  const std::uint64_t single = 42;
  EXPECT_TRUE(build_bytes(one, {}) == build_bytes(std::vector<std::uint64_t>{single}, {}));
}

// ---------------------------------------------------------------------------------------------
// The bulk builder, in memory and out of core.

struct bulk_outcome {
  bytes file;
  ribbon::bulk_result result;
};

bulk_outcome bulk_build(const std::vector<std::uint64_t>& keys, const ribbon::build_options& build,
                        std::uint64_t memory_limit, std::uint64_t expected_keys,
                        const ribbon_test::temp_dir& dir) {
  ribbon::bulk_options o;
  o.build = build;
  o.memory_limit = memory_limit;
  o.expected_keys = expected_keys;
  o.tmp_dir = dir.path().string();
  ribbon::bulk_builder builder(ribbon::key_kind::u64, o);
  // In pieces, as a reader adds them.
  for (std::size_t done = 0; done < keys.size(); done += 7777) {
    builder.add(keys.data() + done, std::min<std::size_t>(7777, keys.size() - done));
  }
  bulk_outcome out;
  out.result = builder.finish(dir.file("bulk.rbn"));
  out.file = read_file(dir.file("bulk.rbn"));
  return out;
}

TEST(DedupBulk, InMemoryAndOutOfCoreMultisetsGiveTheFileOfTheirSet) {
  ribbon_test::temp_dir dir;
  const auto set = ribbon_test::keys_range(26, 0, ribbon_test::scaled(60'000, 30'000));
  ribbon::build_options build;
  build.shard_size = 4096;
  const bytes expected = build_bytes(set, build);
  // In memory; out of core from the first key into 16 partition files (several shard ranges
  // each); out of core after about 12000 keys (a few dozen files).
  struct limit {
    std::uint64_t bytes, expected_keys;
  };
  for (const limit l : {limit{0, 0}, limit{1, 16}, limit{256 << 10, 0}}) {
    for (const multiset<std::uint64_t>& m : multisets_of(set)) {
      for (std::uint32_t threads : {1u, 3u}) {
        SCOPED_TRACE(m.name + ", limit " + std::to_string(l.bytes) + ", " +
                     std::to_string(threads) + " threads");
        build.threads = threads;
        const bulk_outcome out = bulk_build(m.keys, build, l.bytes, l.expected_keys, dir);
        EXPECT_EQ(out.result.out_of_core, l.bytes != 0);
        EXPECT_TRUE(out.file == expected) << "multiset and set differ";
        EXPECT_EQ(out.result.input_keys, m.keys.size());
        EXPECT_EQ(out.result.key_count, set.size());
        EXPECT_EQ(out.result.stats.distinct_keys, set.size());
      }
    }
  }
}

TEST(DedupBulk, ARepeatInTheLastPartitionFileResizesLayerZero) {
  // Out of core, layer 0 is first solved for the input count; a repeat found only in the last
  // partition file (after every other range is solved) must still give the set's file.
  ribbon_test::temp_dir dir;
  const auto set = ribbon_test::keys_range(27, 0, ribbon_test::scaled(50'000, 30'000));
  ribbon::build_options build;
  build.shard_size = 4096;
  const std::uint64_t mixed = ribbon::seed_mix(build.seed);
  const std::uint64_t last = *std::max_element(set.begin(), set.end(), [&](auto a, auto b) {
    return ribbon::hash_u64(a, mixed) < ribbon::hash_u64(b, mixed);
  });
  std::vector<std::uint64_t> keys = set;
  keys.push_back(last);
  const bulk_outcome out = bulk_build(keys, build, 1, 64, dir);
  EXPECT_TRUE(out.result.out_of_core);
  EXPECT_GE(out.result.partitions, 2u);  // the repeat is in the last file, read after the others
  EXPECT_TRUE(out.file == build_bytes(set, build));
  EXPECT_EQ(out.result.key_count, set.size());
  EXPECT_EQ(out.result.input_keys, set.size() + 1);
}

}  // namespace
