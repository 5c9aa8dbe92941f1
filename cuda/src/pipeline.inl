// The device build pipeline, written against Thrust. Included by builder.cu (nvcc, CUDA
// backend) and by builder_tbb.cpp (g++, Thrust's TBB backend, RIBBON_GPU_ON_TBB): one
// algorithm, two device systems. The per-shard work is common/'s shard solver, the file goes
// through common/'s format code.
#include <thrust/binary_search.h>
#include <thrust/copy.h>
#include <thrust/device_ptr.h>
#include <thrust/find.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/unique.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#if !defined(RIBBON_GPU_ON_TBB)
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>

#include "ribbon/cuda/detail/check.hpp"
#include "ribbon/cuda/detail/tile.cuh"
#include "ribbon/cuda/device_filter.cuh"
#endif

#include "device_memory.hpp"
#include "ribbon/cuda/builder.hpp"
#include "ribbon/detail/layer_loop.hpp"
#include "ribbon/detail/records.hpp"
#include "ribbon/detail/shard_solver.hpp"
#include "ribbon/detail/tile_solver.hpp"
#include "ribbon/error.hpp"
#include "ribbon/format.hpp"
#include "ribbon/hash.hpp"
#include "ribbon/layer.hpp"

namespace ribbon::cuda {
inline namespace RIBBON_GPU_BACKEND {
namespace {

using ribbon::detail::keyed_value;
using ribbon::detail::record_hash;
using ribbon::detail::with_hash;

using clock_type = std::chrono::steady_clock;

using pipeline::device_vector;
using pipeline::exec;
using pipeline::raw;
using pipeline::staging;

#if defined(RIBBON_GPU_ON_TBB)
constexpr bool on_tbb = true;
void synchronize() {}
#else
constexpr bool on_tbb = false;
using ribbon::cuda::detail::check;
// builder.cu is compiled with --default-stream per-thread: each host thread's work (Thrust's
// kernels and copies included) goes to its own stream, so that ranges solved from two
// threads overlap on the device. Waiting is for this thread's stream only.
void synchronize() {
  check(cudaGetLastError(), "a kernel launch");
  check(cudaStreamSynchronize(pipeline::build_stream()), "cudaStreamSynchronize");
}
#endif

/// Seconds since `start`, after the device has finished its queued work.
double device_seconds_since(clock_type::time_point start) {
  synchronize();
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

// --- Functors (host+device: the same code runs in CUDA kernels and TBB tasks) ---

struct hash_u64_op {
  std::uint64_t seed_mixed;
  RIBBON_HD std::uint64_t operator()(std::uint64_t key) const { return hash_u64(key, seed_mixed); }
};

struct hash_bytes_op {
  const unsigned char* bytes;
  const std::uint64_t* offsets;  // key i is bytes[offsets[i], offsets[i + 1])
  std::uint64_t seed;
  RIBBON_HD std::uint64_t operator()(std::uint64_t i) const {
    return hash_bytes(bytes + offsets[i], offsets[i + 1] - offsets[i], seed);
  }
};

struct remix_op {
  std::uint64_t salt;
  template <class Record>
  RIBBON_HD Record operator()(const Record& r) const {
    return with_hash(r, remix(record_hash(r), salt));
  }
};

/// The inverse of remix_op: back to the previous layer's hashes (a standard layer's retry).
struct unmix_op {
  std::uint64_t salt;
  template <class Record>
  RIBBON_HD Record operator()(const Record& r) const {
    return with_hash(r, unmix64(record_hash(r)) ^ salt);
  }
};

struct shard_of_op {
  layer_geometry g;
  template <class Record>
  RIBBON_HD std::uint64_t operator()(const Record& r) const {
    return g.shard_of(record_hash(r));
  }
};

/// Values that pair with keys: hash i with value i.
struct pair_op {
  RIBBON_HD keyed_value operator()(std::uint64_t hash, std::uint32_t value) const {
    return {hash, value};
  }
};

/// Lanes of the tile that solves a shard (tile_solver.hpp): eight, so that a warp solves four
/// shards at once; the TBB build runs the same tiles (see bench/RESULTS.md, "GPU model").
constexpr unsigned solve_tile_lanes = 8;

/// A tile per shard: eliminate (bumping by thresholds and by the shard-head rule), then
/// back-substitute into the shard's own solution blocks. The op covers the shard range
/// [range_first, ...): offsets and bumped counts are indexed from range_first, the section
/// windows start at its first threshold word and block. Shards [batch_first, ...) use the
/// batch's column arrays; `band` is the tile's own band memory (tile_band::bytes()).
template <unsigned Width, class Result, class Record>
struct solve_shard_op {
  using band = ribbon::detail::tile_band<Width, Result>;

  filter_params p;
  layer_geometry g;
  std::uint64_t range_first;
  std::uint64_t batch_first;
  Record* hashes;  // sorted; the shard's bumped keys end up at the front of its range
  const std::uint64_t* offsets;
  ribbon::detail::word_t<Width>* coeffs;
  Result* results;
  std::uint64_t columns;
  std::uint64_t* thresholds;
  std::uint64_t threshold_origin;
  ribbon::detail::word_t<Width>* solution;
  std::uint64_t block_origin;
  std::uint64_t* bumped_counts;
  int* failed;

  template <class Tile>
  RIBBON_HD void operator()(const Tile& tile, std::uint64_t shard, void* band_memory) const {
    const std::uint64_t slot = shard - batch_first;
    const ribbon::detail::tile_workspace<Width, Result> ws{
        band::in(band_memory, p.bucket_size), coeffs + slot * columns, results + slot * columns};
    const std::uint64_t local = shard - range_first;
    const std::uint64_t begin = offsets[local];
    const ribbon::detail::shard_outcome outcome =
        ribbon::detail::solve_shard_with_tile<Width, Result, Record>(
            tile, p, g, shard, hashes + begin, offsets[local + 1] - begin, ws, thresholds,
            threshold_origin, solution, block_origin);
    if (!outcome.solved) {
      *failed = 1;  // every writer writes 1: no atomic needed
      return;
    }
    bumped_counts[local] = outcome.bumped;
  }
};

#if defined(RIBBON_GPU_ON_TBB)
/// Solves shards [first, end) on TBB threads, each shard by a host tile whose lanes run in
/// lockstep, with its band in `bands` (a band per shard of the batch).
template <class Op>
void solve_shards(const Op& op, std::uint64_t first, std::uint64_t end, unsigned char* bands,
                  std::uint64_t band_bytes) {
  thrust::for_each(exec(), thrust::counting_iterator<std::uint64_t>(first),
                   thrust::counting_iterator<std::uint64_t>(end), [=](std::uint64_t shard) {
                     const ribbon::detail::host_tile<solve_tile_lanes> tile;
                     op(tile, shard, bands + (shard - first) * band_bytes);
                   });
}
#else
/// Each tile of a block solves shards, a grid's worth of tiles apart, with its band in
/// shared memory, or in `global_bands` (a band per tile of the grid) when a band is too large
/// for shared memory.
template <class Op>
__global__ void solve_shards_kernel(Op op, std::uint64_t first, std::uint64_t end,
                                    std::uint64_t band_bytes, unsigned char* global_bands) {
  extern __shared__ __align__(16) unsigned char shared_bands[];
  namespace cg = cooperative_groups;
  const auto tile = cg::tiled_partition<solve_tile_lanes>(cg::this_thread_block());
  const unsigned tiles_per_block = blockDim.x / solve_tile_lanes;
  const unsigned tile_in_block = threadIdx.x / solve_tile_lanes;
  const std::uint64_t tile_in_grid = std::uint64_t{blockIdx.x} * tiles_per_block + tile_in_block;
  unsigned char* band = global_bands != nullptr ? global_bands + tile_in_grid * band_bytes
                                                : shared_bands + tile_in_block * band_bytes;
  const ribbon::cuda::detail::device_tile<solve_tile_lanes> lanes(tile);
  const std::uint64_t tiles_in_grid = std::uint64_t{gridDim.x} * tiles_per_block;
  for (std::uint64_t shard = first + tile_in_grid; shard < end; shard += tiles_in_grid) {
    op(lanes, shard, band);
  }
}

/// Solves shards [first, end) with as many resident tiles as the device holds (or as there
/// are shards). `bands` is unused: bands live in shared memory (or in a device allocation
/// when one is larger than a block may have).
template <class Op>
void solve_shards(const Op& op, std::uint64_t first, std::uint64_t end, unsigned char*,
                  std::uint64_t band_bytes) {
  constexpr unsigned max_tiles_per_block = 8;  // 64 threads of 8-lane tiles
  int device = 0, shared_limit = 0, multiprocessors = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&shared_limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
        "cudaDeviceGetAttribute");
  check(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device),
        "cudaDeviceGetAttribute");
  const bool in_shared = band_bytes <= static_cast<std::uint64_t>(shared_limit);
  const unsigned tiles_per_block =
      in_shared
          ? static_cast<unsigned>(std::clamp<std::uint64_t>(
                static_cast<std::uint64_t>(shared_limit) / 4 / band_bytes, 1, max_tiles_per_block))
          : max_tiles_per_block;
  const unsigned threads = tiles_per_block * solve_tile_lanes;
  const std::size_t shared_bytes = in_shared ? tiles_per_block * band_bytes : 0;
  const auto kernel = solve_shards_kernel<Op>;
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(shared_bytes)),
        "cudaFuncSetAttribute");
  int blocks_per_multiprocessor = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_multiprocessor, kernel,
                                                      static_cast<int>(threads), shared_bytes),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  const std::uint64_t wanted = ribbon::detail::divide_round_up(end - first, tiles_per_block);
  const std::uint64_t resident =
      std::uint64_t{static_cast<unsigned>(std::max(blocks_per_multiprocessor, 1))} *
      static_cast<unsigned>(multiprocessors);
  const auto blocks = static_cast<unsigned>(std::min(wanted, resident));
  device_vector<unsigned char> global_bands(
      in_shared ? 0 : std::uint64_t{blocks} * tiles_per_block * band_bytes);
  kernel<<<blocks, threads, shared_bytes, cudaStreamPerThread>>>(
      op, first, end, band_bytes, in_shared ? nullptr : raw(global_bands));
  synchronize();
}
#endif

