// The bulk builder with values (retrieval): in memory and out of core it writes the bytes of
// filter::build(keys, values, ...), every member's value exact; a key given twice with one
// value counts once, with two values the build fails wherever the two sit, writing nothing
// and leaving no temporaries.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "file_helpers.hpp"
#include "ribbon/bulk_builder.hpp"
#include "ribbon/filter.hpp"
#include "test_util.hpp"

namespace {

using ribbon_test::read_bytes;
using ribbon_test::temp_dir;

struct values_case {
  std::uint64_t n;
  std::uint32_t width;
  std::uint32_t bits;        // value bits
  std::uint32_t check_bits;  // 0: none
  std::uint64_t shard_size;  // 0: default
  std::uint64_t memory_limit;
  std::uint64_t expected_keys = 0;
};

std::string describe(const values_case& c) {
  return "n=" + std::to_string(c.n) + " w=" + std::to_string(c.width) +
         " bits=" + std::to_string(c.bits) + " check=" + std::to_string(c.check_bits) +
         " shard=" + std::to_string(c.shard_size) + " limit=" + std::to_string(c.memory_limit);
}

ribbon::build_options build_options_of(const values_case& c, std::uint32_t threads = 0) {
  ribbon::build_options o;
  o.width = c.width;
  o.result_bits = c.bits;
  o.check_bits = c.check_bits;
  o.shard_size = c.shard_size;
  o.seed = 91;
  o.threads = threads;
  return o;
}

std::vector<std::uint32_t> values_for(std::uint64_t n, std::uint32_t bits, std::uint64_t seed) {
  ribbon_test::rng random(seed);
  std::vector<std::uint32_t> values(n);
  for (auto& v : values) v = static_cast<std::uint32_t>(random.next() >> (64 - bits));
  return values;
}

/// Adds keys and values in uneven pieces and finishes into `path`.
ribbon::bulk_result bulk_build(const std::vector<std::uint64_t>& keys,
                               const std::vector<std::uint32_t>& values, const values_case& c,
                               const std::string& path, const std::string& tmp,
                               std::uint32_t threads = 0) {
  ribbon::bulk_options o;
  o.build = build_options_of(c, threads);
  o.with_values = true;
  o.memory_limit = c.memory_limit;
  o.expected_keys = c.expected_keys;
  o.tmp_dir = tmp;
  ribbon::bulk_builder builder(ribbon::key_kind::u64, o);
  ribbon_test::rng random(c.n + 1);
  for (std::uint64_t done = 0; done < keys.size();) {
    const std::uint64_t piece =
        std::min<std::uint64_t>(keys.size() - done, random.between(1, 7000));
    builder.add(keys.data() + done, values.data() + done, piece);
    done += piece;
  }
  return builder.finish(path);
}

void expect_same_file_as_in_memory(const values_case& c, bool expect_out_of_core) {
  SCOPED_TRACE(describe(c));
  temp_dir dir;
  const auto keys = ribbon_test::keys_range(c.n + c.bits, 0, c.n);
  const auto values = values_for(c.n, c.bits, c.n * 3 + c.width);
  const auto result = bulk_build(keys, values, c, dir.file("out.rbn"), dir.path());
  EXPECT_EQ(result.out_of_core, expect_out_of_core && c.n > 0);  // nothing to spill at 0
  EXPECT_EQ(result.key_count, c.n);
  const auto expected =
      ribbon::filter::build(keys.data(), values.data(), keys.size(), build_options_of(c))
          .serialize();
  EXPECT_TRUE(read_bytes(dir.file("out.rbn")) == expected) << "files differ";
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.rbn"});
  const ribbon::filter f = ribbon::filter::load(dir.file("out.rbn"));
  std::vector<std::uint32_t> found(keys.size());
  f.lookup(keys.data(), keys.size(), found.data());
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < keys.size(); ++i) wrong += found[i] != values[i];
  EXPECT_EQ(wrong, 0u) << "members with a wrong value";
}

