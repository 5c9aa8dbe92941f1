// The shard solver (insert_row, eliminate_shard, back_substitute_shard) against an independent
// brute-force GF(2) Gaussian elimination, for plain and for bumped layers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <map>
#include <type_traits>
#include <vector>

#include "insert_row.hpp"
#include "ribbon/detail/rows.hpp"
#include "ribbon/detail/shard_solver.hpp"
#include "ribbon/filter_ref.hpp"
#include "ribbon/hash.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"
#include "test_util.hpp"
#include "threshold_model.hpp"

namespace {

using ribbon_test::rng;

// ---------------------------------------------------------------------------------------------
// Brute force: incremental Gaussian elimination over GF(2) with bit-vector rows. It knows
// nothing about bands, shards or interleaving: a row is a set of columns and an r-bit right
// side.

/// A bit vector that is zero outside the 64-bit words [first, first + words.size()).
struct bit_row {
  std::uint64_t first = 0;
  std::vector<std::uint64_t> words;
  std::uint32_t rhs = 0;

  void set(std::uint64_t column) {
    const std::uint64_t w = column / 64;
    if (words.empty()) first = w;
    if (w < first) {
      words.insert(words.begin(), first - w, 0);
      first = w;
    }
    if (w >= first + words.size()) words.resize(w - first + 1, 0);
    words[w - first] |= std::uint64_t{1} << (column % 64);
  }
  /// Drops zero words at both ends; an all-zero row ends up with no words.
  void trim() {
    std::size_t lo = 0, hi = words.size();
    while (lo < hi && words[lo] == 0) ++lo;
    while (hi > lo && words[hi - 1] == 0) --hi;
    words.resize(hi);
    words.erase(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(lo));
    first += lo;
  }
  bool zero() const { return words.empty(); }  // after trim()
  /// The lowest set column (the row is trimmed and non-zero).
  std::uint64_t lead() const {
    return first * 64 + static_cast<std::uint64_t>(__builtin_ctzll(words[0]));
  }
  void add(const bit_row& other) {
    rhs ^= other.rhs;
    if (other.words.empty()) return;
    if (words.empty()) {
      first = other.first;
      words = other.words;
      return;
    }
    if (other.first < first) {  // widen the window to the left
      words.insert(words.begin(), first - other.first, 0);
      first = other.first;
    }
    const std::uint64_t end = other.first + other.words.size();
    if (end > first + words.size()) words.resize(end - first, 0);
    for (std::size_t i = 0; i < other.words.size(); ++i) {
      words[other.first - first + i] ^= other.words[i];
    }
  }
};

/// A consistent system of equations in echelon form, one pivot row per column at most.
class gf2_system {
 public:
  explicit gf2_system(std::uint64_t columns) : pivots_(columns) {}

  /// Adds an equation. Returns false if it contradicts the equations so far (it is dropped
  /// then); `stored` (if given) gets the pivot column used, or -1 for a redundant row.
  bool add(bit_row row, std::int64_t* stored = nullptr) {
    if (stored) *stored = -1;
    row.trim();
    while (!row.zero()) {
      const std::uint64_t c = row.lead();
      if (c >= pivots_.size()) {
        ADD_FAILURE() << "row reaches column " << c << " beyond " << pivots_.size();
        return false;
      }
      if (pivots_[c].zero()) {
        pivots_[c] = std::move(row);
        if (stored) *stored = static_cast<std::int64_t>(c);
        return true;
      }
      row.add(pivots_[c]);
      row.trim();
    }
    return row.rhs == 0;
  }
  /// Removes the pivot row of `column` (undoes an add() that stored there).
  void remove(std::int64_t column) {
    if (column >= 0) pivots_[static_cast<std::size_t>(column)] = bit_row{};
  }
  /// Is `column` a pivot (leading) column of the rows added so far? The set of leading
  /// columns of an echelon basis depends only on the row space, not on the order of rows.
  bool is_pivot(std::uint64_t column) const { return !pivots_[column].zero(); }

