// Filter sets and many filters against one big filter of the same keys, timed in one run
// (issue 56, item 3): G groups x K random u64 keys, each build A B A B over the rounds.
//   ribbon_set_build_timer GROUPS PER_GROUP THREADS ROUNDS [TMP_DIR [MEMORY_LIMIT_MIB [ORDER]]]
// ORDER: "runs" (the default: a group's pairs together, file by file) or "random" (the pairs
// shuffled, groups interleaved as in an unsorted DataFrame or a stream of events; `many`,
// which takes its groups as runs, is left out). MEMORY_LIMIT_MIB 0: no spilled builds.
// Builds, every round in this order:
//   filter      filter::build(keys)                    one big filter of the G*K keys
//   set_u64     filter::build_set(u64 groups, keys)    the pairs, groups 0..G-1
//   set_bytes   filter::build_set(path groups, keys)   groups named like a lake's data files
//   many        build_many(keys, G groups)             a filter per group
//   bulk_filter bulk_builder: add_hashes(key hashes), finish(file)
//   bulk_set    bulk_builder groups=bytes: add_hashes(pair hashes), finish(file)
// and, given MEMORY_LIMIT_MIB, the two bulk builds again under that memory limit (spilled to
// TMP_DIR when the hashes do not fit):
//   spilled_filter, spilled_set
// Prints one JSON object: each build's median seconds, ns per pair, its ratio to `filter`
// (bulk_set: to bulk_filter; spilled_set: to spilled_filter), for the spilled builds their
// ratio to the same build in memory (`in_memory_ratio`) and whether they spilled, and the
// median seconds of the layer-0 phases (build_stats) of the in-memory builds.
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

/// One random permutation (a fixed seed) applied to the pairs: groups interleaved at random.
void shuffle_together(std::vector<std::uint64_t>& keys, std::vector<std::uint64_t>& group_ids,
                      std::vector<std::string_view>& group_names) {
  std::uint64_t state = 7;
  for (std::uint64_t i = keys.size(); i > 1; --i) {
    const std::uint64_t j = ribbon::detail::splitmix64(state) % i;
    std::swap(keys[i - 1], keys[j]);
    std::swap(group_ids[i - 1], group_ids[j]);
    std::swap(group_names[i - 1], group_names[j]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr,
                 "usage: %s GROUPS PER_GROUP THREADS ROUNDS [TMP_DIR [MEMORY_LIMIT_MIB [ORDER]]]\n",
                 argv[0]);
    return 2;
  }
  const std::uint64_t groups = std::strtoull(argv[1], nullptr, 10);
  const std::uint64_t per_group = std::strtoull(argv[2], nullptr, 10);
  const auto threads = static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10));
  const int rounds = std::atoi(argv[4]);
  const std::string tmp = argc > 5 ? argv[5] : "/tmp";
  const std::uint64_t memory_limit = argc > 6 ? std::strtoull(argv[6], nullptr, 10) << 20 : 0;
  const std::string order_name = argc > 7 ? argv[7] : "runs";
  if (order_name != "runs" && order_name != "random") {
    std::fprintf(stderr, "ORDER must be runs or random, not %s\n", order_name.c_str());
    return 2;
  }
  const bool shuffled = order_name == "random";
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
  if (shuffled) shuffle_together(keys, group_ids, group_names);

  ribbon::build_options options;
  options.threads = threads;
  tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, threads);
  const ribbon::set_hasher hasher{options.seed, ribbon::seed_mix(options.seed)};
  std::vector<std::uint64_t> key_hashes(n), pair_hashes(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    key_hashes[i] = hasher.key(keys[i]);
    pair_hashes[i] = hasher.pair(group_names[i], keys[i]);
  }

  std::map<std::string, bool> spilled;
  auto bulk = [&](const std::string& name, ribbon::group_kind kind,
                  const std::vector<std::uint64_t>& hashes, std::uint64_t limit) {
    ribbon::bulk_options bulk_options;
    bulk_options.build = options;
    bulk_options.groups = kind;
    bulk_options.memory_limit = limit;
    bulk_options.tmp_dir = tmp;
    ribbon::bulk_builder b(ribbon::key_kind::u64, bulk_options);
    b.add_hashes(hashes.data(), n);
    if (kind != ribbon::group_kind::none) b.set_group_count(groups);
    spilled[name] = b.finish(tmp + "/set_build_timer.ribbon").out_of_core;
  };

  std::vector<std::string> order = {"filter", "set_u64",     "set_bytes",
                                    "many",   "bulk_filter", "bulk_set"};
  if (shuffled) order.erase(std::find(order.begin(), order.end(), "many"));
  if (memory_limit) order.insert(order.end(), {"spilled_filter", "spilled_set"});
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
        const bool set = name.find("_set") != std::string::npos;
        const std::uint64_t limit = name.rfind("spilled", 0) == 0 ? memory_limit : 0;
        run = [&, set, limit, name] {
          bulk(name, set ? ribbon::group_kind::bytes : ribbon::group_kind::none,
               set ? pair_hashes : key_hashes, limit);
        };
      }
      s.seconds.push_back(timed(run));
      if (has_stats) s.add_stats(stats);
    }
  }
  std::remove((tmp + "/set_build_timer.ribbon").c_str());

  const double filter_s = median(results["filter"].seconds);
  auto median_of = [&](const std::string& name) { return median(results[name].seconds); };
  const std::map<std::string, std::string> base_of = {{"bulk_set", "bulk_filter"},
                                                      {"spilled_set", "spilled_filter"}};
  const std::map<std::string, std::string> in_memory_of = {{"spilled_filter", "bulk_filter"},
                                                           {"spilled_set", "bulk_set"}};
  std::printf(
      "{\"groups\": %llu, \"per_group\": %llu, \"threads\": %u, \"rounds\": %d, \"order\": \"%s\"",
      static_cast<unsigned long long>(groups), static_cast<unsigned long long>(per_group), threads,
      rounds, order_name.c_str());
  for (const std::string& name : order) {
    const samples& s = results[name];
    const double m = median(s.seconds);
    const auto base = base_of.find(name);
    const double base_s = base == base_of.end() ? filter_s : median_of(base->second);
    std::printf(", \"%s\": {\"seconds\": %.4f, \"ns_per_pair\": %.2f, \"ratio\": %.3f",
                name.c_str(), m, m * 1e9 / static_cast<double>(n), m / base_s);
    if (const auto in_memory = in_memory_of.find(name); in_memory != in_memory_of.end()) {
      std::printf(", \"in_memory_ratio\": %.3f, \"spilled\": %s", m / median_of(in_memory->second),
                  spilled[name] ? "true" : "false");
    }
    for (const auto& [phase, values] : s.phases) {
      std::printf(", \"%s_ns\": %.2f", phase.c_str(),
                  median(values) * 1e9 / static_cast<double>(n));
    }
    std::printf("}");
  }
  std::printf("}\n");
  return 0;
}
