// The solution a shard writes is a function of the rows it keeps, not of the order in which
// they were eliminated: free columns are 0 and the pivot columns of an echelon basis are an
// invariant of the row space. A GPU builder may therefore eliminate in another order and
// still write the CPU builder's bytes. Here an independent elimination (ascending order, and
// random orders, with the threshold found by retrying) must reproduce the shard solver's
// thresholds and solution words exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "insert_row.hpp"
#include "ribbon/detail/shard_solver.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"

namespace {

using ribbon_test::insert_outcome;

template <unsigned W>
struct shard_input {
  ribbon::filter_params p;
  ribbon::layer_geometry g;
  std::vector<std::uint64_t> hashes;  // sorted ascending, all in shard 0
};

template <unsigned W>
shard_input<W> make_input(std::uint64_t shard_size, double keys_per_start, std::uint64_t seed) {
  shard_input<W> in;
  in.p = ribbon::make_params(W, 8, shard_size);
  in.g = ribbon::bumped_geometry(shard_size, in.p);  // exactly one shard
  const auto n = static_cast<std::uint64_t>(keys_per_start * static_cast<double>(shard_size));
  std::mt19937_64 rng(seed);
  in.hashes.resize(n);
  for (auto& h : in.hashes) h = rng();
  std::sort(in.hashes.begin(), in.hashes.end());
  return in;
}

/// The shard solver's output: thresholds and solution words of shard 0.
template <unsigned W>
void solve_reference(const shard_input<W>& in, std::vector<std::uint64_t>& thresholds,
                     std::vector<ribbon::detail::word_t<W>>& solution) {
  const std::uint64_t columns = ribbon::detail::max_shard_columns(in.g, W);
  std::vector<ribbon::detail::word_t<W>> coeffs(columns);
  std::vector<std::uint8_t> results(columns);
  const std::uint32_t undo = ribbon::detail::undo_capacity(in.p.bucket_size, W);
  std::vector<std::uint32_t> undo_columns(undo), undo_offsets(undo);
  std::vector<std::uint64_t> hashes = in.hashes;
  thresholds.assign(in.g.threshold_words(in.p.bucket_size), 0);
  solution.assign(in.g.solution_bytes(W, 8) / sizeof(ribbon::detail::word_t<W>), 0);
  ribbon::detail::eliminate_shard<W, std::uint8_t>(
      in.p, in.g, 0, hashes.data(), hashes.size(),
      {coeffs.data(), results.data(), undo_columns.data(), undo_offsets.data()}, thresholds.data());
  ribbon::detail::back_substitute_shard<W, std::uint8_t>(in.p, in.g, 0, coeffs.data(),
                                                         results.data(), solution.data());
}

/// Independent elimination: per bucket, insert the rows at or above a candidate threshold
/// in `order` (a permutation strategy); on a failure, undo the bucket and try the next
/// larger threshold. Same kept set, different elimination order.
template <unsigned W>
void solve_by_retry(const shard_input<W>& in, bool shuffle, std::uint64_t seed,
                    std::vector<std::uint64_t>& thresholds,
                    std::vector<ribbon::detail::word_t<W>>& solution) {
  const ribbon::filter_params& p = in.p;
  const std::uint64_t columns = ribbon::detail::max_shard_columns(in.g, W);
  std::vector<ribbon::detail::word_t<W>> coeffs(columns, 0);
  std::vector<std::uint8_t> results(columns, 0);
  thresholds.assign(in.g.threshold_words(p.bucket_size), 0);
  ribbon::detail::shard_code_writer writer =
      ribbon::detail::code_writer_for(p, in.g, 0, thresholds.data(), 0);
  std::mt19937_64 rng(seed);
  std::uint64_t next = 0;
  for (std::uint64_t bucket = 0; bucket < in.g.num_starts / p.bucket_size; ++bucket) {
    const std::uint64_t begin = bucket * p.bucket_size;
    std::uint64_t end = next;
    while (end < in.hashes.size() &&
           ribbon::fastrange64(in.hashes[end], in.g.num_starts) < begin + p.bucket_size) {
      ++end;
    }
    std::vector<std::uint64_t> rows(in.hashes.begin() + next, in.hashes.begin() + end);
    if (shuffle) std::shuffle(rows.begin(), rows.end(), rng);
    // The smallest code that works, as the encoding gives it (raised in its tails).
    unsigned code = 0;
    for (unsigned wanted = 0;; ++wanted) {
      code = wanted == 0 ? 0 : writer.code_for_failure(bucket, wanted);
      if (code == 3) break;  // everything bumped: nothing to insert
      std::vector<std::uint64_t> stored;
      bool failed = false;
      for (std::uint64_t h : rows) {
        const std::uint64_t start = ribbon::fastrange64(h, in.g.num_starts);
        if (start - begin < p.threshold(code)) continue;
        std::uint64_t column = start;
        const insert_outcome outcome = ribbon_test::insert_row(
            coeffs.data(), results.data(), column, ribbon::detail::coefficients<W>(h),
            static_cast<std::uint8_t>(ribbon::detail::fingerprint(h, 8)));
        if (outcome == insert_outcome::stored) stored.push_back(column);
        if (outcome == insert_outcome::failed) {
          failed = true;
          break;
        }
      }
      if (!failed) break;
      for (std::uint64_t column : stored) coeffs[column] = 0;
    }
    writer.record(bucket, code);
    next = end;
  }
  solution.assign(in.g.solution_bytes(W, 8) / sizeof(ribbon::detail::word_t<W>), 0);
  ribbon::detail::back_substitute_shard<W, std::uint8_t>(p, in.g, 0, coeffs.data(), results.data(),
                                                         solution.data());
}

template <unsigned W>
void check_order_independence(std::uint64_t shard_size, double load) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const shard_input<W> in = make_input<W>(shard_size, load, seed);
    std::vector<std::uint64_t> reference_thresholds, thresholds;
    std::vector<ribbon::detail::word_t<W>> reference_solution, solution;
    solve_reference(in, reference_thresholds, reference_solution);
    std::uint64_t bumping_buckets = 0;
    for (std::uint64_t word : reference_thresholds) bumping_buckets += word != 0;
    ASSERT_GT(bumping_buckets, 0u) << "the test needs buckets that bump";
    for (bool shuffle : {false, true}) {
      solve_by_retry(in, shuffle, seed, thresholds, solution);
      EXPECT_EQ(thresholds, reference_thresholds) << "w=" << W << " seed " << seed;
      EXPECT_TRUE(solution == reference_solution)
          << "w=" << W << " seed " << seed << (shuffle ? " shuffled" : " ascending");
    }
  }
}

TEST(CanonicalSolution, OrderOfEliminationDoesNotChangeTheBytesW32) {
  check_order_independence<32>(8192, 1.10);
}
TEST(CanonicalSolution, OrderOfEliminationDoesNotChangeTheBytesW64) {
  check_order_independence<64>(8192, 1.07);
}
TEST(CanonicalSolution, OrderOfEliminationDoesNotChangeTheBytesW128) {
  check_order_independence<128>(32768, 1.04);
}

}  // namespace