 private:
  std::vector<bit_row> pivots_;
};

// ---------------------------------------------------------------------------------------------
// Rows and solutions as the test sees them.

template <unsigned W>
using word = ribbon::detail::word_t<W>;

/// Bit i of a coefficient word.
template <unsigned W>
bool coefficient_bit(word<W> c, unsigned i) {
  return ((c >> i) & 1u) != 0;
}

/// The equation of a layer hash over local columns (relative to `shard_begin`).
template <unsigned W>
bit_row equation(std::uint64_t hash, std::uint64_t num_starts, std::uint64_t shard_begin,
                 std::uint32_t r) {
  bit_row row;
  const std::uint64_t start = ribbon::fastrange64(hash, num_starts) - shard_begin;
  const word<W> c = ribbon::detail::coefficients<W>(hash);
  for (unsigned i = 0; i < W; ++i) {
    if (coefficient_bit<W>(c, i)) row.set(start + i);
  }
  row.rhs = ribbon::detail::fingerprint(hash, r);
  return row;
}

/// Solution bit j of global column `column`, read from the interleaved blocks byte by byte:
/// block b holds r words of W bits; bit k of word j of block b is column b*W + k.
template <unsigned W>
unsigned solution_bit(const void* solution, std::uint32_t r, std::uint64_t column,
                      std::uint32_t j) {
  const auto* bytes = static_cast<const unsigned char*>(solution);
  const std::uint64_t word_index = column / W * r + j;
  const std::uint64_t bit = column % W;
  return (bytes[word_index * (W / 8) + bit / 8] >> (bit % 8)) & 1u;
}

/// The r-bit result of the equation of `hash`, computed column by column.
template <unsigned W>
std::uint32_t brute_result(const void* solution, std::uint32_t r, std::uint64_t hash,
                           std::uint64_t num_starts) {
  const std::uint64_t start = ribbon::fastrange64(hash, num_starts);
  const word<W> c = ribbon::detail::coefficients<W>(hash);
  std::uint32_t result = 0;
  for (std::uint32_t j = 0; j < r; ++j) {
    unsigned bit = 0;
    for (unsigned i = 0; i < W; ++i) {
      if (coefficient_bit<W>(c, i)) bit ^= solution_bit<W>(solution, r, start + i, j);
    }
    result |= bit << j;
  }
  return result;
}

/// Calls f(type_tag<Result>) with the result type the builder uses for r result bits.
template <class T>
struct type_tag {
  using type = T;
};
template <class F>
void with_result_type(std::uint32_t r, F&& f) {
  if (r <= 8) {
    f(type_tag<std::uint8_t>{});
  } else if (r <= 16) {
    f(type_tag<std::uint16_t>{});
  } else {
    f(type_tag<std::uint32_t>{});
  }
}

/// Working arrays of the shard solver.
template <unsigned W, class Result>
struct workspace_arrays {
  std::vector<word<W>> coeffs;
  std::vector<Result> results;
  std::vector<std::uint32_t> undo_columns, undo_offsets;

