// The format's version table, the features and version of an image, and the frame every
// file shares (format_frame.hpp); the reader is format_read.cpp, the writer format_write.cpp.
#include "ribbon/format.hpp"

#include <cstring>
#include <string>

#include "format_frame.hpp"
#include "ribbon/detail/xxhash64.hpp"
#include "ribbon/error.hpp"

namespace ribbon::format {

std::uint64_t checksum(const void* data, std::size_t bytes) {
  return detail::xxh64(data, bytes, 0);
}

const char* feature_name(unsigned bit) {
  static const char* const names[] = {"compact",    "one_plus_bit_codes", "check_bits",
                                      "filter_set", "group_names",        "metadata"};
  return bit < sizeof(names) / sizeof(names[0]) ? names[bit] : nullptr;
}

std::string feature_names(std::uint32_t bits) {
  std::string out;
  for (unsigned bit = 0; bit < 32; ++bit) {
    if (!((bits >> bit) & 1)) continue;
    const char* name = feature_name(bit);
    if (!out.empty()) out += ",";
    out += name ? std::string(name) : "bit" + std::to_string(bit);
  }
  return out;
}

const version_rule* rule_of(std::uint32_t version) {
  for (const version_rule& rule : version_rules) {
    if (rule.version == version) return &rule;
  }
  return nullptr;
}

const char* feature_conflict(std::uint32_t features) {
  namespace f = feature_bits;
  if ((features & f::check_bits) && (features & f::filter_set))
    return "check bits belong to retrieval structures, and a filter set is a set of filters";
  if ((features & f::group_names) && !(features & f::filter_set))
    return "group names belong to filter sets";
  return nullptr;
}

std::uint32_t version_for_features(std::uint32_t features) {
  if (const char* why = feature_conflict(features)) throw error(why);
  for (const version_rule& rule : version_rules) {
    if (rule.written && (features & ~rule.allowed) == 0 &&
        (features & rule.required) == rule.required) {
      return rule.version;
    }
  }
  throw error("no format version holds features " + std::to_string(features));
}

std::uint32_t version_for(threshold_encoding codes, std::uint32_t check_bits, bool set) {
  return version_for_features(
      (codes == threshold_encoding::one_plus_bit ? feature_bits::one_plus_bit_codes : 0) |
      (check_bits != 0 ? feature_bits::check_bits : 0) | (set ? feature_bits::filter_set : 0));
}

namespace internal {

frame_shape shape_of(bool compact, std::uint32_t version) {
  if (!compact) return {sizeof(file_header), sizeof(layer_descriptor), section_alignment};
  return {version == features_version ? sizeof(compact_header_v7) : sizeof(compact_header),
          sizeof(compact_descriptor), compact_section_alignment};
}

frame_shape shape_of(const filter_image& image) {
  return shape_of(is_compact(image), version_of(image));
}

std::uint64_t layout(const filter_params& p, const layer_geometry* geometries,
                     std::size_t num_layers, const frame_shape& shape, section_layout* out) {
  const std::uint64_t alignment = shape.alignment;
  std::uint64_t offset = shape.header_bytes + num_layers * shape.descriptor_bytes;
  for (std::size_t l = 0; l < num_layers; ++l) {
    const layer_geometry& g = geometries[l];
    section_layout& s = out[l];
    s.threshold_bytes = g.threshold_words(p.bucket_size) * 8;
    s.threshold_offset = s.threshold_bytes ? detail::round_up(offset, alignment) : 0;
    if (s.threshold_bytes) offset = s.threshold_offset + s.threshold_bytes;
    s.solution_bytes = g.solution_bytes(p.width, p.result_bits);
    s.solution_offset = detail::round_up(offset, alignment);
    offset = s.solution_offset + s.solution_bytes;
  }
  return offset;
}

std::vector<layer_geometry> geometries_of(const filter_image& image) {
  std::vector<layer_geometry> geometries;
  for (const auto& l : image.layers) geometries.push_back(l.geometry);
  return geometries;
}

std::vector<std::vector<unsigned char>> trailing_payloads(const filter_image& image) {
  std::vector<std::vector<unsigned char>> payloads;
  if (image.names) payloads.push_back(image.names->encode());
  if (image.metadata) payloads.emplace_back(image.metadata->begin(), image.metadata->end());
  return payloads;
}

std::uint64_t with_trailing(std::uint64_t layers_end, const frame_shape& shape,
                            const std::vector<std::vector<unsigned char>>& payloads) {
  std::uint64_t offset = layers_end;
  for (const auto& payload : payloads)
    offset = detail::round_up(offset, shape.alignment) + sizeof(trailing_frame) + payload.size();
  return offset;
}

std::uint64_t compact_checksum(const void* header, std::size_t header_bytes,
                               std::size_t checksum_at, const compact_descriptor* descriptors,
                               const std::vector<layer_descriptor>& sums) {
  const std::size_t n = sums.size();
  std::vector<unsigned char> bytes(header_bytes + n * (sizeof(compact_descriptor) + 16));
  unsigned char* out = bytes.data();
  std::memcpy(out, header, header_bytes);
  std::memset(out + checksum_at, 0, 8);
  if (n) std::memcpy(out + header_bytes, descriptors, n * sizeof(compact_descriptor));
  out += header_bytes + n * sizeof(compact_descriptor);
  for (const layer_descriptor& d : sums) {
    std::memcpy(out, &d.threshold_checksum, 8);
    std::memcpy(out + 8, &d.solution_checksum, 8);
    out += 16;
  }
  return checksum(bytes.data(), bytes.size());
}

compact_header_v7 to_v7(const compact_header& c, std::uint32_t features, std::uint8_t groups,
                        std::uint64_t group_count) {
  compact_header_v7 h;
  std::memset(&h, 0, sizeof(h));
  std::memcpy(h.magic, c.magic, sizeof(magic));
  h.format_version = features_version;
  h.features = features;
  h.variant = c.variant;
  h.key_kind = c.key_kind;
  h.width = c.width;
  h.result_bits = c.result_bits;
  h.threshold_light = c.threshold_light;
  h.seed = c.seed;
  h.key_count = c.key_count;
  h.checksum = c.checksum;
  h.threshold_heavy = c.threshold_heavy;
  h.extra_bit_fraction = c.extra_bit_fraction;
  h.check_bits = c.check_bits;
  h.bucket_bits = c.bucket_bits;
  h.shard_bits = c.shard_bits;
  h.threshold_encoding = c.threshold_encoding;
  h.num_layers = c.num_layers;
  h.group_kind = groups;
  h.group_count = group_count;
  return h;
}

compact_header from_v7(const compact_header_v7& h) {
  compact_header c;
  std::memset(&c, 0, sizeof(c));
  std::memcpy(c.magic, h.magic, sizeof(magic));
  c.format_version = h.format_version;
  c.variant = h.variant;
  c.key_kind = h.key_kind;
  c.width = h.width;
  c.result_bits = h.result_bits;
  c.seed = h.seed;
  c.key_count = h.key_count;
  c.checksum = h.checksum;
  c.threshold_light = h.threshold_light;
  c.threshold_heavy = h.threshold_heavy;
  c.extra_bit_fraction = h.extra_bit_fraction;
  c.check_bits = h.check_bits;
  c.bucket_bits = h.bucket_bits;
  c.shard_bits = h.shard_bits;
  c.threshold_encoding = h.threshold_encoding;
  c.num_layers = h.num_layers;
  return c;
}
}  // namespace internal

namespace {

using internal::section_layout;

/// Features of a file's contents, its layout left out.
std::uint32_t content_features(const filter_image& image) {
  namespace f = feature_bits;
  const threshold_encoding codes =
      image.layers.empty() ? threshold_encoding::one_plus_bit : image.layers[0].geometry.codes;
  return (codes == threshold_encoding::one_plus_bit ? f::one_plus_bit_codes : 0) |
         (image.params.check_bits != 0 ? f::check_bits : 0) |
         (image.params.is_set() ? f::filter_set : 0) | (image.names ? f::group_names : 0) |
         (image.metadata ? f::metadata : 0);
}

/// Each layer's sections where `shape` puts them.
std::vector<section_layout> sections_of(const filter_image& image,
                                        const internal::frame_shape& shape) {
  const std::vector<layer_geometry> geometries = internal::geometries_of(image);
  std::vector<section_layout> sections(geometries.size());
  internal::layout(image.params, geometries.data(), geometries.size(), shape, sections.data());
  return sections;
}

}  // namespace

bool is_compact(const filter_image& image) {
  // A set without names or metadata stays in the standard layout of version 6, which readers
  // of the release before version 7 read; with either it needs version 7 anyway.
  const std::uint32_t needs_v7 = feature_bits::group_names | feature_bits::metadata;
  if (image.params.is_set() && (content_features(image) & needs_v7) == 0 &&
      image.layout != layout_choice::compact) {
    return false;
  }
  if (image.layout != layout_choice::automatic) return image.layout == layout_choice::compact;
  std::uint64_t section_bytes = 0;
  for (const section_layout& s : sections_of(image, internal::shape_of(false, 0)))
    section_bytes += s.threshold_bytes + s.solution_bytes;
  return section_bytes <= compact_max_section_bytes;
}

std::uint32_t features_of(const filter_image& image) {
  return content_features(image) | (is_compact(image) ? feature_bits::compact : 0);
}

std::uint32_t version_of(const filter_image& image) {
  return version_for_features(features_of(image));
}

std::uint64_t image_bytes(const filter_image& image) {
  const std::vector<layer_geometry> geometries = internal::geometries_of(image);
  std::vector<section_layout> sections(geometries.size());
  const internal::frame_shape shape = internal::shape_of(image);
  return internal::with_trailing(
      internal::layout(image.params, geometries.data(), geometries.size(), shape, sections.data()),
      shape, internal::trailing_payloads(image));
}

filter_ref make_ref(const filter_image& image) {
  filter_ref ref;
  ref.params = image.params;
  ref.seed_mixed = seed_mix(image.params.seed);
  ref.key_count = image.key_count;
  ref.num_layers = static_cast<std::uint32_t>(image.layers.size());
  for (std::size_t l = 0; l < image.layers.size(); ++l) {
    const layer_image& li = image.layers[l];
    ref.layers[l].geometry = li.geometry;
    ref.layers[l].salt = li.salt;
    ref.layers[l].thresholds = static_cast<const std::uint64_t*>(li.thresholds);
    ref.layers[l].solution = li.solution;
  }
  return ref;
}

filter_ref make_ref_at(const filter_image& image, const unsigned char* base) {
  const std::vector<section_layout> sections = sections_of(image, internal::shape_of(image));
  filter_ref ref = make_ref(image);
  for (std::size_t l = 0; l < sections.size(); ++l) {
    ref.layers[l].thresholds =
        sections[l].threshold_bytes
            ? reinterpret_cast<const std::uint64_t*>(base + sections[l].threshold_offset)
            : nullptr;
    ref.layers[l].solution = base + sections[l].solution_offset;
  }
  return ref;
}

filter_ref relocate(const filter_ref& ref, const unsigned char* from, const unsigned char* to) {
  filter_ref moved = ref;
  auto move = [&](const void* p) -> const void* {
    return p == nullptr ? nullptr : to + (static_cast<const unsigned char*>(p) - from);
  };
  for (std::uint32_t l = 0; l < ref.num_layers; ++l) {
    moved.layers[l].thresholds = static_cast<const std::uint64_t*>(move(ref.layers[l].thresholds));
    moved.layers[l].solution = move(ref.layers[l].solution);
  }
  return moved;
}

}  // namespace ribbon::format
