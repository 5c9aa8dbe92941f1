// Filter sets and many filters against one big filter of the same keys, timed in one run
// (issue 56, item 3): G groups x K random u64 keys, each build A B A B over the rounds.
//   ribbon_set_build_timer GROUPS PER_GROUP THREADS ROUNDS [TMP_DIR]
// Builds, every round in this order:
//   filter      filter::build(keys)                    one big filter of the G*K keys
//   set_u64     filter::build_set(u64 groups, keys)    the pairs, groups 0..G-1
//   set_bytes   filter::build_set(path groups, keys)   groups named like a lake's data files
//   many        build_many(keys, G groups)             a filter per group
//   bulk_filter bulk_builder: add_hashes(key hashes), finish(file)
//   bulk_set    bulk_builder groups=bytes: add_hashes(pair hashes), finish(file)
// Prints one JSON object: each build's median seconds, ns per pair, its ratio to `filter`
// (bulk_set: to bulk_filter), and the median seconds of the layer-0 phases (build_stats) of
// the in-memory builds.
#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ribbon/build_many.hpp"
#include "ribbon/bulk_builder.hpp"
#include "ribbon/detail/splitmix.hpp"
#include "ribbon/filter.hpp"
#include "ribbon/hash.hpp"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// A build's samples: wall seconds and, for in-memory builds, the layer-0 phases.
struct samples {
  std::vector<double> seconds;
  std::map<std::string, std::vector<double>> phases;

  void add_stats(const ribbon::build_stats& s) {
    phases["hash"].push_back(s.hash_seconds);
    phases["partition"].push_back(s.partition_seconds);
    phases["distinct"].push_back(s.distinct_seconds);
    phases["solve"].push_back(s.solve_seconds);
    phases["gather"].push_back(s.gather_seconds);
    phases["later_layers"].push_back(s.later_layers_seconds);
  }
};

template <class Run>
double timed(const Run& run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s GROUPS PER_GROUP THREADS ROUNDS [TMP_DIR]\n", argv[0]);
    return 2;
  }
  const std::uint64_t groups = std::strtoull(argv[1], nullptr, 10);
  const std::uint64_t per_group = std::strtoull(argv[2], nullptr, 10);
  const auto threads = static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10));
  const int rounds = std::atoi(argv[4]);
  const std::string tmp = argc > 5 ? argv[5] : "/tmp";
  const std::uint64_t n = groups * per_group;

  std::vector<std::uint64_t> keys(n), group_ids(n), offsets(groups + 1);
  std::uint64_t state = 42;
  for (auto& k : keys) k = ribbon::detail::splitmix64(state);
  std::vector<std::string> names(groups);
  for (std::uint64_t g = 0; g < groups; ++g) {
    char name[96];
    std::snprintf(name, sizeof name,
                  "s3://lake/warehouse/events/data/part-%05llu-8d1f4c2e-7b3a-4f5e-9c0d.parquet",
                  static_cast<unsigned long long>(g));
    names[g] = name;
    offsets[g] = g * per_group;
  }
  offsets[groups] = n;
  std::vector<std::string_view> group_names(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    group_ids[i] = i / per_group;
    group_names[i] = names[i / per_group];
  }

  ribbon::build_options options;
  options.threads = threads;
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
  const ribbon::set_hasher hasher{options.seed, ribbon::seed_mix(options.seed)};
  std::vector<std::uint64_t> key_hashes(n), pair_hashes(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    key_hashes[i] = hasher.key(keys[i]);
    pair_hashes[i] = hasher.pair(group_names[i], keys[i]);
  }

  auto bulk = [&](ribbon::group_kind kind, const std::vector<std::uint64_t>& hashes) {
    ribbon::bulk_options bulk_options;
    bulk_options.build = options;
    bulk_options.groups = kind;
    ribbon::bulk_builder b(ribbon::key_kind::u64, bulk_options);
    b.add_hashes(hashes.data(), n);
    if (kind != ribbon::group_kind::none) b.set_group_count(groups);
    b.finish(tmp + "/set_build_timer.ribbon");
  };

  const std::vector<std::string> order = {"filter", "set_u64",     "set_bytes",
                                          "many",   "bulk_filter", "bulk_set"};
  std::map<std::string, samples> results;
  for (int round = 0; round < rounds; ++round) {
    for (const std::string& name : order) {
      samples& s = results[name];
      ribbon::build_stats stats;
      bool has_stats = true;
      std::function<void()> run;
      if (name == "filter") {
        run = [&] { ribbon::filter::build(keys.data(), n, options, &stats); };
      } else if (name == "set_u64") {
        run = [&] { ribbon::filter::build_set(group_ids.data(), keys.data(), n, options, &stats); };
      } else if (name == "set_bytes") {
        run = [&] {
          ribbon::filter::build_set(group_names.data(), keys.data(), n, options, &stats);
        };
      } else if (name == "many") {
        has_stats = false;
        run = [&] {
          ribbon::build_many(keys.data(), n, {offsets.data(), groups, nullptr}, options);
        };
      } else {
        has_stats = false;
        const bool set = name == "bulk_set";
        run = [&, set] {
          bulk(set ? ribbon::group_kind::bytes : ribbon::group_kind::none,
               set ? pair_hashes : key_hashes);
        };
      }
      s.seconds.push_back(timed(run));
      if (has_stats) s.add_stats(stats);
    }
  }
  std::remove((tmp + "/set_build_timer.ribbon").c_str());

  const double filter_s = median(results["filter"].seconds);
  const double bulk_filter_s = median(results["bulk_filter"].seconds);
  std::printf("{\"groups\": %llu, \"per_group\": %llu, \"threads\": %u, \"rounds\": %d",
              static_cast<unsigned long long>(groups), static_cast<unsigned long long>(per_group),
              threads, rounds);
  for (const std::string& name : order) {
    const samples& s = results[name];
    const double m = median(s.seconds);
    const double base = name.rfind("bulk", 0) == 0 ? bulk_filter_s : filter_s;
    std::printf(", \"%s\": {\"seconds\": %.4f, \"ns_per_pair\": %.2f, \"ratio\": %.3f",
                name.c_str(), m, m * 1e9 / static_cast<double>(n), m / base);
    for (const auto& [phase, values] : s.phases) {
      std::printf(", \"%s_ns\": %.2f", phase.c_str(),
                  median(values) * 1e9 / static_cast<double>(n));
    }
    std::printf("}");
  }
  std::printf("}\n");
  return 0;
}