  workspace_arrays(std::uint64_t columns, std::uint32_t bucket_size)
      : coeffs(columns),
        results(columns),
        undo_columns(ribbon::detail::undo_capacity(bucket_size, W)),
        undo_offsets(ribbon::detail::undo_capacity(bucket_size, W)) {}
  ribbon::detail::shard_workspace<W, Result> view() {
    return {coeffs.data(), results.data(), undo_columns.data(), undo_offsets.data()};
  }
};

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

std::string width_and_bits_name(
    const ::testing::TestParamInfo<std::tuple<unsigned, std::uint32_t>>& param_info) {
  return "w" + std::to_string(std::get<0>(param_info.param)) + "_r" +
         std::to_string(std::get<1>(param_info.param));
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

// ---------------------------------------------------------------------------------------------
// Bumped layers.

struct layer_result {
  std::vector<std::uint64_t> thresholds;
  std::vector<unsigned char> solution;             // bytes of the interleaved blocks
  std::vector<std::vector<std::uint64_t>> bumped;  // per shard, as returned (front of hashes)
  bool all_solved = true;
};

/// Solves every shard of a bumped layer the way a builder does, with the threshold words
/// pre-filled with `sentinel`.
template <unsigned W, class Result>
layer_result solve_bumped_layer(const ribbon::filter_params& p, const ribbon::layer_geometry& g,
                                const std::vector<std::vector<std::uint64_t>>& shards,
                                std::uint64_t sentinel) {
  layer_result out;
  out.thresholds.assign(g.threshold_words(p.bucket_size), sentinel);
  std::vector<word<W>> solution(g.num_blocks(W) * p.result_bits);
  std::memset(solution.data(), 0x5A, solution.size() * sizeof(word<W>));
  workspace_arrays<W, Result> ws(ribbon::detail::max_shard_columns(g, W), p.bucket_size);
  for (std::uint64_t s = 0; s < g.num_shards(); ++s) {
    std::vector<std::uint64_t> hashes = shards[s];
    const ribbon::detail::shard_outcome outcome = ribbon::detail::eliminate_shard<W, Result>(
        p, g, s, hashes.data(), hashes.size(), ws.view(), out.thresholds.data());
    out.all_solved = out.all_solved && outcome.solved;
    out.bumped.emplace_back(hashes.begin(),
                            hashes.begin() + static_cast<std::ptrdiff_t>(outcome.bumped));
    ribbon::detail::back_substitute_shard<W, Result>(p, g, s, ws.coeffs.data(), ws.results.data(),
                                                     solution.data());
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(solution.data());
  out.solution.assign(bytes, bytes + solution.size() * sizeof(word<W>));
  return out;
}

struct bumped_counts {
  std::uint64_t keys = 0, bumped = 0, rule_bumped = 0;
  std::uint64_t codes[4] = {};
};

/// Builds one bumped layer of `num_starts` start positions over `n` random layer hashes (plus
/// `duplicates` repeated ones) and checks it against the brute force.
template <unsigned W, class Result>
void check_bumped_layer(std::uint32_t r, std::uint64_t num_starts, std::uint64_t n,
                        std::uint64_t duplicates, std::uint64_t seed, bumped_counts& counts) {
  const std::uint32_t bucket_size = ribbon::detail::default_bucket_size(W);
  const ribbon::filter_params p = ribbon::make_params(W, r, 32 * bucket_size);
  ASSERT_EQ(ribbon::check_params(p), nullptr);
  ASSERT_EQ(p.bucket_size, bucket_size);
  const ribbon::layer_geometry g = ribbon::bumped_geometry(num_starts, p);
  ASSERT_TRUE(g.bumping());
  ASSERT_EQ(g.shard_size(), p.shard_size);
  const std::uint64_t S = p.shard_size, B = p.bucket_size;

  rng random(seed);
  std::vector<std::uint64_t> hashes(n);
  for (auto& h : hashes) h = random.next();
  for (std::uint64_t i = 0; i < duplicates && n > 0; ++i) hashes.push_back(hashes[random.below(n)]);
  // Group by shard and sort, as the builders do.
  std::vector<std::vector<std::uint64_t>> shards(g.num_shards());
  for (std::uint64_t h : hashes) shards[ribbon::fastrange64(h, num_starts) / S].push_back(h);
  for (auto& s : shards) std::sort(s.begin(), s.end());

  const layer_result result = solve_bumped_layer<W, Result>(p, g, shards, 0);
  ASSERT_TRUE(result.all_solved) << "a bumped layer never fails";
  // Every threshold word is written: a different sentinel gives the same output.
  const layer_result again = solve_bumped_layer<W, Result>(p, g, shards, ~std::uint64_t{0});
  ASSERT_EQ(again.thresholds, result.thresholds);
  ASSERT_EQ(again.solution, result.solution);
  ASSERT_EQ(again.bumped, result.bumped);

  // The bucket codes, decoded from the threshold section (test_threshold_codes checks the
  // decoder against an independent model of the encoding).
  auto code_of = [&](std::uint64_t bucket) {
    return g.bucket_code(result.thresholds.data(), bucket, p.bucket_size);
  };
  auto threshold_of = [&](unsigned code) -> std::uint64_t {
    return code == 0 ? 0 : code == 1 ? p.threshold_light : code == 2 ? p.threshold_heavy : B;
  };
  auto rule_bumped = [&](std::uint64_t start) { return start >= S && start % S < W; };
  auto expect_bumped = [&](std::uint64_t start) {
    return rule_bumped(start) || start % B < threshold_of(code_of(start / B));
  };
  const std::uint64_t buckets = num_starts / B;
  for (std::uint64_t b = 0; b < buckets; ++b) ++counts.codes[code_of(b)];

  ribbon::layer_ref layer;
  layer.geometry = g;
  layer.thresholds = result.thresholds.data();
  layer.solution = result.solution.data();
  // The query side agrees with the derivation at every start position.
  for (std::uint64_t start = 0; start < num_starts; ++start) {
    ASSERT_EQ(ribbon::detail::is_bumped(p, layer, start), expect_bumped(start))
        << "start " << start;
  }
  ribbon::filter_ref ref{};
  ref.params = p;
  ref.num_layers = 1;
  ref.layers[0] = layer;

  for (std::uint64_t s = 0; s < g.num_shards(); ++s) {
    SCOPED_TRACE("shard " + std::to_string(s));
    std::vector<std::uint64_t> expected_bumped;
    for (std::uint64_t h : shards[s]) {
      const std::uint64_t start = ribbon::fastrange64(h, num_starts);
      ++counts.keys;
      if (expect_bumped(start)) {
        expected_bumped.push_back(h);
        counts.rule_bumped += rule_bumped(start);
        continue;
      }
      const std::uint32_t f = ribbon::detail::fingerprint(h, r);
      ASSERT_EQ(brute_result<W>(result.solution.data(), r, h, num_starts), f) << "hash " << h;
      ASSERT_EQ(ribbon::detail::row_result<W>(result.solution.data(), r, start,
                                              ribbon::detail::coefficients<W>(h)),
                f);
      ASSERT_TRUE(ref.contains_hash(h));
    }
    // The keys returned as bumped are exactly those the thresholds bump, in ascending order.
    ASSERT_TRUE(std::is_sorted(result.bumped[s].begin(), result.bumped[s].end()));
    ASSERT_EQ(result.bumped[s], expected_bumped);
    counts.bumped += expected_bumped.size();

    // Minimality of each bucket's code: with the next smaller threshold, the bucket's keys
    // (those not bumped by rule) cannot all be added to the kept keys of the earlier buckets.
    // The smaller code a bucket is checked against is the one the 1+-bit encoding could
    // have given it (in its tails, any failing bucket gets the tail's code).
    const std::uint64_t begin = g.shard_begin(s);
    ribbon_test::code_rules rules(
        ribbon::detail::exception_capacity(g.shard_buckets(s, p.bucket_size),
                                           g.code_index_bits(p.bucket_size)),
        g.codes == ribbon::threshold_encoding::two_bit);
    gf2_system kept(ribbon::detail::shard_columns(g, s, W));
    std::size_t next = 0;
    for (std::uint64_t bucket = begin / B; bucket < g.shard_end(s) / B; ++bucket) {
      std::size_t end = next;
      while (end < shards[s].size() &&
             ribbon::fastrange64(shards[s][end], num_starts) / B == bucket) {
        ++end;
      }
      const unsigned code = code_of(bucket);
      const unsigned smaller = code > 0 ? rules.smaller(code) : 0;
      const bool tail = rules.in_tail();
      ASSERT_EQ(rules.give(code), code) << "bucket " << bucket << " breaks the encoding's rules";
      if (code > 0) {
        const std::uint64_t lower = threshold_of(smaller);
        std::vector<std::int64_t> stored;
        bool consistent = true;
        for (std::size_t i = end; i-- > next && consistent;) {
          const std::uint64_t start = ribbon::fastrange64(shards[s][i], num_starts);
          if (start % B < lower || rule_bumped(start)) continue;
          std::int64_t column = -1;
          consistent = kept.add(equation<W>(shards[s][i], num_starts, begin, r), &column);
          stored.push_back(column);
        }
        EXPECT_FALSE(consistent) << "bucket " << bucket << " has code " << code
                                 << " but the smaller threshold " << lower << " would do"
                                 << (tail ? " (in a tail)" : "");
        for (std::int64_t column : stored) kept.remove(column);
      }
      for (std::size_t i = next; i < end; ++i) {
        const std::uint64_t start = ribbon::fastrange64(shards[s][i], num_starts);
        if (expect_bumped(start)) continue;
        ASSERT_TRUE(kept.add(equation<W>(shards[s][i], num_starts, begin, r)))
            << "kept keys are inconsistent at bucket " << bucket;
      }
      next = end;
    }
    ASSERT_EQ(next, shards[s].size());
    // Canonical solution: the columns the shard owns that are not pivots of its kept rows
    // are 0 (whatever rows were inserted and then undone).
    const std::uint64_t first_owned = s == 0 ? 0 : W;
    for (std::uint64_t local = first_owned; local < ribbon::detail::shard_columns(g, s, W);
         ++local) {
      if (kept.is_pivot(local)) continue;
      for (std::uint32_t j = 0; j < r; ++j) {
        ASSERT_EQ(solution_bit<W>(result.solution.data(), r, begin + local, j), 0u)
            << "free column " << begin + local << " bit " << j;
      }
    }
  }
}

class BumpedSolver : public ::testing::TestWithParam<std::tuple<unsigned, std::uint32_t>> {};

TEST_P(BumpedSolver, KeptKeysSolvedAndBumpedKeysMatchTheQuerySide) {
  const unsigned width = std::get<0>(GetParam());
  const std::uint32_t r = std::get<1>(GetParam());
  const std::uint64_t B = ribbon::detail::default_bucket_size(width);
  const std::uint64_t S = 32 * B;
  // Two full shards and a partial one (half a shard plus one bucket).
  const std::uint64_t num_starts = 2 * S + S / 2 + B;
  const double eps = ribbon::detail::default_overload(width);
  struct load_case {
    const char* name;
    double keys_per_slot;
    double duplicate_fraction;
  };
  const load_case cases[] = {{"underloaded", 0.5, 0.0},
                             {"default overload", 1.0 / (1.0 + eps), 0.0},
                             {"default overload with duplicates", 1.0 / (1.0 + eps), 0.2},
                             {"moderately overloaded", 1.15, 0.0},
                             {"heavily overloaded", 1.4, 0.05},
                             // Bucket code 3 (bump all) needs a failure at an offset of
                             // threshold_heavy or more; at w=64 (heavy 41) the loads above
                             // need not give one.
                             {"overloaded twice over", 2.0, 0.0}};
  bumped_counts total;
  for (const load_case& c : cases) {
    SCOPED_TRACE(c.name);
    const auto n = static_cast<std::uint64_t>(c.keys_per_slot * static_cast<double>(num_starts));
    const auto duplicates =
        static_cast<std::uint64_t>(c.duplicate_fraction * static_cast<double>(n));
    bumped_counts counts;
    with_result_type(r, [&](auto tag) {
      using Result = typename decltype(tag)::type;
      const std::uint64_t seed = width * 100 + r + static_cast<std::uint64_t>(n);
      switch (width) {
        case 32: check_bumped_layer<32, Result>(r, num_starts, n, duplicates, seed, counts); break;
        case 64: check_bumped_layer<64, Result>(r, num_starts, n, duplicates, seed, counts); break;
        default: check_bumped_layer<128, Result>(r, num_starts, n, duplicates, seed, counts); break;
      }
    });
    if (HasFatalFailure()) return;
    std::cout << "w=" << width << " r=" << r << " " << c.name << ": " << counts.keys << " keys, "
              << counts.bumped << " bumped (" << counts.rule_bumped << " by the shard-head rule), "
              << "bucket codes 0/1/2/3: " << counts.codes[0] << "/" << counts.codes[1] << "/"
              << counts.codes[2] << "/" << counts.codes[3] << "\n";
    EXPECT_EQ(counts.keys, n + duplicates);
    EXPECT_GT(counts.rule_bumped, 0u);  // shard heads exist in shards 1 and 2
    for (int code = 0; code < 4; ++code) total.codes[code] += counts.codes[code];
  }
  // Across the loads every bucket code occurs, so every threshold path was exercised.
  for (int code = 0; code < 4; ++code) EXPECT_GT(total.codes[code], 0u) << "code " << code;
}

INSTANTIATE_TEST_SUITE_P(AllWidths, BumpedSolver,
                         ::testing::Combine(::testing::Values(32u, 64u, 128u),
                                            ::testing::Values(1u, 5u, 8u, 16u, 32u)),
                         width_and_bits_name);

TEST(BumpedSolver, EmptyAndTinyShards) {
  // A layer with one bucket and no keys, and one with a single key: nothing bumped, solved.
  for (std::uint64_t n : {0u, 1u, 2u}) {
    bumped_counts counts;
    check_bumped_layer<64, std::uint8_t>(8, 128, n, 0, 99 + n, counts);
    if (HasFatalFailure()) return;
    EXPECT_EQ(counts.keys, n);
    EXPECT_EQ(counts.bumped, 0u);
    EXPECT_EQ(counts.codes[0], 1u);
  }
}

// ---------------------------------------------------------------------------------------------
// interleave(): a thread's driver of several eliminators at once.

/// Each shard's working arrays, outcome, reordered hashes and threshold words after running
/// the shards `lanes` at a time through interleave(), or (lanes == 0) one by one through
/// eliminate_shard().
template <unsigned W>
struct interleaved_run {
  std::vector<std::vector<word<W>>> coeffs;
  std::vector<std::vector<std::uint8_t>> results;
  std::vector<std::vector<std::uint64_t>> hashes;
  std::vector<std::uint64_t> bumped;
  std::vector<std::uint64_t> thresholds;
};

template <unsigned W>
interleaved_run<W> eliminate_in_groups(const ribbon::filter_params& p,
                                       const ribbon::layer_geometry& g,
                                       const std::vector<std::vector<std::uint64_t>>& shards,
                                       unsigned lanes) {
  using eliminator = ribbon::detail::shard_eliminator<W, std::uint8_t>;
  const std::uint64_t n = g.num_shards();
  const std::uint64_t columns = ribbon::detail::max_shard_columns(g, W);
  interleaved_run<W> run;
  run.hashes = shards;
  run.bumped.assign(n, 0);
  run.thresholds.assign(g.threshold_words(p.bucket_size), 0);
  std::vector<workspace_arrays<W, std::uint8_t>> ws(
      n, workspace_arrays<W, std::uint8_t>(columns, p.bucket_size));
  for (std::uint64_t first = 0; first < n; first += std::max(lanes, 1u)) {
    const std::uint64_t end = std::min<std::uint64_t>(n, first + std::max(lanes, 1u));
    std::vector<eliminator> group;
    group.reserve(end - first);
    for (std::uint64_t s = first; s < end; ++s) {
      group.emplace_back(p, g, s, run.hashes[s].data(), run.hashes[s].size(), ws[s].view(),
                         run.thresholds.data());
    }
    if (lanes == 0) {
      for (auto& e : group) {
        while (!e.done()) e.step();
      }
    } else {
      ribbon::detail::interleave(group.data(), static_cast<unsigned>(group.size()));
    }
    for (std::uint64_t s = first; s < end; ++s) {
      EXPECT_TRUE(group[s - first].done());
      EXPECT_TRUE(group[s - first].outcome().solved);
      run.bumped[s] = group[s - first].outcome().bumped;
    }
  }
  for (auto& w : ws) {
    run.coeffs.push_back(w.coeffs);
    run.results.push_back(w.results);
  }
  return run;
}

template <unsigned W>
void check_every_lane_count(std::uint64_t seed) {
  const std::uint32_t bucket_size = ribbon::detail::default_bucket_size(W);
  const ribbon::filter_params p = ribbon::make_params(W, 8, 32 * bucket_size);
  ASSERT_EQ(ribbon::check_params(p), nullptr);
  const std::uint64_t num_starts = 11 * p.shard_size;
  const ribbon::layer_geometry g = ribbon::bumped_geometry(num_starts, p);
  ASSERT_EQ(g.num_shards(), 11u);
  // Shards of very different sizes (one empty), so that lanes finish in every order.
  rng random(seed);
  std::vector<std::vector<std::uint64_t>> shards(g.num_shards());
  const unsigned percent_kept[] = {100, 40, 0, 95, 10, 70, 100, 55, 25, 85, 100};
  for (std::uint64_t i = 0; i < num_starts; ++i) {
    const std::uint64_t h = random.next();
    const std::uint64_t s = ribbon::fastrange64(h, num_starts) / p.shard_size;
    if (random.below(100) < percent_kept[s]) shards[s].push_back(h);
  }
  for (auto& s : shards) std::sort(s.begin(), s.end());

  const interleaved_run<W> alone = eliminate_in_groups<W>(p, g, shards, 0);
  std::uint64_t bumped = 0;
  for (std::uint64_t b : alone.bumped) bumped += b;
  ASSERT_GT(bumped, 0u) << "the layer should bump keys, or the test checks little";
  for (unsigned lanes = 1; lanes <= 9; ++lanes) {
    SCOPED_TRACE("lanes " + std::to_string(lanes));
    const interleaved_run<W> together = eliminate_in_groups<W>(p, g, shards, lanes);
    EXPECT_EQ(together.bumped, alone.bumped);
    EXPECT_EQ(together.hashes, alone.hashes);
    EXPECT_EQ(together.thresholds, alone.thresholds);
    EXPECT_EQ(together.coeffs, alone.coeffs);
    EXPECT_EQ(together.results, alone.results);
  }
}

TEST(Interleave, EveryLaneCountGivesEachShardItsOwnResult) {
  check_every_lane_count<32>(71);
  check_every_lane_count<64>(72);
  check_every_lane_count<128>(73);
}

}  // namespace
