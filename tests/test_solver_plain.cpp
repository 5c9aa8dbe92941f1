// The shard solver on plain layers (insert_row, eliminate_shard, back_substitute_shard)
// against a brute-force GF(2) elimination (gf2_oracle.hpp): random small systems, duplicates
// and contradicting rows. Bumped layers: test_solver_bumped.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <tuple>
#include <vector>

#include "gf2_oracle.hpp"
#include "insert_row.hpp"
#include "ribbon/detail/rows.hpp"
#include "ribbon/detail/shard_solver.hpp"
#include "ribbon/filter_ref.hpp"
#include "ribbon/hash.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"
#include "solver_harness.hpp"
#include "test_util.hpp"

namespace {

using ribbon_test::brute_result;
using ribbon_test::equation;
using ribbon_test::gf2_system;
using ribbon_test::rng;
using ribbon_test::solution_bit;
using ribbon_test::width_and_bits_name;
using ribbon_test::with_result_type;
using ribbon_test::word;
using ribbon_test::workspace_arrays;

// ---------------------------------------------------------------------------------------------
// insert_row on hand-made rows.

TEST(InsertRow, StoresReducesDetectsRedundantAndContradictingRows) {
  std::vector<std::uint64_t> coeffs(100, 0);
  std::vector<std::uint8_t> results(100, 0);
  using ribbon_test::insert_outcome;
  std::uint64_t column = 10;
  EXPECT_EQ(ribbon_test::insert_row(coeffs.data(), results.data(), column, std::uint64_t{0b1011},
                                    std::uint8_t{5}),
            insert_outcome::stored);
  EXPECT_EQ(column, 10u);
  EXPECT_EQ(coeffs[10], 0b1011u);
  EXPECT_EQ(results[10], 5);

  // The same row again is redundant and changes nothing.
  column = 10;
  EXPECT_EQ(ribbon_test::insert_row(coeffs.data(), results.data(), column, std::uint64_t{0b1011},
                                    std::uint8_t{5}),
            insert_outcome::redundant);
  // The same coefficients with another right side contradict it.
  column = 10;
  EXPECT_EQ(ribbon_test::insert_row(coeffs.data(), results.data(), column, std::uint64_t{0b1011},
                                    std::uint8_t{4}),
            insert_outcome::failed);
  EXPECT_EQ(coeffs[10], 0b1011u);
  EXPECT_EQ(results[10], 5);

  // 0b0001 at 10 reduces to 0b1010 at 10, i.e. 0b101 at 11: stored there, right side 7^5.
  column = 10;
  EXPECT_EQ(ribbon_test::insert_row(coeffs.data(), results.data(), column, std::uint64_t{1},
                                    std::uint8_t{7}),
            insert_outcome::stored);
  EXPECT_EQ(column, 11u);
  EXPECT_EQ(coeffs[11], 0b101u);
  EXPECT_EQ(results[11], 7 ^ 5);
  // x10 + x11 + x13 = 5 and x11 + x13 = 2 imply x10 = 7: redundant; x10 = 6 contradicts.
  column = 10;
  EXPECT_EQ(ribbon_test::insert_row(coeffs.data(), results.data(), column, std::uint64_t{1},
                                    std::uint8_t{7}),
            insert_outcome::redundant);
  column = 10;
  EXPECT_EQ(ribbon_test::insert_row(coeffs.data(), results.data(), column, std::uint64_t{1},
                                    std::uint8_t{6}),
            insert_outcome::failed);
}

TEST(InsertRow, WorksOn128BitWords) {
  using u128 = ribbon::detail::uint128_t;
  std::vector<u128> coeffs(300, 0);
  std::vector<std::uint32_t> results(300, 0);
  using ribbon_test::insert_outcome;
  const u128 a = (u128{1} << 127) | 1;  // columns 0 and 127 (relative)
  const u128 b = (u128{1} << 127) | (u128{1} << 64) | 1;
  std::uint64_t column = 20;
  ASSERT_EQ(ribbon_test::insert_row(coeffs.data(), results.data(), column, a, 0xDEADBEEFu),
            insert_outcome::stored);
  column = 20;
  // b - a = bit 64: stored at column 84 with coefficient 1.
  ASSERT_EQ(ribbon_test::insert_row(coeffs.data(), results.data(), column, b, 0x12345678u),
            insert_outcome::stored);
  EXPECT_EQ(column, 84u);
  EXPECT_TRUE(coeffs[84] == u128{1});
  EXPECT_EQ(results[84], 0xDEADBEEFu ^ 0x12345678u);
  column = 20;
  EXPECT_EQ(ribbon_test::insert_row(coeffs.data(), results.data(), column, b, 0x12345678u),
            insert_outcome::redundant);
  column = 20;
  EXPECT_EQ(ribbon_test::insert_row(coeffs.data(), results.data(), column, b, 0x12345679u),
            insert_outcome::failed);
}

// ---------------------------------------------------------------------------------------------
// Plain layers: random small systems.

/// For w = 32 the coefficients depend only on the low 32 bits of the hash, so h + k 2^32 with
/// the same start is a "contradicting duplicate" when its fingerprint differs. Returns 0 if
/// none is found near h.
std::uint64_t contradicting_twin(std::uint64_t h, std::uint64_t num_starts, std::uint32_t r) {
  for (std::uint64_t k = 1; k < 4096; ++k) {
    const std::uint64_t twin = h + (k << 32);
    if (ribbon::fastrange64(twin, num_starts) == ribbon::fastrange64(h, num_starts) &&
        ribbon::detail::coefficients<32>(twin) == ribbon::detail::coefficients<32>(h) &&
        ribbon::detail::fingerprint(twin, r) != ribbon::detail::fingerprint(h, r)) {
      return twin;
    }
  }
  return 0;
}

struct plain_counts {
  int solved = 0, unsolved = 0, overloaded = 0, with_duplicates = 0, with_contradictions = 0;
};

template <unsigned W, class Result>
void check_plain_system(std::uint32_t r, rng& random, plain_counts& counts) {
  const ribbon::filter_params p = ribbon::make_params(W, r);
  const std::uint64_t m = W * random.between(1, 4);
  const ribbon::layer_geometry g = ribbon::plain_geometry(m, p);
  const std::uint64_t n = random.between(m / 4, m + W + 16);
  std::vector<std::uint64_t> hashes(n);
  for (auto& h : hashes) h = random.next();
  const std::uint64_t flavour = random.below(4);
  if (flavour == 1 && n > 0) {  // exact duplicates
    const std::uint64_t extra = random.between(1, n / 4 + 1);
    for (std::uint64_t i = 0; i < extra; ++i) hashes.push_back(hashes[random.below(n)]);
    ++counts.with_duplicates;
  } else if (flavour == 2 && W == 32 && n > 0) {  // same row, different right side
    const std::uint64_t twin = contradicting_twin(hashes[random.below(n)], m, r);
    if (twin != 0) {
      hashes.push_back(twin);
      ++counts.with_contradictions;
    }
  }
  if (hashes.size() > m + W - 1) ++counts.overloaded;
  std::sort(hashes.begin(), hashes.end());

  gf2_system brute(m + W);
  bool consistent = true;
  for (std::uint64_t h : hashes) consistent = brute.add(equation<W>(h, m, 0, r)) && consistent;

  workspace_arrays<W, Result> ws(ribbon::detail::shard_columns(g, 0, W), p.bucket_size);
  std::uint64_t unused_threshold = 0;
  std::vector<std::uint64_t> input = hashes;
  const ribbon::detail::shard_outcome outcome = ribbon::detail::eliminate_shard<W, Result>(
      p, g, 0, hashes.data(), hashes.size(), ws.view(), &unused_threshold);
  ASSERT_EQ(outcome.solved, consistent)
      << "w=" << W << " r=" << r << " m=" << m << " rows=" << hashes.size();
  EXPECT_EQ(outcome.bumped, 0u);
  EXPECT_EQ(hashes, input) << "a plain layer does not reorder its hashes";
  if (!consistent) {
    ++counts.unsolved;
    return;
  }
  ++counts.solved;

  // Back-substitution fills every block (sentinel bytes must all be overwritten).
  std::vector<word<W>> solution(g.num_blocks(W) * r);
  std::memset(solution.data(), 0xA5, solution.size() * sizeof(word<W>));
  ASSERT_EQ(solution.size() * sizeof(word<W>), g.solution_bytes(W, r));
  ribbon::detail::back_substitute_shard<W, Result>(p, g, 0, ws.coeffs.data(), ws.results.data(),
                                                   solution.data());
  for (std::uint64_t h : hashes) {
    const std::uint64_t start = ribbon::fastrange64(h, m);
    const std::uint32_t expected = ribbon::detail::fingerprint(h, r);
    ASSERT_EQ(brute_result<W>(solution.data(), r, h, m), expected) << "hash " << h;
    ASSERT_EQ(ribbon::detail::row_result<W>(solution.data(), r, start,
                                            ribbon::detail::coefficients<W>(h)),
              expected)
        << "hash " << h;
  }
  // The solution is the canonical one: 0 at every free (pivot-less) column, so it depends on
  // the row set only, not on the order of elimination.
  for (std::uint64_t column = 0; column < m + W; ++column) {
    if (brute.is_pivot(column)) continue;
    for (std::uint32_t j = 0; j < r; ++j) {
      ASSERT_EQ(solution_bit<W>(solution.data(), r, column, j), 0u)
          << "free column " << column << " bit " << j;
    }
  }
}

class PlainSolver : public ::testing::TestWithParam<std::tuple<unsigned, std::uint32_t>> {};

TEST_P(PlainSolver, SolvedIffConsistentAndSolutionSatisfiesEveryEquation) {
  const unsigned width = std::get<0>(GetParam());
  const std::uint32_t r = std::get<1>(GetParam());
  const int trials = static_cast<int>(ribbon_test::scaled(400, 150));
  rng random(1000 * width + r);
  plain_counts counts;
  for (int t = 0; t < trials; ++t) {
    SCOPED_TRACE("trial " + std::to_string(t));
    with_result_type(r, [&](auto tag) {
      using Result = typename decltype(tag)::type;
      switch (width) {
        case 32: check_plain_system<32, Result>(r, random, counts); break;
        case 64: check_plain_system<64, Result>(r, random, counts); break;
        default: check_plain_system<128, Result>(r, random, counts); break;
      }
    });
    if (HasFatalFailure()) return;
  }
  std::cout << "w=" << width << " r=" << r << ": " << counts.solved << " solved, "
            << counts.unsolved << " inconsistent, " << counts.overloaded << " overloaded, "
            << counts.with_duplicates << " with duplicates, " << counts.with_contradictions
            << " with contradicting duplicates\n";
  // Both outcomes occur, so the comparison above meant something.
  EXPECT_GT(counts.solved, trials / 10);
  EXPECT_GT(counts.unsolved, 0);
  EXPECT_GT(counts.with_duplicates, 0);
  if (width == 32) {
    EXPECT_GT(counts.with_contradictions, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(AllWidths, PlainSolver,
                         ::testing::Combine(::testing::Values(32u, 64u, 128u),
                                            ::testing::Values(1u, 5u, 8u, 16u, 32u)),
                         width_and_bits_name);

template <unsigned W>
void check_duplicates_only(std::uint32_t r) {
  // Every row several times: redundant rows never fail, whatever the multiplicity.
  with_result_type(r, [&](auto tag) {
    using Result = typename decltype(tag)::type;
    const ribbon::filter_params p = ribbon::make_params(W, r);
    const std::uint64_t m = 2 * W;
    const ribbon::layer_geometry g = ribbon::plain_geometry(m, p);
    rng random(W + r);
    std::vector<std::uint64_t> hashes;
    for (int i = 0; i < 20; ++i) {
      const std::uint64_t h = random.next();
      for (int copy = 0; copy < 1 + i % 5; ++copy) hashes.push_back(h);
    }
    std::sort(hashes.begin(), hashes.end());
    workspace_arrays<W, Result> ws(ribbon::detail::shard_columns(g, 0, W), p.bucket_size);
    std::uint64_t unused = 0;
    const auto outcome = ribbon::detail::eliminate_shard<W, Result>(
        p, g, 0, hashes.data(), hashes.size(), ws.view(), &unused);
    ASSERT_TRUE(outcome.solved) << "w=" << W << " r=" << r;
    std::vector<word<W>> solution(g.num_blocks(W) * r);
    ribbon::detail::back_substitute_shard<W, Result>(p, g, 0, ws.coeffs.data(), ws.results.data(),
                                                     solution.data());
    for (std::uint64_t h : hashes) {
      ASSERT_EQ(brute_result<W>(solution.data(), r, h, m), ribbon::detail::fingerprint(h, r));
    }
  });
}

TEST(PlainSolverDuplicates, ManyCopiesOfFewRowsAreSolved) {
  for (std::uint32_t r : {1u, 8u, 16u, 32u}) {
    check_duplicates_only<32>(r);
    check_duplicates_only<64>(r);
    check_duplicates_only<128>(r);
  }
}

TEST(PlainSolverDuplicates, ContradictingTwinMakesTheSystemUnsolvable) {
  // w = 32: one row and its contradicting twin alone.
  for (std::uint32_t r : {1u, 5u, 8u, 16u, 32u}) {
    with_result_type(r, [&](auto tag) {
      using Result = typename decltype(tag)::type;
      const ribbon::filter_params p = ribbon::make_params(32, r);
      const ribbon::layer_geometry g = ribbon::plain_geometry(64, p);
      rng random(r);
      std::uint64_t h = 0, twin = 0;
      while (twin == 0) {
        h = random.next();
        twin = contradicting_twin(h, 64, r);
      }
      std::vector<std::uint64_t> hashes = {std::min(h, twin), std::max(h, twin)};
      workspace_arrays<32, Result> ws(ribbon::detail::shard_columns(g, 0, 32), p.bucket_size);
      std::uint64_t unused = 0;
      EXPECT_FALSE((
          ribbon::detail::eliminate_shard<32, Result>(p, g, 0, hashes.data(), 2, ws.view(), &unused)
              .solved))
          << "r=" << r;
    });
  }
}

}  // namespace