TEST(BulkValues, InMemoryAndOutOfCoreEqualFilterBuild) {
  const std::uint64_t n = ribbon_test::scaled(200'000, 30'000);
  // In memory (default limit), then from the first key out of core (limit 1).
  for (std::uint64_t limit : {0ull, 1ull}) {
    expect_same_file_as_in_memory({n, 64, 8, 0, 0, limit}, limit != 0);
    expect_same_file_as_in_memory({n, 64, 16, 8, 0, limit}, limit != 0);
  }
  for (std::uint64_t small : {0ull, 1ull, 2ull, 3000ull}) {
    expect_same_file_as_in_memory({small, 64, 8, 0, 0, 1}, true);
  }
  expect_same_file_as_in_memory({n, 32, 1, 0, 0, 1}, true);
  expect_same_file_as_in_memory({n, 128, 13, 3, 0, 1}, true);
  expect_same_file_as_in_memory({n / 3, 64, 32, 0, 0, 1}, true);
  expect_same_file_as_in_memory({n / 3, 64, 24, 8, 0, 1}, true);
}

TEST(BulkValues, OutOfCoreInRangesAndManyPartitions) {
  const std::uint64_t n = ribbon_test::scaled(200'000, 40'000);
  // A limit that fits a few shards per pass (records need about 26 bytes a key in memory).
  expect_same_file_as_in_memory({n, 64, 8, 0, 4096, 12 * n}, true);
  // A far too low estimate (each file cut into ranges by its counts), then far too many files.
  expect_same_file_as_in_memory({n, 64, 8, 0, 4096, 12 * n, 1}, true);
  expect_same_file_as_in_memory({n, 64, 16, 0, 4096, 1, 1ull << 40}, true);
}

TEST(BulkValues, OutOfCoreDoesNotDependOnThreads) {
  temp_dir dir;
  const values_case c{ribbon_test::scaled(100'000, 20'000), 64, 12, 4, 4096, 1, 1 << 20};
  const auto keys = ribbon_test::keys_range(6, 0, c.n);
  const auto values = values_for(c.n, c.bits, 6);
  bulk_build(keys, values, c, dir.file("t1"), dir.path(), 1);
  bulk_build(keys, values, c, dir.file("t3"), dir.path(), 3);
  EXPECT_TRUE(read_bytes(dir.file("t1")) == read_bytes(dir.file("t3")));
}

TEST(BulkValues, RepeatedKeysWithOneValueCountOnce) {
  // Every key three times, the copies far apart (different spill chunks and passes).
  const std::uint64_t n = ribbon_test::scaled(60'000, 10'000);
  const auto distinct = ribbon_test::keys_range(8, 0, n);
  const auto distinct_values = values_for(n, 10, 8);
  std::vector<std::uint64_t> keys;
  std::vector<std::uint32_t> values;
  for (int copy = 0; copy < 3; ++copy) {
    keys.insert(keys.end(), distinct.begin(), distinct.end());
    values.insert(values.end(), distinct_values.begin(), distinct_values.end());
  }
  const values_case c{n, 64, 10, 0, 4096, 1};
  for (std::uint64_t limit : {0ull, 1ull}) {
    temp_dir dir;
    values_case with_limit = c;
    with_limit.memory_limit = limit;
    const auto result = bulk_build(keys, values, with_limit, dir.file("out"), dir.path());
    EXPECT_EQ(result.input_keys, 3 * n);
    EXPECT_EQ(result.key_count, n);
    EXPECT_TRUE(read_bytes(dir.file("out")) == ribbon::filter::build(distinct.data(),
                                                                     distinct_values.data(), n,
                                                                     build_options_of(c))
                                                   .serialize());
  }
}

