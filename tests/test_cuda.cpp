// GPU batched queries agree with the CPU, key for key, on a CPU-built file image.
// Skips, with a visible message, where no CUDA device is present.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ribbon/cuda/builder.hpp"
#include "ribbon/cuda/device_filter.cuh"
#include "ribbon/cuda/query.cuh"
#include "ribbon/filter.hpp"
#include "ribbon/format.hpp"
#include "test_util.hpp"

namespace {

#define RIBBON_CUDA_CHECK(call)                                                      \
  do {                                                                               \
    const cudaError_t status_ = (call);                                              \
    ASSERT_EQ(status_, cudaSuccess) << #call << ": " << cudaGetErrorString(status_); \
  } while (0)

bool have_gpu(std::string& why) {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess) {
    why = cudaGetErrorString(status);
    return false;
  }
  if (devices == 0) why = "no CUDA device";
  return devices > 0;
}

TEST(CudaQuery, VariantsMatchTheCpuKeyForKey) {
  std::string why;
  if (!have_gpu(why)) GTEST_SKIP() << "GPU test skipped: " << why;
  std::vector<std::uint64_t> keys(200000), probes(400000);
  std::vector<std::uint32_t> values(keys.size());
  for (std::uint64_t i = 0; i < keys.size(); ++i) {
    keys[i] = ribbon::mix64(i + 7);
    values[i] = static_cast<std::uint32_t>(ribbon::mix64(i) >> 51);  // 13 bits
  }
  for (std::uint64_t i = 0; i < probes.size(); ++i) {
    probes[i] = (i & 1) ? keys[i / 2] : ribbon::mix64(i + (std::uint64_t{1} << 41));
  }
  std::uint64_t* device_keys = nullptr;
  bool* device_found = nullptr;
  std::uint32_t* device_values = nullptr;
  RIBBON_CUDA_CHECK(cudaMalloc(&device_keys, probes.size() * sizeof(std::uint64_t)));
  RIBBON_CUDA_CHECK(cudaMalloc(&device_found, probes.size()));
  RIBBON_CUDA_CHECK(cudaMalloc(&device_values, probes.size() * sizeof(std::uint32_t)));
  RIBBON_CUDA_CHECK(cudaMemcpy(device_keys, probes.data(), probes.size() * sizeof(std::uint64_t),
                               cudaMemcpyHostToDevice));
  const ribbon::cuda::key_mapping mappings[] = {ribbon::cuda::key_mapping::tile_per_key,
                                                ribbon::cuda::key_mapping::thread_per_key};
  for (ribbon::filter_variant v :
       {ribbon::filter_variant::standard, ribbon::filter_variant::homogeneous,
        ribbon::filter_variant::bumped, ribbon::filter_variant::bumped_retrieval,
        ribbon::filter_variant::standard_retrieval}) {
    for (std::uint32_t width : {32u, 64u, 128u}) {
      // r = 8 and 16 take the kernels with r at compile time (16-byte loads, a thread or a
      // tile per key); 13 with fractional bits, the general one.
      for (std::uint32_t bits : {8u, 16u, 13u}) {
        ribbon::build_options o;
        o.variant = v;
        o.width = width;
        o.result_bits = bits;
        if (bits == 13 && !ribbon::is_retrieval(v)) o.target_fpr = 0.003;  // fractional bits
        std::vector<std::uint32_t> stored(values);
        for (std::uint32_t& value : stored) value >>= 13 - std::min(bits, 13u);
        const ribbon::filter f =
            ribbon::is_retrieval(v)
                ? ribbon::cuda::build(keys.data(), stored.data(), keys.size(), o)
                : ribbon::cuda::build(keys.data(), keys.size(), o);
        const ribbon::cuda::device_filter d(f);
        for (ribbon::cuda::key_mapping mapping : mappings) {
          SCOPED_TRACE(testing::Message()
                       << "variant " << static_cast<int>(v) << " w " << width << " r " << bits
                       << " mapping " << static_cast<int>(mapping));
          if (f.is_retrieval()) {
            std::vector<std::uint32_t> expected(probes.size()), got(probes.size());
            f.lookup(probes.data(), probes.size(), expected.data());
            d.lookup(device_keys, probes.size(), device_values, 0, mapping);
            RIBBON_CUDA_CHECK(cudaMemcpy(got.data(), device_values,
                                         probes.size() * sizeof(std::uint32_t),
                                         cudaMemcpyDeviceToHost));
            ASSERT_EQ(got, expected);
          } else {
            std::unique_ptr<bool[]> expected(new bool[probes.size()]);
            std::unique_ptr<bool[]> got(new bool[probes.size()]);
            f.contains(probes.data(), probes.size(), expected.get());
            d.contains(device_keys, probes.size(), device_found, 0, mapping);
            RIBBON_CUDA_CHECK(
                cudaMemcpy(got.get(), device_found, probes.size(), cudaMemcpyDeviceToHost));
            ASSERT_EQ(std::memcmp(got.get(), expected.get(), probes.size()), 0);
          }
        }
      }
    }
  }
  cudaFree(device_keys);
  cudaFree(device_found);
  cudaFree(device_values);
}

