// The 1+-bit threshold encoding (threshold_codes.hpp) against a model of its rules written
// here: every code sequence, including ones that overflow the exception list, decodes to
// the codes the rules give, and the layer's layout gives every shard its own words.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "ribbon/filter.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"
#include "test_util.hpp"
#include "threshold_model.hpp"

namespace {

using ribbon::detail::shard_code_writer;

/// The codes the rules give a sequence of wanted codes.
std::vector<unsigned> encoded_codes(const std::vector<unsigned>& wanted, std::uint64_t capacity) {
  ribbon_test::code_rules rules(capacity);
  std::vector<unsigned> out;
  for (unsigned code : wanted) out.push_back(rules.give(code));
  return out;
}

/// Random codes: 0, 1, 2, 3 with the given chances of 2 and 3.
std::vector<unsigned> random_codes(std::uint64_t buckets, double heavy, double all,
                                   std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<unsigned> codes(buckets);
  for (auto& c : codes) {
    const double x = u(rng);
    c = x < all ? 3 : x < all + heavy ? 2 : x < 0.5 ? 1 : 0;
  }
  return codes;
}

/// Writes `wanted` through the writer as a solver does (code_for_failure, then record) into
/// a region filled with `fill`; returns the region.
std::vector<std::uint64_t> write_region(const std::vector<unsigned>& wanted, unsigned index_bits,
                                        std::uint64_t fill, std::vector<unsigned>* given) {
  const std::uint64_t buckets = wanted.size();
  std::vector<std::uint64_t> region(ribbon::detail::code_region_words(buckets, index_bits), fill);
  shard_code_writer writer(region.data(), buckets, index_bits);
  for (std::uint64_t b = 0; b < buckets; ++b) {
    const unsigned code = wanted[b] == 0 ? 0 : writer.code_for_failure(b, wanted[b]);
    if (given) given->push_back(code);
    writer.record(b, code);
  }
  return region;
}

void check_sequence(const std::vector<unsigned>& wanted, unsigned index_bits) {
  const std::uint64_t buckets = wanted.size();
  const std::uint64_t capacity = ribbon::detail::exception_capacity(buckets, index_bits);
  const std::vector<unsigned> expected = encoded_codes(wanted, capacity);
  std::vector<unsigned> given;
  const auto region = write_region(wanted, index_bits, 0, &given);
  ASSERT_EQ(given, expected) << "code_for_failure breaks the rules";
  // Every word is written: another fill gives the same region.
  ASSERT_EQ(write_region(wanted, index_bits, ~std::uint64_t{0}, nullptr), region);

  const std::uint32_t light = 19, heavy = 41, bucket_size = 128;
  for (std::uint64_t b = 0; b < buckets; ++b) {
    ASSERT_EQ(ribbon::detail::bucket_code(region.data(), buckets, index_bits, b), expected[b])
        << "bucket " << b << " of " << buckets << ", capacity " << capacity;
    const std::uint32_t cut[4] = {0, light, heavy, bucket_size};
    for (std::uint32_t offset : {0u, light - 1, light, heavy - 1, heavy, bucket_size - 1}) {
      ASSERT_EQ(
          ribbon::detail::region_bumps(region.data(), buckets, index_bits, b, offset, light, heavy),
          offset < cut[expected[b]])
          << "bucket " << b << " offset " << offset;
    }
  }
}

TEST(ThresholdCodes, DecodeToTheCodesTheRulesGive) {
  std::mt19937_64 rng(7);
  // Full shards of the default (1024 buckets), smaller and larger ones, partial last shards
  // (fewer buckets than 2^index_bits), and a one-bucket shard.
  const struct {
    std::uint64_t buckets;
    unsigned index_bits;
  } shapes[] = {{1024, 10}, {512, 9}, {4096, 12}, {32, 5}, {700, 10}, {18, 10}, {1, 10}, {65, 7}};
  for (const auto& shape : shapes) {
    for (const double heavy : {0.0, 0.04, 0.08, 0.3}) {  // from no list to a long tail
      for (int trial = 0; trial < 20; ++trial) {
        SCOPED_TRACE(std::to_string(shape.buckets) + " buckets, heavy " + std::to_string(heavy));
        check_sequence(random_codes(shape.buckets, heavy, heavy / 8, rng), shape.index_bits);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(ThresholdCodes, EdgeSequences) {
  const std::uint64_t m = 1024;
  const unsigned bits = 10;
  const std::uint64_t capacity = ribbon::detail::exception_capacity(m, bits);
  ASSERT_EQ(capacity, 51u);  // 8 words of 10-bit entries (and a header word)
  std::vector<unsigned> codes(m, 0);
  check_sequence(codes, bits);
  codes.assign(m, 1);
  check_sequence(codes, bits);
  codes.assign(m, 2);  // the list fills at bucket 50; the heavy tail starts at 51
  check_sequence(codes, bits);
  codes.assign(m, 3);  // two buckets in the header; the all tail starts at bucket 2
  check_sequence(codes, bits);
  // A full list, then codes 1 (now 2), 3, 3, 1 (still 2), 3 (the all tail), 1 (now 3).
  codes.assign(m, 0);
  for (std::uint64_t b = 0; b <= capacity; ++b) codes[b] = 2;
  const std::uint64_t t = capacity + 1;
  codes[t] = 1;
  codes[t + 1] = 3;
  codes[t + 2] = 3;
  codes[t + 3] = 1;
  codes[t + 4] = 3;
  codes[t + 5] = 1;
  codes[m - 1] = 1;
  check_sequence(codes, bits);
  const auto region = write_region(codes, bits, 0, nullptr);
  auto code = [&](std::uint64_t b) {
    return ribbon::detail::bucket_code(region.data(), m, bits, b);
  };
  EXPECT_EQ(code(capacity - 1), 2u);
  EXPECT_EQ(code(capacity), 2u);  // the heavy tail's first bucket
  EXPECT_EQ(code(t), 2u);
  EXPECT_EQ(code(t + 1), 3u);
  EXPECT_EQ(code(t + 3), 2u);
  EXPECT_EQ(code(t + 4), 3u);
  EXPECT_EQ(code(t + 5), 3u);
  EXPECT_EQ(code(m - 1), 3u);
  EXPECT_EQ(code(m - 2), 0u);
}

TEST(ThresholdCodes, BreaksWhenTheRulesAreBroken) {
  // The model must be able to tell: a code 1 recorded in the heavy tail (which the writer's
  // code_for_failure would have raised to 2) decodes as 2.
  const std::uint64_t m = 64;
  const unsigned bits = 6;
  // One word more than the region: GCC's -Warray-bounds cannot see that the list's count
  // bounds its reads once everything here is constant.
  std::vector<std::uint64_t> region(ribbon::detail::code_region_words(m, bits) + 1, 0);
  shard_code_writer writer(region.data(), m, bits);
  const std::uint64_t capacity = ribbon::detail::exception_capacity(m, bits);
  for (std::uint64_t b = 0; b < m; ++b) writer.record(b, b <= capacity ? 2 : 1);
  EXPECT_EQ(ribbon::detail::bucket_code(region.data(), m, bits, capacity + 1), 2u);
}

TEST(ThresholdCodes, LayerLayoutGivesEachShardItsOwnWords) {
  for (const std::uint64_t shard_size : {std::uint64_t{1} << 12, std::uint64_t{1} << 17}) {
    const ribbon::filter_params p = ribbon::make_params(64, 8, shard_size);
    for (const std::uint64_t starts :
         {p.bucket_size * std::uint64_t{1}, shard_size - p.bucket_size, shard_size, shard_size * 3,
          shard_size * 3 + p.bucket_size * 5}) {
      const ribbon::layer_geometry g = ribbon::bumped_geometry(starts, p);
      std::uint64_t words = 0;
      for (std::uint64_t s = 0; s < g.num_shards(); ++s) {
        EXPECT_EQ(g.shard_first_threshold_word(s, p.bucket_size), words);
        words += ribbon::detail::code_region_words(g.shard_buckets(s, p.bucket_size),
                                                   g.code_index_bits(p.bucket_size));
      }
      EXPECT_EQ(g.threshold_words(p.bucket_size), words);
      EXPECT_EQ(g.shard_first_threshold_word(g.num_shards(), p.bucket_size), words);
    }
  }
  // The default shard: 16 words of bits and 9 of list for 1024 buckets, 1.5625 bits each.
  const ribbon::filter_params p = ribbon::make_params(64, 8);
  const ribbon::layer_geometry g = ribbon::bumped_geometry(p.shard_size * 4, p);
  EXPECT_EQ(g.threshold_words(p.bucket_size) * 64 * 1024 / g.num_buckets(p.bucket_size), 1600u);
}

TEST(ThresholdCodes, NamesReadBackAsTheirEncodings) {
  for (const auto codes :
       {ribbon::threshold_encoding::two_bit, ribbon::threshold_encoding::one_plus_bit}) {
    std::optional<ribbon::threshold_encoding> read;
    EXPECT_TRUE(
        ribbon::threshold_encoding_from_name(ribbon::threshold_encoding_name(codes), &read));
    EXPECT_EQ(read, codes);
    EXPECT_TRUE(ribbon::threshold_encoding_from_name("auto", &read));
    EXPECT_FALSE(read.has_value()) << "auto: the builder's default";
  }
  std::optional<ribbon::threshold_encoding> read = ribbon::threshold_encoding::two_bit;
  for (const char* bad : {"", "1-bit", "2-Bit", "auto ", "1+-bit\n"}) {
    EXPECT_FALSE(ribbon::threshold_encoding_from_name(bad, &read)) << bad;
    EXPECT_EQ(read, ribbon::threshold_encoding::two_bit) << "left untouched";
  }
}

TEST(ThresholdCodes, EitherEncodingBuildsACorrectFilterAtEveryWidth) {
  const std::uint64_t n = 300'000;  // three shards of layer 0
  const std::vector<std::uint64_t> keys = ribbon_test::keys_range(5, 0, n);
  const std::vector<std::uint64_t> others = ribbon_test::keys_range(6, 0, n);
  for (const std::uint32_t width : {32u, 64u, 128u}) {
    for (const auto codes :
         {ribbon::threshold_encoding::two_bit, ribbon::threshold_encoding::one_plus_bit}) {
      SCOPED_TRACE("w=" + std::to_string(width) + " " + ribbon::threshold_encoding_name(codes));
      ribbon::build_options o;
      o.width = width;
      o.threshold_codes = codes;
      const ribbon::filter built = ribbon::filter::build(keys.data(), n, o);
      // The standard layout's version names the encoding; the compact one records it.
      const std::vector<unsigned char> compact = built.serialize();
      const ribbon::filter c = ribbon::filter::from_bytes(compact.data(), compact.size());
      EXPECT_EQ(c.threshold_codes(), codes);
      EXPECT_EQ(c.format_version(), ribbon::format::compact_version);
      const std::vector<unsigned char> bytes =
          built.serialize(ribbon::format::layout_choice::standard);
      const ribbon::filter f = ribbon::filter::from_bytes(bytes.data(), bytes.size());
      EXPECT_EQ(f.threshold_codes(), codes);
      EXPECT_EQ(f.format_version(), codes == ribbon::threshold_encoding::two_bit ? 2u : 3u);
      for (std::uint64_t k : keys) ASSERT_TRUE(f.contains(k)) << k;
      std::vector<char> batched(n);
      f.contains(keys.data(), n, reinterpret_cast<bool*>(batched.data()));
      for (char b : batched) ASSERT_TRUE(b);
      std::uint64_t false_positives = 0;
      for (std::uint64_t k : others) false_positives += f.contains(k);
      EXPECT_LT(false_positives, 2 * n / 256) << "FPR far above 2^-8";
    }
  }
}

}  // namespace
