// Google Benchmark micro-benchmarks of the stages of a build and of queries (w=64, r=8).
//
// Every benchmark reports keys per second (items_per_second) and a "time/key" counter measured
// on wall-clock time (several stages run in parallel on oneTBB, so CPU time of the main thread
// would be misleading). The whole suite takes about 15 s; select with
// --benchmark_filter=REGEX (e.g. 'Shard' or 'Contains'), shorten with --benchmark_min_time=0.1.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ribbon/build_many.hpp"
#include "ribbon/detail/partition.hpp"
#include "ribbon/detail/planned_queries.hpp"
#include "ribbon/detail/shard_solver.hpp"
#include "ribbon/detail/splitmix.hpp"
#include "ribbon/filter.hpp"
#include "ribbon/hash.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"

namespace {

constexpr std::uint64_t member_seed = 0x5EED0001;
constexpr std::uint64_t nonmember_bit = std::uint64_t{1} << 63;

using ribbon::detail::splitmix64;

/// `n` random keys with bit 63 clear (members) or set (non-members): the two sets are disjoint.
std::vector<std::uint64_t> random_keys(std::uint64_t n, std::uint64_t seed, bool members) {
  std::vector<std::uint64_t> keys(n);
  std::uint64_t state = seed;
  for (auto& k : keys) {
    const std::uint64_t x = splitmix64(state);
    k = members ? (x & ~nonmember_bit) : (x | nonmember_bit);
  }
  return keys;
}

/// Reports `keys_per_iteration` keys per iteration: items_per_second and "time/key", the wall
/// time per key (every benchmark here uses UseRealTime()). The console shows time/key with an
/// SI prefix ("3.52ns"); JSON output has it in seconds.
void report_keys(benchmark::State& state, std::uint64_t keys_per_iteration) {
  const double keys =
      static_cast<double>(state.iterations()) * static_cast<double>(keys_per_iteration);
  state.SetItemsProcessed(static_cast<std::int64_t>(keys));
  // kIsRate divides by the elapsed seconds, kInvert turns keys/s into seconds/key.
  state.counters["time/key"] =
      benchmark::Counter(keys, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// ---------------------------------------------------------------------------------------------
// Hashing

void BM_HashU64(benchmark::State& state) {
  const auto keys = random_keys(4096, 1, true);
  const std::uint64_t mixed = ribbon::seed_mix(member_seed);
  for (auto _ : state) {
    std::uint64_t acc = 0;
    for (std::uint64_t k : keys) acc += ribbon::hash_u64(k, mixed);
    benchmark::DoNotOptimize(acc);
  }
  report_keys(state, keys.size());
}
BENCHMARK(BM_HashU64)->UseRealTime();

void BM_HashBytes(benchmark::State& state) {
  const auto length = static_cast<std::size_t>(state.range(0));
  constexpr std::size_t count = 4096;
  std::vector<unsigned char> data(count * length);
  std::uint64_t rng = 2;
  for (auto& c : data) c = static_cast<unsigned char>(splitmix64(rng));
  for (auto _ : state) {
    std::uint64_t acc = 0;
    for (std::size_t i = 0; i < count; ++i) {
      acc += ribbon::hash_bytes(data.data() + i * length, length, member_seed);
    }
    benchmark::DoNotOptimize(acc);
  }
  report_keys(state, count);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(count * length));
}
BENCHMARK(BM_HashBytes)->Arg(8)->Arg(16)->Arg(64)->UseRealTime();

// ---------------------------------------------------------------------------------------------
// Layer 0 of a w=64, r=8 filter with the default shard size, as cpu/src/builder.cpp sets it up.

struct layer0 {
  ribbon::filter_params p;
  ribbon::layer_geometry g;
  std::vector<std::uint64_t> keys;

  explicit layer0(std::uint64_t n)
      : p(ribbon::make_params(64, 8, 0, member_seed)), keys(random_keys(n, 3, true)) {
    g = ribbon::bumped_geometry(ribbon::bumped_layer_starts(n, p, ribbon::default_sizing(p.width)),
                                p);
  }

  /// Layer 0 uses the key hashes themselves (no remix).
  auto source() const {
    const std::uint64_t mixed = ribbon::seed_mix(p.seed);
    const std::uint64_t* k = keys.data();
    return [k, mixed](std::uint64_t i) { return ribbon::hash_u64(k[i], mixed); };
  }
};

void BM_PartitionByShard(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  const layer0 layer(n);
  std::vector<std::uint64_t> out(n);
  std::vector<std::uint64_t> offsets;
  const auto source = layer.source();
  for (auto _ : state) {
    ribbon::detail::partition_by_shard(n, source, layer.g, out.data(), offsets, nullptr, nullptr);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report_keys(state, n);
  state.counters["shards"] = static_cast<double>(layer.g.num_shards());
}
BENCHMARK(BM_PartitionByShard)
    ->Arg(1'000'000)
    ->Arg(10'000'000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

/// One full shard (shard 1, so it has a head bumped by rule) of layer 0 of a 10^6-key filter,
/// with the per-shard working memory the builder's workspace provides.
template <unsigned Width, class Result>
struct shard_fixture {
  layer0 layer{1'000'000};
  std::uint64_t shard = 1;
  std::vector<std::uint64_t> unsorted;  // the shard's hashes as partition_by_shard leaves them
  std::vector<std::uint64_t> sorted;
  std::vector<ribbon::detail::word_t<Width>> coeffs;
  std::vector<Result> results;
  std::vector<std::uint32_t> undo_columns, undo_offsets;
  std::vector<std::uint64_t> threshold_words;
  std::vector<ribbon::detail::word_t<Width>> solution;

  shard_fixture() {
    const ribbon::layer_geometry& g = layer.g;
    const ribbon::filter_params& p = layer.p;
    std::vector<std::uint64_t> hashes(layer.keys.size());
    std::vector<std::uint64_t> offsets;
    ribbon::detail::partition_by_shard(hashes.size(), layer.source(), g, hashes.data(), offsets,
                                       nullptr, nullptr);
    unsorted.assign(hashes.begin() + static_cast<std::ptrdiff_t>(offsets[shard]),
                    hashes.begin() + static_cast<std::ptrdiff_t>(offsets[shard + 1]));
    sorted = unsorted;
    std::vector<std::uint64_t> scratch;
    ribbon::detail::sort_shard(sorted.data(), sorted.size(), g, shard, scratch);
    const std::uint64_t columns = ribbon::detail::max_shard_columns(g, Width);
    coeffs.resize(columns);
    results.resize(columns);
    undo_columns.resize(ribbon::detail::undo_capacity(p.bucket_size, Width));
    undo_offsets.resize(ribbon::detail::undo_capacity(p.bucket_size, Width));
    threshold_words.resize(g.threshold_words(p.bucket_size));
    solution.resize(g.solution_bytes(p.width, p.result_bits) / sizeof(solution[0]));
  }

  ribbon::detail::shard_workspace<Width, Result> workspace() {
    return {coeffs.data(), results.data(), undo_columns.data(), undo_offsets.data()};
  }

  ribbon::detail::shard_outcome eliminate(std::uint64_t* hashes) {
    return ribbon::detail::eliminate_shard<Width, Result>(
        layer.p, layer.g, shard, hashes, sorted.size(), workspace(), threshold_words.data());
  }

  void back_substitute() {
    ribbon::detail::back_substitute_shard<Width, Result>(layer.p, layer.g, shard, coeffs.data(),
                                                         results.data(), solution.data());
  }
};

using shard64 = shard_fixture<64, std::uint8_t>;

void BM_SortShard(benchmark::State& state) {
  shard64 f;
  std::vector<std::uint64_t> work(f.unsorted.size());
  std::vector<std::uint64_t> scratch;
  for (auto _ : state) {
    state.PauseTiming();
    std::copy(f.unsorted.begin(), f.unsorted.end(), work.begin());
    state.ResumeTiming();
    ribbon::detail::sort_shard(work.data(), work.size(), f.layer.g, f.shard, scratch);
    benchmark::DoNotOptimize(work.data());
  }
  report_keys(state, work.size());
  state.counters["keys"] = static_cast<double>(work.size());
}
BENCHMARK(BM_SortShard)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_EliminateShard(benchmark::State& state) {
  shard64 f;
  std::vector<std::uint64_t> work(f.sorted.size());
  std::uint64_t bumped = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::copy(f.sorted.begin(), f.sorted.end(), work.begin());
    state.ResumeTiming();
    bumped = f.eliminate(work.data()).bumped;
    benchmark::DoNotOptimize(work.data());
  }
  report_keys(state, work.size());
  state.counters["keys"] = static_cast<double>(work.size());
  state.counters["bumped%"] =
      100.0 * static_cast<double>(bumped) / static_cast<double>(work.size());
}
BENCHMARK(BM_EliminateShard)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_BackSubstituteShard(benchmark::State& state) {
  shard64 f;
  std::vector<std::uint64_t> work = f.sorted;
  f.eliminate(work.data());
  for (auto _ : state) {
    f.back_substitute();
    benchmark::DoNotOptimize(f.solution.data());
    benchmark::ClobberMemory();
  }
  report_keys(state, work.size());
}
BENCHMARK(BM_BackSubstituteShard)->Unit(benchmark::kMicrosecond)->UseRealTime();

/// The shard solver as one builder task runs it after sorting: eliminate, then back-substitute.
void BM_SolveShard(benchmark::State& state) {
  shard64 f;
  std::vector<std::uint64_t> work(f.sorted.size());
  for (auto _ : state) {
    state.PauseTiming();
    std::copy(f.sorted.begin(), f.sorted.end(), work.begin());
    state.ResumeTiming();
    f.eliminate(work.data());
    f.back_substitute();
    benchmark::DoNotOptimize(f.solution.data());
    benchmark::ClobberMemory();
  }
  report_keys(state, work.size());
}
BENCHMARK(BM_SolveShard)->Unit(benchmark::kMicrosecond)->UseRealTime();

/// range(0) shards (1, 2, ... of a 3*10^6-key layer 0) eliminated on one thread by
/// detail::interleave, as one builder task does: the dependent loads of one shard's pivot
/// search overlap with the others'. Each shard has its own workspace.
void BM_EliminateShardsInterleaved(benchmark::State& state) {
  using eliminator = ribbon::detail::shard_eliminator<64, std::uint8_t>;
  constexpr unsigned max_lanes = 8;
  const auto k = std::min<std::uint64_t>(static_cast<std::uint64_t>(state.range(0)), max_lanes);
  const layer0 layer(3'000'000);
  const ribbon::layer_geometry& g = layer.g;
  const ribbon::filter_params& p = layer.p;
  std::vector<std::uint64_t> hashes(layer.keys.size());
  std::vector<std::uint64_t> offsets;
  ribbon::detail::partition_by_shard(hashes.size(), layer.source(), g, hashes.data(), offsets,
                                     nullptr, nullptr);
  std::vector<std::uint64_t> scratch;
  for (std::uint64_t s = 1; s <= k; ++s) {
    ribbon::detail::sort_shard(hashes.data() + offsets[s], offsets[s + 1] - offsets[s], g, s,
                               scratch);
  }
  const std::uint64_t columns = ribbon::detail::max_shard_columns(g, 64);
  std::vector<std::vector<std::uint64_t>> coeffs(k, std::vector<std::uint64_t>(columns));
  std::vector<std::vector<std::uint8_t>> results(k, std::vector<std::uint8_t>(columns));
  std::vector<std::vector<std::uint32_t>> undo(
      2 * k, std::vector<std::uint32_t>(ribbon::detail::undo_capacity(p.bucket_size, 64)));
  std::vector<std::uint64_t> threshold_words(g.threshold_words(p.bucket_size));
  const std::uint64_t keys = offsets[k + 1] - offsets[1];
  std::vector<std::uint64_t> work(keys);
  std::vector<eliminator> eliminators;
  eliminators.reserve(k);
  for (auto _ : state) {
    state.PauseTiming();
    std::copy(hashes.begin() + static_cast<std::ptrdiff_t>(offsets[1]),
              hashes.begin() + static_cast<std::ptrdiff_t>(offsets[k + 1]), work.begin());
    eliminators.clear();
    state.ResumeTiming();
    for (std::uint64_t i = 0; i < k; ++i) {
      const std::uint64_t s = i + 1;
      eliminators.emplace_back(
          p, g, s, work.data() + (offsets[s] - offsets[1]), offsets[s + 1] - offsets[s],
          ribbon::detail::shard_workspace<64, std::uint8_t>{
              coeffs[i].data(), results[i].data(), undo[2 * i].data(), undo[2 * i + 1].data()},
          threshold_words.data());
    }
    ribbon::detail::interleave(eliminators.data(), static_cast<unsigned>(k));
    benchmark::DoNotOptimize(work.data());
    benchmark::ClobberMemory();
  }
  report_keys(state, keys);
  state.counters["keys"] = static_cast<double>(keys);
}
BENCHMARK(BM_EliminateShardsInterleaved)
    ->ArgName("shards")
    ->Arg(1)
    ->Arg(2)
    ->Arg(3)
    ->Arg(4)
    ->Arg(8)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// ---------------------------------------------------------------------------------------------
// Whole-filter build

void BM_FilterBuild(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  const auto keys = random_keys(n, 4, true);
  ribbon::build_options options;
  options.seed = member_seed;
  double bits_per_key = 0;
  for (auto _ : state) {
    ribbon::filter f = ribbon::filter::build(keys.data(), n, options);
    bits_per_key = f.bits_per_key();
    benchmark::DoNotOptimize(f.ref());
  }
  report_keys(state, n);
  state.counters["bits/key"] = bits_per_key;
}
BENCHMARK(BM_FilterBuild)->Arg(1'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();

// ---------------------------------------------------------------------------------------------
// Many small filters: 4·10^6 keys in groups of range(0) keys, built by build_many on
// range(1) threads (range(2) = 1) or one filter::build per group on one thread (0), with shard
// size range(3) (0: the default). Reports ns per key, bits per key (all files) and the FPR of
// the first group over 10^6 non-members.

void BM_ManyFilters(benchmark::State& state) {
  const auto per_group = static_cast<std::uint64_t>(state.range(0));
  const std::uint64_t groups = std::max<std::uint64_t>(1, 4'000'000 / per_group);
  const auto keys = random_keys(groups * per_group, 7, true);
  std::vector<std::uint64_t> offsets(groups + 1);
  for (std::uint64_t g = 0; g <= groups; ++g) offsets[g] = g * per_group;
  ribbon::build_options options;
  options.seed = member_seed;
  options.threads = static_cast<std::uint32_t>(state.range(1));
  options.shard_size = static_cast<std::uint64_t>(state.range(3));
  const bool together = state.range(2) != 0;
  std::vector<ribbon::filter> filters;
  for (auto _ : state) {
    if (together) {
      filters =
          ribbon::build_many(keys.data(), keys.size(), {offsets.data(), groups, nullptr}, options);
    } else {
      filters.clear();
      for (std::uint64_t g = 0; g < groups; ++g) {
        filters.push_back(ribbon::filter::build(keys.data() + offsets[g], per_group, options));
      }
    }
    benchmark::DoNotOptimize(filters.data());
  }
  report_keys(state, keys.size());
  std::uint64_t bytes = 0;
  for (const ribbon::filter& f : filters) bytes += f.size_bytes();
  state.counters["bits/key"] = 8.0 * static_cast<double>(bytes) / static_cast<double>(keys.size());
  const auto probes = random_keys(1'000'000, 8, false);
  std::uint64_t positives = 0;
  for (const std::uint64_t k : probes) positives += filters[0].contains(k) ? 1 : 0;
  state.counters["FPR"] = static_cast<double>(positives) / static_cast<double>(probes.size());
}
BENCHMARK(BM_ManyFilters)
    ->ArgNames({"keys", "threads", "build_many", "shard"})
    ->Args({1000, 1, 0, 0})
    ->Args({1000, 1, 1, 0})
    ->Args({1000, 2, 1, 0})
    ->Args({10000, 1, 0, 0})
    ->Args({10000, 1, 0, 4096})  // a layer of 3 shards: interleaved (bench/RESULTS.md)
    ->Args({10000, 1, 1, 0})
    ->Args({10000, 2, 1, 0})
    ->Args({100000, 1, 0, 0})
    ->Args({100000, 1, 0, 32768})
    ->Args({100000, 1, 1, 0})
    ->Args({100000, 2, 1, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

/// "Which groups may hold these keys?" of a filter set of range(0) groups x range(1) keys each
/// (w = 64, r = 8): range(2) keys (members of spread groups), one thread; a probe is one
/// (group, key) pair, so time/key is the time over groups x keys.
void BM_GroupsOf(benchmark::State& state) {
  const auto groups = static_cast<std::uint64_t>(state.range(0));
  const auto per_group = static_cast<std::uint64_t>(state.range(1));
  const auto asked = static_cast<std::uint64_t>(state.range(2));
  const auto keys = random_keys(groups * per_group, 9, true);
  std::vector<std::uint64_t> group_of(keys.size());
  for (std::uint64_t i = 0; i < keys.size(); ++i) group_of[i] = i / per_group;
  ribbon::build_options options;
  options.seed = member_seed;
  const ribbon::filter set =
      ribbon::filter::build_set(group_of.data(), keys.data(), keys.size(), options);
  ribbon::filter f = ribbon::filter::from_bytes(set.serialize().data(), set.size_bytes());
  f.set_query_threads(1);
  std::vector<std::uint64_t> probes(asked);
  for (std::uint64_t i = 0; i < asked; ++i) probes[i] = keys[(i * 7919) % keys.size()];
  std::uint64_t matches = 0;
  for (auto _ : state) {
    const ribbon::filter::group_matches m = f.groups_of(probes.data(), probes.size());
    matches = m.groups.size();
    benchmark::DoNotOptimize(m.groups.data());
  }
  report_keys(state, groups * asked);  // time/key: the time of one (group, key) probe
  state.counters["groups/key"] = static_cast<double>(matches) / static_cast<double>(asked);
  state.counters["bits/pair"] = set.bits_per_key();
}
BENCHMARK(BM_GroupsOf)
    ->ArgNames({"groups", "keys", "asked"})
    ->Args({10'000, 1'000, 100})
    ->Args({1'000, 1'000, 1'000})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// ---------------------------------------------------------------------------------------------
// Queries on a 10^7-key w=64, r=8 filter (built once, on first use).

struct query_fixture {
  std::vector<std::uint64_t> members = random_keys(10'000'000, 5, true);
  std::vector<std::uint64_t> nonmembers = random_keys(std::uint64_t{1} << 22, 6, false);
  ribbon::filter filter;

  query_fixture() {
    ribbon::build_options options;
    options.seed = member_seed;
    filter = ribbon::filter::build(members.data(), members.size(), options);
  }

  static query_fixture& get() {
    static query_fixture fixture;
    return fixture;
  }
};

/// Scalar contains() over `keys`, `block` consecutive keys per iteration, wrapping around.
void scalar_queries(benchmark::State& state, const std::vector<std::uint64_t>& keys,
                    const ribbon::filter& f) {
  constexpr std::uint64_t block = 1024;
  std::uint64_t cursor = 0;
  std::uint64_t found = 0;
  for (auto _ : state) {
    if (cursor + block > keys.size()) cursor = 0;
    const std::uint64_t* k = keys.data() + cursor;
    for (std::uint64_t i = 0; i < block; ++i) found += f.contains(k[i]) ? 1 : 0;
    cursor += block;
  }
  benchmark::DoNotOptimize(found);
  report_keys(state, block);
  state.counters["found%"] = 100.0 * static_cast<double>(found) /
                             (static_cast<double>(state.iterations()) * static_cast<double>(block));
}

void BM_ContainsPositive(benchmark::State& state) {
  query_fixture& q = query_fixture::get();
  scalar_queries(state, q.members, q.filter);
}
BENCHMARK(BM_ContainsPositive)->UseRealTime();

void BM_ContainsNegative(benchmark::State& state) {
  query_fixture& q = query_fixture::get();
  scalar_queries(state, q.nonmembers, q.filter);
}
BENCHMARK(BM_ContainsNegative)->UseRealTime();
/// Scalar negative queries of one filter of range(0) keys (in cache).
void BM_SmallFilterContainsNegative(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  const auto members = random_keys(n, 9, true);
  ribbon::build_options options;
  options.seed = member_seed;
  const ribbon::filter f = ribbon::filter::build(members.data(), n, options);
  scalar_queries(state, random_keys(1 << 20, 10, false), f);
}
BENCHMARK(BM_SmallFilterContainsNegative)->Arg(1000)->Arg(10000)->Arg(100000)->UseRealTime();

/// Batched contains(): range(0) keys per batch, range(1) query threads (0: all), over
/// members (range(2) = 1) or non-members (0), with the fastest row check of this CPU
/// (range(3) = 0), the portable one (1) or AVX2 (2: where AVX-512 would be the fastest).
void BM_ContainsBatch(benchmark::State& state) {
  query_fixture& q = query_fixture::get();
  const auto batch = static_cast<std::uint64_t>(state.range(0));
  q.filter.set_query_threads(static_cast<std::uint32_t>(state.range(1)));
  constexpr ribbon::detail::row_check checks[] = {ribbon::detail::row_check::fastest,
                                                  ribbon::detail::row_check::portable,
                                                  ribbon::detail::row_check::avx2};
  ribbon::detail::set_row_check(checks[state.range(3)]);
  const std::vector<std::uint64_t>& keys = state.range(2) != 0 ? q.members : q.nonmembers;
  std::unique_ptr<bool[]> out(new bool[batch]);
  std::uint64_t cursor = 0;
  std::uint64_t found = 0;
  for (auto _ : state) {
    if (cursor + batch > keys.size()) cursor = 0;
    q.filter.contains(keys.data() + cursor, batch, out.get());
    found += static_cast<std::uint64_t>(std::count(out.get(), out.get() + batch, true));
    cursor += batch;
  }
  q.filter.set_query_threads(0);
  ribbon::detail::set_row_check(ribbon::detail::row_check::fastest);
  report_keys(state, batch);
  state.counters["found%"] = 100.0 * static_cast<double>(found) /
                             (static_cast<double>(state.iterations()) * static_cast<double>(batch));
}
BENCHMARK(BM_ContainsBatch)
    ->ArgNames({"batch", "threads", "members", "rows"})
    ->Args({4096, 1, 1, 0})
    ->Args({4096, 1, 0, 0})
    ->Args({4096, 1, 0, 1})
    ->Args({4096, 1, 0, 2})
    ->Args({1 << 20, 0, 1, 0})
    ->Args({1 << 20, 0, 0, 0})
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