/// Probes copied to the device, and room for their answers.
struct device_probes {
  std::uint64_t* keys = nullptr;
  bool* found = nullptr;
  std::uint32_t* values = nullptr;
  std::uint64_t count = 0;

  explicit device_probes(const std::vector<std::uint64_t>& probes) : count(probes.size()) {
    EXPECT_EQ(cudaSuccess, cudaMalloc(&keys, count * sizeof(std::uint64_t)));
    EXPECT_EQ(cudaSuccess, cudaMalloc(&found, count));
    EXPECT_EQ(cudaSuccess, cudaMalloc(&values, count * sizeof(std::uint32_t)));
    EXPECT_EQ(cudaSuccess, cudaMemcpy(keys, probes.data(), count * sizeof(std::uint64_t),
                                      cudaMemcpyHostToDevice));
  }
  ~device_probes() {
    cudaFree(keys);
    cudaFree(found);
    cudaFree(values);
  }
  std::vector<std::uint32_t> values_on_host() const {
    std::vector<std::uint32_t> out(count);
    EXPECT_EQ(cudaSuccess, cudaMemcpy(out.data(), values, count * sizeof(std::uint32_t),
                                      cudaMemcpyDeviceToHost));
    return out;
  }
  std::unique_ptr<bool[]> found_on_host() const {
    std::unique_ptr<bool[]> out(new bool[count]);
    EXPECT_EQ(cudaSuccess, cudaMemcpy(out.get(), found, count, cudaMemcpyDeviceToHost));
    return out;
  }
};

