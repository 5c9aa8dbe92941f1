// The tile solver (tile_solver.hpp: the GPU kernel's algorithm, here on host tiles whose lanes
// run in lockstep) against the sequential shard solver (shard_eliminator +
// back_substitute_shard, itself checked against a brute-force GF(2) elimination in
// test_solver): same outcome, same hashes array (bumped keys at the front), same threshold
// words, same solution bytes, for every layer kind, width, r, record kind and tile size.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "ribbon/detail/records.hpp"
#include "ribbon/detail/shard_solver.hpp"
#include "ribbon/detail/tile_solver.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"
#include "test_util.hpp"

namespace {

using ribbon::detail::keyed_value;
using ribbon::detail::word_t;
using ribbon_test::rng;

/// Everything a shard solve writes.
template <class Record>
struct shard_output {
  ribbon::detail::shard_outcome outcome;
  std::vector<Record> hashes;
  std::vector<std::uint64_t> thresholds;
  std::vector<unsigned char> solution;
};

template <class Record>
bool same_records(const std::vector<Record>& a, const std::vector<Record>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Record& x, const Record& y) {
    return ribbon::detail::record_equal{}(x, y);
  });
}

/// Sections sized for the whole layer and pre-filled with sentinels, so that a word written by
/// one solver and not the other shows.
template <unsigned W, class Record>
shard_output<Record> empty_output(const ribbon::filter_params& p, const ribbon::layer_geometry& g,
                                  const std::vector<Record>& hashes) {
  shard_output<Record> out;
  out.hashes = hashes;
  out.thresholds.assign(g.threshold_words(p.bucket_size) + 1, 0x5A5A5A5A5A5A5A5AULL);
  out.solution.assign(g.solution_bytes(W, p.result_bits), 0xA5);
  return out;
}

template <unsigned W, class Result, class Record>
shard_output<Record> solve_sequentially(const ribbon::filter_params& p,
                                        const ribbon::layer_geometry& g, std::uint64_t shard,
                                        const std::vector<Record>& hashes) {
  shard_output<Record> out = empty_output<W>(p, g, hashes);
  const std::uint64_t columns = ribbon::detail::shard_columns(g, shard, W);
  std::vector<word_t<W>> coeffs(columns);
  std::vector<Result> results(columns);
  const std::uint32_t undo = ribbon::detail::undo_capacity(p.bucket_size, W);
  std::vector<std::uint32_t> undo_columns(undo), undo_offsets(undo);
  out.outcome = ribbon::detail::eliminate_shard<W, Result, Record>(
      p, g, shard, out.hashes.data(), out.hashes.size(),
      {coeffs.data(), results.data(), undo_columns.data(), undo_offsets.data()},
      out.thresholds.data());
  if (out.outcome.solved) {
    ribbon::detail::back_substitute_shard<W, Result>(
        p, g, shard, coeffs.data(), results.data(),
        reinterpret_cast<word_t<W>*>(out.solution.data()));
  }
  return out;
}

template <unsigned W, class Result, unsigned Lanes, class Record>
shard_output<Record> solve_with_tile(const ribbon::filter_params& p,
                                     const ribbon::layer_geometry& g, std::uint64_t shard,
                                     const std::vector<Record>& hashes) {
  using band = ribbon::detail::tile_band<W, Result>;
  shard_output<Record> out = empty_output<W>(p, g, hashes);
  const std::uint64_t columns = ribbon::detail::shard_columns(g, shard, W);
  // Garbage in every working array: the solver may not rely on zeroed memory.
  std::vector<word_t<W>> coeffs(columns, static_cast<word_t<W>>(0x1234567));
  std::vector<Result> results(columns, static_cast<Result>(0x55));
  std::vector<std::uint64_t> band_memory((band::bytes(p.bucket_size) + 7) / 8,
                                         0xDEADBEEFDEADBEEFULL);
  const ribbon::detail::tile_workspace<W, Result> ws{band::in(band_memory.data(), p.bucket_size),
                                                     coeffs.data(), results.data()};
  const ribbon::detail::host_tile<Lanes> tile;
  out.outcome = ribbon::detail::solve_shard_with_tile<W, Result, Record>(
      tile, p, g, shard, out.hashes.data(), out.hashes.size(), ws, out.thresholds.data(), 0,
      reinterpret_cast<word_t<W>*>(out.solution.data()), 0);
  return out;
}