/// Is sorted-and-solved key i one of its shard's bumped keys (a prefix of the shard's range)?
template <class Record>
struct is_bumped_op {
  layer_geometry g;
  std::uint64_t range_first;
  const Record* hashes;
  const std::uint64_t* offsets;
  const std::uint64_t* bumped_counts;
  RIBBON_HD bool operator()(std::uint64_t i) const {
    const std::uint64_t local = shard_of_op{g}(hashes[i]) - range_first;
    return i - offsets[local] < bumped_counts[local];
  }
};

/// Sorts records by hash (the order every builder solves a shard in). Records with values
/// are sorted by a comparison sort (thrust::sort); plain hashes by a radix sort.
void sort_hashes(device_vector<keyed_value>& records) {
  thrust::sort(exec(), records.begin(), records.end(), ribbon::detail::record_less{});
}

void sort_hashes(device_vector<std::uint64_t>& hashes) {
#if defined(RIBBON_GPU_ON_TBB)
  thrust::sort(exec(), hashes.begin(), hashes.end());
#else
  // cub::DeviceRadixSort, two-phase: ask for the temporary storage, then sort; the storage
  // and the second buffer come from the pool.
  const std::uint64_t n = hashes.size();
  if (n < 2) return;
  device_vector<std::uint64_t> alternate(n);
  cub::DoubleBuffer<std::uint64_t> buffers(raw(hashes), raw(alternate));
  const auto items = static_cast<std::int64_t>(n);
  const int all_bits = 64;
  std::size_t temp_bytes = 0;
  check(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, buffers, items, 0, all_bits,
                                       pipeline::build_stream()),
        "cub::DeviceRadixSort::SortKeys (size query)");
  device_vector<unsigned char> temp(temp_bytes);
  check(cub::DeviceRadixSort::SortKeys(raw(temp), temp_bytes, buffers, items, 0, all_bits,
                                       pipeline::build_stream()),
        "cub::DeviceRadixSort::SortKeys");
  if (buffers.Current() != raw(hashes)) hashes.swap(alternate);
