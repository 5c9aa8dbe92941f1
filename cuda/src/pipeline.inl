// The device build pipeline, written against Thrust. Included by builder.cu (nvcc, CUDA
// backend) and by builder_tbb.cpp (g++, Thrust's TBB backend, RIBBON_GPU_ON_TBB): one
// algorithm, two device systems. The per-shard work is common/'s shard solver, the file goes
// through common/'s format code.
#include <thrust/binary_search.h>
#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
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
#include <string>
#include <type_traits>
#include <vector>

#if !defined(RIBBON_GPU_ON_TBB)
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>

#include "ribbon/cuda/detail/check.hpp"
#include "ribbon/cuda/detail/tile.cuh"
#endif

#include "ribbon/cuda/builder.hpp"
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

template <class T>
using device_vector = thrust::device_vector<T>;

template <class T>
T* raw(device_vector<T>& v) {
  return thrust::raw_pointer_cast(v.data());
}
template <class T>
const T* raw(const device_vector<T>& v) {
  return thrust::raw_pointer_cast(v.data());
}

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
  check(cudaStreamSynchronize(cudaStreamPerThread), "cudaStreamSynchronize");
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

/// Is record i (sorted) the second of an equal-hash pair with different values?
struct conflict_op {
  const keyed_value* records;
  RIBBON_HD bool operator()(std::uint64_t i) const {
    return ribbon::detail::conflicts_with_previous(records, i);
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
  thrust::for_each(thrust::device, thrust::counting_iterator<std::uint64_t>(first),
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
  thrust::device_vector<unsigned char> global_bands(
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
  thrust::sort(thrust::device, records.begin(), records.end(), ribbon::detail::record_less{});
}

void sort_hashes(device_vector<std::uint64_t>& hashes) {
#if defined(RIBBON_GPU_ON_TBB)
  thrust::sort(thrust::device, hashes.begin(), hashes.end());
#else
  // cub::DeviceRadixSort, two-phase: ask for the temporary storage, then sort.
  const std::uint64_t n = hashes.size();
  if (n < 2) return;
  device_vector<std::uint64_t> alternate(n);
  cub::DoubleBuffer<std::uint64_t> buffers(raw(hashes), raw(alternate));
  std::size_t temp_bytes = 0;
  check(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, buffers, static_cast<std::int64_t>(n)),
        "cub::DeviceRadixSort::SortKeys (size query)");
  device_vector<unsigned char> temp(temp_bytes);
  check(
      cub::DeviceRadixSort::SortKeys(raw(temp), temp_bytes, buffers, static_cast<std::int64_t>(n)),
      "cub::DeviceRadixSort::SortKeys");
  if (buffers.Current() != raw(hashes)) hashes.swap(alternate);
  synchronize();
#endif
}

/// Throws for a key given twice with different values (records sorted): the smallest such
/// hash, as the CPU builder reports.
void check_conflicts(const filter_params& p, const device_vector<keyed_value>& records) {
  const std::uint64_t n = records.size();
  if (n < 2) return;
  const auto first = thrust::counting_iterator<std::uint64_t>(1);
  const auto last = thrust::counting_iterator<std::uint64_t>(n);
  const auto at = thrust::find_if(thrust::device, first, last, conflict_op{raw(records)});
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
  const auto end = thrust::unique(thrust::device, records.begin(), records.end(),
                                  ribbon::detail::record_equal{});
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

/// Builds every layer from the layer-0 records (hashes, or hashes with values) on the device.
template <unsigned Width, class Result, class Record = std::uint64_t>
class device_builder {
 public:
  using word = ribbon::detail::word_t<Width>;

  device_builder(const filter_params& p, const layer_sizing& sizing, device_build_stats& stats,
                 const device_options& device)
      : p_(p),
        sizing_(sizing),
        stats_(stats),
        workspace_bytes_(device.workspace_bytes ? device.workspace_bytes
                                                : default_workspace_bytes()) {}

  /// Builds every layer from the distinct layer-0 records `hashes`, sorted (drop_repeats).
  filter build(device_vector<Record>& hashes) {
    const std::uint64_t n = hashes.size();
    std::uint64_t remaining = n;
    for (std::uint32_t l = 0; remaining > 0; ++l) {
      format::layer_image layer;
      layer.input_keys = remaining;
      if (is_plain_layer(l, remaining, p_, sizing_)) {
        plain_layer(l, hashes, layer);
        remaining = 0;
      } else if (l == 0 && !uses_bumping(p_.variant)) {
        standard_layer(hashes, layer);
        remaining = layer.bumped_keys;
      } else {
        layer.salt = bumped_layer_salt(p_.seed, l);
        if (l > 0) remix_all(hashes, layer.salt);
        layer.geometry = bumped_layer_geometry(remaining, p_, sizing_);
        range_sections sections;
        solve_layer(layer, hashes, sections, l == 0);
        compact_bumped(layer.geometry, 0, hashes, sections);  // the next layer's keys
        layer.bumped_keys = hashes.size();
        remaining = layer.bumped_keys;
      }
      layers_.push_back(layer);
    }
    stats_.layers = static_cast<std::uint32_t>(layers_.size());
    return download(n);
  }

  void remix_all(device_vector<Record>& hashes, std::uint64_t salt) {
    thrust::transform(thrust::device, hashes.begin(), hashes.end(), hashes.begin(), remix_op{salt});
  }

  /// The sections of shards [first, end) of a layer, in device memory.
  struct range_sections {
    device_vector<std::uint64_t> thresholds;  // from the range's first threshold word
    device_vector<word> solution;             // from the range's first block
    device_vector<std::uint64_t> offsets;     // of each shard's keys, from `first`
    device_vector<std::uint64_t> bumped_counts;
  };

  /// Sorts `hashes` (all in shards [first, end) of `g`) unless `sorted`, finds the shard
  /// boundaries and solves the shards, in batches that fit the workspace. Returns false if a
  /// plain layer failed.
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
    thrust::lower_bound(thrust::device, shard_of, shard_of + static_cast<std::int64_t>(n),
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
        thrust::copy_if(thrust::device, hashes.begin(), hashes.end(),
                        thrust::counting_iterator<std::uint64_t>(0), next.begin(), bumped);
    next.resize(static_cast<std::uint64_t>(end - next.begin()));
    next.shrink_to_fit();
    hashes.swap(next);
    stats_.compact_seconds += device_seconds_since(start);
  }

 private:
  /// Solves a whole layer and keeps its sections in host memory. Returns false if a plain
  /// layer failed.
  bool solve_layer(format::layer_image& layer, device_vector<Record>& hashes,
                   range_sections& sections, bool sorted) {
    const layer_geometry& g = layer.geometry;
    if (!solve_range(g, 0, g.num_shards(), hashes, sections, sorted)) return false;
    const auto start = clock_type::now();
    host_sections_.emplace_back(sections.thresholds.size());
    thrust::copy(sections.thresholds.begin(), sections.thresholds.end(),
                 host_sections_.back().begin());
    layer.thresholds = sections.thresholds.empty() ? nullptr : host_sections_.back().data();
    const std::uint64_t solution_bytes = g.solution_bytes(p_.width, p_.result_bits);
    host_sections_.emplace_back((solution_bytes + 7) / 8);
    thrust::copy(sections.solution.begin(), sections.solution.end(),
                 reinterpret_cast<word*>(host_sections_.back().data()));
    layer.solution = host_sections_.back().data();
    stats_.download_seconds += device_seconds_since(start);
    return true;
  }

  /// The final plain layer: a fresh salt per try, more slots from the fifth try on.
  /// Standard (or homogeneous) layer 0, tried whole with a fresh salt per try until every
  /// shard solves; `hashes` becomes the shard-head keys' layer-0 records. Solving permutes
  /// the records but keeps them, so a failed try is undone by unmixing them in place.
  void standard_layer(device_vector<Record>& hashes, format::layer_image& layer) {
    const std::uint64_t n = hashes.size();
    for (std::uint32_t attempt = 0;; ++attempt) {
      const standard_layer_try next = standard_layer_attempt(n, p_, sizing_, attempt);
      layer.salt = next.salt;
      layer.geometry = next.geometry;
      if (next.salt != 0) remix_all(hashes, next.salt);
      range_sections sections;
      if (solve_layer(layer, hashes, sections, next.salt == 0)) {
        stats_.standard_attempts = attempt + 1;
        compact_bumped(layer.geometry, 0, hashes, sections);
        layer.bumped_keys = hashes.size();
        return;
      }
      if (next.salt != 0) {
        thrust::transform(thrust::device, hashes.begin(), hashes.end(), hashes.begin(),
                          unmix_op{next.salt});
      }
    }
  }

  void plain_layer(std::uint32_t l, const device_vector<Record>& previous,
                   format::layer_image& layer) {
    layer.bumped_keys = 0;
    for (std::uint32_t attempt = 0;; ++attempt) {
      const plain_layer_try next = plain_layer_attempt(l, previous.size(), p_, sizing_, attempt);
      layer.salt = next.salt;
      layer.geometry = next.geometry;
      device_vector<Record> hashes(previous);
      remix_all(hashes, layer.salt);
      range_sections sections;
      if (solve_layer(layer, hashes, sections, false)) {
        stats_.plain_layer_attempts = attempt + 1;
        return;
      }
    }
  }

  /// The file image through the format code, adopted by a host filter.
  filter download(std::uint64_t key_count) {
    const auto start = clock_type::now();
    const format::filter_image image{p_, key_count, layers_};
    const std::vector<unsigned char> bytes = format::serialize(image);
    filter f = filter::from_bytes(bytes.data(), bytes.size());
    stats_.download_seconds += device_seconds_since(start);
    return f;
  }

  filter_params p_;
  layer_sizing sizing_;
  device_build_stats& stats_;
  std::uint64_t workspace_bytes_;
  std::vector<format::layer_image> layers_;
  std::vector<std::vector<std::uint64_t>> host_sections_;
};

/// Calls f(std::integral_constant<unsigned, W>{}, Result{}) for the parameters' width and
/// the narrowest result type holding the solver's bits.
template <class F>
decltype(auto) with_layout(const filter_params& p, F&& f) {
  auto with_width = [&](auto width_tag) -> decltype(auto) {
    if (p.solver_bits() <= 8) return f(width_tag, std::uint8_t{});
    if (p.solver_bits() <= 16) return f(width_tag, std::uint16_t{});
    return f(width_tag, std::uint32_t{});
  };
  switch (p.width) {
    case 32: return with_width(std::integral_constant<unsigned, 32>{});
    case 64: return with_width(std::integral_constant<unsigned, 64>{});
    default: return with_width(std::integral_constant<unsigned, 128>{});
  }
}

/// Runs the pipeline for the parameters' width and result type.
template <class Record>
filter build_layers(const filter_params& p, const build_options& options,
                    device_vector<Record>& hashes, device_build_stats& stats,
                    const device_options& device) {
  stats.input_keys = hashes.size();
  drop_repeats(p, hashes, stats);
  stats.distinct_keys = hashes.size();
  const layer_sizing sizing = ribbon::detail::sizing_from(options, p, hashes.size());
  return with_layout(p, [&](auto width_tag, auto result_tag) {
    return device_builder<decltype(width_tag)::value, decltype(result_tag), Record>(p, sizing,
                                                                                    stats, device)
        .build(hashes);
  });
}

/// Solves the shard ranges of an out-of-core build (ribbon::bulk_builder) on the device.
class device_range_solver final : public shard_range_solver {
 public:
  explicit device_range_solver(const device_options& device) : device_(device) {}

  std::uint64_t solve(const filter_params& p, const layer_geometry& g, std::uint64_t first,
                      std::uint64_t end, std::vector<std::uint64_t>& keys,
                      std::uint64_t* threshold_window, void* solution_window) override {
    std::uint64_t distinct = 0;
    with_layout(p, [&](auto width_tag, auto result_tag) {
      using builder = device_builder<decltype(width_tag)::value, decltype(result_tag)>;
      using word = typename builder::word;
      device_build_stats stats;  // per call: calls come from several threads
      builder b(p, default_sizing(p.width), stats, device_);
      device_vector<std::uint64_t> hashes(keys.begin(), keys.end());
      drop_repeats(p, hashes, stats);
      distinct = hashes.size();
      typename builder::range_sections sections;
      if (!b.solve_range(g, first, end, hashes, sections, true)) {
        throw error("internal error: a bumped layer failed to solve");
      }
      thrust::copy(sections.thresholds.begin(), sections.thresholds.end(), threshold_window);
      thrust::copy(sections.solution.begin(), sections.solution.end(),
                   static_cast<word*>(solution_window));
      b.compact_bumped(g, first, hashes, sections);
      keys.resize(hashes.size());
      thrust::copy(hashes.begin(), hashes.end(), keys.begin());
    });
    return distinct;
  }

  /// Two ranges at once: one's copies overlap the other's kernels.
  unsigned ranges_in_flight() const override { return 2; }

 private:
  device_options device_;
};

/// A device copy of `count` elements in host or device memory (`what` names them in errors).
template <class T>
device_vector<T> to_device(const T* data, std::uint64_t count, memory where, const char* what) {
  device_vector<T> copy(count);
  if (count == 0) return copy;
#if defined(RIBBON_GPU_ON_TBB)
  (void)where, (void)what;
  thrust::copy(data, data + count, copy.begin());
#else
  check(cudaMemcpy(raw(copy), data, count * sizeof(T),
                   where == memory::host ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice),
        (std::string("cudaMemcpy (") + what + ")").c_str());
#endif
  return copy;
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
  const auto at =
      thrust::find_if(thrust::device, values.begin(), values.end(), too_wide_op{result_bits});
  if (at == values.end()) return;
  ribbon::detail::throw_value_too_wide(*at, static_cast<std::uint64_t>(at - values.begin()),
                                       result_bits);
}

/// Times the whole build into stats (if given).
template <class F>
filter timed(device_build_stats* stats, F&& f) {
  device_build_stats local;
  device_build_stats& s = stats ? *stats : local;
  s = device_build_stats{};
  const auto start = clock_type::now();
  filter result = f(s);
  s.total_seconds = device_seconds_since(start);
  return result;
}

}  // namespace

filter build(const std::uint64_t* keys, std::uint64_t count, const build_options& options,
             memory where, device_build_stats* stats, const device_options& device) {
  const filter_params p = ribbon::detail::params_from(options, key_kind::u64);
  return timed(stats, [&](device_build_stats& s) {
    auto start = clock_type::now();
    device_vector<std::uint64_t> hashes = to_device(keys, count, where, "keys");
    s.upload_seconds = device_seconds_since(start);
    start = clock_type::now();
    thrust::transform(thrust::device, hashes.begin(), hashes.end(), hashes.begin(),
                      hash_u64_op{seed_mix(p.seed)});
    s.hash_seconds = device_seconds_since(start);
    return build_layers(p, options, hashes, s, device);
  });
}

filter build(const std::string_view* keys, std::uint64_t count, const build_options& options,
             device_build_stats* stats, const device_options& device) {
  const filter_params p = ribbon::detail::params_from(options, key_kind::bytes);
  return timed(stats, [&](device_build_stats& s) {
    auto start = clock_type::now();
    std::vector<std::uint64_t> offsets(count + 1, 0);
    for (std::uint64_t i = 0; i < count; ++i) offsets[i + 1] = offsets[i] + keys[i].size();
    std::vector<unsigned char> bytes(offsets[count]);
    for (std::uint64_t i = 0; i < count; ++i) {
      std::copy(keys[i].begin(), keys[i].end(),
                bytes.begin() + static_cast<std::int64_t>(offsets[i]));
    }
    const device_vector<std::uint64_t> device_offsets(offsets.begin(), offsets.end());
    const device_vector<unsigned char> device_bytes(bytes.begin(), bytes.end());
    s.upload_seconds = device_seconds_since(start);
    start = clock_type::now();
    device_vector<std::uint64_t> hashes(count);
    thrust::transform(thrust::device, thrust::counting_iterator<std::uint64_t>(0),
                      thrust::counting_iterator<std::uint64_t>(count), hashes.begin(),
                      hash_bytes_op{raw(device_bytes), raw(device_offsets), p.seed});
    s.hash_seconds = device_seconds_since(start);
    return build_layers(p, options, hashes, s, device);
  });
}

filter build_from_hashes(const std::uint64_t* hashes, std::uint64_t count, key_kind keys,
                         const build_options& options, device_build_stats* stats,
                         const device_options& device) {
  const filter_params p = ribbon::detail::params_from(options, keys);
  return timed(stats, [&](device_build_stats& s) {
    const auto start = clock_type::now();
    device_vector<std::uint64_t> device_hashes(hashes, hashes + count);
    s.upload_seconds = device_seconds_since(start);
    return build_layers(p, options, device_hashes, s, device);
  });
}

filter build_from_hashes(std::uint64_t count,
                         const std::function<void(const hash_visitor&)>& hashes, key_kind keys,
                         const build_options& options, device_build_stats* stats,
                         const device_options& device) {
  const filter_params p = ribbon::detail::params_from(options, keys);
  return timed(stats, [&](device_build_stats& s) {
    const auto start = clock_type::now();
    device_vector<std::uint64_t> device_hashes(count);
    std::uint64_t filled = 0;
    hashes([&](const std::uint64_t* chunk, std::uint64_t n) {
      if (n > count - filled) throw error("build_from_hashes: more hashes than announced");
      thrust::copy(chunk, chunk + n, device_hashes.begin() + static_cast<std::int64_t>(filled));
      filled += n;
    });
    if (filled != count) throw error("build_from_hashes: fewer hashes than announced");
    s.upload_seconds = device_seconds_since(start);
    return build_layers(p, options, device_hashes, s, device);
  });
}

filter build(const std::uint64_t* keys, const std::uint32_t* values, std::uint64_t count,
             const build_options& options, memory where, device_build_stats* stats,
             const device_options& device) {
  const filter_params p = ribbon::detail::retrieval_params_from(options, key_kind::u64);
  return timed(stats, [&](device_build_stats& s) {
    auto start = clock_type::now();
    device_vector<std::uint64_t> hashes = to_device(keys, count, where, "keys");
    const device_vector<std::uint32_t> device_values = to_device(values, count, where, "values");
    s.upload_seconds = device_seconds_since(start);
    start = clock_type::now();
    check_device_values(device_values, p.result_bits);
    thrust::transform(thrust::device, hashes.begin(), hashes.end(), hashes.begin(),
                      hash_u64_op{seed_mix(p.seed)});
    device_vector<keyed_value> records(count);
    thrust::transform(thrust::device, hashes.begin(), hashes.end(), device_values.begin(),
                      records.begin(), pair_op{});
    s.hash_seconds = device_seconds_since(start);
    return build_layers(p, options, records, s, device);
  });
}

filter build_from_hashes(const std::uint64_t* hashes, const std::uint32_t* values,
                         std::uint64_t count, key_kind keys, const build_options& options,
                         device_build_stats* stats, const device_options& device) {
  const filter_params p = ribbon::detail::retrieval_params_from(options, keys);
  ribbon::detail::check_values(values, count, p.result_bits);
  return timed(stats, [&](device_build_stats& s) {
    const auto start = clock_type::now();
    const device_vector<std::uint64_t> device_hashes(hashes, hashes + count);
    const device_vector<std::uint32_t> device_values(values, values + count);
    device_vector<keyed_value> records(count);
    thrust::transform(thrust::device, device_hashes.begin(), device_hashes.end(),
                      device_values.begin(), records.begin(), pair_op{});
    s.upload_seconds = device_seconds_since(start);
    return build_layers(p, options, records, s, device);
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