/// Layer hashes with the given starts' shard, sorted; `repeats` of them given twice.
template <class Record>
std::vector<Record> shard_records(const ribbon::layer_geometry& g, std::uint64_t shard,
                                  std::uint64_t n, std::uint64_t repeats, std::uint32_t value_bits,
                                  rng& random) {
  std::vector<Record> records;
  const std::uint64_t lo = g.shard_begin(shard), hi = g.shard_end(shard);
  while (records.size() < n) {
    const std::uint64_t h = random.next();
    const std::uint64_t start = ribbon::fastrange64(h, g.num_starts);
    if (start < lo || start >= hi) continue;
    if constexpr (std::is_same_v<Record, keyed_value>) {
      records.push_back({h, random.next() >> (64 - value_bits)});
    } else {
      records.push_back(h);
    }
  }
  for (std::uint64_t i = 0; i < repeats && n > 0; ++i) records.push_back(records[random.below(n)]);
  std::sort(records.begin(), records.end(), ribbon::detail::record_less{});
  return records;
}

struct counts {
  int solved = 0, failed = 0, bumped_shards = 0;
};

template <unsigned W, class Result, unsigned Lanes, class Record>
void check_shard(const ribbon::filter_params& p, const ribbon::layer_geometry& g,
                 std::uint64_t shard, const std::vector<Record>& records, counts& seen) {
  const auto expected = solve_sequentially<W, Result>(p, g, shard, records);
  const auto actual = solve_with_tile<W, Result, Lanes>(p, g, shard, records);
  ASSERT_EQ(actual.outcome.solved, expected.outcome.solved);
  if (!expected.outcome.solved) {  // a layer without thresholds is retried whole: no output
    ++seen.failed;
    return;
  }
  ASSERT_EQ(actual.outcome.bumped, expected.outcome.bumped);
  ASSERT_TRUE(same_records(actual.hashes, expected.hashes));
  ASSERT_EQ(actual.thresholds, expected.thresholds);
  ASSERT_EQ(actual.solution, expected.solution);
  ++seen.solved;
  if (expected.outcome.bumped > 0) ++seen.bumped_shards;
}