#endif
}

/// Is record i (sorted) the second of an equal-hash pair with different values?
struct conflict_op {
  const keyed_value* records;
  RIBBON_HD bool operator()(std::uint64_t i) const {
    return ribbon::detail::conflicts_with_previous(records, i);
  }
};

/// Throws for a key given twice with different values (records sorted): the smallest such
/// hash, as the CPU builder reports.
void check_conflicts(const filter_params& p, const device_vector<keyed_value>& records) {
  const std::uint64_t n = records.size();
  if (n < 2) return;
  const auto first = thrust::counting_iterator<std::uint64_t>(1);
  const auto last = thrust::counting_iterator<std::uint64_t>(n);
  const auto at = thrust::find_if(exec(), first, last, conflict_op{raw(records)});
  if (at != last) {
    const keyed_value conflict = records[*at];
    ribbon::detail::throw_conflicting_values(p, conflict.hash);
  }
}

/// Sorts records by hash and keeps one of each repeated record (record_equal), so that every
/// layer sees distinct keys; throws for a key given with two values.
template <class Record>
void drop_repeats(const filter_params& p, device_vector<Record>& records,
                  device_build_stats& stats) {
  const auto start = clock_type::now();
  sort_hashes(records);
  if constexpr (std::is_same_v<Record, keyed_value>) check_conflicts(p, records);
  const auto end =
      thrust::unique(exec(), records.begin(), records.end(), ribbon::detail::record_equal{});
  records.resize(static_cast<std::uint64_t>(end - records.begin()));
  stats.sort_seconds += device_seconds_since(start);
}

