/// @file summary.hpp
/// What a filter file holds, costs and promises, computed in one place: the figures that
/// `ribbon info`, Python's Filter.info() and the benchmarks print.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
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

/// A summary figure with the printf format `ribbon info --json` writes it in (Python keeps the
/// double).
struct summary_number {
  double value;
  const char* format;
};

/// Calls f(name, value) for each field of a layer's summary (number `index`), in the order
/// and with the names of `ribbon info --json` and Python's Filter.info(): value is a
/// std::uint64_t, a summary_number or a std::string.
template <class F>
void for_each_field(std::size_t index, const layer_summary& layer, F&& f) {
  f("index", std::uint64_t{index});
  f("kind", std::string(layer_kind_name(layer.kind)));
  f("starts", layer.starts);
  f("shards", layer.shards);
  f("buckets", layer.buckets);
  f("salt", layer.salt);
  f("input_keys", layer.input_keys);
  f("bumped_keys", layer.bumped_keys);
  f("bumped_fraction", summary_number{layer.bumped_fraction, "%.6f"});
  f("threshold_bytes", layer.threshold_bytes);
  f("solution_bytes", layer.solution_bytes);
}

/// Calls f(name, value) for each field of a filter's summary but its layers, as
/// for_each_field() of a layer does; value may also be nullptr (JSON null, Python None): a
/// figure the file does not have.
template <class F>
void for_each_field(const filter_summary& x, F&& f) {
  const filter_params& p = x.params;
  auto count_or_null = [&](const char* name, bool present, std::uint64_t value) {
    if (present) {
      f(name, value);
    } else {
      f(name, nullptr);
    }
  };
  f("file_bytes", x.file_bytes);
  f("format_version", std::uint64_t{x.format_version});
  f("layout", std::string(x.compact_layout ? "compact" : "standard"));
  f("variant", std::string(variant_name(p.variant)));
  f("key_kind", std::string(key_kind_name(p.keys)));
  f("width", std::uint64_t{p.width});
  f("result_bits", std::uint64_t{p.result_bits});
  f("check_bits", std::uint64_t{p.check_bits});
  f("extra_bit_fraction", summary_number{x.extra_bit_fraction, "%.6f"});
  f("bucket_size", std::uint64_t{p.bucket_size});
  f("threshold_light", std::uint64_t{p.threshold_light});
  f("threshold_heavy", std::uint64_t{p.threshold_heavy});
  f("threshold_encoding", std::string(threshold_encoding_name(x.threshold_codes)));
  f("shard_size", std::uint64_t{p.shard_size});
  f("seed", std::uint64_t{p.seed});
  f("key_count", x.key_count);
  f("group_kind", std::string(group_kind_name(p.groups)));
  f("group_count", x.group_count);
  count_or_null("group_names", x.has_group_names, x.group_names);
  count_or_null("metadata_bytes", x.has_metadata, x.metadata_bytes);
  f("features", format::feature_names(x.features));
  f("num_layers", std::uint64_t{x.layers.size()});
  f("bits_per_key", summary_number{x.bits_per_key, "%.6f"});
  f("ideal_bits_per_key", summary_number{x.ideal_bits_per_key, "%.6f"});
  f("overhead_pct", summary_number{x.overhead_pct, "%.4f"});
  if (x.retrieval) {
    f("expected_fpr", nullptr);
  } else {
    f("expected_fpr", summary_number{x.expected_fpr, "%.10g"});
  }
}

}  // namespace ribbon
