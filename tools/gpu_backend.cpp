#include "gpu_backend.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "ribbon/error.hpp"
#include "ribbon/options.hpp"
#include "util.hpp"

#if defined(RIBBON_TOOLS_WITH_CUDA)
#include <cuda_runtime.h>

#include "ribbon/cuda/builder.hpp"
#include "ribbon/cuda/check.hpp"
#include "ribbon/cuda/device_filter.cuh"
#endif

namespace ribbon::cli {

bool use_gpu(const std::string& name) {
  build_backend backend = build_backend::cpu;
  backend_from_name(name, &backend);  // --backend's check allows only known names
  if (backend == build_backend::cpu) return false;
#if defined(RIBBON_TOOLS_WITH_CUDA)
  std::string why_not;
  const bool ready = cuda::available(&why_not);
#else
  const bool ready = false;
  const std::string why_not = "this ribbon was built without CUDA (RIBBON_ENABLE_CUDA)";
#endif
  return runs_on_gpu(backend, ready, why_not);
}

#if !defined(RIBBON_TOOLS_WITH_CUDA)

void configure_gpu_build(bulk_options&) {
  throw error(gpu_unavailable);
}

int run_gpu_bench(const std::vector<std::uint64_t>&, const std::vector<std::uint64_t>&,
                  const build_options&, bool) {
  throw error(gpu_unavailable);
}

filter build_retrieval_on_gpu(const std::uint64_t*, const std::uint32_t*, std::uint64_t, key_kind,
                              const build_options&) {
  throw error(gpu_unavailable);
}

std::vector<filter> build_many_on_gpu(const std::uint64_t*, std::uint64_t, key_kind,
                                      const key_groups&, const build_options&) {
  throw error(gpu_unavailable);
}

#else

void configure_gpu_build(bulk_options& options) {
  options.in_memory = [](std::uint64_t count,
                         const std::function<void(const hash_visitor&)>& hashes, key_kind keys,
                         const build_options& build) {
    return cuda::build_from_hashes(count, hashes, keys, build);
  };
  options.range_solver = cuda::make_range_solver();
  // The bulk builder counts 18 bytes a key of host memory; a device build needs about 32
  // bytes a key of device memory (hashes, their sorted copy, the compacted copy, solver
  // workspace): keys beyond what the device holds are spilled and built range by range.
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) return;
  const std::uint64_t device_limit = free_bytes / 32 * 18;
  const std::uint64_t host_limit =
      options.memory_limit != 0 ? options.memory_limit : default_memory_limit();
  options.memory_limit = std::min(host_limit, device_limit);
}

filter build_retrieval_on_gpu(const std::uint64_t* hashes, const std::uint32_t* values,
                              std::uint64_t count, key_kind keys, const build_options& options) {
  return cuda::build_from_hashes(hashes, values, count, keys, options);
}

std::vector<filter> build_many_on_gpu(const std::uint64_t* hashes, std::uint64_t count,
                                      key_kind keys, const key_groups& groups,
                                      const build_options& options) {
  return cuda::build_many_from_hashes(hashes, count, keys, groups, options);
}