std::uint64_t default_workspace_bytes() {
#if defined(RIBBON_GPU_ON_TBB)
  return std::uint64_t{64} << 20;
#else
  std::size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  return free_bytes / 4;
#endif
}

/// Builds every layer from the layer-0 records (hashes, or hashes with values) on the device:
/// the layer solver of ribbon::detail::build_layers(). The layers' sections stay on the
/// device until the build hands them over (hand_over()).
template <unsigned Width, class Result, class Record = std::uint64_t>
class device_builder {
 public:
  using word = ribbon::detail::word_t<Width>;

  device_builder(const filter_params& p, const layer_sizing& sizing, device_build_stats& stats,
                 const device_options& device, staging& stage)
      : p_(p),
        sizing_(sizing),
        stats_(stats),
        workspace_bytes_(device.workspace_bytes ? device.workspace_bytes
                                                : default_workspace_bytes()),
        stage_(stage) {}

  /// Builds every layer from the distinct layer-0 records `hashes`, sorted (drop_repeats),
  /// and returns the filter as `Out`: a ribbon::filter (host memory) or a device_filter.
  template <class Out>
  Out build(device_vector<Record>& hashes) {
    const std::uint64_t n = hashes.size();
    records_ = &hashes;
    ribbon::detail::build_layers(*this, p_, sizing_, 0, n, layers_, stats_);
    records_ = nullptr;
    stats_.layers = static_cast<std::uint32_t>(layers_.size());
    const auto start = clock_type::now();
    Out result = hand_over(n, static_cast<Out*>(nullptr));
    sections_.clear();
    stats_.download_seconds += device_seconds_since(start);
    return result;
  }

  // The layer solver (ribbon::detail::build_layers()) over *records_.

  void bumped(std::uint32_t l, format::layer_image& layer) {
    if (l > 0) remix_all(*records_, layer.salt);
    solve_layer(layer, *records_, l == 0, true);  // a bumped layer solves
  }

  /// Solving permutes the records but keeps them, so a failed try is undone by unmixing
  /// them in place.
  bool standard(format::layer_image& layer) {
    if (layer.salt != 0) remix_all(*records_, layer.salt);
    if (solve_layer(layer, *records_, layer.salt == 0, true)) return true;
    if (layer.salt != 0) {
      thrust::transform(exec(), records_->begin(), records_->end(), records_->begin(),
                        unmix_op{layer.salt});
    }
    return false;
  }

  bool plain(std::uint32_t, format::layer_image& layer) {
    device_vector<Record> hashes(*records_);
    remix_all(hashes, layer.salt);
    return solve_layer(layer, hashes, false, false);
  }

  void remix_all(device_vector<Record>& hashes, std::uint64_t salt) {
    thrust::transform(exec(), hashes.begin(), hashes.end(), hashes.begin(), remix_op{salt});
  }

