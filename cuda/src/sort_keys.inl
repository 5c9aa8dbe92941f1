// Sorting and deduplication, the device pipeline's first stage after hashing (pipeline.inl):
// records sorted by hash (a radix sort on CUDA), repeats dropped, conflicting values reported
// as the CPU builder reports them.
#pragma once

#include <thrust/find.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/sort.h>
#include <thrust/unique.h>

#include <cstdint>
#include <type_traits>

#if !defined(RIBBON_GPU_ON_TBB)
#include <cub/device/device_radix_sort.cuh>
#endif

#include "pipeline_backend.inl"
#include "ribbon/config.hpp"
#include "ribbon/detail/records.hpp"
#include "ribbon/params.hpp"

namespace ribbon::cuda {
inline namespace RIBBON_GPU_BACKEND {
namespace {

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

}  // namespace
}  // namespace RIBBON_GPU_BACKEND
}  // namespace ribbon::cuda
