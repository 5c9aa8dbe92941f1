/// @file summary.hpp
/// What a filter file holds, costs and promises, computed in one place: the figures that
/// `ribbon info`, Python's Filter.info() and the benchmarks print.
#pragma once

#include <cstdint>
#include <vector>

#include "ribbon/format.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"

namespace ribbon {

/// The kind's name as `ribbon info` spells it: "bumped", "plain" or "standard".
const char* layer_kind_name(layer_kind kind);

/// One layer of a filter_summary.
struct layer_summary {
  layer_kind kind = layer_kind::bumped;
  std::uint64_t starts = 0;  ///< start positions
  std::uint64_t shards = 0;
  std::uint64_t buckets = 0;
  std::uint64_t salt = 0;
  std::uint64_t input_keys = 0;   ///< keys that reached this layer
  std::uint64_t bumped_keys = 0;  ///< keys passed on to the next layer
  double bumped_fraction = 0;     ///< bumped_keys / input_keys (0 without keys)
  std::uint64_t threshold_bytes = 0;
  std::uint64_t solution_bytes = 0;
};

/// A filter's parameters, size and accuracy.
struct filter_summary {
  filter_params params;
  std::uint32_t format_version = 0;
  bool compact_layout = false;  ///< the compact layout of small filters (version 5)
  threshold_encoding threshold_codes = threshold_encoding::one_plus_bit;
  std::uint64_t key_count = 0;    ///< distinct keys (filter sets: distinct (group, key) pairs)
  std::uint64_t group_count = 0;  ///< filter sets (params.groups): distinct groups with keys
  std::uint32_t features = 0;     ///< format::feature_bits the file needs
  bool has_group_names = false;   ///< filter sets: the names section (version 7)
  std::uint64_t group_names = 0;  ///< its names (groups without keys too)
  bool has_metadata = false;      ///< the metadata section (version 7)
  std::uint64_t metadata_bytes = 0;
  std::uint64_t file_bytes = 0;
  bool retrieval = false;
  double bits_per_key = 0;  ///< file bytes (header included) * 8 / key_count; 0 without keys
  double expected_fpr = 0;  ///< filters: 2^-r, or the target of fractional bits per key
  /// Filters: -log2(expected_fpr) (r, or about r + f with fractional bits); retrieval: r, the
  /// value bits. The overhead is measured against it.
  double ideal_bits_per_key = 0;
  double overhead_pct = 0;        ///< bits_per_key over ideal_bits_per_key, %; 0 without keys
  double extra_bit_fraction = 0;  ///< fraction of blocks with r + 1 bits
  std::vector<layer_summary> layers;
};

/// The summary of the file of `image`, written in format version `format_version`.
filter_summary summarize(const format::filter_image& image, std::uint32_t format_version);

}  // namespace ribbon
