// False-positive rate: measured within a binomial 5-sigma band of 2^-r for r = 1..16.
//
// Sizing: the filter holds n = 300,000 keys (default shards; 3 layers at w = 64) and is queried
// with N = max(10^6, 1000 * 2^r) non-members, so that at least ~1000 false positives are
// expected at every r (65.5 M queries at r = 16, ~131 M in all). RIBBON_TEST_SCALE scales n
// and N (never below 50,000 keys and 100 expected false positives); the band scales with N.
// The FPR of a Ribbon filter is 2^-r for every non-member that reaches a layer that does not
// bump it, that is, all but a negligible fraction, so the band is centred on 2^-r exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ribbon/filter.hpp"
#include "test_util.hpp"

namespace {

struct fpr_measurement {
  std::uint64_t queries = 0, positives = 0;
  double expected = 0, sigma = 0;
};

/// Queries key_at(family, first .. first + count - 1) in batches and counts positives.
std::uint64_t count_positives(const ribbon::filter& f, std::uint64_t family, std::uint64_t first,
                              std::uint64_t count) {
  constexpr std::uint64_t batch = std::uint64_t{1} << 20;
  std::vector<std::uint64_t> keys(std::min(batch, count));
  std::unique_ptr<bool[]> out(new bool[keys.size() + 1]);
  std::uint64_t positives = 0;
  for (std::uint64_t done = 0; done < count;) {
    const std::uint64_t m = std::min(batch, count - done);
    for (std::uint64_t i = 0; i < m; ++i) keys[i] = ribbon_test::key_at(family, first + done + i);
    f.contains(keys.data(), m, out.get());
    positives += static_cast<std::uint64_t>(std::count(out.get(), out.get() + m, true));
    done += m;
  }
  return positives;
}

fpr_measurement measure(unsigned width, std::uint32_t r, std::uint64_t family) {
  const std::uint64_t n = ribbon_test::scaled(300000, 50000);
  const double p = std::ldexp(1.0, -static_cast<int>(r));
  // At least 100 expected false positives at any scale, so 5 sigma means something.
  const auto wanted = static_cast<std::uint64_t>(std::max(1e6, 1000.0 / p));
  const std::uint64_t queries = ribbon_test::scaled(wanted, static_cast<std::uint64_t>(100.0 / p));
  ribbon::build_options o;
  o.width = width;
  o.result_bits = r;
  o.seed = 100 + r;
  const std::vector<std::uint64_t> keys = ribbon_test::keys_range(family, 0, n);
  const ribbon::filter f = ribbon::filter::build(keys.data(), n, o);
  fpr_measurement m;
  m.queries = queries;
  m.positives = count_positives(f, family, n, queries);  // indexes >= n: never members
  m.expected = static_cast<double>(queries) * p;
  m.sigma = std::sqrt(static_cast<double>(queries) * p * (1 - p));
  return m;
}

class Fpr : public ::testing::TestWithParam<std::tuple<unsigned, std::uint32_t>> {};

TEST_P(Fpr, WithinFiveSigmaOfTwoToTheMinusR) {
  const unsigned width = std::get<0>(GetParam());
  const std::uint32_t r = std::get<1>(GetParam());
  const fpr_measurement m = measure(width, r, 40 + r);
  const double measured = static_cast<double>(m.positives) / static_cast<double>(m.queries);
  const double target = std::ldexp(1.0, -static_cast<int>(r));
  const double z = (static_cast<double>(m.positives) - m.expected) / m.sigma;
  std::ostringstream line;
  line << "w=" << width << " r=" << std::setw(2) << r << ": " << m.positives
       << " false positives in " << m.queries << " queries, FPR " << std::setprecision(6)
       << measured << " vs 2^-r " << target << " (ratio " << std::setprecision(4)
       << measured / target << ", z " << std::setprecision(2) << z << ")";
  std::cout << line.str() << "\n";
  RecordProperty("queries", std::to_string(m.queries));
  RecordProperty("false_positives", std::to_string(m.positives));
  RecordProperty("fpr_ratio", std::to_string(measured / target));
  EXPECT_NEAR(static_cast<double>(m.positives), m.expected, 5 * m.sigma) << line.str();
}

INSTANTIATE_TEST_SUITE_P(
    W64, Fpr, ::testing::Combine(::testing::Values(64u), ::testing::Range(1u, 17u)),
    [](const ::testing::TestParamInfo<std::tuple<unsigned, std::uint32_t>>& i) {
      return "w" + std::to_string(std::get<0>(i.param)) + "_r" +
             std::to_string(std::get<1>(i.param));
    });
// The other widths at a few r (different coefficient words and bucket sizes).
INSTANTIATE_TEST_SUITE_P(
    OtherWidths, Fpr,
    ::testing::Combine(::testing::Values(32u, 128u), ::testing::Values(1u, 7u, 12u)),
    [](const ::testing::TestParamInfo<std::tuple<unsigned, std::uint32_t>>& i) {
      return "w" + std::to_string(std::get<0>(i.param)) + "_r" +
             std::to_string(std::get<1>(i.param));
    });

TEST(FprLargeR, NoFalsePositivesAtThirtyTwoBits) {
  // At r = 32 the expected count among 10^6 queries is 2.3e-4: any false positive is a bug
  // (for instance fingerprints that ignore some result bits).
  for (unsigned width : {32u, 64u, 128u}) {
    const std::uint64_t n = ribbon_test::scaled(200000, 50000);
    ribbon::build_options o;
    o.width = width;
    o.result_bits = 32;
    const std::vector<std::uint64_t> keys = ribbon_test::keys_range(7, 0, n);
    const ribbon::filter f = ribbon::filter::build(keys.data(), n, o);
    EXPECT_EQ(count_positives(f, 7, n, ribbon_test::scaled(1000000, 200000)), 0u) << "w=" << width;
  }
}

TEST(FprBytes, StringKeysAtEightBits) {
  const std::uint64_t n = ribbon_test::scaled(100000, 30000);
  const std::vector<std::string> keys = ribbon_test::string_keys(3, 0, n);
  const std::vector<std::string_view> members = ribbon_test::views(keys);
  ribbon::build_options o;
  o.result_bits = 8;
  const ribbon::filter f = ribbon::filter::build(members.data(), n, o);
  const std::uint64_t queries = ribbon_test::scaled(512000, 102400);
  const std::vector<std::string> others = ribbon_test::string_keys(3, n, queries);
  const std::vector<std::string_view> non_members = ribbon_test::views(others);
  std::unique_ptr<bool[]> out(new bool[queries]);
  f.contains(non_members.data(), queries, out.get());
  const auto positives = static_cast<double>(std::count(out.get(), out.get() + queries, true));
  const double p = 1.0 / 256, expected = static_cast<double>(queries) * p;
  const double sigma = std::sqrt(expected * (1 - p));
  std::cout << "bytes w=64 r=8: " << positives << " false positives in " << queries
            << " queries (expected " << expected << ")\n";
  EXPECT_NEAR(positives, expected, 5 * sigma);
}

}  // namespace
