// The filter: no false negatives at every size that matters for the structure, scalar and
// batched queries agree, byte-string keys, duplicates, key-kind checks, bad options.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ribbon/detail/planned_queries.hpp"
#include "ribbon/error.hpp"
#include "ribbon/filter.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"
#include "test_util.hpp"

namespace {

using ribbon_test::rng;

std::uint32_t bucket_size(unsigned width) {
  return ribbon::detail::default_bucket_size(width);
}

/// A small shard size, so that many shards are cheap: the smallest allowed (32 buckets) but at
/// least 4096.
std::uint64_t small_shard(unsigned width) {
  return std::max<std::uint64_t>(4096, 32 * std::uint64_t{bucket_size(width)});
}

/// The largest key count whose layer 0 has at most `starts` start positions.
std::uint64_t keys_for_layer0_starts(unsigned width, std::uint32_t r, std::uint64_t shard_size,
                                     std::uint64_t starts) {
  const ribbon::filter_params p = ribbon::make_params(width, r, shard_size);
  const ribbon::layer_sizing sizing = ribbon::default_sizing(width);
  std::uint64_t lo = 0, hi = 4 * starts;  // invariant: lo fits, hi does not
  while (hi - lo > 1) {
    const std::uint64_t mid = (lo + hi) / 2;
    (ribbon::bumped_layer_starts(mid, p, sizing) <= starts ? lo : hi) = mid;
  }
  return lo;
}

/// Invariants every filter satisfies, whatever its keys.
void check_structure(const ribbon::filter& f, std::uint64_t n, const ribbon::build_options& o) {
  EXPECT_EQ(f.key_count(), n);
  EXPECT_EQ(f.params().width, o.width);
  EXPECT_EQ(f.params().result_bits, o.result_bits);
  EXPECT_EQ(f.params().seed, o.seed);
  if (o.shard_size != 0) {
    EXPECT_EQ(f.params().shard_size, o.shard_size);
  }
  EXPECT_EQ(ribbon::check_params(f.params()), nullptr);
  ASSERT_EQ(f.layers().size(), f.num_layers());
  if (n == 0) {
    EXPECT_EQ(f.num_layers(), 0u);
  } else {
    ASSERT_GE(f.num_layers(), 1u);
    ASSERT_LE(f.num_layers(), ribbon::max_layers);
    std::uint64_t expected_input = n;
    for (std::size_t l = 0; l < f.layers().size(); ++l) {
      const auto& layer = f.layers()[l];
      EXPECT_EQ(layer.input_keys, expected_input) << "layer " << l;
      EXPECT_LE(layer.bumped_keys, layer.input_keys) << "layer " << l;
      const bool last = l + 1 == f.layers().size();
      // Only the last layer can be plain; the last layer (bumped or plain) bumps no key.
      if (!layer.geometry.bumping()) {
        EXPECT_TRUE(last) << "plain layer " << l << " is not the last";
      }
      if (last) {
        EXPECT_EQ(layer.bumped_keys, 0u);
      }
      if (layer.geometry.bumping()) {
        EXPECT_EQ(layer.geometry.shard_size(), f.params().shard_size);
      }
      expected_input = layer.bumped_keys;
    }
  }
  EXPECT_EQ(f.size_bytes(), f.serialize().size());
  if (n > 0) {
    EXPECT_DOUBLE_EQ(f.bits_per_key(),
                     8.0 * static_cast<double>(f.size_bytes()) / static_cast<double>(n));
  }
}

/// The largest plausible number of false positives among `negatives` queries at 2^-r
/// (mean + 6 sigma + slack): a loose sanity bound, the FPR suite measures it properly.
std::uint64_t fp_bound(std::uint64_t negatives, std::uint32_t r) {
  const double p = std::ldexp(1.0, -static_cast<int>(r));
  const double mean = static_cast<double>(negatives) * p;
  return static_cast<std::uint64_t>(mean + 6 * std::sqrt(mean * (1 - p)) + 5);
}

/// Every member is found by the scalar and the batched query (sequential and parallel, with
/// the fastest row check of this CPU and with the portable one), and both agree on every
/// non-member.
template <class Key>
void check_queries(ribbon::filter& f, const std::vector<Key>& members,
                   const std::vector<Key>& non_members, std::uint32_t r) {
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (!f.contains(members[i])) {
      ADD_FAILURE() << "false negative: member " << i << " of " << members.size();
      return;
    }
  }
  for (const auto& [threads, row_check] : {std::pair{0u, ribbon::detail::row_check::fastest},
                                           std::pair{1u, ribbon::detail::row_check::fastest},
                                           std::pair{1u, ribbon::detail::row_check::avx2},
                                           std::pair{1u, ribbon::detail::row_check::portable}}) {
    SCOPED_TRACE("threads " + std::to_string(threads) + " row check " +
                 std::to_string(static_cast<int>(row_check)));
    ribbon::detail::set_row_check(row_check);
    f.set_query_threads(threads);
    std::unique_ptr<bool[]> out(new bool[members.size() + 1]);
    f.contains(members.data(), members.size(), out.get());
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (!out[i]) {
        ADD_FAILURE() << "batched false negative: member " << i << " threads " << threads;
        return;
      }
    }
    std::unique_ptr<bool[]> negative(new bool[non_members.size() + 1]);
    f.contains(non_members.data(), non_members.size(), negative.get());
    std::uint64_t positives = 0;
    for (std::size_t i = 0; i < non_members.size(); ++i) {
      const bool scalar = f.contains(non_members[i]);
      if (scalar != negative[i]) {
        ADD_FAILURE() << "scalar and batched disagree on non-member " << i;
        return;
      }
      positives += scalar;
    }
    EXPECT_LE(positives, fp_bound(non_members.size(), r))
        << positives << " false positives among " << non_members.size();
  }
  ribbon::detail::set_row_check(ribbon::detail::row_check::fastest);
  f.set_query_threads(0);
}

