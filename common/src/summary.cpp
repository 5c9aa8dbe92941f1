#include "ribbon/summary.hpp"

#include <cmath>

namespace ribbon {

namespace {

double ratio(std::uint64_t part, std::uint64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

layer_summary summarize_layer(const filter_params& p, const format::layer_image& layer) {
  const layer_geometry& g = layer.geometry;
  layer_summary s;
  s.kind = g.kind;
  s.starts = g.num_starts;
  s.shards = g.num_shards();
  s.buckets = g.num_buckets(p.bucket_size);
  s.salt = layer.salt;
  s.input_keys = layer.input_keys;
  s.bumped_keys = layer.bumped_keys;
  s.bumped_fraction = ratio(layer.bumped_keys, layer.input_keys);
  s.threshold_bytes = g.threshold_words(p.bucket_size) * 8;
  s.solution_bytes = g.solution_bytes(p.width, p.result_bits);
  return s;
}

}  // namespace

const char* layer_kind_name(layer_kind kind) {
  return kind == layer_kind::bumped     ? "bumped"
         : kind == layer_kind::standard ? "standard"
                                        : "plain";
}

filter_summary summarize(const format::filter_image& image, std::uint32_t format_version) {
  const filter_params& p = image.params;
  filter_summary s;
  s.params = p;
  s.format_version = format_version;
  s.compact_layout = format::is_compact(image);
  s.threshold_codes =
      image.layers.empty() ? threshold_encoding::one_plus_bit : image.layers[0].geometry.codes;
  s.key_count = image.key_count;
  s.group_count = image.group_count;
  s.features = format::features_of(image);
  s.has_group_names = image.names != nullptr;
  s.group_names = image.names ? image.names->size() : 0;
  s.has_metadata = image.metadata != nullptr;
  s.metadata_bytes = image.metadata ? image.metadata->size() : 0;
  s.file_bytes = format::image_bytes(image);
  s.retrieval = is_retrieval(p.variant);
  s.bits_per_key = s.key_count > 0
                       ? 8.0 * static_cast<double>(s.file_bytes) / static_cast<double>(s.key_count)
                       : 0.0;
  s.expected_fpr = expected_fpr(p);
  s.ideal_bits_per_key = s.retrieval ? p.result_bits : -std::log2(s.expected_fpr);
  s.overhead_pct = s.key_count > 0 ? 100.0 * (s.bits_per_key / s.ideal_bits_per_key - 1.0) : 0.0;
  s.extra_bit_fraction = p.extra_bit_fraction / static_cast<double>(extra_bit_one);
  for (const format::layer_image& layer : image.layers) {
    s.layers.push_back(summarize_layer(p, layer));
  }
  return s;
}

}  // namespace ribbon