  /// The sections of shards [first, end) of a layer, in device memory.
  struct range_sections {
    device_vector<std::uint64_t> thresholds;  // from the range's first threshold word
    device_vector<word> solution;             // from the range's first block
    device_vector<std::uint64_t> offsets;     // of each shard's keys, from `first`
    device_vector<std::uint64_t> bumped_counts;
  };

  bool solve_range(const layer_geometry& g, std::uint64_t first, std::uint64_t end,
                   device_vector<Record>& hashes, range_sections& out, bool sorted) {
    const std::uint64_t n = hashes.size();
    auto start = clock_type::now();
    if (!sorted) {
      sort_hashes(hashes);
      stats_.sort_seconds += device_seconds_since(start);
    }

    start = clock_type::now();
    const std::uint64_t shards = end - first;
    out.offsets.resize(shards + 1);
    const auto shard_of = thrust::make_transform_iterator(hashes.begin(), shard_of_op{g});
    thrust::lower_bound(exec(), shard_of, shard_of + static_cast<std::int64_t>(n),
                        thrust::counting_iterator<std::uint64_t>(first),
                        thrust::counting_iterator<std::uint64_t>(end + 1), out.offsets.begin());
    out.bumped_counts.assign(shards, 0);
    const std::uint64_t threshold_origin = g.shard_first_threshold_word(first, p_.bucket_size);
    const std::uint64_t block_origin = g.shard_first_block(first, Width);
    out.thresholds.resize(g.shard_first_threshold_word(end, p_.bucket_size) - threshold_origin);
    out.solution.resize(g.shard_range_solution_bytes(first, end, Width, p_.result_bits) /
                        sizeof(word));
    device_vector<int> failed(1, 0);

    const std::uint64_t columns = ribbon::detail::max_shard_columns(g, Width);
    using solve_op = solve_shard_op<Width, Result, Record>;
    const std::uint64_t band_bytes = solve_op::band::bytes(p_.bucket_size);
    // The TBB build gives each shard of a batch a band; the GPU gives each tile one on chip.
    const std::uint64_t band_per_shard = on_tbb ? band_bytes : 0;
    const std::uint64_t per_shard = columns * (sizeof(word) + sizeof(Result)) + band_per_shard;
    const std::uint64_t batch = std::clamp<std::uint64_t>(workspace_bytes_ / per_shard, 1,
                                                          std::max<std::uint64_t>(shards, 1));
    device_vector<word> coeffs(batch * columns);
    device_vector<Result> results(batch * columns);
    device_vector<unsigned char> bands(batch * band_per_shard);
    for (std::uint64_t batch_first = first; batch_first < end; batch_first += batch) {
      const std::uint64_t batch_end = std::min(end, batch_first + batch);
      const solve_op solve{p_,
                           g,
                           first,
                           batch_first,
                           raw(hashes),
                           raw(out.offsets),
                           raw(coeffs),
                           raw(results),
                           columns,
                           raw(out.thresholds),
                           threshold_origin,
                           raw(out.solution),
                           block_origin,
                           raw(out.bumped_counts),
                           raw(failed)};
      solve_shards(solve, batch_first, batch_end, raw(bands), band_bytes);
    }
    const bool solved = failed[0] == 0;
    stats_.solve_seconds += device_seconds_since(start);
    return solved;
  }

  /// Replaces `hashes` (a solved range) by its bumped keys.
  void compact_bumped(const layer_geometry& g, std::uint64_t first, device_vector<Record>& hashes,
                      const range_sections& sections) {
    const auto start = clock_type::now();
    device_vector<Record> next(hashes.size());
    const is_bumped_op<Record> bumped{g, first, raw(hashes), raw(sections.offsets),
                                      raw(sections.bumped_counts)};
    const auto end =
        thrust::copy_if(exec(), hashes.begin(), hashes.end(),
                        thrust::counting_iterator<std::uint64_t>(0), next.begin(), bumped);
    next.resize(static_cast<std::uint64_t>(end - next.begin()));
    next.shrink_to_fit();
    hashes.swap(next);
    stats_.compact_seconds += device_seconds_since(start);
  }