/// Builds a u64 filter of keys [0, n) of a family and checks it against [n, n + m).
void check_u64_filter(std::uint64_t n, const ribbon::build_options& o, std::uint64_t family) {
  SCOPED_TRACE("n=" + std::to_string(n) + " w=" + std::to_string(o.width) +
               " r=" + std::to_string(o.result_bits) + " S=" + std::to_string(o.shard_size));
  const std::vector<std::uint64_t> members = ribbon_test::keys_range(family, 0, n);
  const std::uint64_t m = std::max<std::uint64_t>(n, 20000);
  const std::vector<std::uint64_t> non_members = ribbon_test::keys_range(family, n, m);
  ribbon::filter f = ribbon::filter::build(members.data(), n, o);
  check_structure(f, n, o);
  check_queries(f, members, non_members, o.result_bits);
}

using width_bits = std::tuple<unsigned, std::uint32_t>;

std::string width_bits_name(const ::testing::TestParamInfo<width_bits>& param_info) {
  return "w" + std::to_string(std::get<0>(param_info.param)) + "_r" +
         std::to_string(std::get<1>(param_info.param));
}

class FilterSizes : public ::testing::TestWithParam<width_bits> {};

TEST_P(FilterSizes, NoFalseNegativesAtEverySizeThatMatters) {
  const unsigned w = std::get<0>(GetParam());
  const std::uint32_t r = std::get<1>(GetParam());
  const std::uint64_t S = small_shard(w), B = bucket_size(w);
  ribbon::build_options o;
  o.width = w;
  o.result_bits = r;
  o.shard_size = S;
  o.seed = 1000 + w + r;
  // Layer 0 with exactly S start positions (one full shard), and with S + B (a second shard
  // of a single bucket, whose first w starts are bumped by rule).
  const std::uint64_t one_shard = keys_for_layer0_starts(w, r, S, S);
  const std::uint64_t plus_bucket = keys_for_layer0_starts(w, r, S, S + B);
  ASSERT_LT(one_shard, plus_bucket);
  const std::uint64_t sizes[] = {
      0,           1,          2,
      w - 1,       w,          w + 1,
      B,           S - 1,      S,
      S + 1,       one_shard,  one_shard + 1,
      plus_bucket, 5 * S + 77, ribbon_test::scaled(20 * S + 5, 8 * S + 5)};
  for (std::uint64_t n : sizes) {
    check_u64_filter(n, o, n * 7 + w);
    if (HasFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(AllWidths, FilterSizes,
                         ::testing::Combine(::testing::Values(32u, 64u, 128u),
                                            ::testing::Values(1u, 8u, 16u, 32u)),
                         width_bits_name);

class LargeFilter : public ::testing::TestWithParam<width_bits> {};

TEST_P(LargeFilter, MillionKeysWithDefaultShards) {
  ribbon::build_options o;
  o.width = std::get<0>(GetParam());
  o.result_bits = std::get<1>(GetParam());
  o.seed = 77;
  const std::uint64_t n = ribbon_test::scaled(1000000, 100000);
  check_u64_filter(n, o, 3);
  // The same keys with small shards: many shards (about 250 at w = 64).
  o.shard_size = small_shard(o.width);
  check_u64_filter(n, o, 3);
}

INSTANTIATE_TEST_SUITE_P(Selected, LargeFilter,
                         ::testing::Values(width_bits{64, 1}, width_bits{64, 8}, width_bits{64, 16},
                                           width_bits{64, 32}, width_bits{32, 8},
                                           width_bits{128, 8}),
                         width_bits_name);

class StringKeys : public ::testing::TestWithParam<width_bits> {};

TEST_P(StringKeys, NoFalseNegativesForByteStrings) {
  const unsigned w = std::get<0>(GetParam());
  const std::uint32_t r = std::get<1>(GetParam());
  const std::uint64_t S = small_shard(w);
  ribbon::build_options o;
  o.width = w;
  o.result_bits = r;
  o.shard_size = S;
  o.seed = 5;
  for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{w},
                          S + 1, ribbon_test::scaled(6 * S + 1, 3 * S + 1)}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const std::vector<std::string> keys = ribbon_test::string_keys(9, 0, n);
    const std::vector<std::string> others = ribbon_test::string_keys(9, n, 20000);
    const std::vector<std::string_view> members = ribbon_test::views(keys);
    const std::vector<std::string_view> non_members = ribbon_test::views(others);
    ribbon::filter f = ribbon::filter::build(members.data(), n, o);
    EXPECT_EQ(f.params().keys, ribbon::key_kind::bytes);
    check_structure(f, n, o);
    check_queries(f, members, non_members, r);
    if (n > 0) {
      EXPECT_TRUE(f.contains(std::string_view{}));  // key 0 is the empty string
    }
    if (HasFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(AllWidths, StringKeys,
                         ::testing::Combine(::testing::Values(32u, 64u, 128u),
                                            ::testing::Values(1u, 8u, 32u)),
                         width_bits_name);

TEST(StringKeys, EmbeddedZeroBytesAndPrefixesAreDistinctKeys) {
  // "a", "a\0", "a\0\0" and so on are different keys; a filter of some of them must still find
  // exactly those (the others are rejected at the FPR, which is tiny at r = 32).
  std::vector<std::string> keys;
  for (int i = 0; i < 64; ++i) keys.push_back("a" + std::string(static_cast<std::size_t>(i), '\0'));
  std::vector<std::string_view> members;
  for (int i = 0; i < 64; i += 2) members.push_back(keys[static_cast<std::size_t>(i)]);
  ribbon::build_options o;
  o.result_bits = 32;
  ribbon::filter f = ribbon::filter::build(members.data(), members.size(), o);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(f.contains(std::string_view(keys[static_cast<std::size_t>(i)])), i % 2 == 0) << i;
  }
}

TEST(KeyKind, QueryingWithTheWrongKindThrows) {
  const std::vector<std::uint64_t> keys = ribbon_test::keys_range(1, 0, 1000);
  const std::vector<std::string> strings = ribbon_test::string_keys(1, 0, 1000);
  const std::vector<std::string_view> views = ribbon_test::views(strings);
  ribbon::filter by_int = ribbon::filter::build(keys.data(), keys.size());
  ribbon::filter by_string = ribbon::filter::build(views.data(), views.size());
  ribbon::filter empty = ribbon::filter::build(keys.data(), 0);
  bool out[1000];
  EXPECT_THROW(by_int.contains(std::string_view("x")), ribbon::error);
  EXPECT_THROW(by_int.contains(views.data(), views.size(), out), ribbon::error);
  EXPECT_THROW(empty.contains(std::string_view("x")), ribbon::error);
  EXPECT_THROW(by_string.contains(std::uint64_t{1}), ribbon::error);
  EXPECT_THROW(by_string.contains(keys.data(), keys.size(), out), ribbon::error);
  try {
    by_string.contains(std::uint64_t{1});
  } catch (const ribbon::error& e) {
    EXPECT_NE(std::string(e.what()).find("byte-string"), std::string::npos) << e.what();
  }
  // The right kind still works after a rejected query.
  EXPECT_TRUE(by_int.contains(keys[0]));
  EXPECT_TRUE(by_string.contains(views[0]));
  // A filter built from key hashes keeps the kind it was given.
  std::vector<std::uint64_t> hashes(1000);
  for (std::size_t i = 0; i < hashes.size(); ++i) hashes[i] = keys[i] * 3;
  ribbon::filter from_hashes =
      ribbon::filter::build_from_hashes(hashes.data(), hashes.size(), ribbon::key_kind::bytes);
  EXPECT_EQ(from_hashes.params().keys, ribbon::key_kind::bytes);
  EXPECT_THROW(from_hashes.contains(std::uint64_t{1}), ribbon::error);
  for (std::uint64_t h : hashes) ASSERT_TRUE(from_hashes.ref().contains_hash(h));
}

TEST(EmptyFilter, ContainsNothing) {
  for (unsigned w : {32u, 64u, 128u}) {
    ribbon::build_options o;
    o.width = w;
    ribbon::filter f = ribbon::filter::build(static_cast<const std::uint64_t*>(nullptr), 0, o);
    EXPECT_EQ(f.num_layers(), 0u);
    const std::vector<std::uint64_t> probe = ribbon_test::keys_range(2, 0, 70000);
    std::unique_ptr<bool[]> out(new bool[probe.size()]);
    f.contains(probe.data(), probe.size(), out.get());
    for (std::size_t i = 0; i < probe.size(); ++i) {
      ASSERT_FALSE(out[i]);
      ASSERT_FALSE(f.contains(probe[i]));
    }
    f.contains(probe.data(), 0, out.get());  // an empty batch is fine
  }
}

// ---------------------------------------------------------------------------------------------
// Duplicates.

class Duplicates : public ::testing::TestWithParam<unsigned> {};

TEST_P(Duplicates, EveryKeyThreeTimes) {
  const unsigned w = GetParam();
  for (std::uint64_t shard_size : {small_shard(w), std::uint64_t{0}}) {
    ribbon::build_options o;
    o.width = w;
    o.shard_size = shard_size;
    o.seed = 3;
    const std::uint64_t distinct = ribbon_test::scaled(50000, 20000);
    const std::vector<std::uint64_t> unique = ribbon_test::keys_range(4, 0, distinct);
    // Copies spread over the input (not adjacent), in a shuffled order.
    std::vector<std::uint64_t> keys;
    for (int copy = 0; copy < 3; ++copy) keys.insert(keys.end(), unique.begin(), unique.end());
    rng random(w);
    for (std::size_t i = keys.size(); i > 1; --i) std::swap(keys[i - 1], keys[random.below(i)]);
    ribbon::filter f = ribbon::filter::build(keys.data(), keys.size(), o);
    check_structure(f, distinct, o);  // repeats are stored once
    check_queries(f, unique, ribbon_test::keys_range(4, distinct, 50000), o.result_bits);

    // Byte strings, each three times.
    const std::vector<std::string> strings = ribbon_test::string_keys(4, 0, distinct / 4);
    std::vector<std::string_view> views;
    for (int copy = 0; copy < 3; ++copy) {
      for (const std::string& s : strings) views.emplace_back(s);
    }
    ribbon::filter g = ribbon::filter::build(views.data(), views.size(), o);
    check_structure(g, strings.size(), o);
    const std::vector<std::string> others = ribbon_test::string_keys(4, distinct / 4, 20000);
    check_queries(g, ribbon_test::views(strings), ribbon_test::views(others), o.result_bits);
  }
}

TEST_P(Duplicates, AllKeysEqual) {
  const unsigned w = GetParam();
  const std::uint64_t copies = 100000;
  for (std::uint64_t seed = 0; seed < 3; ++seed) {
    for (std::uint64_t shard_size : {small_shard(w), std::uint64_t{0}}) {
      ribbon::build_options o;
      o.width = w;
      o.shard_size = shard_size;
      o.seed = seed;
      const std::uint64_t key = ribbon_test::key_at(5, seed);
      const std::vector<std::uint64_t> keys(copies, key);
      ribbon::filter f = ribbon::filter::build(keys.data(), keys.size(), o);
      check_structure(f, 1, o);
      check_queries(f, std::vector<std::uint64_t>{key}, ribbon_test::keys_range(6, 0, 20000),
                    o.result_bits);
      const std::string text = "the same string";
      const std::vector<std::string_view> strings(copies, std::string_view(text));
      ribbon::filter g = ribbon::filter::build(strings.data(), strings.size(), o);
      check_structure(g, 1, o);
      EXPECT_TRUE(g.contains(std::string_view(text)));
    }
  }
}

TEST_P(Duplicates, ManyCopiesOfAKeyBumpedByTheShardHeadRule) {
  // 10^5 copies of one key hash whose layer-0 start is in the first w starts of shard 1,
  // among other keys: the copies are one key, bumped once, and the file is the set's.
  const unsigned w = GetParam();
  ribbon::build_options o;
  o.width = w;
  o.shard_size = small_shard(w);
  o.result_bits = 8;
  const std::uint64_t copies = 100000;
  std::vector<std::uint64_t> set = ribbon_test::keys_range(9, 0, 3 * o.shard_size);
  const ribbon::filter_params p = ribbon::make_params(w, 8, o.shard_size);
  const std::uint64_t starts =
      ribbon::bumped_layer_starts(set.size() + 1, p, ribbon::default_sizing(w));
  ASSERT_GT(starts, o.shard_size + w);
  rng random(w);
  std::uint64_t hash = 0;
  for (;;) {
    hash = random.next();
    const std::uint64_t s = ribbon::fastrange64(hash, starts);
    if (s >= o.shard_size && s < o.shard_size + w) break;
  }
  set.push_back(hash);
  std::vector<std::uint64_t> hashes = set;
  hashes.insert(hashes.end(), copies, hash);
  ribbon::filter f =
      ribbon::filter::build_from_hashes(hashes.data(), hashes.size(), ribbon::key_kind::u64, o);
  check_structure(f, set.size(), o);
  ASSERT_GE(f.num_layers(), 2u);
  EXPECT_GE(f.layers()[0].bumped_keys, 1u);
  EXPECT_LT(f.layers()[0].bumped_keys, set.size() / 4);
  EXPECT_TRUE(f.ref().contains_hash(hash));
  EXPECT_TRUE(f.serialize() ==
              ribbon::filter::build_from_hashes(set.data(), set.size(), ribbon::key_kind::u64, o)
                  .serialize());
}

INSTANTIATE_TEST_SUITE_P(AllWidths, Duplicates, ::testing::Values(32u, 64u, 128u),
                         [](const ::testing::TestParamInfo<unsigned>& param_info) {
                           return "w" + std::to_string(param_info.param);
                         });

// ---------------------------------------------------------------------------------------------
// Options and parameters.

TEST(BadOptions, Throw) {
  const std::vector<std::uint64_t> keys = ribbon_test::keys_range(1, 0, 100);
  const std::vector<std::string> strings = ribbon_test::string_keys(1, 0, 100);
  const std::vector<std::string_view> views = ribbon_test::views(strings);
  auto options = [](unsigned w, std::uint32_t r, std::uint64_t shard_size) {
    ribbon::build_options o;
    o.width = w;
    o.result_bits = r;
    o.shard_size = shard_size;
    return o;
  };
  const ribbon::build_options bad[] = {
      options(48, 8, 0),    options(0, 8, 0),
      options(16, 8, 0),    options(256, 8, 0),
      options(64, 0, 0),    options(64, 33, 0),
      options(64, 64, 0),   options(64, 8, 5000),
      options(64, 8, 4097), options(64, 8, 3 << 12),
      options(64, 8, 2048), options(128, 8, 8192),
      options(32, 8, 512),  options(64, 8, std::uint64_t{1} << 32),
  };
  for (const ribbon::build_options& o : bad) {
    SCOPED_TRACE("w=" + std::to_string(o.width) + " r=" + std::to_string(o.result_bits) +
                 " S=" + std::to_string(o.shard_size));
    EXPECT_THROW(ribbon::filter::build(keys.data(), keys.size(), o), ribbon::error);
    EXPECT_THROW(ribbon::filter::build(views.data(), views.size(), o), ribbon::error);
    EXPECT_THROW(
        ribbon::filter::build_from_hashes(keys.data(), keys.size(), ribbon::key_kind::u64, o),
        ribbon::error);
    // Also with no keys: options are checked first.
    EXPECT_THROW(ribbon::filter::build(keys.data(), 0, o), ribbon::error);
  }
  try {
    ribbon::filter::build(keys.data(), keys.size(), options(48, 8, 0));
    ADD_FAILURE() << "width 48 accepted";
  } catch (const ribbon::error& e) {
    EXPECT_NE(std::string(e.what()).find("width"), std::string::npos) << e.what();
  }
}

TEST(BadOptions, ValidExtremesAreAccepted) {
  const std::vector<std::uint64_t> keys = ribbon_test::keys_range(1, 0, 3000);
  for (unsigned w : {32u, 64u, 128u}) {
    for (std::uint32_t r : {1u, 32u}) {
      ribbon::build_options o;
      o.width = w;
      o.result_bits = r;
      o.shard_size = 32 * std::uint64_t{bucket_size(w)};  // the smallest allowed
      ribbon::filter f = ribbon::filter::build(keys.data(), keys.size(), o);
      for (std::uint64_t k : keys) ASSERT_TRUE(f.contains(k));
    }
  }
}

TEST(Params, DefaultsAreValid) {
  for (unsigned w : {32u, 64u, 128u}) {
    for (std::uint32_t r = 1; r <= 32; ++r) {
      const ribbon::filter_params p = ribbon::make_params(w, r);
      ASSERT_EQ(ribbon::check_params(p), nullptr) << "w=" << w << " r=" << r;
      EXPECT_EQ(p.width, w);
      EXPECT_EQ(p.result_bits, r);
      EXPECT_TRUE(ribbon::detail::is_power_of_two(p.shard_size));
      EXPECT_EQ(p.shard_size % p.bucket_size, 0u);
      EXPECT_EQ(p.threshold(0), 0u);
      EXPECT_EQ(p.threshold(3), p.bucket_size);
      EXPECT_LE(p.threshold(1), p.threshold(2));
    }
  }
  // BuRR's bucket sizes and 2-bit thresholds, from eps = -5/64 at w=64 (B=128: cut points
  // (0.78 + 1.30 eps) B = 86 and (0.91 + 0.75 eps) B = 108).
  EXPECT_EQ(ribbon::make_params(32, 8).bucket_size, 32u);
  EXPECT_EQ(ribbon::make_params(64, 8).bucket_size, 128u);
  EXPECT_EQ(ribbon::make_params(128, 8).bucket_size, 512u);
  const ribbon::filter_params p64 = ribbon::make_params(64, 8);
  EXPECT_EQ(p64.threshold_light, 127u - 108u);
  EXPECT_EQ(p64.threshold_heavy, 127u - 86u);
  // make_params records what it is given, and check_params rejects what is wrong with it.
  EXPECT_NE(ribbon::check_params(ribbon::make_params(48, 8)), nullptr);
  EXPECT_NE(ribbon::check_params(ribbon::make_params(64, 0)), nullptr);
  EXPECT_NE(ribbon::check_params(ribbon::make_params(64, 33)), nullptr);
  EXPECT_NE(ribbon::check_params(ribbon::make_params(64, 8, 6000)), nullptr);
  EXPECT_EQ(ribbon::check_params(ribbon::make_params(64, 8, 8192, 9, ribbon::key_kind::bytes)),
            nullptr);
  ribbon::filter_params bad = p64;
  bad.threshold_light = 0;
  EXPECT_NE(ribbon::check_params(bad), nullptr);
  bad = p64;
  bad.threshold_heavy = bad.bucket_size + 1;
  EXPECT_NE(ribbon::check_params(bad), nullptr);
  bad = p64;
  bad.bucket_size = 96;
  EXPECT_NE(ribbon::check_params(bad), nullptr);
  bad = p64;
  bad.keys = static_cast<ribbon::key_kind>(7);
  EXPECT_NE(ribbon::check_params(bad), nullptr);
}

TEST(Params, ResultBitsForFpr) {
  EXPECT_EQ(ribbon::result_bits_for_fpr(0.5), 1u);
  EXPECT_EQ(ribbon::result_bits_for_fpr(0.9), 1u);
  EXPECT_EQ(ribbon::result_bits_for_fpr(0.25), 2u);
  EXPECT_EQ(ribbon::result_bits_for_fpr(0.2), 3u);
  EXPECT_EQ(ribbon::result_bits_for_fpr(0.01), 7u);
  EXPECT_EQ(ribbon::result_bits_for_fpr(1.0 / 256), 8u);
  EXPECT_EQ(ribbon::result_bits_for_fpr(0.0039), 9u);
  EXPECT_EQ(ribbon::result_bits_for_fpr(std::ldexp(1.0, -32)), 32u);
  EXPECT_EQ(ribbon::result_bits_for_fpr(1e-15), 32u);  // clamped
  EXPECT_EQ(ribbon::result_bits_for_fpr(0.0), 0u);     // invalid
  EXPECT_EQ(ribbon::result_bits_for_fpr(1.0), 0u);
  EXPECT_EQ(ribbon::result_bits_for_fpr(-0.5), 0u);
  EXPECT_EQ(ribbon::result_bits_for_fpr(std::nan("")), 0u);
  for (std::uint32_t r = 1; r <= 32; ++r) {
    EXPECT_EQ(ribbon::result_bits_for_fpr(std::ldexp(1.0, -static_cast<int>(r))), r);
  }
}

/// The batched query runs a pipeline that hashes keys 2 * 32 ahead of their answer: every
/// batch length around its fill and drain, members and non-members mixed, at several starting
/// offsets, with each row check, gives the scalar answers.
TEST(Batched, EqualsScalarAtEveryBatchLength) {
  struct shape {
    unsigned width;
    std::uint32_t result_bits;
    double target_fpr;  // > 0: fractional bits (blocks of r and r + 1 words)
  };
  for (const shape s : {shape{64, 8, 0}, shape{32, 8, 0}, shape{128, 16, 0}, shape{64, 8, 0.01}}) {
    ribbon::build_options o;
    o.width = s.width;
    o.result_bits = s.result_bits;
    o.target_fpr = s.target_fpr;
    o.shard_size = small_shard(s.width);
    const std::vector<std::uint64_t> members = ribbon_test::keys_range(11, 0, 40000);
    const ribbon::filter f = ribbon::filter::build(members.data(), members.size(), o);
    // Members and non-members alternate in runs of 3, so bumped keys of every layer and
    // layer-0 keys follow each other in the pipeline.
    std::vector<std::uint64_t> probes;
    const std::vector<std::uint64_t> others = ribbon_test::keys_range(11, 40000, 400);
    for (std::size_t i = 0; i < others.size(); ++i) {
      probes.push_back(i % 6 < 3 ? members[i * 97] : others[i]);
    }
    std::vector<char> scalar(probes.size());
    for (std::size_t i = 0; i < probes.size(); ++i) scalar[i] = f.contains(probes[i]);
    std::unique_ptr<bool[]> out(new bool[probes.size()]);
    for (const auto row_check :
         {ribbon::detail::row_check::fastest, ribbon::detail::row_check::avx2,
          ribbon::detail::row_check::portable}) {
      ribbon::detail::set_row_check(row_check);
      for (std::size_t offset : {0, 1, 7}) {
        for (std::size_t length = 0; offset + length <= 2 * 64 + 70; ++length) {
          f.contains(probes.data() + offset, length, out.get());
          for (std::size_t i = 0; i < length; ++i) {
            ASSERT_EQ(out[i], scalar[offset + i] != 0)
                << "w=" << s.width << " r=" << s.result_bits << " fpr=" << s.target_fpr
                << " offset " << offset << " length " << length << " key " << i;
          }
        }
      }
    }
    ribbon::detail::set_row_check(ribbon::detail::row_check::fastest);
  }
}

TEST(Filter, MoveKeepsAnswers) {
  const std::vector<std::uint64_t> keys = ribbon_test::keys_range(8, 0, 5000);
  ribbon::filter f = ribbon::filter::build(keys.data(), keys.size());
  const std::vector<unsigned char> bytes = f.serialize();
  ribbon::filter g(std::move(f));
  for (std::uint64_t k : keys) ASSERT_TRUE(g.contains(k));
  ribbon::filter h;
  h = std::move(g);
  for (std::uint64_t k : keys) ASSERT_TRUE(h.contains(k));
  EXPECT_EQ(h.serialize(), bytes);
}

}  // namespace
