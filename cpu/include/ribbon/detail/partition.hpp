/// @file partition.hpp
/// CPU building blocks of a layer build: grouping hashes by shard (parallel, oneTBB) and
/// sorting one shard's hashes.
#pragma once

#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "ribbon/detail/records.hpp"
#include "ribbon/detail/shard_solver.hpp"
#include "ribbon/hash.hpp"
#include "ribbon/layer.hpp"

namespace ribbon::detail {

/// Keys per chunk of the partition passes: enough work per task, few histograms.
inline std::uint64_t partition_chunk_size(std::uint64_t n) {
  return std::max<std::uint64_t>(std::uint64_t{1} << 16, divide_round_up(n, 256));
}

/// Whether a source has a sequential() reader (see sequential_reader).
template <class Source, class = void>
struct has_sequential_reader : std::false_type {};
template <class Source>
struct has_sequential_reader<Source,
                             std::void_t<decltype(std::declval<const Source&>().sequential())>>
    : std::true_type {};

/// What a partition pass calls for source(i) as i goes up by one through a chunk:
/// source.sequential(), a reader that may keep what neighbouring records share (a set's pairs
/// share their group's hash within a run of the group), where the source has one; else the
/// source itself. Either gives source(i) for every i, in any order of calls.
template <class Source>
auto sequential_reader(const Source& source) {
  if constexpr (has_sequential_reader<Source>::value) {
    return source.sequential();
  } else {
    return [&source](std::uint64_t i) { return source(i); };
  }
}

/// Scatters source(i), i < n, into `out` grouped by shard (MSD partition), for hashes whose
/// shards all lie in [first_shard, end_shard) (a shard range of an out-of-core build; the
/// whole layer otherwise). Two passes over the source (count, then scatter) so that no second
/// n-sized buffer is needed: recomputing a hash is cheaper than the memory. shard_offsets gets
/// end_shard - first_shard + 1 entries, shard s's hashes at [offsets[s - first_shard], ...).
template <class Source, class Record>
void partition_shard_range(std::uint64_t n, const Source& source, const layer_geometry& g,
                           std::uint64_t first_shard, std::uint64_t end_shard, Record* out,
                           std::vector<std::uint64_t>& shard_offsets, double* count_seconds,
                           double* scatter_seconds) {
  const std::uint64_t shards = end_shard - first_shard;
  const std::uint64_t chunk = partition_chunk_size(n);
  const std::uint64_t chunks = divide_round_up(n, chunk);
  if (shards == 1) {  // nothing to group (a small filter's layer): one pass, each hash once
    const auto start = std::chrono::steady_clock::now();
    tbb::parallel_for(std::uint64_t{0}, chunks, [&](std::uint64_t c) {
      auto read = sequential_reader(source);
      const std::uint64_t end = std::min(n, (c + 1) * chunk);
      for (std::uint64_t i = c * chunk; i < end; ++i) out[i] = read(i);
    });
    shard_offsets.assign({0, n});
    if (scatter_seconds) {
      *scatter_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    return;
  }
  std::vector<std::uint64_t> counts(chunks * shards, 0);
  auto shard_of = [&](const Record& r) { return g.shard_of(record_hash(r)) - first_shard; };
  auto start = std::chrono::steady_clock::now();
  tbb::parallel_for(std::uint64_t{0}, chunks, [&](std::uint64_t c) {
    std::uint64_t* row = counts.data() + c * shards;
    auto read = sequential_reader(source);
    const std::uint64_t end = std::min(n, (c + 1) * chunk);
    for (std::uint64_t i = c * chunk; i < end; ++i) ++row[shard_of(read(i))];
  });
  shard_offsets.assign(shards + 1, 0);
  std::uint64_t total = 0;
  for (std::uint64_t s = 0; s < shards; ++s) {
    shard_offsets[s] = total;
    for (std::uint64_t c = 0; c < chunks; ++c) {
      const std::uint64_t count = counts[c * shards + s];
      counts[c * shards + s] = total;
      total += count;
    }
  }
  shard_offsets[shards] = total;
  if (count_seconds)
    *count_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  start = std::chrono::steady_clock::now();
  tbb::parallel_for(std::uint64_t{0}, chunks, [&](std::uint64_t c) {
    std::uint64_t* cursor = counts.data() + c * shards;
    auto read = sequential_reader(source);
    const std::uint64_t end = std::min(n, (c + 1) * chunk);
    for (std::uint64_t i = c * chunk; i < end; ++i) {
      const Record r = read(i);
      out[cursor[shard_of(r)]++] = r;
    }
  });
  if (scatter_seconds)
    *scatter_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// partition_shard_range() over every shard of the layer.
template <class Source, class Record>
void partition_by_shard(std::uint64_t n, const Source& source, const layer_geometry& g, Record* out,
                        std::vector<std::uint64_t>& shard_offsets, double* count_seconds,
                        double* scatter_seconds) {
  partition_shard_range(n, source, g, 0, g.num_shards(), out, shard_offsets, count_seconds,
                        scatter_seconds);
}

/// Shard offsets of `n` records sorted by hash, for geometry `g` (shard_of is monotone in the
/// hash, so a sorted array is grouped by shard for any geometry): num_shards() + 1 entries.
template <class Record>
std::vector<std::uint64_t> sorted_shard_offsets(const Record* sorted, std::uint64_t n,
                                                const layer_geometry& g) {
  std::vector<std::uint64_t> offsets(g.num_shards() + 1, n);
  tbb::parallel_for(std::uint64_t{0}, g.num_shards(), [&](std::uint64_t shard) {
    const Record* at = std::partition_point(
        sorted, sorted + n, [&](const Record& r) { return g.shard_of(record_hash(r)) < shard; });
    offsets[shard] = static_cast<std::uint64_t>(at - sorted);
  });
  return offsets;
}

/// Orders [first, last) by hash: insertion sort for the few records of a typical bin, a
/// comparison sort for a crowded one (repeated or adversarial keys), so never quadratic.
template <class Record>
void sort_bin(Record* first, Record* last) {
  constexpr std::ptrdiff_t insertion_limit = 48;
  if (last - first > insertion_limit) {
    std::sort(first, last, record_less{});
    return;
  }
  for (Record* i = first + 1; i < last; ++i) {
    const Record v = *i;
    Record* j = i;
    for (; j > first && record_hash(j[-1]) > record_hash(v); --j) *j = j[-1];
    *j = v;
  }
}

/// Sorts a shard's records by hash. One counting-sort pass into bins of the local start's top
/// bits (about 4 records a bin; the start is monotone in the hash), then each bin on its own
/// (sort_bin): one pass over the records fewer than an LSD radix sort on the whole start.
template <class Record>
void sort_shard(Record* h, std::uint64_t count, const layer_geometry& g, std::uint64_t shard,
                std::vector<Record>& scratch) {
  const std::uint64_t begin = g.shard_begin(shard);
  const std::uint64_t span = g.shard_end(shard) - begin;
  constexpr unsigned max_bin_bits = 15;  // a 256 KiB histogram, in L2
  if (count < 64 || span <= 1) {
    sort_bin(h, h + count);
    return;
  }
  const auto start_bits = static_cast<unsigned>(floor_log2(span - 1)) + 1;
  const unsigned bin_bits =
      std::min<unsigned>({start_bits, max_bin_bits, static_cast<unsigned>(floor_log2(count / 4))});
  const unsigned shift = start_bits - bin_bits;
  const std::uint64_t bins = std::uint64_t{1} << bin_bits;
  std::vector<std::uint64_t> histogram(bins, 0);
  auto bin_of = [&](const Record& r) { return local_start(record_hash(r), g, begin) >> shift; };
  for (std::uint64_t i = 0; i < count; ++i) ++histogram[bin_of(h[i])];
  std::uint64_t sum = 0;
  for (std::uint64_t b = 0; b < bins; ++b) {
    const std::uint64_t c = histogram[b];
    histogram[b] = sum;
    sum += c;
  }
  if (scratch.size() < count) scratch.resize(count);
  Record* out = scratch.data();
  for (std::uint64_t i = 0; i < count; ++i) out[histogram[bin_of(h[i])]++] = h[i];
  // histogram[b] is now the end of bin b.
  std::uint64_t first = 0;
  for (std::uint64_t b = 0; b < bins; ++b) {
    sort_bin(out + first, out + histogram[b]);
    first = histogram[b];
  }
  std::memcpy(h, out, count * sizeof(Record));
}

}  // namespace ribbon::detail
