// The bulk builder: in memory and out of core (spilled to partition files, built one shard
// range at a time) it writes the same bytes as filter::build; temporary files never remain;
// 64-bit sizes and offsets at and past 2^32.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "file_helpers.hpp"
#include "ribbon/bulk_builder.hpp"
#include "ribbon/filter.hpp"
#include "ribbon/format.hpp"
#include "test_util.hpp"

namespace {

using ribbon_test::read_bytes;
using ribbon_test::temp_dir;

struct bulk_case {
  std::uint64_t n;
  std::uint32_t width;
  std::uint32_t bits;
  std::uint64_t shard_size;     // 0: default
  std::uint64_t memory_limit;   // 0: default (in memory for these sizes)
  std::uint64_t expected_keys;  // hint: more partition files than the keys need
  double fpr = 0;               // > 0: fractional bits per key for this rate
};

std::string describe(const bulk_case& c) {
  return "n=" + std::to_string(c.n) + " w=" + std::to_string(c.width) +
         " r=" + std::to_string(c.bits) + " shard=" + std::to_string(c.shard_size) +
         " limit=" + std::to_string(c.memory_limit) + " hint=" + std::to_string(c.expected_keys);
}

/// Builds `keys` with the bulk builder (added in uneven pieces) into `path`.
ribbon::bulk_result bulk_build(const std::vector<std::uint64_t>& keys, const bulk_case& c,
                               const std::string& path, const std::string& tmp,
                               std::uint32_t threads = 0) {
  ribbon::bulk_options o;
  o.build.width = c.width;
  o.build.result_bits = c.bits;
  o.build.target_fpr = c.fpr;
  o.build.shard_size = c.shard_size;
  o.build.seed = 77;
  o.build.threads = threads;
  o.memory_limit = c.memory_limit;
  o.expected_keys = c.expected_keys;
  o.tmp_dir = tmp;
  ribbon::bulk_builder builder(ribbon::key_kind::u64, o);
  ribbon_test::rng random(c.n);
  for (std::uint64_t done = 0; done < keys.size();) {
    const std::uint64_t piece =
        std::min<std::uint64_t>(keys.size() - done, random.between(1, 5000));
    builder.add(keys.data() + done, piece);
    done += piece;
  }
  return builder.finish(path);
}

std::vector<unsigned char> reference_bytes(const std::vector<std::uint64_t>& keys,
                                           const bulk_case& c) {
  ribbon::build_options o;
  o.width = c.width;
  o.result_bits = c.bits;
  o.target_fpr = c.fpr;
  o.shard_size = c.shard_size;
  o.seed = 77;
  return ribbon::filter::build(keys.data(), keys.size(), o).serialize();
}

void expect_same_file_as_in_memory(const bulk_case& c, bool expect_out_of_core) {
  SCOPED_TRACE(describe(c));
  temp_dir dir;
  const auto keys = ribbon_test::keys_range(c.n + c.width, 0, c.n);
  const ribbon::bulk_result result = bulk_build(keys, c, dir.file("out.rbn"), dir.path());
  EXPECT_EQ(result.out_of_core, expect_out_of_core);
  EXPECT_EQ(result.key_count, c.n);
  const auto bytes = read_bytes(dir.file("out.rbn"));
  EXPECT_EQ(result.file_bytes, bytes.size());
  EXPECT_TRUE(bytes == reference_bytes(keys, c)) << "files differ";
  // Only the output is left: the private spill directory and its files are gone.
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.rbn"});
  // And the file answers for every key.
  const ribbon::filter f = ribbon::filter::load(dir.file("out.rbn"));
  std::vector<char> found(keys.size());
  f.contains(keys.data(), keys.size(), reinterpret_cast<bool*>(found.data()));
  EXPECT_EQ(std::count(found.begin(), found.end(), 0), 0) << "false negatives";
}

TEST(BulkBuilder, InMemoryEqualsFilterBuild) {
  for (std::uint64_t n : {0ull, 1ull, 100ull, 5000ull, 200'000ull}) {
    expect_same_file_as_in_memory({n, 64, 8, 0, 0, 0}, false);
  }
  expect_same_file_as_in_memory({100'000, 32, 16, 0, 0, 0}, false);
  expect_same_file_as_in_memory({100'000, 128, 5, 0, 0, 0}, false);
}

TEST(BulkBuilder, OutOfCoreEqualsInMemoryAcrossSizesWidthsAndBits) {
  // A one-byte limit spills from the first key and builds every bumped layer out of core.
  const std::uint64_t big = ribbon_test::scaled(300'000, 30'000);
  for (std::uint64_t n : {1ull, 2ull, 3000ull, 20'000ull}) {
    expect_same_file_as_in_memory({n, 64, 8, 0, 1, 0}, true);
  }
  expect_same_file_as_in_memory({big, 64, 8, 0, 1, 0}, true);
  expect_same_file_as_in_memory({big, 32, 1, 0, 1, 0}, true);
  expect_same_file_as_in_memory({big, 128, 16, 0, 1, 0}, true);
  expect_same_file_as_in_memory({big / 3, 64, 32, 0, 1, 0}, true);
  expect_same_file_as_in_memory({big / 3, 64, 13, 0, 1, 0}, true);
}

TEST(BulkBuilder, OutOfCoreWithManyPartitionsAndSmallShards) {
  const std::uint64_t n = ribbon_test::scaled(200'000, 40'000);
  // 1024 partition files for n keys: most files hold keys of one shard only, so the keys of
  // a shard are carried across many files.
  expect_same_file_as_in_memory({n, 64, 8, 4096, 1, 1ull << 40}, true);
  expect_same_file_as_in_memory({n, 32, 8, 1024, 1, 1ull << 40}, true);
  // Few partition files and a limit that fits only a few shards per pass: each file is
  // solved in several shard ranges.
  // (Limits in proportion to n: the hashes need 18 bytes a key in memory, so these spill at
  // every test scale.)
  expect_same_file_as_in_memory({n, 64, 8, 4096, 9 * n, 0}, true);
  // A far too low estimate: two partition files, each cut into shard ranges by its counts.
  expect_same_file_as_in_memory({n, 64, 8, 4096, 9 * n, 1}, true);
  expect_same_file_as_in_memory({n, 128, 8, 16384, 15 * n, 0}, true);
}

TEST(BulkBuilder, OutOfCoreWithFractionalBits) {
  // Blocks of r and r + 1 words: the shard ranges' solution windows start at word offsets
  // that are no longer multiples of r.
  const std::uint64_t n = ribbon_test::scaled(200'000, 40'000);
  expect_same_file_as_in_memory({n, 64, 0, 4096, 9 * n, 0, 0.01}, true);
  expect_same_file_as_in_memory({n, 128, 0, 16384, 1, 0, 0.0003}, true);
  expect_same_file_as_in_memory({n, 32, 0, 1024, 1, 1ull << 40, 0.3}, true);
}

TEST(BulkBuilder, StandardVariantsBeyondTheLimitAreAClearError) {
  temp_dir dir;
  ribbon::bulk_options o;
  o.build.variant = ribbon::filter_variant::standard;
  o.memory_limit = 1;
  o.tmp_dir = dir.path();
  const auto keys = ribbon_test::keys_range(71, 0, 1000);
  {
    ribbon::bulk_builder builder(ribbon::key_kind::u64, o);
    try {
      // It fails where the keys first exceed the limit (here the first add), before it spills.
      builder.add(keys.data(), keys.size());
      (void)builder.finish(dir.file("out.rbn"));
      FAIL() << "a standard build went out of core";
    } catch (const ribbon::memory_limit_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("in memory only"), std::string::npos) << what;
      EXPECT_NE(what.find("at least " + std::to_string(e.needed_limit()) + "M"), std::string::npos)
          << what;
      EXPECT_GT(e.needed_limit(), 0u);
    }
    EXPECT_TRUE(dir.entries().empty());
  }
  // With the key count known in advance (a file's size), at once; and the limit it names
  // builds the keys.
  o.expected_keys = keys.size();
  std::uint64_t needed = 0;
  try {
    ribbon::bulk_builder refused(ribbon::key_kind::u64, o);
    FAIL() << "a standard build of too many keys was started";
  } catch (const ribbon::memory_limit_error& e) {
    needed = e.needed_limit();
  }
  o.memory_limit = needed << 20;
  {
    ribbon::bulk_builder builder(ribbon::key_kind::u64, o);
    builder.add(keys.data(), keys.size());
    EXPECT_FALSE(builder.finish(dir.file("out.rbn")).out_of_core);
  }
  o.expected_keys = 0;
  // In memory the variants go through the bulk builder like the default.
  o.memory_limit = 0;
  for (auto v : {ribbon::filter_variant::standard, ribbon::filter_variant::homogeneous}) {
    o.build.variant = v;
    ribbon::bulk_builder in_memory(ribbon::key_kind::u64, o);
    in_memory.add(keys.data(), keys.size());
    (void)in_memory.finish(dir.file("out.rbn"));
    ribbon::build_options direct;
    direct.variant = v;
    EXPECT_TRUE(read_bytes(dir.file("out.rbn")) ==
                ribbon::filter::build(keys.data(), keys.size(), direct).serialize());
  }
}

TEST(BulkBuilder, LimitAboveTheDataStaysInMemory) {
  expect_same_file_as_in_memory({50'000, 64, 8, 0, 1ull << 30, 0}, false);
}

TEST(BulkBuilder, OutOfCoreDoesNotDependOnThreads) {
  temp_dir dir;
  const bulk_case c{ribbon_test::scaled(100'000, 20'000), 64, 8, 4096, 1, 1 << 20};
  const auto keys = ribbon_test::keys_range(5, 0, c.n);
  bulk_build(keys, c, dir.file("t1"), dir.path(), 1);
  bulk_build(keys, c, dir.file("t3"), dir.path(), 3);
  EXPECT_TRUE(read_bytes(dir.file("t1")) == read_bytes(dir.file("t3")));
}

TEST(BulkBuilder, DuplicatesAndSkewedHashesOutOfCore) {
  temp_dir dir;
  ribbon::build_options build;
  build.shard_size = 4096;
  // Every key the same, then hashes crowded into a sliver of the hash space: the pass that
  // reads them splits its shard range until it fits, down to single shards.
  std::vector<std::vector<std::uint64_t>> inputs;
  inputs.emplace_back(ribbon_test::scaled(50'000, 5'000), 42);
  std::vector<std::uint64_t> crowded;
  ribbon_test::rng random(3);
  for (int i = 0; i < 60'000; ++i)
    crowded.push_back(0x1234000000000000ULL + random.below(1ull << 44));
  for (int i = 0; i < 20'000; ++i) crowded.push_back(random.next());
  inputs.push_back(crowded);
  for (const auto& hashes : inputs) {
    ribbon::bulk_options o;
    o.build = build;
    o.memory_limit = 4 * hashes.size();  // spills at any test scale
    o.tmp_dir = dir.path();
    ribbon::bulk_builder builder(ribbon::key_kind::u64, o);
    builder.add_hashes(hashes.data(), hashes.size());
    const auto result = builder.finish(dir.file("out"));
    EXPECT_TRUE(result.out_of_core);
    const auto expected = ribbon::filter::build_from_hashes(hashes.data(), hashes.size(),
                                                            ribbon::key_kind::u64, build)
                              .serialize();
    EXPECT_TRUE(read_bytes(dir.file("out")) == expected);
  }
}

TEST(BulkBuilder, AShardBeyondTheLimitIsAClearErrorNamingTheLimitThatWorks) {
  // At the floor the limit is honoured. Hashes crowded into one shard (more distinct ones
  // than a pass holds) cannot be: the build fails, naming the smallest limit that holds the
  // shard, and leaves nothing behind; at that limit it builds the in-memory file. A key
  // repeated as often fits: its repeats go as they are read.
  temp_dir dir;
  ribbon::build_options build;
  build.shard_size = 4096;
  std::vector<std::uint64_t> crowded;
  ribbon_test::rng random(5);
  for (int i = 0; i < 60'000; ++i)
    crowded.push_back(0x1234000000000000ULL + random.below(1ull << 44));
  for (int i = 0; i < 20'000; ++i) crowded.push_back(random.next());
  const std::vector<std::uint64_t> repeated(60'000, 42);
  ribbon::bulk_options o;
  o.build = build;
  o.tmp_dir = dir.file("tmp");
  std::filesystem::create_directory(o.tmp_dir);
  o.memory_limit = 1;
  o.memory_limit = ribbon::bulk_builder(ribbon::key_kind::u64, o).memory_floor();
  auto build_into = [&](const std::vector<std::uint64_t>& hashes, const std::string& path) {
    ribbon::bulk_builder builder(ribbon::key_kind::u64, o);
    builder.add_hashes(hashes.data(), hashes.size());
    return builder.finish(path);
  };
  auto in_memory = [&](const std::vector<std::uint64_t>& hashes) {
    return ribbon::filter::build_from_hashes(hashes.data(), hashes.size(), ribbon::key_kind::u64,
                                             build)
        .serialize();
  };
  EXPECT_TRUE(build_into(repeated, dir.file("repeated")).out_of_core);
  EXPECT_TRUE(read_bytes(dir.file("repeated")) == in_memory(repeated));
  std::uint64_t needed = 0;
  try {
    (void)build_into(crowded, dir.file("crowded"));
    FAIL() << "a shard of 60000 keys was solved within " << o.memory_limit << " bytes";
  } catch (const ribbon::memory_limit_error& e) {
    needed = e.needed_limit();
    const std::string what = e.what();
    EXPECT_NE(what.find("too small"), std::string::npos) << what;
    EXPECT_NE(what.find("at least " + std::to_string(needed) + "M"), std::string::npos) << what;
  }
  EXPECT_GT(needed << 20, o.memory_limit);
  EXPECT_TRUE(dir.entries(dir.file("tmp")).empty());
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"repeated", "tmp"}));
  o.memory_limit = needed << 20;
  (void)build_into(crowded, dir.file("crowded"));
  EXPECT_TRUE(read_bytes(dir.file("crowded")) == in_memory(crowded));
  EXPECT_TRUE(dir.entries(dir.file("tmp")).empty());
}

TEST(BulkBuilder, ByteStringKeys) {
  temp_dir dir;
  const auto strings = ribbon_test::string_keys(9, 0, 30'000);
  const auto keys = ribbon_test::views(strings);
  for (std::uint64_t limit : {0ull, 1ull}) {
    ribbon::bulk_options o;
    o.memory_limit = limit;
    o.tmp_dir = dir.path();
    ribbon::bulk_builder builder(ribbon::key_kind::bytes, o);
    builder.add(keys.data(), keys.size());
    EXPECT_EQ(builder.finish(dir.file("s")).out_of_core, limit == 1);
    EXPECT_TRUE(read_bytes(dir.file("s")) ==
                ribbon::filter::build(keys.data(), keys.size(), o.build).serialize());
  }
  ribbon::bulk_builder wrong(ribbon::key_kind::bytes, {});
  const std::uint64_t key = 1;
  EXPECT_THROW(wrong.add(&key, 1), ribbon::error);
}

TEST(BulkBuilder, NothingLeftBehindOnFailureOrAbandon) {
  temp_dir dir;
  const auto keys = ribbon_test::keys_range(1, 0, 20'000);
  ribbon::bulk_options o;
  o.memory_limit = 1;
  o.tmp_dir = dir.path();
  {
    ribbon::bulk_builder abandoned(ribbon::key_kind::u64, o);
    abandoned.add(keys.data(), keys.size());
    EXPECT_EQ(dir.entries().size(), 1u);  // its private spill directory
  }
  EXPECT_TRUE(dir.entries().empty());
  {
    ribbon::bulk_builder failing(ribbon::key_kind::u64, o);
    failing.add(keys.data(), keys.size());
    EXPECT_THROW(failing.finish(dir.file("no/such/dir/out")), ribbon::error);
    EXPECT_THROW(failing.finish(dir.file("out")), ribbon::error);  // once only
  }
  EXPECT_TRUE(dir.entries().empty());
  o.tmp_dir = dir.file("missing");
  ribbon::bulk_builder no_tmp(ribbon::key_kind::u64, o);
  try {
    no_tmp.add(keys.data(), keys.size());
    FAIL() << "expected an error for a missing tmp dir";
  } catch (const ribbon::error& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
}

TEST(BulkBuilder, ARangeSolversErrorFailsTheBuildCleanly) {
  // A solver that fails on its third range (it runs in a background thread): the error
  // reaches finish(), and no file, temporary or not, remains.
  struct failing_solver : ribbon::shard_range_solver {
    int calls = 0;
    std::uint64_t solve(const ribbon::filter_params&, const ribbon::layer_geometry&, std::uint64_t,
                        std::uint64_t, std::vector<std::uint64_t>& keys, std::uint64_t*,
                        void*) override {
      if (++calls == 3) throw ribbon::error("device lost");
      return keys.size();
    }
  };
  temp_dir dir;
  const auto keys = ribbon_test::keys_range(2, 0, 100'000);
  ribbon::bulk_options o;
  o.build.shard_size = 4096;
  o.memory_limit = 1;
  o.expected_keys = 1 << 20;  // many partition files: many ranges
  o.tmp_dir = dir.file("tmp");
  std::filesystem::create_directory(o.tmp_dir);
  auto solver = std::make_shared<failing_solver>();
  o.range_solver = solver;
  ribbon::bulk_builder builder(ribbon::key_kind::u64, o);
  builder.add(keys.data(), keys.size());
  try {
    builder.finish(dir.file("out"));
    FAIL() << "expected the solver's error";
  } catch (const ribbon::error& e) {
    EXPECT_STREQ(e.what(), "device lost");
  }
  EXPECT_EQ(solver->calls, 3);
  EXPECT_TRUE(dir.entries(dir.file("tmp")).empty());
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"tmp"});
}

TEST(BulkBuilder, InvalidOptionsThrow) {
  ribbon::bulk_options o;
  o.build.width = 48;
  EXPECT_THROW(ribbon::bulk_builder(ribbon::key_kind::u64, o), ribbon::error);
}

TEST(BulkBuilder, DefaultMemoryLimitIsAShareOfTheMachine) {
  const std::uint64_t limit = ribbon::default_memory_limit();
  EXPECT_GT(limit, std::uint64_t{64} << 20);
  const std::uint64_t physical = static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                                 static_cast<std::uint64_t>(::sysconf(_SC_PAGE_SIZE));
  EXPECT_LE(limit, physical / 2);
}

// --- 64-bit arithmetic at and past 2^32 (no test can hold 2^32 keys) ---

TEST(SixtyFourBit, LayerGeometryPastTwoToThe32) {
  const ribbon::filter_params p = ribbon::make_params(64, 8);
  const ribbon::layer_sizing sizing = ribbon::default_sizing(64);
  for (std::uint64_t keys : {(1ull << 32) - 1, 1ull << 32, 5'000'000'000ull, 1ull << 40}) {
    SCOPED_TRACE(keys);
    const std::uint64_t starts = ribbon::bumped_layer_starts(keys, p, sizing);
    // (1 - 5/64) keys (eps = -5/64 at w=64), rounded up to whole buckets: exact in 128-bit
    // arithmetic.
    ASSERT_EQ(sizing.overload, -5.0 / 64);
    const auto scaled =
        static_cast<std::uint64_t>((static_cast<ribbon::detail::uint128_t>(keys) * 59 + 63) / 64);
    const std::uint64_t expected = (scaled + p.bucket_size - 1) / p.bucket_size * p.bucket_size;
    EXPECT_NEAR(static_cast<double>(starts), static_cast<double>(expected), 2.0 * p.bucket_size);
    const ribbon::layer_geometry g = ribbon::bumped_geometry(starts, p);
    EXPECT_EQ(g.num_shards(), (starts + p.shard_size - 1) / p.shard_size);
    EXPECT_EQ(g.solution_bytes(64, 8), (starts / 64 + 1) * 8 * 8);
    EXPECT_EQ(g.shard_first_block(g.num_shards(), 64), g.num_blocks(64));
    EXPECT_EQ(g.shard_first_threshold_word(g.num_shards(), p.bucket_size),
              g.threshold_words(p.bucket_size));
    const std::uint64_t last = g.num_shards() - 1;
    EXPECT_EQ(g.shard_begin(last), last * p.shard_size);
    EXPECT_EQ(g.shard_first_block(last, 64), last * p.shard_size / 64 + 1);
    EXPECT_GT(g.shard_first_block(last, 64), 1ull << 24);
    // The largest hash starts in the last position; a hash in the middle in the middle.
    EXPECT_EQ(ribbon::fastrange64(~0ull, starts), starts - 1);
    EXPECT_EQ(ribbon::fastrange64(1ull << 63, starts), starts / 2);
    EXPECT_EQ(ribbon::fastrange64(~0ull, starts) >> g.shard_bits, last);
  }
}

TEST(SixtyFourBit, FileLayoutOffsetsPastFourGigabytes) {
  // A layer of 2^36 start positions at r = 16: sections of 128 GiB, offsets past 2^32.
  ribbon::format::filter_image image;
  image.params = ribbon::make_params(64, 16);
  image.key_count = 1ull << 36;
  ribbon::format::layer_image big;
  big.geometry = ribbon::bumped_geometry(1ull << 36, image.params);
  ribbon::format::layer_image plain;
  plain.geometry = ribbon::plain_geometry(4096, image.params);
  image.layers = {big, plain};
  // 2^19 full shards of 1024 buckets, each 16 words of bucket bits and 9 of exception list.
  const std::uint64_t threshold_bytes = ((1ull << 36) >> 17) * (16 + 9) * 8;
  const std::uint64_t solution_bytes = ((1ull << 36) / 64 + 1) * 16 * 8;
  auto align = [](std::uint64_t x) { return (x + 63) / 64 * 64; };
  std::uint64_t expected = 128 + 2 * 128;
  expected = align(expected) + threshold_bytes;
  expected = align(expected) + solution_bytes;
  expected = align(expected) + (4096 / 64 + 1) * 16 * 8;
  EXPECT_EQ(ribbon::format::image_bytes(image), expected);
  EXPECT_GT(expected, 1ull << 37);
}

}  // namespace