namespace {

using cuda::check;

/// Device memory for `count` values, freed on scope exit.
template <class T>
struct device_array {
  T* data = nullptr;
  explicit device_array(std::uint64_t count) {
    check(cudaMalloc(&data, std::max<std::uint64_t>(count, 1) * sizeof(T)), "cudaMalloc");
  }
  ~device_array() { cudaFree(data); }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;
};

/// Seconds of `f()` with the device idle before and after.
template <class F>
double timed(F&& f) {
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const auto start = clock_type::now();
  f();
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return seconds_since(start);
}

/// Query throughput of one key mapping, keys/s.
struct query_rates {
  double device = 0, host = 0;
};

/// Bytes/s of a large pinned host-to-device copy: the ceiling of host-resident queries
/// (8 bytes a key in; the 1-byte answers go the other way at the same time).
double pinned_upload_rate() {
  constexpr std::uint64_t bytes = std::uint64_t{256} << 20;
  void* pinned = nullptr;
  check(cudaMallocHost(&pinned, bytes), "cudaMallocHost");
  std::unique_ptr<void, decltype(&cudaFreeHost)> release(pinned, &cudaFreeHost);
  std::memset(pinned, 1, bytes);
  device_array<unsigned char> target(bytes);
  double seconds = 1e30;
  for (int i = 0; i < 3; ++i) {
    seconds = std::min(seconds, timed([&] {
                         check(cudaMemcpy(target.data, pinned, bytes, cudaMemcpyHostToDevice),
                               "cudaMemcpy");
                       }));
  }
  return static_cast<double>(bytes) / seconds;
}

/// What `ribbon bench --backend gpu` measured.
struct gpu_bench_figures {
  std::uint64_t keys = 0, negatives = 0;
  double build_seconds = 0;
  cuda::device_build_stats stats;
  const char* identical = "";  ///< the same bytes as the CPU builder: yes, NO or not checked
  double member_seconds = 0;
  std::uint64_t false_negatives = 0;
  std::uint64_t positives = 0;  ///< non-members found
  query_rates rates[2];         ///< a tile per key, a thread per key
  double copy_bytes_per_second = 0;
};

/// Whether the CPU builder writes the same bytes (checked where it is quick enough).
const char* same_bytes_as_cpu(const std::vector<std::uint64_t>& keys, const build_options& options,
                              const filter& f) {
  if (keys.size() > 100'000'000) return "not checked (more than 10^8 keys)";
  return filter::build(keys.data(), keys.size(), options).serialize() == f.serialize() ? "yes"
                                                                                       : "NO";
}

/// Non-members with each key mapping, device- and host-resident; best of three, as the first
/// launch includes one-time costs. Every variant must give the same answers; `answers` gets
/// them.
void measure_negative_queries(const cuda::device_filter& gpu,
                              const std::vector<std::uint64_t>& negatives,
                              const std::uint64_t* device_negatives, bool* device_out,
                              bool* answers, query_rates rates[2]) {
  const std::uint64_t m = negatives.size();
  std::unique_ptr<bool[]> host_answers(new bool[m]);
  const cuda::key_mapping mappings[2] = {cuda::key_mapping::tile_per_key,
                                         cuda::key_mapping::thread_per_key};
  for (int k = 0; k < 2; ++k) {
    double device_seconds = 1e30, host_seconds = 1e30;
    for (int i = 0; i < 3; ++i) {
      device_seconds =
          std::min(device_seconds,
                   timed([&] { gpu.contains(device_negatives, m, device_out, 0, mappings[k]); }));
      host_seconds = std::min(host_seconds, timed([&] {
                                gpu.contains_host(negatives.data(), m, host_answers.get(),
                                                  std::uint64_t{1} << 22, mappings[k]);
                              }));
    }
    if (k == 0) {
      check(cudaMemcpy(answers, device_out, m, cudaMemcpyDeviceToHost), "cudaMemcpy");
    } else {
      std::unique_ptr<bool[]> other(new bool[m]);
      check(cudaMemcpy(other.get(), device_out, m, cudaMemcpyDeviceToHost), "cudaMemcpy");
      if (!std::equal(answers, answers + m, other.get())) {
        throw error("GPU answers with a tile and a thread per key differ");
      }
    }
    if (!std::equal(answers, answers + m, host_answers.get())) {
      throw error("GPU answers for host- and device-resident keys differ");
    }
    rates[k] = {static_cast<double>(m) / device_seconds, static_cast<double>(m) / host_seconds};
  }
}

/// Checks the GPU's `answers` against the CPU's on a sample of the non-members.
void check_against_cpu(const filter& f, const std::vector<std::uint64_t>& negatives,
                       const bool* answers) {
  const std::uint64_t sample = std::min<std::uint64_t>(negatives.size(), 1'000'000);
  std::unique_ptr<bool[]> cpu_answers(new bool[sample]);
  f.contains(negatives.data(), sample, cpu_answers.get());
  if (!std::equal(cpu_answers.get(), cpu_answers.get() + sample, answers)) {
    throw error("GPU and CPU query answers differ");
  }
}

double measured_fpr(const gpu_bench_figures& g) {
  return static_cast<double>(g.positives) /
         static_cast<double>(std::max<std::uint64_t>(g.negatives, 1));
}

void print_gpu_bench_json(const char* device, const filter& f, const gpu_bench_figures& g) {
  const std::uint64_t n = g.keys;
  std::printf(
      "{\"backend\": \"gpu\", \"device\": %s, \"keys\": %llu, \"negatives\": %llu, "
      "\"width\": %u, \"bits\": %u, \"shard_size\": %llu, \"layers\": %u, "
      "\"build_seconds\": %.6f, "
      "\"build_keys_per_second\": %.4e, \"stage_seconds\": {\"hash\": %.6f, \"sort\": %.6f, "
      "\"solve\": %.6f, \"compact\": %.6f, \"download\": %.6f}, \"identical_to_cpu\": %s, "
      "\"bits_per_key\": %.5f, \"fpr_expected\": %.8f, \"fpr_measured\": %.8f, "
      "\"false_negatives\": %llu, \"query_keys_per_second\": {\"device_members\": %.4e, "
      "\"device_negatives\": %.4e, \"host_negatives\": %.4e, \"device_negatives_tile\": %.4e, "
      "\"device_negatives_thread\": %.4e, \"host_negatives_tile\": %.4e, "
      "\"host_negatives_thread\": %.4e}, \"pinned_upload_bytes_per_second\": %.4e}\n",
      json_string(device).c_str(), static_cast<unsigned long long>(n),
      static_cast<unsigned long long>(g.negatives), f.params().width, f.params().result_bits,
      static_cast<unsigned long long>(f.params().shard_size), f.num_layers(), g.build_seconds,
      static_cast<double>(n) / g.build_seconds, g.stats.hash_seconds, g.stats.sort_seconds,
      g.stats.solve_seconds, g.stats.compact_seconds, g.stats.download_seconds,
      json_string(g.identical).c_str(), f.bits_per_key(), expected_fpr(f.params()), measured_fpr(g),
      static_cast<unsigned long long>(g.false_negatives), static_cast<double>(n) / g.member_seconds,
      g.rates[0].device, g.rates[0].host, g.rates[0].device, g.rates[1].device, g.rates[0].host,
      g.rates[1].host, g.copy_bytes_per_second);
}

void print_gpu_bench_text(const char* device, const filter& f, const gpu_bench_figures& g) {
  const std::uint64_t n = g.keys;
  const double per_key = n ? 1e9 / static_cast<double>(n) : 0;
  const cuda::device_build_stats& stats = g.stats;
  std::printf("ribbon bench: %llu keys, w=%u, r=%u, backend gpu (%s)\n",
              static_cast<unsigned long long>(n), f.params().width, f.params().result_bits, device);
  std::printf(
      "  build        %8.3f ns/key  (%.4f s from device-resident keys; hash %.4f, sort %.4f, "
      "solve %.4f, compact %.4f, download %.4f s)\n",
      g.build_seconds * per_key, g.build_seconds, stats.hash_seconds, stats.sort_seconds,
      stats.solve_seconds, stats.compact_seconds, stats.download_seconds);
  std::printf("  same bytes as the CPU builder: %s\n", g.identical);
  std::printf("  space        %8.4f bits/key, %u layers\n", f.bits_per_key(), f.num_layers());
  std::printf("  accuracy     FPR %.6f (expected %.6f), %llu false negatives\n", measured_fpr(g),
              expected_fpr(f.params()), static_cast<unsigned long long>(g.false_negatives));
  std::printf("  queries      %.3e keys/s device-resident members (a tile per key)\n",
              static_cast<double>(n) / g.member_seconds);
  for (int k = 0; k < 2; ++k) {
    std::printf(
        "               %.3e keys/s device-resident, %.3e host-resident non-members (a %s "
        "per key)\n",
        g.rates[k].device, g.rates[k].host, k == 0 ? "tile" : "thread");
  }
  std::printf("  copy rate    %.3e keys/s: pinned host-to-device copies at %.2f GB/s\n",
              g.copy_bytes_per_second / 8, g.copy_bytes_per_second / 1e9);
}

}  // namespace