 private:
  /// A solved layer's sections, kept on the device until the build hands them over.
  struct layer_sections {
    device_vector<std::uint64_t> thresholds;
    device_vector<word> solution;
  };

  /// Solves a whole layer (salt and geometry in `layer`) over `hashes` and keeps its
  /// sections; with `pass_on`, replaces `hashes` by the bumped keys, the next layer's.
  /// Returns false, keeping nothing, if a shard failed (standard and plain layers).
  bool solve_layer(format::layer_image& layer, device_vector<Record>& hashes, bool sorted,
                   bool pass_on) {
    const layer_geometry& g = layer.geometry;
    range_sections sections;
    if (!solve_range(g, 0, g.num_shards(), hashes, sections, sorted)) return false;
    if (pass_on) {
      compact_bumped(g, 0, hashes, sections);
      layer.bumped_keys = hashes.size();
    }
    sections_.push_back({std::move(sections.thresholds), std::move(sections.solution)});
    return true;
  }

  /// The filter in host memory: each section copied once through the pinned staging and
  /// adopted as it is (no file image is assembled and no checksum computed: filter::save()
  /// computes them as it writes the sections).
  filter hand_over(std::uint64_t key_count, filter*) {
    auto host = std::make_shared<std::vector<std::vector<std::uint64_t>>>();
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      format::layer_image& layer = layers_[l];
      const layer_sections& device = sections_[l];
      host->emplace_back(device.thresholds.size());
      stage_.to_host(host->back().data(), raw(device.thresholds), host->back().size() * 8);
      layer.thresholds = device.thresholds.empty() ? nullptr : host->back().data();
      const std::uint64_t solution_bytes = device.solution.size() * sizeof(word);
      host->emplace_back((solution_bytes + 7) / 8);
      stage_.to_host(host->back().data(), raw(device.solution), solution_bytes);
      layer.solution = host->back().data();
    }
    return filter::adopt(p_, key_count, layers_, std::move(host));
  }

  /// The filter on the device: the sections copied, device to device, into its image.
  device_filter hand_over(std::uint64_t key_count, device_filter*) {
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      const layer_sections& device = sections_[l];
      layers_[l].thresholds = device.thresholds.empty() ? nullptr : raw(device.thresholds);
      layers_[l].solution = raw(device.solution);
    }
    const format::filter_image image{p_, key_count, layers_};
#if defined(RIBBON_GPU_ON_TBB)
    return device_filter(image);
#else
    return device_filter(image, pipeline::build_stream());
#endif
  }

  filter_params p_;
  layer_sizing sizing_;
  device_build_stats& stats_;
  std::uint64_t workspace_bytes_;
  staging& stage_;
  device_vector<Record>* records_ = nullptr;  // of the keys that reach the layer being built
  std::vector<format::layer_image> layers_;
  std::vector<layer_sections> sections_;  // by layer
};

/// Runs the pipeline for the parameters' width and result type; returns the filter as `Out`
/// (ribbon::filter or device_filter).
template <class Out, class Record>
Out run_pipeline(const filter_params& p, const build_options& options,
                 device_vector<Record>& hashes, device_build_stats& stats,
                 const device_options& device, staging& stage) {
  stats.input_keys = hashes.size();
  drop_repeats(p, hashes, stats);
  stats.distinct_keys = hashes.size();
  const layer_sizing sizing = ribbon::detail::sizing_from(options, p, hashes.size());
  return ribbon::detail::dispatch_layout(p, [&](auto width_tag, auto result_tag) {
    return device_builder<decltype(width_tag)::value, decltype(result_tag), Record>(
               p, sizing, stats, device, stage)
        .template build<Out>(hashes);
  });
}

/// Solves the shard ranges of an out-of-core build (ribbon::bulk_builder) on the device.
class device_range_solver final : public shard_range_solver {
 public:
  explicit device_range_solver(const device_options& device) : device_(device) {}
  ~device_range_solver() override { pipeline::release_idle_memory(); }

