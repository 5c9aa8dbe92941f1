// The shard solver on bumped layers against a brute-force GF(2) elimination (gf2_oracle.hpp):
// kept keys solved, bumped keys exactly those the thresholds bump (as the query side sees
// them), minimal bucket codes, canonical solutions; and interleave() against one shard at a
// time. Plain layers: test_solver_plain.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <tuple>
#include <vector>

#include "gf2_oracle.hpp"
#include "ribbon/detail/rows.hpp"
#include "ribbon/detail/shard_solver.hpp"
#include "ribbon/filter_ref.hpp"
#include "ribbon/hash.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"
#include "solver_harness.hpp"
#include "test_util.hpp"
#include "threshold_model.hpp"

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

/// One bumped layer under test: its parameters, its keys by shard, the solver's output, and
/// what that output's thresholds say about each start position.
template <unsigned W>
struct bumped_layer {
  ribbon::filter_params p;
  ribbon::layer_geometry g;
  std::uint32_t r;
  std::uint64_t num_starts, S, B;
  std::vector<std::vector<std::uint64_t>> shards;
  layer_result result;

  /// The bucket codes, decoded from the threshold section (test_threshold_codes checks the
  /// decoder against an independent model of the encoding).
  unsigned code_of(std::uint64_t bucket) const {
    return g.bucket_code(result.thresholds.data(), bucket, p.bucket_size);
  }
  std::uint64_t threshold_of(unsigned code) const {
    return code == 0 ? 0 : code == 1 ? p.threshold_light : code == 2 ? p.threshold_heavy : B;
  }
  bool rule_bumped(std::uint64_t start) const { return start >= S && start % S < W; }
  bool expect_bumped(std::uint64_t start) const {
    return rule_bumped(start) || start % B < threshold_of(code_of(start / B));
  }
};

/// `n` random layer hashes plus `duplicates` repeated ones, grouped by shard and sorted, as
/// the builders do.
std::vector<std::vector<std::uint64_t>> random_shards(std::uint64_t num_shards,
                                                      std::uint64_t num_starts,
                                                      std::uint64_t shard_size, std::uint64_t n,
                                                      std::uint64_t duplicates,
                                                      std::uint64_t seed) {
  rng random(seed);
  std::vector<std::uint64_t> hashes(n);
  for (auto& h : hashes) h = random.next();
  for (std::uint64_t i = 0; i < duplicates && n > 0; ++i) hashes.push_back(hashes[random.below(n)]);
  std::vector<std::vector<std::uint64_t>> shards(num_shards);
  for (std::uint64_t h : hashes) {
    shards[ribbon::fastrange64(h, num_starts) / shard_size].push_back(h);
  }
  for (auto& s : shards) std::sort(s.begin(), s.end());
  return shards;
}

/// Solves the layer into `layer.result`, twice: every threshold word is written, so a
/// different sentinel gives the same output.
template <unsigned W, class Result>
void solve_twice(bumped_layer<W>& layer) {
  layer.result = solve_bumped_layer<W, Result>(layer.p, layer.g, layer.shards, 0);
  ASSERT_TRUE(layer.result.all_solved) << "a bumped layer never fails";
  const layer_result again =
      solve_bumped_layer<W, Result>(layer.p, layer.g, layer.shards, ~std::uint64_t{0});
  ASSERT_EQ(again.thresholds, layer.result.thresholds);
  ASSERT_EQ(again.solution, layer.result.solution);
  ASSERT_EQ(again.bumped, layer.result.bumped);
}

/// The solved layer as a query sees it.
template <unsigned W>
ribbon::layer_ref query_layer(const bumped_layer<W>& layer) {
  ribbon::layer_ref ref;
  ref.geometry = layer.g;
  ref.thresholds = layer.result.thresholds.data();
  ref.solution = layer.result.solution.data();
  return ref;
}