int run_gpu_bench(const std::vector<std::uint64_t>& keys,
                  const std::vector<std::uint64_t>& negatives, const build_options& options,
                  bool json) {
  use_gpu("gpu");
  gpu_bench_figures g;
  g.keys = keys.size();
  g.negatives = negatives.size();
  const std::uint64_t n = g.keys, m = g.negatives;
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");

  // Build from device-resident keys (the upload is not part of the build).
  device_array<std::uint64_t> device_keys(n);
  check(cudaMemcpy(device_keys.data, keys.data(), n * 8, cudaMemcpyHostToDevice), "cudaMemcpy");
  filter f;
  g.build_seconds =
      timed([&] { f = cuda::build(device_keys.data, n, options, cuda::memory::device, &g.stats); });
  g.identical = same_bytes_as_cpu(keys, options, f);

  // Queries: members and non-members, device-resident; non-members host-resident.
  const cuda::device_filter gpu(f);
  device_array<std::uint64_t> device_negatives(m);
  device_array<bool> device_out(std::max(n, m));
  check(cudaMemcpy(device_negatives.data, negatives.data(), m * 8, cudaMemcpyHostToDevice),
        "cudaMemcpy");
  g.member_seconds = timed([&] { gpu.contains(device_keys.data, n, device_out.data); });
  std::unique_ptr<bool[]> answers(new bool[std::max(n, m)]);
  check(cudaMemcpy(answers.get(), device_out.data, n, cudaMemcpyDeviceToHost), "cudaMemcpy");
  g.false_negatives =
      static_cast<std::uint64_t>(std::count(answers.get(), answers.get() + n, false));
  measure_negative_queries(gpu, negatives, device_negatives.data, device_out.data, answers.get(),
                           g.rates);
  g.copy_bytes_per_second = pinned_upload_rate();
  g.positives = static_cast<std::uint64_t>(std::count(answers.get(), answers.get() + m, true));
  check_against_cpu(f, negatives, answers.get());

  if (json) {
    print_gpu_bench_json(prop.name, f, g);
  } else {
    print_gpu_bench_text(prop.name, f, g);
  }
  return g.false_negatives == 0 && std::string(g.identical) != "NO" ? 0 : 1;
}

#endif

}  // namespace ribbon::cli