  std::uint64_t solve(const filter_params& p, const layer_geometry& g, std::uint64_t first,
                      std::uint64_t end, std::vector<std::uint64_t>& keys,
                      std::uint64_t* threshold_window, void* solution_window) override {
    std::unique_ptr<staging> stage = take_staging();
    std::uint64_t distinct = 0;
    ribbon::detail::dispatch_layout(p, [&](auto width_tag, auto result_tag) {
      using builder = device_builder<decltype(width_tag)::value, decltype(result_tag)>;
      using word = typename builder::word;
      device_build_stats stats;  // per call: calls come from several threads
      builder b(p, default_sizing(p.width), stats, device_, *stage);
      device_vector<std::uint64_t> hashes = pipeline::upload(*stage, keys.data(), keys.size());
      drop_repeats(p, hashes, stats);
      distinct = hashes.size();
      typename builder::range_sections sections;
      if (!b.solve_range(g, first, end, hashes, sections, true)) {
        throw error("internal error: a bumped layer failed to solve");
      }
      stage->to_host(threshold_window, raw(sections.thresholds), sections.thresholds.size() * 8);
      stage->to_host(solution_window, raw(sections.solution),
                     sections.solution.size() * sizeof(word));
      b.compact_bumped(g, first, hashes, sections);
      keys.resize(hashes.size());
      stage->to_host(keys.data(), raw(hashes), hashes.size() * 8);
    });
    give_back(std::move(stage));
    return distinct;
  }

  /// Two ranges at once: one's copies overlap the other's kernels.
  unsigned ranges_in_flight() const override { return 2; }

 private:
  /// Staging buffers are kept across ranges, one set per range in flight.
  std::unique_ptr<staging> take_staging() {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (idle_.empty()) return std::make_unique<staging>();
    std::unique_ptr<staging> stage = std::move(idle_.back());
    idle_.pop_back();
    return stage;
  }
  void give_back(std::unique_ptr<staging> stage) {
    const std::lock_guard<std::mutex> lock(mutex_);
    idle_.push_back(std::move(stage));
  }

  device_options device_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<staging>> idle_;
};

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

/// Throws, as ribbon::detail::check_values, for the first value that does not fit in r bits.
void check_device_values(const device_vector<std::uint32_t>& values, std::uint32_t result_bits) {
  const auto at = thrust::find_if(exec(), values.begin(), values.end(), too_wide_op{result_bits});
  if (at == values.end()) return;
  ribbon::detail::throw_value_too_wide(*at, static_cast<std::uint64_t>(at - values.begin()),
                                       result_bits);
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
  const filter_params p = ribbon::detail::params_from(options, key_kind::u64);
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
  const filter_params p = ribbon::detail::retrieval_params_from(options, key_kind::u64);
  return timed(stats, [&](device_build_stats& s, staging& stage) {
    auto start = clock_type::now();
    device_vector<std::uint64_t> hashes = to_device(stage, keys, count, where);
    const device_vector<std::uint32_t> device_values = to_device(stage, values, count, where);
    s.upload_seconds = device_seconds_since(start);
    start = clock_type::now();
    check_device_values(device_values, p.result_bits);
    thrust::transform(exec(), hashes.begin(), hashes.end(), hashes.begin(),
                      hash_u64_op{seed_mix(p.seed)});
    device_vector<keyed_value> records(count);
    thrust::transform(exec(), hashes.begin(), hashes.end(), device_values.begin(), records.begin(),
                      pair_op{});
    s.hash_seconds = device_seconds_since(start);
    return run_pipeline<Out>(p, options, records, s, device, stage);
  });
}

}  // namespace

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
  const filter_params p = ribbon::detail::params_from(options, key_kind::bytes);
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
  const filter_params p = ribbon::detail::params_from(options, keys);
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
  const filter_params p = ribbon::detail::params_from(options, keys);
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
  const filter_params p = ribbon::detail::retrieval_params_from(options, keys);
  ribbon::detail::check_values(values, count, p.result_bits);
  return timed(stats, [&](device_build_stats& s, staging& stage) {
    const auto start = clock_type::now();
    const device_vector<std::uint64_t> device_hashes = pipeline::upload(stage, hashes, count);
    const device_vector<std::uint32_t> device_values = pipeline::upload(stage, values, count);
    device_vector<keyed_value> records(count);
    thrust::transform(exec(), device_hashes.begin(), device_hashes.end(), device_values.begin(),
                      records.begin(), pair_op{});
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