TEST(CudaQuery, CheckBitsMatchTheCpuKeyForKey) {
  // Retrieval with check bits: lookups give the value bits, contains() the check, as on the
  // CPU; r = 8 and 16 in all take the row kernels, 13 the general one.
  std::string why;
  if (!have_gpu(why)) GTEST_SKIP() << "GPU test skipped: " << why;
  constexpr std::uint32_t check_bits = 4;
  std::vector<std::uint64_t> keys(100000), probes(200000);
  std::vector<std::uint32_t> values(keys.size());
  for (std::uint64_t i = 0; i < keys.size(); ++i) keys[i] = ribbon::mix64(i + 11);
  for (std::uint64_t i = 0; i < probes.size(); ++i) {
    probes[i] = (i & 1) ? keys[i / 2] : ribbon::mix64(i + (std::uint64_t{1} << 42));
  }
  device_probes buffers(probes);
  for (std::uint32_t width : {32u, 64u, 128u}) {
    for (std::uint32_t bits : {8u, 16u, 13u}) {
      ribbon::build_options o;
      o.width = width;
      o.result_bits = bits - check_bits;
      o.check_bits = check_bits;
      for (std::uint64_t i = 0; i < keys.size(); ++i) {
        values[i] = static_cast<std::uint32_t>(ribbon::mix64(i) >> (64 - o.result_bits));
      }
      const ribbon::filter f = ribbon::filter::build(keys.data(), values.data(), keys.size(), o);
      const ribbon::cuda::device_filter d(f);
      for (ribbon::cuda::key_mapping mapping :
           {ribbon::cuda::key_mapping::tile_per_key, ribbon::cuda::key_mapping::thread_per_key}) {
        SCOPED_TRACE(testing::Message()
                     << "w " << width << " r " << bits << " mapping " << static_cast<int>(mapping));
        std::vector<std::uint32_t> expected(probes.size());
        std::unique_ptr<bool[]> found(new bool[probes.size()]);
        f.lookup(probes.data(), probes.size(), expected.data(), found.get());
        d.lookup(buffers.keys, probes.size(), buffers.values, 0, mapping);
        d.contains(buffers.keys, probes.size(), buffers.found, 0, mapping);
        ASSERT_EQ(buffers.values_on_host(), expected);
        ASSERT_EQ(std::memcmp(buffers.found_on_host().get(), found.get(), probes.size()), 0);
      }
    }
  }
}

TEST(CudaQuery, MatchesCpuKeyForKey) {
  std::string why;
  if (!have_gpu(why)) GTEST_SKIP() << "GPU test skipped: " << why;
  for (std::uint32_t width : {32u, 64u, 128u}) {
    std::vector<std::uint64_t> keys(300000), probes(600000);
    for (std::uint64_t i = 0; i < keys.size(); ++i) keys[i] = ribbon::mix64(i + 1);
    // Every other probe is a member.
    for (std::uint64_t i = 0; i < probes.size(); ++i) {
      probes[i] = (i & 1) ? keys[i / 2] : ribbon::mix64(i + (std::uint64_t{1} << 40));
    }
    ribbon::build_options options;
    options.width = width;
    options.result_bits = 7;
    const ribbon::filter f = ribbon::filter::build(keys.data(), keys.size(), options);
    const std::vector<unsigned char> bytes = f.serialize();
    std::unique_ptr<unsigned char[], decltype(&std::free)> host_image(
        static_cast<unsigned char*>(std::aligned_alloc(64, (bytes.size() + 63) / 64 * 64)),
        &std::free);
    std::memcpy(host_image.get(), bytes.data(), bytes.size());
    const ribbon::format::parsed_image parsed =
        ribbon::format::parse_image(host_image.get(), bytes.size(), true, "test image");
    std::unique_ptr<bool[]> expected(new bool[probes.size()]);
    f.contains(probes.data(), probes.size(), expected.get());

    unsigned char* device_image = nullptr;
    std::uint64_t* device_keys = nullptr;
    bool* device_out = nullptr;
    RIBBON_CUDA_CHECK(cudaMalloc(&device_image, bytes.size()));
    RIBBON_CUDA_CHECK(cudaMalloc(&device_keys, probes.size() * sizeof(std::uint64_t)));
    RIBBON_CUDA_CHECK(cudaMalloc(&device_out, probes.size()));
    RIBBON_CUDA_CHECK(
        cudaMemcpy(device_image, host_image.get(), bytes.size(), cudaMemcpyHostToDevice));
    RIBBON_CUDA_CHECK(cudaMemcpy(device_keys, probes.data(), probes.size() * sizeof(std::uint64_t),
                                 cudaMemcpyHostToDevice));
    const ribbon::filter_ref device_ref =
        ribbon::format::relocate(parsed.ref, host_image.get(), device_image);
    RIBBON_CUDA_CHECK(ribbon::cuda::contains(device_ref, device_keys, probes.size(), device_out));
    RIBBON_CUDA_CHECK(cudaDeviceSynchronize());
    std::unique_ptr<bool[]> actual(new bool[probes.size()]);
    RIBBON_CUDA_CHECK(cudaMemcpy(actual.get(), device_out, probes.size(), cudaMemcpyDeviceToHost));
    cudaFree(device_image);
    cudaFree(device_keys);
    cudaFree(device_out);
    for (std::uint64_t i = 0; i < probes.size(); ++i) {
      ASSERT_EQ(actual[i], expected[i]) << "width " << width << " probe " << i;
      if (i & 1) {
        ASSERT_TRUE(actual[i]) << "false negative on the GPU, probe " << i;
      }
    }
  }
}

