// How often does a standard Ribbon layer fail at its first try? The measurements behind
// ribbon::standard_slack_for_success (common/src/params.cpp) and bench/RESULTS.md.
//
//   ribbon_standard_failure WIDTH[:SHARD_BITS] TRIALS EPS... > table
//
// For each eps: TRIALS builds of one full shard (2^SHARD_BITS slots, default 2^16, so
// (S - w) / (1 + eps) keys, fresh keys per trial), and the fraction whose first try failed,
// with a 95% interval.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ribbon/detail/splitmix.hpp"
#include "ribbon/filter.hpp"

namespace {

using ribbon::detail::splitmix;

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s WIDTH[:SHARD_BITS] TRIALS EPS... > table\n", argv[0]);
    return 2;
  }
  char* rest = nullptr;
  const auto width = static_cast<std::uint32_t>(std::strtoul(argv[1], &rest, 10));
  const unsigned shard_bits =
      *rest == ':' ? static_cast<unsigned>(std::strtoul(rest + 1, nullptr, 10)) : 16;
  const std::uint64_t trials = std::strtoull(argv[2], nullptr, 10);
  const std::uint64_t shard = std::uint64_t{1} << shard_bits;
  std::printf("width\tshard\teps\tkeys\ttrials\tfailed\tp_shard\tlow95\thigh95\n");
  for (int a = 3; a < argc; ++a) {
    const double eps = std::strtod(argv[a], nullptr);
    // A layer of exactly one shard: starts = (1 + eps) n, rounded up to whole blocks.
    const auto n = static_cast<std::uint64_t>(static_cast<double>(shard - width) / (1 + eps));
    std::vector<std::uint64_t> keys(n);
    std::uint64_t failed = 0;
    for (std::uint64_t t = 0; t < trials; ++t) {
      for (std::uint64_t i = 0; i < n; ++i)
        keys[i] = splitmix(t * n + i + (static_cast<std::uint64_t>(a) << 40));
      ribbon::build_options o;
      o.variant = ribbon::filter_variant::standard;
      o.width = width;
      o.result_bits = 1;
      o.slack = eps;
      o.shard_size = shard;
      o.threads = 1;
      ribbon::build_stats stats;
      (void)ribbon::filter::build(keys.data(), n, o, &stats);
      failed += stats.standard_attempts > 1;
    }
    const double p = static_cast<double>(failed) / static_cast<double>(trials);
    // Wilson score interval.
    const double z = 1.96, t = static_cast<double>(trials);
    const double centre = (p + z * z / (2 * t)) / (1 + z * z / t);
    const double half = z * std::sqrt(p * (1 - p) / t + z * z / (4 * t * t)) / (1 + z * z / t);
    std::printf("%u\t%llu\t%.4f\t%llu\t%llu\t%llu\t%.5f\t%.5f\t%.5f\n", width,
                static_cast<unsigned long long>(shard), eps, static_cast<unsigned long long>(n),
                static_cast<unsigned long long>(trials), static_cast<unsigned long long>(failed), p,
                std::max(0.0, centre - half), centre + half);
    std::fflush(stdout);
  }
  return 0;
}