/// The query side agrees with the derivation at every start position.
template <unsigned W>
void check_query_side_bumps(const bumped_layer<W>& layer, const ribbon::layer_ref& ref) {
  for (std::uint64_t start = 0; start < layer.num_starts; ++start) {
    ASSERT_EQ(ribbon::detail::layer_plan(layer.p, ref).bumps(start), layer.expect_bumped(start))
        << "start " << start;
  }
}

/// Shard `s`'s kept keys satisfy their equations (brute force, row_result, contains_hash);
/// the keys returned as bumped are exactly those the thresholds bump, in ascending order.
template <unsigned W>
void check_kept_and_bumped_keys(const bumped_layer<W>& layer, std::uint64_t s,
                                const ribbon::filter_ref& ref, bumped_counts& counts) {
  const std::vector<unsigned char>& solution = layer.result.solution;
  std::vector<std::uint64_t> expected_bumped;
  for (std::uint64_t h : layer.shards[s]) {
    const std::uint64_t start = ribbon::fastrange64(h, layer.num_starts);
    ++counts.keys;
    if (layer.expect_bumped(start)) {
      expected_bumped.push_back(h);
      counts.rule_bumped += layer.rule_bumped(start);
      continue;
    }
    const std::uint32_t f = ribbon::detail::fingerprint(h, layer.r);
    ASSERT_EQ(brute_result<W>(solution.data(), layer.r, h, layer.num_starts), f) << "hash " << h;
    ASSERT_EQ(ribbon::detail::row_result<W>(solution.data(), layer.r, start,
                                            ribbon::detail::coefficients<W>(h)),
              f);
    ASSERT_TRUE(ref.contains_hash(h));
  }
  const std::vector<std::uint64_t>& bumped = layer.result.bumped[s];
  ASSERT_TRUE(std::is_sorted(bumped.begin(), bumped.end()));
  ASSERT_EQ(bumped, expected_bumped);
  counts.bumped += expected_bumped.size();
}

/// Minimality of each bucket's code in shard `s`: with the next smaller threshold, the
/// bucket's keys (those not bumped by rule) cannot all be added to the kept keys of the
/// earlier buckets. The smaller code a bucket is checked against is the one the 1+-bit
/// encoding could have given it (in its tails, any failing bucket gets the tail's code).
/// Leaves the shard's kept keys in `kept`.
template <unsigned W>
void check_codes_are_minimal(const bumped_layer<W>& layer, std::uint64_t s, gf2_system& kept) {
  const ribbon::filter_params& p = layer.p;
  const ribbon::layer_geometry& g = layer.g;
  const std::vector<std::uint64_t>& keys = layer.shards[s];
  const std::uint64_t begin = g.shard_begin(s), B = layer.B, num_starts = layer.num_starts;
  ribbon_test::code_rules rules(
      ribbon::detail::exception_capacity(g.shard_buckets(s, p.bucket_size),
                                         g.code_index_bits(p.bucket_size)),
      g.codes == ribbon::threshold_encoding::two_bit);
  std::size_t next = 0;
  for (std::uint64_t bucket = begin / B; bucket < g.shard_end(s) / B; ++bucket) {
    std::size_t end = next;
    while (end < keys.size() && ribbon::fastrange64(keys[end], num_starts) / B == bucket) ++end;
    const unsigned code = layer.code_of(bucket);
    const unsigned smaller = code > 0 ? rules.smaller(code) : 0;
    const bool tail = rules.in_tail();
    ASSERT_EQ(rules.give(code), code) << "bucket " << bucket << " breaks the encoding's rules";
    if (code > 0) {
      const std::uint64_t lower = layer.threshold_of(smaller);
      std::vector<std::int64_t> stored;
      bool consistent = true;
      for (std::size_t i = end; i-- > next && consistent;) {
        const std::uint64_t start = ribbon::fastrange64(keys[i], num_starts);
        if (start % B < lower || layer.rule_bumped(start)) continue;
        std::int64_t column = -1;
        consistent = kept.add(equation<W>(keys[i], num_starts, begin, layer.r), &column);
        stored.push_back(column);
      }
      EXPECT_FALSE(consistent) << "bucket " << bucket << " has code " << code
                               << " but the smaller threshold " << lower << " would do"
                               << (tail ? " (in a tail)" : "");
      for (std::int64_t column : stored) kept.remove(column);
    }
    for (std::size_t i = next; i < end; ++i) {
      if (layer.expect_bumped(ribbon::fastrange64(keys[i], num_starts))) continue;
      ASSERT_TRUE(kept.add(equation<W>(keys[i], num_starts, begin, layer.r)))
          << "kept keys are inconsistent at bucket " << bucket;
    }
    next = end;
  }
  ASSERT_EQ(next, keys.size());
}

