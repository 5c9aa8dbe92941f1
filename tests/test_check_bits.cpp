// Retrieval with check bits (build_options::check_bits, format version 4): every member's
// value exact and found; non-members found at a rate within 5 sigma of 2^-C; batched answers
// equal scalar ones; files round-trip as version 4 and a damaged check-bit field is refused;
// options that cannot hold are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "ribbon/error.hpp"
#include "ribbon/filter.hpp"
#include "ribbon/format.hpp"
#include "test_util.hpp"

namespace {

using ribbon::filter_variant;
using ribbon_test::keys_range;
using ribbon_test::scaled;

std::vector<std::uint32_t> values_for(std::size_t n, std::uint32_t value_bits) {
  std::vector<std::uint32_t> values(n);
  const std::uint64_t mask = (std::uint64_t{1} << value_bits) - 1;
  for (std::size_t i = 0; i < n; ++i) {
    values[i] = static_cast<std::uint32_t>(ribbon_test::splitmix(i * 31 + 7) & mask);
  }
  return values;
}

ribbon::build_options options(std::uint32_t width, std::uint32_t value_bits,
                              std::uint32_t check_bits, filter_variant variant) {
  ribbon::build_options o;
  o.width = width;
  o.result_bits = value_bits;
  o.check_bits = check_bits;
  o.variant = variant;
  o.shard_size = width == 128 ? 16384 : 4096;  // several shards, at least 32 buckets each
  return o;
}

struct check_case {
  std::uint32_t width, value_bits, check_bits;
  filter_variant variant;
};

class CheckBits : public ::testing::TestWithParam<check_case> {};

TEST_P(CheckBits, MembersFoundWithTheirValuesAndNonMembersAtTwoToMinusC) {
  const check_case c = GetParam();
  const std::uint64_t n = scaled(50000, 5000);
  const auto keys = keys_range(61, 0, n);
  const auto values = values_for(n, c.value_bits);
  const auto o = options(c.width, c.value_bits, c.check_bits, c.variant);
  const ribbon::filter f = ribbon::filter::build(keys.data(), values.data(), n, o);
  EXPECT_EQ(f.params().check_bits, c.check_bits);
  EXPECT_EQ(f.params().result_bits, c.value_bits + c.check_bits);
  EXPECT_EQ(f.image(ribbon::format::layout_choice::standard).params.check_bits, c.check_bits);
  EXPECT_EQ(ribbon::format::version_of(f.image(ribbon::format::layout_choice::standard)), 4u);
  std::vector<std::uint32_t> out(n);
  std::unique_ptr<bool[]> found(new bool[n]);
  f.lookup(keys.data(), n, out.data(), found.get());
  for (std::uint64_t i = 0; i < n; ++i) {
    ASSERT_EQ(f.lookup(keys[i]), values[i]) << i;
    ASSERT_EQ(f.find(keys[i]), values[i]) << i;
    ASSERT_TRUE(f.contains(keys[i])) << i;
    ASSERT_EQ(out[i], values[i]) << i;
    ASSERT_TRUE(found[i]) << i;
  }
  // Non-members: found at about 2^-C, batched and scalar answers the same.
  const std::uint64_t m = scaled(1'000'000, 200'000);
  const auto probes = keys_range(62, 0, m);
  std::unique_ptr<bool[]> member(new bool[m]);
  f.contains(probes.data(), m, member.get());
  std::vector<std::uint32_t> probe_values(m);
  std::unique_ptr<bool[]> probe_found(new bool[m]);
  f.lookup(probes.data(), m, probe_values.data(), probe_found.get());
  std::uint64_t positives = 0;
  for (std::uint64_t i = 0; i < m; ++i) {
    const auto one = f.find(probes[i]);
    ASSERT_EQ(member[i], one.has_value()) << i;
    ASSERT_EQ(probe_found[i], one.has_value()) << i;
    ASSERT_EQ(probe_values[i], f.lookup(probes[i])) << i;
    if (one) {
      ASSERT_EQ(*one, probe_values[i]);
    }
    positives += member[i] ? 1 : 0;
  }
  const double p = std::ldexp(1.0, -static_cast<int>(c.check_bits));
  const double expected = p * static_cast<double>(m);
  const double sigma = std::sqrt(expected * (1 - p));
  EXPECT_LE(std::abs(static_cast<double>(positives) - expected), 5 * sigma + 1)
      << positives << " of " << m << " non-members found, expected " << expected;
}

INSTANTIATE_TEST_SUITE_P(All, CheckBits,
                         ::testing::Values(check_case{64, 8, 8, filter_variant::bumped},
                                           check_case{64, 16, 16, filter_variant::bumped},
                                           check_case{32, 1, 6, filter_variant::bumped},
                                           check_case{128, 24, 8, filter_variant::bumped},
                                           check_case{64, 4, 12, filter_variant::standard}),
                         [](const ::testing::TestParamInfo<check_case>& param) {
                           const check_case& c = param.param;
                           return std::string(c.variant == filter_variant::standard ? "standard"
                                                                                    : "bumped") +
                                  "_w" + std::to_string(c.width) + "_v" +
                                  std::to_string(c.value_bits) + "_c" +
                                  std::to_string(c.check_bits);
                         });

TEST(CheckBitsFiles, RoundTripAsVersion4AndAHeaderWithoutCheckBitsIsRefused) {
  const auto keys = keys_range(63, 0, 3000);
  const auto values = values_for(keys.size(), 10);
  const ribbon::filter f = ribbon::filter::build(keys.data(), values.data(), keys.size(),
                                                 options(64, 10, 6, filter_variant::bumped));
  std::vector<unsigned char> bytes = f.serialize(ribbon::format::layout_choice::standard);
  ribbon::format::file_header h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  EXPECT_EQ(h.format_version, 4u);
  EXPECT_EQ(h.check_bits, 6u);
  const ribbon::filter g = ribbon::filter::from_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(g.serialize(), bytes);
  EXPECT_EQ(g.params().check_bits, 6u);
  for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(g.find(keys[i]), values[i]);
  // The compact layout records them too.
  const std::vector<unsigned char> compact = f.serialize();
  const ribbon::filter c = ribbon::filter::from_bytes(compact.data(), compact.size());
  EXPECT_EQ(c.format_version(), ribbon::format::compact_version);
  EXPECT_EQ(c.params().check_bits, 6u);
  for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(c.find(keys[i]), values[i]);

  // The same header as version 3 (which has no check bits), or version 4 with none.
  for (const auto& [version, check_bits, message] :
       {std::tuple{3u, 6u, "reserved header fields"}, std::tuple{4u, 0u, "without check bits"}}) {
    std::vector<unsigned char> edited = bytes;
    h.format_version = version;
    h.check_bits = check_bits;
    h.header_checksum =
        ribbon::format::checksum(&h, offsetof(ribbon::format::file_header, header_checksum));
    std::memcpy(edited.data(), &h, sizeof(h));
    try {
      (void)ribbon::filter::from_bytes(edited.data(), edited.size());
      ADD_FAILURE() << "accepted version " << version << " with " << check_bits << " check bits";
    } catch (const ribbon::error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

TEST(CheckBitsFiles, WithoutCheckBitsNothingChanges) {
  const auto keys = keys_range(64, 0, 2000);
  const auto values = values_for(keys.size(), 8);
  const ribbon::filter f = ribbon::filter::build(keys.data(), values.data(), keys.size(),
                                                 options(64, 8, 0, filter_variant::bumped));
  EXPECT_EQ(ribbon::format::version_of(f.image(ribbon::format::layout_choice::standard)), 3u);
  EXPECT_THROW((void)f.contains(keys[0]), ribbon::error);  // cannot tell members apart
  const auto probes = keys_range(65, 0, 1000);
  std::vector<std::uint32_t> out(probes.size());
  std::unique_ptr<bool[]> found(new bool[probes.size()]);
  f.lookup(probes.data(), probes.size(), out.data(), found.get());
  for (std::size_t i = 0; i < probes.size(); ++i) {
    ASSERT_TRUE(found[i]);
    ASSERT_EQ(f.find(probes[i]), out[i]);
  }
}

TEST(CheckBitsOptions, AreRefusedWhereTheyCannotHold) {
  const auto keys = keys_range(66, 0, 100);
  const std::vector<std::uint32_t> values(100, 1);
  auto o = options(64, 24, 9, filter_variant::bumped);  // 33 bits
  EXPECT_THROW((void)ribbon::filter::build(keys.data(), values.data(), 100, o), ribbon::error);
  o = options(64, 8, 8, filter_variant::bumped);
  EXPECT_THROW((void)ribbon::filter::build(keys.data(), 100, o), ribbon::error);  // a filter
  std::vector<std::uint32_t> wide(100, 256);  // 9 bits for 8 value bits
  EXPECT_THROW((void)ribbon::filter::build(keys.data(), wide.data(), 100, o), ribbon::error);
}

// A file of format version 4 as written on 2026-12-03: still read, and still written byte
// for byte (the format's writer and the check bits' fingerprint have not drifted).
TEST(CheckBitsFiles, Version4GoldenFileReadsAndIsRebuiltByteForByte) {
  // `seq 1 3000 | awk '{printf "%d\t%d\n",$1,$1%1000}' | ribbon build --values
  //  --check-bits 6 --seed 7 --layout standard` (lines, w=64, 10 value bits; plain layers of
  //  about (1 + 1/w) n columns).
  const std::string path = std::string(RIBBON_TEST_DATA_DIR) + "/v4_values_3000_c6.rbn";
  const ribbon::filter f = ribbon::filter::load(path);
  EXPECT_EQ(f.format_version(), 4u);
  EXPECT_EQ(f.params().check_bits, 6u);
  EXPECT_EQ(f.params().value_bits(), 10u);
  std::vector<std::string> keys;
  std::vector<std::uint32_t> values;
  for (int i = 1; i <= 3000; ++i) {
    keys.push_back(std::to_string(i));
    values.push_back(static_cast<std::uint32_t>(i % 1000));
    ASSERT_EQ(f.find(keys.back()), values.back()) << i;
  }
  std::uint64_t found = 0;
  for (int i = 3001; i <= 103000; ++i) found += f.find(std::to_string(i)).has_value();
  EXPECT_LT(found, 100000 / 64 * 1.3);
  std::vector<std::string_view> views(keys.begin(), keys.end());
  ribbon::build_options options;
  options.result_bits = 10;  // the CLI's default: the largest value's width
  options.check_bits = 6;
  options.seed = 7;
  options.threads = 1;
  const ribbon::filter rebuilt =
      ribbon::filter::build(views.data(), values.data(), views.size(), options);
  std::ifstream in(path, std::ios::binary);
  const std::vector<unsigned char> golden((std::istreambuf_iterator<char>(in)),
                                          std::istreambuf_iterator<char>());
  EXPECT_TRUE(rebuilt.serialize(ribbon::format::layout_choice::standard) == golden);
  EXPECT_TRUE(f.serialize() == golden);  // a loaded file keeps its layout
}

}  // namespace