/// Builds keys with the value of key `at` changed in a second copy added at the end, and
/// expects the conflict to name that key: no file, no temporaries.
void expect_conflict(std::uint64_t memory_limit, std::uint64_t at) {
  SCOPED_TRACE("limit=" + std::to_string(memory_limit) + " at=" + std::to_string(at));
  temp_dir dir;
  const std::uint64_t n = ribbon_test::scaled(80'000, 20'000);
  auto keys = ribbon_test::keys_range(12, 0, n);
  auto values = values_for(n, 8, 12);
  keys.push_back(keys[at]);
  values.push_back(values[at] ^ 1);
  const values_case c{n, 64, 8, 0, 4096, memory_limit};
  try {
    bulk_build(keys, values, c, dir.file("out"), dir.path());
    FAIL() << "two values of one key were accepted";
  } catch (const ribbon::conflicting_values_error& e) {
    EXPECT_EQ(e.key_hash(), ribbon::hash_u64(keys[at], ribbon::seed_mix(91)));
    EXPECT_NE(std::string(e.what()).find(std::to_string(keys[at])), std::string::npos) << e.what();
  }
  EXPECT_TRUE(dir.entries().empty());
}

TEST(BulkValues, ConflictingValuesFailWhereverTheySit) {
  for (std::uint64_t limit : {0ull, 1ull}) {
    expect_conflict(limit, 0);
    expect_conflict(limit, 5000);
  }
}

TEST(BulkValues, ByteStringKeys) {
  temp_dir dir;
  const auto strings = ribbon_test::string_keys(10, 0, 30'000);
  const auto keys = ribbon_test::views(strings);
  const auto values = values_for(keys.size(), 7, 10);
  for (std::uint64_t limit : {0ull, 1ull}) {
    ribbon::bulk_options o;
    o.build.result_bits = 7;
    o.with_values = true;
    o.memory_limit = limit;
    o.tmp_dir = dir.path();
    ribbon::bulk_builder builder(ribbon::key_kind::bytes, o);
    builder.add(keys.data(), values.data(), keys.size());
    EXPECT_EQ(builder.finish(dir.file("s")).out_of_core, limit == 1);
    EXPECT_TRUE(
        read_bytes(dir.file("s")) ==
        ribbon::filter::build(keys.data(), values.data(), keys.size(), o.build).serialize());
  }
}

TEST(BulkValues, MisuseIsAClearError) {
  temp_dir dir;
  ribbon::bulk_options o;
  o.build.result_bits = 4;
  o.with_values = true;
  o.memory_limit = 1;
  o.tmp_dir = dir.path();
  const std::uint64_t keys[3] = {1, 2, 3};
  const std::uint32_t values[3] = {1, 16, 2};
  {
    ribbon::bulk_builder builder(ribbon::key_kind::u64, o);
    EXPECT_THROW(builder.add(keys, 3), ribbon::error);  // values missing
    try {
      builder.add(keys, values, 3);
      FAIL() << "a 5-bit value was accepted for 4 bits";
    } catch (const ribbon::error& e) {
      EXPECT_NE(std::string(e.what()).find("value 16 of key 1"), std::string::npos) << e.what();
    }
  }
  {
    // The key's number counts the keys of earlier calls too.
    ribbon::bulk_builder builder(ribbon::key_kind::u64, o);
    const std::uint32_t fine[3] = {1, 2, 3};
    builder.add(keys, fine, 3);
    try {
      builder.add(keys, values, 3);
      FAIL() << "a 5-bit value was accepted for 4 bits";
    } catch (const ribbon::error& e) {
      EXPECT_NE(std::string(e.what()).find("value 16 of key 4"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(dir.entries().empty());
  ribbon::bulk_options filter_options;
  ribbon::bulk_builder filter_builder(ribbon::key_kind::u64, filter_options);
  EXPECT_THROW(filter_builder.add(keys, values, 3), ribbon::error);
  o.build.variant = ribbon::filter_variant::homogeneous;
  EXPECT_THROW(ribbon::bulk_builder(ribbon::key_kind::u64, o), ribbon::error);
  o.build.variant = ribbon::filter_variant::bumped;
  o.in_memory = [](std::uint64_t, const std::function<void(const ribbon::hash_visitor&)>&,
                   ribbon::key_kind, const ribbon::build_options&) { return ribbon::filter(); };
  EXPECT_THROW(ribbon::bulk_builder(ribbon::key_kind::u64, o), ribbon::error);
}

}  // namespace
