// The device build pipeline, written against Thrust: its entry points (ribbon::cuda::build
// and friends). Included by builder.cu (nvcc, CUDA backend) and by builder_tbb.cpp (g++,
// Thrust's TBB backend, RIBBON_GPU_ON_TBB): one algorithm, two device systems. The stages,
// one file each: the device systems (pipeline_backend.inl), hashing and partition functors
// (key_ops.inl), sort and deduplication (sort_keys.inl), the tile solve kernel
// (solve_kernel.inl, running common/'s tile solver), the layer driver (device_builder.inl)
// and the out-of-core range solver (range_solver.inl); the file goes through common/'s format
// code.
#pragma once

#include <thrust/device_ptr.h>
#include <thrust/find.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#if !defined(RIBBON_GPU_ON_TBB)
#include <cuda_runtime.h>
#endif

#include "device_builder.inl"
#include "key_ops.inl"
#include "many_builder.inl"
#include "pipeline_backend.inl"
#include "range_solver.inl"
#include "ribbon/cuda/builder.hpp"
#include "ribbon/error.hpp"
#include "ribbon/hash.hpp"
#include "ribbon/params.hpp"

namespace ribbon::cuda {
inline namespace RIBBON_GPU_BACKEND {
namespace {

/// A device copy of `count` elements in host memory (through the staging) or device memory.
template <class T>
device_vector<T> to_device(staging& stage, const T* data, std::uint64_t count, memory where) {
  if (where == memory::host) return pipeline::upload(stage, data, count);
  const auto device = thrust::device_pointer_cast(data);
  return device_vector<T>(device, device + static_cast<std::int64_t>(count));
}

/// Is a value too wide for r bits?
struct too_wide_op {
  std::uint32_t result_bits;
  RIBBON_HD bool operator()(std::uint32_t value) const {
    return result_bits < 32 && (value >> result_bits) != 0;
  }
};

/// Throws, as ribbon::check_values, for the first value that does not fit in r bits.
void check_device_values(const device_vector<std::uint32_t>& values, std::uint32_t result_bits) {
  const auto at = thrust::find_if(exec(), values.begin(), values.end(), too_wide_op{result_bits});
  if (at == values.end()) return;
  ribbon::throw_value_too_wide(*at, static_cast<std::uint64_t>(at - values.begin()), result_bits);
}

/// Times the whole build into stats (if given); f(stats, stage) builds, with the staging
/// buffers of this build. The pool's idle memory goes back to the device afterwards.
template <class F>
auto timed(device_build_stats* stats, F&& f) {
  device_build_stats local;
  device_build_stats& s = stats ? *stats : local;
  s = device_build_stats{};
  const auto start = clock_type::now();
  staging stage;
  auto result = f(s, stage);
  s.total_seconds = device_seconds_since(start);
  pipeline::release_idle_memory();
  return result;
}

/// build() and build_device_filter() from integer keys.
template <class Out>
Out build_integer_keys(const std::uint64_t* keys, std::uint64_t count, const build_options& options,
                       memory where, device_build_stats* stats, const device_options& device) {
  const filter_params p = build_params(options, key_kind::u64);
  return timed(stats, [&](device_build_stats& s, staging& stage) {
    auto start = clock_type::now();
    device_vector<std::uint64_t> hashes = to_device(stage, keys, count, where);
    s.upload_seconds = device_seconds_since(start);
    start = clock_type::now();
    thrust::transform(exec(), hashes.begin(), hashes.end(), hashes.begin(),
                      hash_u64_op{seed_mix(p.seed)});
    s.hash_seconds = device_seconds_since(start);
    return run_pipeline<Out>(p, options, hashes, s, device, stage);
  });
}

/// build() and build_device_filter() from integer keys with values.
template <class Out>
Out build_integer_keys(const std::uint64_t* keys, const std::uint32_t* values, std::uint64_t count,
                       const build_options& options, memory where, device_build_stats* stats,
                       const device_options& device) {
  const filter_params p = build_params(options, key_kind::u64, true);
  return timed(stats, [&](device_build_stats& s, staging& stage) {
    auto start = clock_type::now();
    device_vector<std::uint64_t> hashes = to_device(stage, keys, count, where);
    const device_vector<std::uint32_t> device_values = to_device(stage, values, count, where);
    s.upload_seconds = device_seconds_since(start);
    start = clock_type::now();
    check_device_values(device_values, p.value_bits());
    thrust::transform(exec(), hashes.begin(), hashes.end(), hashes.begin(),
                      hash_u64_op{seed_mix(p.seed)});
    device_vector<keyed_value> records(count);
    thrust::transform(exec(), hashes.begin(), hashes.end(), device_values.begin(), records.begin(),
                      pair_op{p});
    s.hash_seconds = device_seconds_since(start);
    return run_pipeline<Out>(p, options, records, s, device, stage);
  });
}

/// Calls f(values, count) with the values at the groups' positions, in group order: `values`
/// itself, or a copy gathered through the groups' order.
template <class F>
auto in_group_order(const std::uint64_t* values, const key_groups& groups, F&& f) {
  const std::uint64_t positions = groups.num_groups == 0 ? 0 : groups.offsets[groups.num_groups];
  if (groups.order == nullptr) return f(values, positions);
  std::vector<std::uint64_t> gathered(positions);
  for (std::uint64_t i = 0; i < positions; ++i) gathered[i] = values[groups.order[i]];
  return f(gathered.data(), positions);
}

/// build_many() and build_many_from_hashes(): `hash` turns the uploaded values into hashes.
template <class Hash>
std::vector<filter> build_many_of(const std::uint64_t* values, std::uint64_t count, key_kind kind,
                                  const key_groups& groups, const build_options& options,
                                  device_build_stats* stats, const device_options& device,
                                  const Hash& hash) {
  const filter_params p = build_params(options, kind);
  (void)build_sizing(options, p, 1);  // bad options fail before any work
  ribbon::detail::check_groups(groups, count);
  return in_group_order(values, groups, [&](const std::uint64_t* ordered, std::uint64_t n) {
    return timed(stats, [&](device_build_stats& s, staging& stage) {
      auto start = clock_type::now();
      device_vector<std::uint64_t> hashes = pipeline::upload(stage, ordered, n);
      s.upload_seconds = device_seconds_since(start);
      start = clock_type::now();
      hash(p, hashes);
      s.hash_seconds = device_seconds_since(start);
      return build_groups(p, options, groups, hashes, s, device, stage);
    });
  });
}

}  // namespace

std::vector<filter> build_many(const std::uint64_t* keys, std::uint64_t key_count,
                               const key_groups& groups, const build_options& options,
                               device_build_stats* stats, const device_options& device) {
  return build_many_of(keys, key_count, key_kind::u64, groups, options, stats, device,
                       [](const filter_params& p, device_vector<std::uint64_t>& hashes) {
                         thrust::transform(exec(), hashes.begin(), hashes.end(), hashes.begin(),
                                           hash_u64_op{seed_mix(p.seed)});
                       });
}

std::vector<filter> build_many_from_hashes(const std::uint64_t* hashes, std::uint64_t key_count,
                                           key_kind keys, const key_groups& groups,
                                           const build_options& options, device_build_stats* stats,
                                           const device_options& device) {
  return build_many_of(hashes, key_count, keys, groups, options, stats, device,
                       [](const filter_params&, device_vector<std::uint64_t>&) {});
}

filter build(const std::uint64_t* keys, std::uint64_t count, const build_options& options,
             memory where, device_build_stats* stats, const device_options& device) {
  return build_integer_keys<filter>(keys, count, options, where, stats, device);
}

device_filter build_device_filter(const std::uint64_t* keys, std::uint64_t count,
                                  const build_options& options, memory where,
                                  device_build_stats* stats, const device_options& device) {
  return build_integer_keys<device_filter>(keys, count, options, where, stats, device);
}

filter build(const std::uint64_t* keys, const std::uint32_t* values, std::uint64_t count,
             const build_options& options, memory where, device_build_stats* stats,
             const device_options& device) {
  return build_integer_keys<filter>(keys, values, count, options, where, stats, device);
}

device_filter build_device_filter(const std::uint64_t* keys, const std::uint32_t* values,
                                  std::uint64_t count, const build_options& options, memory where,
                                  device_build_stats* stats, const device_options& device) {
  return build_integer_keys<device_filter>(keys, values, count, options, where, stats, device);
}

filter build(const std::string_view* keys, std::uint64_t count, const build_options& options,
             device_build_stats* stats, const device_options& device) {
  const filter_params p = build_params(options, key_kind::bytes);
  return timed(stats, [&](device_build_stats& s, staging& stage) {
    auto start = clock_type::now();
    std::vector<std::uint64_t> offsets(count + 1, 0);
    for (std::uint64_t i = 0; i < count; ++i) offsets[i + 1] = offsets[i] + keys[i].size();
    std::vector<unsigned char> bytes(offsets[count]);
    for (std::uint64_t i = 0; i < count; ++i) {
      std::copy(keys[i].begin(), keys[i].end(),
                bytes.begin() + static_cast<std::int64_t>(offsets[i]));
    }
    const device_vector<std::uint64_t> device_offsets =
        pipeline::upload(stage, offsets.data(), offsets.size());
    const device_vector<unsigned char> device_bytes =
        pipeline::upload(stage, bytes.data(), bytes.size());
    s.upload_seconds = device_seconds_since(start);
    start = clock_type::now();
    device_vector<std::uint64_t> hashes(count);
    thrust::transform(exec(), thrust::counting_iterator<std::uint64_t>(0),
                      thrust::counting_iterator<std::uint64_t>(count), hashes.begin(),
                      hash_bytes_op{raw(device_bytes), raw(device_offsets), p.seed});
    s.hash_seconds = device_seconds_since(start);
    return run_pipeline<filter>(p, options, hashes, s, device, stage);
  });
}

filter build_from_hashes(const std::uint64_t* hashes, std::uint64_t count, key_kind keys,
                         const build_options& options, device_build_stats* stats,
                         const device_options& device) {
  const filter_params p = build_params(options, keys);
  return timed(stats, [&](device_build_stats& s, staging& stage) {
    const auto start = clock_type::now();
    device_vector<std::uint64_t> device_hashes = pipeline::upload(stage, hashes, count);
    s.upload_seconds = device_seconds_since(start);
    return run_pipeline<filter>(p, options, device_hashes, s, device, stage);
  });
}

filter build_from_hashes(std::uint64_t count,
                         const std::function<void(const hash_visitor&)>& hashes, key_kind keys,
                         const build_options& options, device_build_stats* stats,
                         const device_options& device) {
  const filter_params p = build_params(options, keys);
  return timed(stats, [&](device_build_stats& s, staging& stage) {
    const auto start = clock_type::now();
    device_vector<std::uint64_t> device_hashes(count);
    std::uint64_t filled = 0;
    hashes([&](const std::uint64_t* chunk, std::uint64_t n) {
      if (n > count - filled) throw error("build_from_hashes: more hashes than announced");
      stage.to_device(raw(device_hashes) + filled, chunk, n * sizeof(std::uint64_t));
      filled += n;
    });
    if (filled != count) throw error("build_from_hashes: fewer hashes than announced");
    s.upload_seconds = device_seconds_since(start);
    return run_pipeline<filter>(p, options, device_hashes, s, device, stage);
  });
}

filter build_from_hashes(const std::uint64_t* hashes, const std::uint32_t* values,
                         std::uint64_t count, key_kind keys, const build_options& options,
                         device_build_stats* stats, const device_options& device) {
  const filter_params p = build_params(options, keys, true);
  ribbon::check_values(values, count, p.value_bits());
  return timed(stats, [&](device_build_stats& s, staging& stage) {
    const auto start = clock_type::now();
    const device_vector<std::uint64_t> device_hashes = pipeline::upload(stage, hashes, count);
    const device_vector<std::uint32_t> device_values = pipeline::upload(stage, values, count);
    device_vector<keyed_value> records(count);
    thrust::transform(exec(), device_hashes.begin(), device_hashes.end(), device_values.begin(),
                      records.begin(), pair_op{p});
    s.upload_seconds = device_seconds_since(start);
    return run_pipeline<filter>(p, options, records, s, device, stage);
  });
}

std::shared_ptr<shard_range_solver> make_range_solver(const device_options& device) {
  return std::make_shared<device_range_solver>(device);
}

bool available(std::string* why) {
#if defined(RIBBON_GPU_ON_TBB)
  (void)why;
  return true;
#else
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    if (why) *why = status != cudaSuccess ? cudaGetErrorString(status) : "no CUDA device";
    return false;
  }
  return true;
#endif
}

}  // namespace RIBBON_GPU_BACKEND
}  // namespace ribbon::cuda