/// Canonical solution: the columns shard `s` owns that are not pivots of its kept rows are 0
/// (whatever rows were inserted and then undone).
template <unsigned W>
void check_free_columns_are_zero(const bumped_layer<W>& layer, std::uint64_t s,
                                 const gf2_system& kept) {
  const std::uint64_t begin = layer.g.shard_begin(s);
  const std::uint64_t first_owned = s == 0 ? 0 : W;
  for (std::uint64_t local = first_owned; local < ribbon::detail::shard_columns(layer.g, s, W);
       ++local) {
    if (kept.is_pivot(local)) continue;
    for (std::uint32_t j = 0; j < layer.r; ++j) {
      ASSERT_EQ(solution_bit<W>(layer.result.solution.data(), layer.r, begin + local, j), 0u)
          << "free column " << begin + local << " bit " << j;
    }
  }
}

/// Builds one bumped layer of `num_starts` start positions over `n` random layer hashes (plus
/// `duplicates` repeated ones) and checks it against the brute force.
template <unsigned W, class Result>
void check_bumped_layer(std::uint32_t r, std::uint64_t num_starts, std::uint64_t n,
                        std::uint64_t duplicates, std::uint64_t seed, bumped_counts& counts) {
  using ::testing::Test;
  const std::uint32_t bucket_size = ribbon::detail::default_bucket_size(W);
  const ribbon::filter_params p = ribbon::make_params(W, r, 32 * bucket_size);
  ASSERT_EQ(ribbon::check_params(p), nullptr);
  ASSERT_EQ(p.bucket_size, bucket_size);
  const ribbon::layer_geometry g = ribbon::bumped_geometry(num_starts, p);
  ASSERT_TRUE(g.bumping());
  ASSERT_EQ(g.shard_size(), p.shard_size);
  bumped_layer<W> layer{p, g, r, num_starts, p.shard_size, p.bucket_size, {}, {}};
  layer.shards = random_shards(g.num_shards(), num_starts, layer.S, n, duplicates, seed);
  solve_twice<W, Result>(layer);
  if (Test::HasFatalFailure()) return;
  for (std::uint64_t b = 0; b < num_starts / layer.B; ++b) ++counts.codes[layer.code_of(b)];

  const ribbon::layer_ref query = query_layer(layer);
  check_query_side_bumps(layer, query);
  if (Test::HasFatalFailure()) return;
  ribbon::filter_ref ref{};
  ref.params = p;
  ref.num_layers = 1;
  ref.layers[0] = query;

  for (std::uint64_t s = 0; s < g.num_shards(); ++s) {
    SCOPED_TRACE("shard " + std::to_string(s));
    check_kept_and_bumped_keys(layer, s, ref, counts);
    if (Test::HasFatalFailure()) return;
    gf2_system kept(ribbon::detail::shard_columns(g, s, W));
    check_codes_are_minimal(layer, s, kept);
    if (Test::HasFatalFailure()) return;
    check_free_columns_are_zero(layer, s, kept);
    if (Test::HasFatalFailure()) return;
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
