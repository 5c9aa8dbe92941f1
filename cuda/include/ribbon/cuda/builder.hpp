/// @file builder.hpp
/// The GPU builder: the pipeline of docs/design.md on the device (hash, radix sort of the layer
/// hashes, shard boundaries by search, a solve kernel with a tile of lanes per shard
/// (ribbon/detail/tile_solver.hpp), compaction of
/// the bumped hashes, next layer), returning the same bytes as the CPU builder.
///
/// The pipeline is written against Thrust, so the same code is compiled twice: by nvcc for
/// CUDA (library ribbon::cuda, namespace ribbon::cuda) and by g++ for Thrust's TBB backend
/// (library ribbon::gpu_pipeline_tbb, where "device" memory is host memory), which is how
/// machines without a GPU run and test the pipeline's logic. An inline namespace keeps the two
/// apart; callers write ribbon::cuda::build either way.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ribbon/build_many.hpp"
#include "ribbon/bulk_builder.hpp"
#include "ribbon/filter.hpp"

#if defined(RIBBON_GPU_ON_TBB)
#define RIBBON_GPU_BACKEND tbb_backend
#include "ribbon/cuda/device_filter_tbb.hpp"
#else
#define RIBBON_GPU_BACKEND cuda_backend
namespace ribbon::cuda {
class device_filter;  // ribbon/cuda/device_filter.cuh: include it to use build_device_filter()
}
#endif

namespace ribbon::cuda {
inline namespace RIBBON_GPU_BACKEND {

/// Stage times of a device build, in seconds (host clock, after synchronising the stream).
struct device_build_stats {
  std::uint64_t input_keys = 0;     ///< keys given, repeats included
  std::uint64_t distinct_keys = 0;  ///< distinct key hashes: the filter's key count
  double upload_seconds = 0;        ///< host keys to the device
  double hash_seconds = 0;          ///< layer 0 key hashes
  double sort_seconds = 0;      ///< radix sorts of the layer hashes (layer 0: and dropping repeats)
  double solve_seconds = 0;     ///< shard boundaries + solve kernels, all layers
  double compact_seconds = 0;   ///< selecting the bumped hashes, all layers
  double download_seconds = 0;  ///< sections to the host and the file image
  double total_seconds = 0;
  std::uint32_t layers = 0;
  std::uint32_t plain_layer_attempts = 0;
  std::uint32_t standard_attempts = 0;  ///< tries of a standard layer 0 (1 = no retry)
};

/// Where a build's keys are.
enum class memory { host, device };

/// Options of the device pipeline that do not change the file.
struct device_options {
  /// Bytes of solver workspace (a shard needs about (S + w) * (w + r) / 8 bytes): shards are
  /// solved in batches that fit. 0: a quarter of the free device memory (TBB backend: 64 MiB).
  std::uint64_t workspace_bytes = 0;
};

/// Builds from `count` integer keys in host or device memory. The file bytes equal
/// ribbon::filter::build's for the same keys and options. The sections come to the host
/// once, through pinned buffers, and the filter adopts them as they are: filter::save()
/// writes the file in one pass, computing each checksum once. Throws ribbon::error on bad
/// options or a CUDA error (naming the call).
filter build(const std::uint64_t* keys, std::uint64_t count, const build_options& options = {},
             memory where = memory::host, device_build_stats* stats = nullptr,
             const device_options& device = {});

/// Builds from `count` integer keys in host or device memory, as build(), and keeps the
/// filter on the device: each layer's sections are copied once, device to device, into the
/// filter's image; nothing goes through the host. Query it with device_filter::contains()
/// or pass its ref() to your kernels. (CUDA: include ribbon/cuda/device_filter.cuh.)
device_filter build_device_filter(const std::uint64_t* keys, std::uint64_t count,
                                  const build_options& options = {}, memory where = memory::host,
                                  device_build_stats* stats = nullptr,
                                  const device_options& device = {});

/// The retrieval structure of build(keys, values, ...) kept on the device, as
/// build_device_filter() keeps a filter: query it with device_filter::lookup().
device_filter build_device_filter(const std::uint64_t* keys, const std::uint32_t* values,
                                  std::uint64_t count, const build_options& options = {},
                                  memory where = memory::host, device_build_stats* stats = nullptr,
                                  const device_options& device = {});

/// Builds from byte-string keys in host memory (packed into one buffer and uploaded).
filter build(const std::string_view* keys, std::uint64_t count, const build_options& options = {},
             device_build_stats* stats = nullptr, const device_options& device = {});

/// Builds from key hashes in host memory (as filter::build_from_hashes).
filter build_from_hashes(const std::uint64_t* hashes, std::uint64_t count, key_kind keys,
                         const build_options& options = {}, device_build_stats* stats = nullptr,
                         const device_options& device = {});

/// Builds a retrieval structure mapping integer keys[i] (host or device memory) to values[i]
/// (in the same memory), as filter::build with values: the same file bytes.
filter build(const std::uint64_t* keys, const std::uint32_t* values, std::uint64_t count,
             const build_options& options = {}, memory where = memory::host,
             device_build_stats* stats = nullptr, const device_options& device = {});

/// Builds a retrieval structure from key hashes and values in host memory.
filter build_from_hashes(const std::uint64_t* hashes, const std::uint32_t* values,
                         std::uint64_t count, key_kind keys, const build_options& options = {},
                         device_build_stats* stats = nullptr, const device_options& device = {});

/// Builds from `count` key hashes that `hashes(visit)` passes to `visit` chunk by chunk
/// (what ribbon::bulk_builder's in_memory hook provides); each chunk is copied as it comes.
filter build_from_hashes(std::uint64_t count,
                         const std::function<void(const hash_visitor&)>& hashes, key_kind keys,
                         const build_options& options = {}, device_build_stats* stats = nullptr,
                         const device_options& device = {});

/// Builds one filter per group of integer `keys` in host memory, as ribbon::build_many: the
/// same bytes, filter by filter. All groups are built at once: each round sorts, solves and
/// compacts the next layer of every unfinished group in the same launches (one solve kernel
/// over all their shards), so that thousands of small filters keep the device busy. A group
/// of no keys gives an empty filter. `stats` sums the rounds (layers: the most any filter
/// has). Throws ribbon::error for bad options or bad groups before any work.
std::vector<filter> build_many(const std::uint64_t* keys, std::uint64_t key_count,
                               const key_groups& groups, const build_options& options = {},
                               device_build_stats* stats = nullptr,
                               const device_options& device = {});

/// build_many() from key hashes in host memory (as ribbon::build_many_from_hashes).
std::vector<filter> build_many_from_hashes(const std::uint64_t* hashes, std::uint64_t key_count,
                                           key_kind keys, const key_groups& groups,
                                           const build_options& options = {},
                                           device_build_stats* stats = nullptr,
                                           const device_options& device = {});

/// A solver for the shard ranges of ribbon::bulk_builder's out-of-core layers
/// (bulk_options::range_solver): inputs larger than device memory are built one shard range
/// at a time, each range sorted and solved on the device.
std::shared_ptr<shard_range_solver> make_range_solver(const device_options& device = {});

/// Whether this backend can run (a CUDA device is present; always for the TBB backend).
/// Otherwise `why` says why not.
bool available(std::string* why = nullptr);

}  // namespace RIBBON_GPU_BACKEND
}  // namespace ribbon::cuda