TEST(CudaQuery, GpuBuiltFileOnGpuAndCpuDeviceAndHostResidentKeys) {
  std::string why;
  if (!have_gpu(why)) GTEST_SKIP() << "GPU test skipped: " << why;
  ribbon_test::temp_dir dir;
  const std::uint64_t n = 1'000'000;
  std::vector<std::uint64_t> keys(n), probes(2 * n);
  for (std::uint64_t i = 0; i < n; ++i) keys[i] = ribbon::mix64(i * 3 + 1);
  for (std::uint64_t i = 0; i < probes.size(); ++i) {
    probes[i] = (i & 1) ? keys[i / 2] : ribbon::mix64(i + (std::uint64_t{1} << 41));
  }
  ribbon::build_options options;
  // Built on the GPU, saved, loaded by the CPU reader: the CPU answers are the reference.
  ribbon::cuda::build(keys.data(), n, options).save(dir.file("gpu.rbn"));
  const ribbon::filter cpu = ribbon::filter::load(dir.file("gpu.rbn"));
  std::unique_ptr<bool[]> expected(new bool[probes.size()]);
  cpu.contains(probes.data(), probes.size(), expected.get());

  const ribbon::cuda::device_filter gpu(cpu);
  // Host-resident keys, in chunks smaller than the batch (several rounds on both streams).
  std::unique_ptr<bool[]> from_host(new bool[probes.size()]);
  std::unique_ptr<bool[]> from_host_threads(new bool[probes.size()]);
  gpu.contains_host(probes.data(), probes.size(), from_host.get(), 300'000);
  gpu.contains_host(probes.data(), probes.size(), from_host_threads.get(), 300'000,
                    ribbon::cuda::key_mapping::thread_per_key);
  // Device-resident keys.
  std::uint64_t* device_keys = nullptr;
  bool* device_out = nullptr;
  RIBBON_CUDA_CHECK(cudaMalloc(&device_keys, probes.size() * sizeof(std::uint64_t)));
  RIBBON_CUDA_CHECK(cudaMalloc(&device_out, probes.size()));
  RIBBON_CUDA_CHECK(cudaMemcpy(device_keys, probes.data(), probes.size() * sizeof(std::uint64_t),
                               cudaMemcpyHostToDevice));
  gpu.contains(device_keys, probes.size(), device_out);
  RIBBON_CUDA_CHECK(cudaDeviceSynchronize());
  std::unique_ptr<bool[]> from_device(new bool[probes.size()]);
  RIBBON_CUDA_CHECK(
      cudaMemcpy(from_device.get(), device_out, probes.size(), cudaMemcpyDeviceToHost));
  cudaFree(device_keys);
  cudaFree(device_out);
  for (std::uint64_t i = 0; i < probes.size(); ++i) {
    ASSERT_EQ(from_host[i], expected[i]) << "host-resident probe " << i;
    ASSERT_EQ(from_host_threads[i], expected[i]) << "host-resident probe, thread per key " << i;
    ASSERT_EQ(from_device[i], expected[i]) << "device-resident probe " << i;
    if (i & 1) {
      ASSERT_TRUE(from_device[i]) << "false negative, probe " << i;
    }
  }
}

}  // namespace
