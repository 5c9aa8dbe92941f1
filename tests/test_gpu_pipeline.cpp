// The GPU builder's pipeline writes the CPU builder's bytes. Built twice: against the TBB
// build of the pipeline (runs everywhere, CI included) and against the CUDA build (skips,
// with a message, where no GPU is present).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "grouped_keys.hpp"
#include "ribbon/build_many.hpp"
#include "ribbon/cuda/builder.hpp"
#include "ribbon/filter.hpp"
#include "test_util.hpp"

#if !defined(RIBBON_GPU_ON_TBB)
#include <cuda_runtime.h>

#include "ribbon/cuda/device_filter.cuh"
#endif

namespace {

#define RIBBON_SKIP_WITHOUT_DEVICE()                                                   \
  do {                                                                                 \
    std::string why_;                                                                  \
    if (!ribbon::cuda::available(&why_)) GTEST_SKIP() << "GPU test skipped: " << why_; \
  } while (0)

void expect_same_bytes(const std::vector<std::uint64_t>& keys, const ribbon::build_options& o,
                       const ribbon::cuda::device_options& device = {}) {
  SCOPED_TRACE("n=" + std::to_string(keys.size()) + " w=" + std::to_string(o.width) +
               " r=" + std::to_string(o.result_bits) + " seed=" + std::to_string(o.seed));
  ribbon::cuda::device_build_stats stats;
  const ribbon::filter gpu =
      ribbon::cuda::build(keys.data(), keys.size(), o, ribbon::cuda::memory::host, &stats, device);
  const ribbon::filter cpu = ribbon::filter::build(keys.data(), keys.size(), o);
  EXPECT_TRUE(gpu.serialize() == cpu.serialize()) << "GPU and CPU files differ";
  EXPECT_EQ(stats.layers, cpu.num_layers());
  // Every key is found in the device-built filter, through the CPU query path.
  std::vector<char> found(keys.size());
  gpu.contains(keys.data(), keys.size(), reinterpret_cast<bool*>(found.data()));
  EXPECT_EQ(std::count(found.begin(), found.end(), 0), 0) << "false negatives";
}

/// An out-of-core bulk build of `keys` that spills from the first key (a limit of 1 byte: the
/// build works at the memory floor) and solves its shard ranges on the device; the file is
/// `dir`/`name`.
ribbon::bulk_result build_with_device_ranges(const std::vector<std::uint64_t>& keys,
                                             const ribbon::build_options& build,
                                             std::uint64_t expected_keys,
                                             const ribbon_test::temp_dir& dir,
                                             const std::string& name) {
  ribbon::bulk_options o;
  o.build = build;
  o.memory_limit = 1;
  o.expected_keys = expected_keys;
  o.tmp_dir = dir.path();
  o.range_solver = ribbon::cuda::make_range_solver();
  ribbon::bulk_builder builder(ribbon::key_kind::u64, o);
  builder.add(keys.data(), keys.size());
  return builder.finish(dir.file(name));
}

TEST(GpuPipeline, SameBytesAsTheCpuBuilderAcrossSizes) {
  RIBBON_SKIP_WITHOUT_DEVICE();
  ribbon::build_options o;
  const std::uint64_t several_shards = 200'000;  // 4 shards of 2^16 starts at w=64
  for (std::uint64_t n : std::vector<std::uint64_t>{0, 1, 2, 100, 2049, 5000, several_shards}) {
    expect_same_bytes(ribbon_test::keys_range(n, 0, n), o);
  }
  expect_same_bytes(ribbon_test::keys_range(1, 0, ribbon_test::scaled(1'000'000, 100'000)), o);
}

TEST(GpuPipeline, SameBytesForEveryVariant) {
  RIBBON_SKIP_WITHOUT_DEVICE();
  const std::uint64_t n = ribbon_test::scaled(60'000, 20'000);
  for (ribbon::filter_variant v :
       {ribbon::filter_variant::standard, ribbon::filter_variant::homogeneous,
        ribbon::filter_variant::bumped_retrieval, ribbon::filter_variant::standard_retrieval}) {
    for (std::uint32_t width : {32u, 64u, 128u}) {
      for (std::uint32_t bits : {1u, 8u, 13u}) {
        ribbon::build_options o;
        o.variant = v;
        o.width = width;
        o.result_bits = bits;
        o.seed = width + bits;
        o.shard_size = width == 128 ? 16384 : 4096;  // several shards with rule-bumped heads
        SCOPED_TRACE("variant " + std::to_string(static_cast<int>(v)));
        const auto keys = ribbon_test::keys_range(width + bits, 0, n);
        if (!ribbon::is_retrieval(v)) {
          expect_same_bytes(keys, o);
          continue;
        }
        std::vector<std::uint32_t> values(n);
        for (std::uint64_t i = 0; i < n; ++i) {
          values[i] = static_cast<std::uint32_t>(ribbon_test::splitmix(i) >> (64 - bits));
        }
        for (std::uint32_t check_bits : {0u, 5u}) {  // values alone, and under check bits
          o.check_bits = check_bits;
          const ribbon::filter gpu = ribbon::cuda::build(keys.data(), values.data(), n, o);
          const ribbon::filter cpu = ribbon::filter::build(keys.data(), values.data(), n, o);
          ASSERT_TRUE(gpu.serialize() == cpu.serialize()) << "GPU and CPU files differ";
          for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(gpu.find(keys[i]), values[i]);
        }
      }
    }
  }
}

TEST(GpuPipeline, SameBytesWithFractionalBitsAndStandardRetries) {
  RIBBON_SKIP_WITHOUT_DEVICE();
  const auto keys = ribbon_test::keys_range(61, 0, ribbon_test::scaled(100'000, 30'000));
  for (ribbon::filter_variant v : {ribbon::filter_variant::bumped, ribbon::filter_variant::standard,
                                   ribbon::filter_variant::homogeneous}) {
    for (double fpr : {0.01, 0.0003}) {
      ribbon::build_options o;
      o.variant = v;
      o.target_fpr = fpr;
      expect_same_bytes(keys, o);
    }
  }
  ribbon::build_options retried;  // too little slack: the first tries fail
  retried.variant = ribbon::filter_variant::standard;
  retried.width = 32;
  retried.slack = 0.002;
  retried.shard_size = 4096;
  ribbon::cuda::device_build_stats stats;
  ribbon::build_stats cpu_stats;
  const ribbon::filter gpu =
      ribbon::cuda::build(keys.data(), keys.size(), retried, ribbon::cuda::memory::host, &stats);
  const ribbon::filter cpu = ribbon::filter::build(keys.data(), keys.size(), retried, &cpu_stats);
  EXPECT_GT(stats.standard_attempts, 1u);
  EXPECT_EQ(stats.standard_attempts, cpu_stats.standard_attempts);
  EXPECT_TRUE(gpu.serialize() == cpu.serialize());
}

TEST(GpuPipeline, ConflictingValuesNameTheSameKeyAsTheCpu) {
  RIBBON_SKIP_WITHOUT_DEVICE();
  std::vector<std::uint64_t> keys = ribbon_test::keys_range(62, 0, 5000);
  std::vector<std::uint32_t> values(keys.size(), 5);
  for (std::size_t at : {100u, 2000u, 4000u}) {
    keys.push_back(keys[at]);
    values.push_back(6);
  }
  std::string gpu_message, cpu_message;
  try {
    (void)ribbon::cuda::build(keys.data(), values.data(), keys.size());
  } catch (const ribbon::conflicting_values_error& e) {
    gpu_message = e.what();
  }
  try {
    (void)ribbon::filter::build(keys.data(), values.data(), keys.size());
  } catch (const ribbon::conflicting_values_error& e) {
    cpu_message = e.what();
  }
  EXPECT_FALSE(gpu_message.empty());
  EXPECT_EQ(gpu_message, cpu_message);
}

TEST(GpuPipeline, SameBytesAcrossWidthsBitsAndSeeds) {
  RIBBON_SKIP_WITHOUT_DEVICE();
  const std::uint64_t n = ribbon_test::scaled(150'000, 30'000);
  for (std::uint32_t width : {32u, 64u, 128u}) {
    for (std::uint32_t bits : {1u, 7u, 8u, 16u, 32u}) {
      ribbon::build_options o;
      o.width = width;
      o.result_bits = bits;
      o.seed = width * 100 + bits;
      expect_same_bytes(ribbon_test::keys_range(bits, 0, n), o);
    }
  }
  ribbon::build_options small_shards;
  small_shards.shard_size = 4096;
  expect_same_bytes(ribbon_test::keys_range(3, 0, n), small_shards);
}

TEST(GpuPipeline, SolvesInBatchesOfAnySize) {
  RIBBON_SKIP_WITHOUT_DEVICE();
  // A one-byte workspace budget solves one shard per batch: the same bytes.
  ribbon::build_options o;
  o.shard_size = 4096;
  ribbon::cuda::device_options one_shard_at_a_time;
  one_shard_at_a_time.workspace_bytes = 1;
  expect_same_bytes(ribbon_test::keys_range(4, 0, 50'000), o, one_shard_at_a_time);
}

TEST(GpuPipeline, DuplicatesStringsAndHashes) {
  RIBBON_SKIP_WITHOUT_DEVICE();
  ribbon::build_options o;
  std::vector<std::uint64_t> duplicates = ribbon_test::keys_range(5, 0, 20'000);
  duplicates.insert(duplicates.end(), duplicates.begin(), duplicates.end());
  duplicates.insert(duplicates.end(), 5000, 42);
  expect_same_bytes(duplicates, o);

  const auto strings = ribbon_test::string_keys(6, 0, 40'000);
  const auto views = ribbon_test::views(strings);
  EXPECT_TRUE(ribbon::cuda::build(views.data(), views.size(), o).serialize() ==
              ribbon::filter::build(views.data(), views.size(), o).serialize());

  const auto hashes = ribbon_test::keys_range(7, 0, 30'000);
  EXPECT_TRUE(
      ribbon::cuda::build_from_hashes(hashes.data(), hashes.size(), ribbon::key_kind::bytes, o)
          .serialize() ==
      ribbon::filter::build_from_hashes(hashes.data(), hashes.size(), ribbon::key_kind::bytes, o)
          .serialize());
}

TEST(GpuPipeline, MultisetsGiveTheFileOfTheirSet) {
  RIBBON_SKIP_WITHOUT_DEVICE();
  // Repeated keys are dropped before layer 0 is sized: the set's bytes, and the counts.
  const auto set = ribbon_test::keys_range(12, 0, ribbon_test::scaled(40'000, 20'000));
  std::vector<std::uint64_t> keys = set;
  keys.insert(keys.end(), set.begin(), set.end());
  keys.insert(keys.end(), ribbon_test::scaled(1'000'000, 100'000), set[3]);
  for (ribbon::filter_variant v :
       {ribbon::filter_variant::bumped, ribbon::filter_variant::standard}) {
    ribbon::build_options o;
    o.variant = v;
    o.shard_size = 4096;
    const auto expected = ribbon::filter::build(set.data(), set.size(), o).serialize();
    ribbon::cuda::device_build_stats stats;
    EXPECT_TRUE(ribbon::cuda::build(keys.data(), keys.size(), o, ribbon::cuda::memory::host, &stats)
                    .serialize() == expected);
    EXPECT_EQ(stats.input_keys, keys.size());
    EXPECT_EQ(stats.distinct_keys, set.size());
    // Retrieval: each key with its one value, repeated.
    std::vector<std::uint32_t> values(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i)
      values[i] = static_cast<std::uint32_t>(keys[i] & 0xFF);
    EXPECT_TRUE(ribbon::cuda::build(keys.data(), values.data(), keys.size(), o).serialize() ==
                ribbon::filter::build(set.data(), values.data(), set.size(), o).serialize());
  }

  // Out of core: the device solves the ranges, and layer 0 is sized again for the distinct
  // count once a range has shown repeats.
  ribbon_test::temp_dir dir;
  ribbon::build_options build;
  build.shard_size = 4096;
  const ribbon::bulk_result result =
      build_with_device_ranges(keys, build, 1ull << 30, dir, "ooc.rbn");  // many ranges
  EXPECT_TRUE(result.out_of_core);
  EXPECT_EQ(result.key_count, set.size());
  EXPECT_EQ(result.input_keys, keys.size());
  EXPECT_TRUE(ribbon::filter::load(dir.file("ooc.rbn")).serialize() ==
              ribbon::filter::build(set.data(), set.size(), build).serialize());
}

TEST(GpuPipeline, AsTheBulkBuildersInMemoryBuilder) {
  RIBBON_SKIP_WITHOUT_DEVICE();
  // What `ribbon build --backend gpu` does: the bulk builder collects the hashes, the device
  // builds them.
  ribbon_test::temp_dir dir;
  const auto keys = ribbon_test::keys_range(8, 0, 300'000);
  ribbon::bulk_options o;
  o.build.result_bits = 9;
  bool used = false;
  o.in_memory = [&](std::uint64_t count, const auto& hashes, ribbon::key_kind kind,
                    const ribbon::build_options& options) {
    used = true;
    return ribbon::cuda::build_from_hashes(count, hashes, kind, options);
  };
  ribbon::bulk_builder builder(ribbon::key_kind::u64, o);
  builder.add(keys.data(), keys.size());
  builder.finish(dir.file("gpu.rbn"));
  EXPECT_TRUE(used);
  const ribbon::filter loaded = ribbon::filter::load(dir.file("gpu.rbn"));
  EXPECT_TRUE(loaded.serialize() ==
              ribbon::filter::build(keys.data(), keys.size(), o.build).serialize());
}

TEST(GpuPipeline, SolvesTheShardRangesOfOutOfCoreBuilds) {
  RIBBON_SKIP_WITHOUT_DEVICE();
  // Inputs larger than device memory: the bulk builder spills and partitions by shard range,
  // the device solves each range. Same bytes as the in-memory CPU build.
  ribbon_test::temp_dir dir;
  const std::uint64_t n = ribbon_test::scaled(200'000, 40'000);
  struct variant {
    std::uint32_t width, bits;
    std::uint64_t shard_size, expected_keys;
  };
  // Shards small enough for several ranges at the memory floor (the limit of 1 byte is
  // below it: the build works at the floor, docs/cli.md, "Memory"), whatever the test scale.
  for (const variant v : {variant{64, 8, 16384, 0}, variant{64, 8, 4096, 1ull << 40},
                          variant{32, 3, 1024, 0}, variant{128, 16, 16384, 0}}) {
    SCOPED_TRACE("w=" + std::to_string(v.width) + " shard=" + std::to_string(v.shard_size));
    const auto keys = ribbon_test::keys_range(v.width + v.bits, 0, n);
    ribbon::build_options build;
    build.width = v.width;
    build.result_bits = v.bits;
    build.shard_size = v.shard_size;
    const ribbon::bulk_result result =
        build_with_device_ranges(keys, build, v.expected_keys, dir, "ooc.rbn");
    EXPECT_TRUE(result.out_of_core);
    EXPECT_GT(result.shard_ranges, 1u);
    EXPECT_TRUE(ribbon::filter::load(dir.file("ooc.rbn")).serialize() ==
                ribbon::filter::build(keys.data(), keys.size(), build).serialize());
  }
}

/// device_filter::contains() over keys in host memory (on the TBB backend, host memory is its
/// device memory).
std::vector<char> device_contains(const ribbon::cuda::device_filter& f,
                                  const std::vector<std::uint64_t>& keys) {
  std::vector<char> out(keys.size());
#if defined(RIBBON_GPU_ON_TBB)
  f.contains(keys.data(), keys.size(), reinterpret_cast<bool*>(out.data()));
#else
  f.contains_host(keys.data(), keys.size(), reinterpret_cast<bool*>(out.data()));
#endif
  return out;
}

/// device_filter::lookup() over keys in host memory.
std::vector<std::uint32_t> device_lookup(const ribbon::cuda::device_filter& f,
                                         const std::vector<std::uint64_t>& keys) {
  std::vector<std::uint32_t> out(keys.size());
#if defined(RIBBON_GPU_ON_TBB)
  f.lookup(keys.data(), keys.size(), out.data());
#else
  std::uint64_t* device_keys = nullptr;
  std::uint32_t* device_out = nullptr;
  EXPECT_EQ(cudaMalloc(&device_keys, keys.size() * 8), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&device_out, keys.size() * 4), cudaSuccess);
  cudaMemcpy(device_keys, keys.data(), keys.size() * 8, cudaMemcpyHostToDevice);
  f.lookup(device_keys, keys.size(), device_out);
  EXPECT_EQ(cudaMemcpy(out.data(), device_out, keys.size() * 4, cudaMemcpyDeviceToHost),
            cudaSuccess);
  cudaFree(device_out);
  cudaFree(device_keys);
#endif
  return out;
}

TEST(GpuPipeline, DeviceFiltersAnswerAsTheHostFilter) {
  RIBBON_SKIP_WITHOUT_DEVICE();
  // build_device_filter() keeps the layers on the device: every key and a sample of others
  // get the host filter's answers (several layers, thresholds, rule-bumped shard heads).
  const std::uint64_t n = ribbon_test::scaled(120'000, 30'000);
  const auto keys = ribbon_test::keys_range(70, 0, n);
  std::vector<std::uint64_t> probes = keys;
  const auto others = ribbon_test::keys_range(71, 0, 50'000);
  probes.insert(probes.end(), others.begin(), others.end());
  for (ribbon::filter_variant v :
       {ribbon::filter_variant::bumped, ribbon::filter_variant::standard}) {
    for (std::uint32_t width : {32u, 128u}) {
      ribbon::build_options o;
      o.variant = v;
      o.width = width;
      o.shard_size = width == 128 ? 16384 : 4096;  // several shards with rule-bumped heads
      SCOPED_TRACE("variant " + std::to_string(static_cast<int>(v)) +
                   " w=" + std::to_string(width));
      ribbon::cuda::device_build_stats stats;
      const ribbon::cuda::device_filter on_device = ribbon::cuda::build_device_filter(
          keys.data(), keys.size(), o, ribbon::cuda::memory::host, &stats);
      const ribbon::filter host = ribbon::filter::build(keys.data(), keys.size(), o);
      EXPECT_EQ(on_device.size_bytes(), host.size_bytes());
      EXPECT_EQ(on_device.ref().num_layers, host.num_layers());
      EXPECT_EQ(stats.layers, host.num_layers());
      std::vector<char> expected(probes.size());
      host.contains(probes.data(), probes.size(), reinterpret_cast<bool*>(expected.data()));
      const std::vector<char> found = device_contains(on_device, probes);
      EXPECT_EQ(std::count(found.begin(), found.begin() + static_cast<std::int64_t>(n), 0), 0)
          << "false negatives";
      EXPECT_TRUE(found == expected) << "device and host answers differ";
    }
  }
  // Retrieval: every key's value.
  ribbon::build_options o;
  o.result_bits = 11;
  std::vector<std::uint32_t> values(n);
  for (std::uint64_t i = 0; i < n; ++i) values[i] = static_cast<std::uint32_t>(i % 2048);
  const ribbon::cuda::device_filter on_device =
      ribbon::cuda::build_device_filter(keys.data(), values.data(), n, o);
  const ribbon::filter host = ribbon::filter::build(keys.data(), values.data(), n, o);
  const std::vector<std::uint32_t> looked_up = device_lookup(on_device, probes);
  for (std::uint64_t i = 0; i < probes.size(); ++i) {
    ASSERT_EQ(looked_up[i], host.lookup(probes[i])) << "probe " << i;
  }
}

TEST(GpuPipeline, SavesTheCpuBuildersFile) {
  RIBBON_SKIP_WITHOUT_DEVICE();
  // The device build's sections are adopted by the host filter as they come: save() writes
  // the file from them in one pass, byte for byte the CPU builder's file.
  ribbon_test::temp_dir dir;
  auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), {});
  };
  const auto keys = ribbon_test::keys_range(72, 0, ribbon_test::scaled(300'000, 60'000));
  for (std::uint32_t bits : {1u, 8u, 32u}) {
    ribbon::build_options o;
    o.result_bits = bits;
    o.shard_size = 8192;
    ribbon::cuda::build(keys.data(), keys.size(), o).save(dir.file("gpu.rbn"));
    ribbon::filter::build(keys.data(), keys.size(), o).save(dir.file("cpu.rbn"));
    const std::vector<char> gpu = read(dir.file("gpu.rbn"));
    EXPECT_FALSE(gpu.empty());
    EXPECT_TRUE(gpu == read(dir.file("cpu.rbn"))) << "r=" << bits;
    EXPECT_NO_THROW(ribbon::filter::load(dir.file("gpu.rbn")));  // checksums verified
  }
}

TEST(GpuPipeline, LayersTakeTheScheduledSalts) {
  RIBBON_SKIP_WITHOUT_DEVICE();
  // Both builders run one layer loop (ribbon/detail/layer_loop.hpp), so their equal bytes
  // cannot show a wrong retry schedule: each layer's salt is checked against layer.hpp's.
  // Not scaled down: the standard filter needs several shards (S = 2^16) to have a layer 1.
  const auto keys = ribbon_test::keys_range(73, 0, 200'000);
  ribbon::build_options bumped, standard, retried;
  standard.variant = retried.variant = ribbon::filter_variant::standard;
  retried.width = 32;  // too little slack: the first tries fail
  retried.slack = 0.002;
  retried.shard_size = 4096;
  for (ribbon::build_options o : {bumped, standard, retried}) {
    o.seed = 99;
    ribbon::cuda::device_build_stats stats;
    const ribbon::filter f =
        ribbon::cuda::build(keys.data(), keys.size(), o, ribbon::cuda::memory::host, &stats);
    const ribbon::filter_ref& ref = f.ref();
    ASSERT_GE(ref.num_layers, 2u);
    const std::uint32_t last = ref.num_layers - 1;
    for (std::uint32_t l = 0; l < last; ++l) {
      const std::uint64_t expected =
          ribbon::uses_bumping(o.variant) ? ribbon::bumped_layer_salt(o.seed, l)
          : stats.standard_attempts == 1
              ? 0
              : ribbon::layer_salt(o.seed, 0, stats.standard_attempts - 1);
      EXPECT_EQ(ref.layers[l].salt, expected) << "layer " << l;
    }
    EXPECT_EQ(ref.layers[last].geometry.kind, ribbon::layer_kind::plain);
    EXPECT_EQ(ref.layers[last].salt,
              ribbon::layer_salt(o.seed, last, stats.plain_layer_attempts - 1));
  }
}

/// Groups for build_many, from key families 100 on.
struct grouped_keys : ribbon_test::grouped_keys {
  explicit grouped_keys(const std::vector<std::uint64_t>& sizes)
      : ribbon_test::grouped_keys(sizes, 100) {}
};

/// The device's build_many writes every group's filter as the CPU's build_many does (each of
/// those is filter::build of the group alone: test_build_many.cpp); every member is found.
void expect_same_filters(const std::vector<std::uint64_t>& keys, const ribbon::key_groups& groups,
                         const ribbon::build_options& o,
                         const ribbon::cuda::device_options& device = {}) {
  SCOPED_TRACE("groups=" + std::to_string(groups.num_groups) + " w=" + std::to_string(o.width) +
               " variant=" + std::to_string(static_cast<int>(o.variant)));
  ribbon::cuda::device_build_stats stats;
  const std::vector<ribbon::filter> gpu =
      ribbon::cuda::build_many(keys.data(), keys.size(), groups, o, &stats, device);
  const std::vector<ribbon::filter> cpu = ribbon::build_many(keys.data(), keys.size(), groups, o);
  ASSERT_EQ(gpu.size(), cpu.size());
  std::uint32_t most_layers = 0;
  for (std::uint64_t g = 0; g < gpu.size(); ++g) {
    ASSERT_TRUE(gpu[g].serialize() == cpu[g].serialize()) << "group " << g << " differs";
    most_layers = std::max(most_layers, cpu[g].num_layers());
    for (std::uint64_t i = groups.offsets[g]; i < groups.offsets[g + 1]; ++i) {
      const std::uint64_t key = keys[groups.order ? groups.order[i] : i];
      ASSERT_TRUE(gpu[g].contains(key)) << "group " << g << " lost a key";
    }
  }
  EXPECT_EQ(stats.layers, most_layers);
}

TEST(GpuPipeline, BuildManyGivesEveryGroupTheCpuFilter) {
  RIBBON_SKIP_WITHOUT_DEVICE();
  // Empty groups, one key, two, the width, bucket edges, and a group of several shards.
  const grouped_keys data(
      {0, 1, 2, 64, 1000, 0, 3, ribbon_test::scaled(100'000, 20'000), 127, 128, 129, 5000});
  ribbon::build_options o;
  o.shard_size = 4096;  // several shards in the largest group
  for (ribbon::filter_variant v : {ribbon::filter_variant::bumped, ribbon::filter_variant::standard,
                                   ribbon::filter_variant::homogeneous}) {
    o.variant = v;
    expect_same_filters(data.keys, data.groups(), o);
  }
  o.variant = ribbon::filter_variant::bumped;
  for (std::uint32_t width : {32u, 128u}) {
    o.width = width;
    o.shard_size = 32 * ribbon::detail::default_bucket_size(width);
    expect_same_filters(data.keys, data.groups(), o);
  }
  ribbon::cuda::device_options small_batches;
  small_batches.workspace_bytes = 1;  // a shard a batch
  expect_same_filters(data.keys, data.groups(), ribbon::build_options{}, small_batches);
}

TEST(GpuPipeline, BuildManyRetriesOnlyTheGroupsThatFail) {
  RIBBON_SKIP_WITHOUT_DEVICE();
  // Too little slack: standard layers fail at first, each group on its own schedule of tries.
  const grouped_keys data({3000, 20'000, 0, 7000, 500, 12'000});
  ribbon::build_options o;
  o.variant = ribbon::filter_variant::standard;
  o.width = 32;
  o.slack = 0.002;
  o.shard_size = 4096;
  expect_same_filters(data.keys, data.groups(), o);
  // The groups did need different numbers of tries (each group alone, on the CPU).
  std::vector<std::uint32_t> tries;
  for (std::uint64_t g = 0; g < data.offsets.size() - 1; ++g) {
    if (data.offsets[g + 1] == data.offsets[g]) continue;
    ribbon::build_stats stats;
    (void)ribbon::filter::build(data.keys.data() + data.offsets[g],
                                data.offsets[g + 1] - data.offsets[g], o, &stats);
    tries.push_back(stats.standard_attempts);
  }
  EXPECT_GT(*std::max_element(tries.begin(), tries.end()), 1u);
  EXPECT_NE(*std::max_element(tries.begin(), tries.end()),
            *std::min_element(tries.begin(), tries.end()));
}

TEST(GpuPipeline, BuildManyTakesKeysInAnyOrderWithRepeats) {
  RIBBON_SKIP_WITHOUT_DEVICE();
  grouped_keys data({4000, 1, 0, 9000, 250});  // group 2 gets its key below
  const std::uint64_t laid_out = data.keys.size();
  // Repeats: group 0's first 300 keys again; group 1's one key is also group 2's (two equal
  // hashes side by side once sorted, in different groups) and one of group 3's.
  data.keys.insert(data.keys.end(), data.keys.begin(), data.keys.begin() + 300);
  data.keys.push_back(data.keys[4000]);
  std::vector<std::uint64_t> order, offsets = {0};
  auto add = [&](std::uint64_t first, std::uint64_t end) {
    for (std::uint64_t i = first; i < end; ++i) order.push_back(i);
  };
  add(0, 4000);
  add(laid_out, laid_out + 300);
  offsets.push_back(order.size());
  add(4000, 4001);
  offsets.push_back(order.size());
  add(laid_out + 300, laid_out + 301);
  offsets.push_back(order.size());
  add(4001, 13'001);
  order.push_back(4000);
  std::mt19937_64 shuffle(7);
  std::shuffle(order.begin() + static_cast<std::ptrdiff_t>(offsets.back()), order.end(), shuffle);
  offsets.push_back(order.size());
  add(13'001, laid_out);
  offsets.push_back(order.size());
  const ribbon::key_groups groups{offsets.data(), offsets.size() - 1, order.data()};
  expect_same_filters(data.keys, groups, ribbon::build_options{});
  const std::vector<ribbon::filter> gpu =
      ribbon::cuda::build_many(data.keys.data(), data.keys.size(), groups);
  EXPECT_EQ(gpu[0].key_count(), 4000u);  // repeats counted once
  EXPECT_EQ(gpu[2].key_count(), 1u);
  EXPECT_EQ(gpu[3].key_count(), 9001u);
}

TEST(GpuPipeline, BuildManyRefusesBadGroups) {
  RIBBON_SKIP_WITHOUT_DEVICE();
  const std::vector<std::uint64_t> keys = ribbon_test::keys_range(5, 0, 10);
  const std::vector<std::uint64_t> beyond = {0, 4, 11};
  EXPECT_THROW(ribbon::cuda::build_many(keys.data(), keys.size(), {beyond.data(), 2, nullptr}),
               ribbon::error);
  const std::vector<std::uint64_t> offsets = {0, 10};
  const std::vector<std::uint64_t> order = {0, 1, 2, 3, 4, 5, 6, 7, 8, 10};
  EXPECT_THROW(
      ribbon::cuda::build_many(keys.data(), keys.size(), {offsets.data(), 1, order.data()}),
      ribbon::error);
}

TEST(GpuPipeline, RejectsBadOptions) {
  RIBBON_SKIP_WITHOUT_DEVICE();
  ribbon::build_options o;
  o.width = 40;
  const std::uint64_t key = 1;
  EXPECT_THROW(ribbon::cuda::build(&key, 1, o), ribbon::error);
  o.width = 64;
  o.target_fpr = 2;
  EXPECT_THROW(ribbon::cuda::build(&key, 1, o), ribbon::error);
}

}  // namespace
