#include "info.hpp"

#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace ribbon::python {
namespace {

nb::dict layer_info(std::size_t index, const layer_summary& layer) {
  nb::dict e;
  e["index"] = index;
  e["kind"] = layer_kind_name(layer.kind);
  e["starts"] = layer.starts;
  e["shards"] = layer.shards;
  e["buckets"] = layer.buckets;
  e["salt"] = layer.salt;
  e["input_keys"] = layer.input_keys;
  e["bumped_keys"] = layer.bumped_keys;
  e["bumped_fraction"] = layer.bumped_fraction;
  e["threshold_bytes"] = layer.threshold_bytes;
  e["solution_bytes"] = layer.solution_bytes;
  return e;
}

}  // namespace

nb::dict info(const filter& f) {
  const filter_summary x = summarize(f);
  const filter_params& p = x.params;
  nb::dict d;
  d["file_bytes"] = x.file_bytes;
  d["format_version"] = x.format_version;
  d["layout"] = x.compact_layout ? "compact" : "standard";
  d["variant"] = variant_name(p.variant);
  d["key_kind"] = key_kind_name(p.keys);
  d["width"] = p.width;
  d["result_bits"] = p.result_bits;
  d["check_bits"] = p.check_bits;
  d["extra_bit_fraction"] = x.extra_bit_fraction;
  d["bucket_size"] = p.bucket_size;
  d["threshold_light"] = p.threshold_light;
  d["threshold_heavy"] = p.threshold_heavy;
  d["threshold_encoding"] = threshold_encoding_name(x.threshold_codes);
  d["shard_size"] = p.shard_size;
  d["seed"] = p.seed;
  d["key_count"] = x.key_count;
  d["group_kind"] = group_kind_name(p.groups);
  d["group_count"] = x.group_count;
  d["group_names"] = x.has_group_names ? nb::cast(x.group_names) : nb::none();
  d["metadata_bytes"] = x.has_metadata ? nb::cast(x.metadata_bytes) : nb::none();
  d["features"] = format::feature_names(x.features);
  d["num_layers"] = x.layers.size();
  d["bits_per_key"] = x.bits_per_key;
  d["ideal_bits_per_key"] = x.ideal_bits_per_key;
  d["overhead_pct"] = x.overhead_pct;
  d["expected_fpr"] = x.retrieval ? nb::none() : nb::cast(x.expected_fpr);
  nb::list layers;
  for (std::size_t l = 0; l < x.layers.size(); ++l) layers.append(layer_info(l, x.layers[l]));
  d["layers"] = layers;
  return d;
}

}  // namespace ribbon::python