/// Random shards of bumped, standard and plain layers (load, repeats and shard picked at
/// random), for one width, result type, tile size and variant.
template <unsigned W, class Result, unsigned Lanes>
void check_layers(ribbon::filter_params p, std::uint64_t seed, counts& seen) {
  rng random(seed);
  const bool retrieval = ribbon::is_retrieval(p.variant);
  const std::uint32_t value_bits = p.result_bits;
  const int trials = 12;  // not scaled down: the coverage counts below need them all
  for (int t = 0; t < trials; ++t) {
    const auto kind = static_cast<ribbon::layer_kind>(random.below(3));
    if (kind == ribbon::layer_kind::bumped && p.variant != ribbon::filter_variant::bumped &&
        p.variant != ribbon::filter_variant::bumped_retrieval) {
      continue;  // the variants without thresholds have no bumped layer 0 but do have later ones
    }
    const std::uint64_t shards = kind == ribbon::layer_kind::plain ? 1 : 1 + random.below(4);
    const std::uint64_t starts =
        kind == ribbon::layer_kind::plain
            ? W * random.between(1, 40)  // whole blocks, as layers have; not whole buckets
            : (shards - 1) * p.shard_size +
                  p.bucket_size * random.between(1, p.shard_size / p.bucket_size);
    const ribbon::layer_geometry g = kind == ribbon::layer_kind::plain
                                         ? ribbon::plain_geometry(starts, p)
                                         : ribbon::sharded_geometry(starts, kind, p);
    const std::uint64_t shard = random.below(g.num_shards());
    const std::uint64_t shard_starts = g.shard_end(shard) - g.shard_begin(shard);
    // Load from 0.7 to 1.15 (bumped) or to 1.0 + w/starts (plain: some fail).
    // Load from 70 % to 115 % of the starts (plain and standard layers beyond 100 % fail).
    const std::uint64_t n = shard_starts * random.between(70, 115) / 100;
    const std::uint64_t repeats = random.below(3) == 0 ? random.below(n / 8 + 2) : 0;
    SCOPED_TRACE("kind " + std::to_string(static_cast<int>(kind)) + " starts " +
                 std::to_string(starts) + " shard " + std::to_string(shard) + " n " +
                 std::to_string(n) + " repeats " + std::to_string(repeats));
    if (retrieval) {
      check_shard<W, Result, Lanes>(
          p, g, shard, shard_records<keyed_value>(g, shard, n, repeats, value_bits, random), seen);
    } else {
      check_shard<W, Result, Lanes>(
          p, g, shard, shard_records<std::uint64_t>(g, shard, n, repeats, value_bits, random),
          seen);
    }
    if (::testing::Test::HasFatalFailure()) return;
  }
}

template <unsigned W, unsigned Lanes>
void check_width(std::uint32_t r, ribbon::filter_variant variant, std::uint32_t extra_bit_fraction,
                 counts& seen) {
  ribbon::filter_params p = ribbon::make_params(W, r, 32 * ribbon::detail::default_bucket_size(W));
  p.variant = variant;
  p.extra_bit_fraction = extra_bit_fraction;
  const std::uint64_t seed = W * 1000003 + r * 101 + Lanes * 7 + static_cast<unsigned>(variant);
  if (p.solver_bits() <= 8) {
    check_layers<W, std::uint8_t, Lanes>(p, seed, seen);
  } else if (p.solver_bits() <= 16) {
    check_layers<W, std::uint16_t, Lanes>(p, seed, seen);
  } else {
    check_layers<W, std::uint32_t, Lanes>(p, seed, seen);
  }
}

template <unsigned Lanes>
void check_everything() {
  counts seen;
  for (ribbon::filter_variant v :
       {ribbon::filter_variant::bumped, ribbon::filter_variant::standard,
        ribbon::filter_variant::homogeneous, ribbon::filter_variant::bumped_retrieval,
        ribbon::filter_variant::standard_retrieval}) {
    for (std::uint32_t r : {1u, 8u, 13u, 32u}) {
      const std::uint32_t fraction =
          !ribbon::is_retrieval(v) && r < 32 && r % 2 == 1 ? ribbon::extra_bit_one / 3 : 0;
      SCOPED_TRACE("variant " + std::to_string(static_cast<int>(v)) + " r " + std::to_string(r) +
                   " fraction " + std::to_string(fraction));
      check_width<32, Lanes>(r, v, fraction, seen);
      check_width<64, Lanes>(r, v, fraction, seen);
      check_width<128, Lanes>(r, v, fraction, seen);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  // The comparisons covered solved and failed shards and shards that bumped keys.
  EXPECT_GT(seen.solved, 50);
  EXPECT_GT(seen.failed, 0);
  EXPECT_GT(seen.bumped_shards, 50);
}

TEST(TileSolver, OneLaneMatchesTheSequentialSolver) {
  check_everything<1>();
}
TEST(TileSolver, FourLanesMatchTheSequentialSolver) {
  check_everything<4>();
}
TEST(TileSolver, EightLanesMatchTheSequentialSolver) {
  check_everything<8>();
}
TEST(TileSolver, ThirtyTwoLanesMatchTheSequentialSolver) {
  check_everything<32>();
}

}  // namespace
