// The format's writer: the frame (standard or compact header, descriptors), the sections at
// their canonical offsets, then version 7's trailing sections, streamed to a sink.
#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "format_frame.hpp"
#include "ribbon/error.hpp"
#include "ribbon/format.hpp"

namespace ribbon::format {

namespace {

using namespace internal;

/// Builders write 1+-bit codes; a loaded older file keeps its 2-bit ones when saved again.
threshold_encoding shared_encoding(const std::vector<layer_geometry>& geometries) {
  const threshold_encoding encoding =
      geometries.empty() ? threshold_encoding::one_plus_bit : geometries[0].codes;
  for (const layer_geometry& g : geometries) {
    if (g.codes != encoding)
      throw error("the layers of a filter must share one threshold encoding");
  }
  return encoding;
}

/// Fills in place (not by value) so the padding bytes the checksums cover stay zero.
void describe_layer(const layer_image& li, const section_layout& s, layer_descriptor& d) {
  std::memset(&d, 0, sizeof(d));
  d.num_starts = li.geometry.num_starts;
  d.shard_bits = li.geometry.shard_bits;
  d.kind = static_cast<std::uint32_t>(li.geometry.kind);
  d.salt = li.salt;
  d.input_keys = li.input_keys;
  d.bumped_keys = li.bumped_keys;
  d.threshold_offset = s.threshold_offset;
  d.threshold_bytes = s.threshold_bytes;
  d.threshold_checksum = li.thresholds || d.threshold_bytes == 0
                             ? checksum(li.thresholds, d.threshold_bytes)
                             : li.threshold_checksum;
  d.solution_offset = s.solution_offset;
  d.solution_bytes = s.solution_bytes;
  d.solution_checksum = li.solution || d.solution_bytes == 0
                            ? checksum(li.solution, d.solution_bytes)
                            : li.solution_checksum;
  d.upper_start_block = li.geometry.upper_start_block;
}

/// The header's fields that record the parameters (and the magic); the rest stays zero.
void put_params(const filter_params& p, threshold_encoding encoding, file_header& h) {
  std::memset(&h, 0, sizeof(h));
  std::memcpy(h.magic, magic, sizeof(magic));
  h.check_bits = p.check_bits;
  h.group_kind = static_cast<std::uint32_t>(p.groups);
  h.variant = static_cast<std::uint32_t>(p.variant);
  h.extra_bit_fraction = p.extra_bit_fraction;
  h.key_kind = static_cast<std::uint32_t>(p.keys);
  h.width = p.width;
  h.result_bits = p.result_bits;
  h.bucket_size = p.bucket_size;
  h.threshold_light = p.threshold_light;
  h.threshold_heavy = p.threshold_heavy;
  h.threshold_encoding = static_cast<std::uint32_t>(encoding);
  h.shard_size = p.shard_size;
  h.seed = p.seed;
}

/// Fills in place too: the header checksum covers the header's padding bytes.
void fill_header(const filter_image& image, threshold_encoding encoding, std::uint64_t file_bytes,
                 const std::vector<layer_descriptor>& descriptors, file_header& h) {
  const std::size_t n = descriptors.size();
  put_params(image.params, encoding, h);
  const std::uint32_t features = features_of(image);
  h.format_version = version_for_features(features);
  if (h.format_version == features_version) {
    h.features = features;
  } else {
    h.header_bytes = sizeof(file_header);
  }
  h.group_count = image.group_count;
  h.file_bytes = file_bytes;
  h.key_count = image.key_count;
  h.num_layers = static_cast<std::uint32_t>(n);
  h.descriptor_bytes = sizeof(layer_descriptor);
  h.descriptors_checksum = checksum(descriptors.data(), n * sizeof(layer_descriptor));
  h.header_checksum = checksum(&h, offsetof(file_header, header_checksum));
}

/// The compact header and descriptors of `image`, whose standard descriptors are `full`.
std::vector<unsigned char> compact_frame(const filter_image& image, threshold_encoding encoding,
                                         const std::vector<layer_descriptor>& full) {
  const filter_params& p = image.params;
  const std::size_t n = full.size();
  compact_header h;
  std::memset(&h, 0, sizeof(h));
  std::memcpy(h.magic, magic, sizeof(magic));
  h.format_version = compact_version;
  h.variant = static_cast<std::uint8_t>(p.variant);
  h.key_kind = static_cast<std::uint8_t>(p.keys);
  h.width = static_cast<std::uint8_t>(p.width);
  h.result_bits = static_cast<std::uint8_t>(p.result_bits);
  h.seed = p.seed;
  h.key_count = image.key_count;
  h.threshold_light = p.threshold_light;
  h.threshold_heavy = p.threshold_heavy;
  h.extra_bit_fraction = static_cast<std::uint16_t>(p.extra_bit_fraction);
  h.check_bits = static_cast<std::uint8_t>(p.check_bits);
  h.bucket_bits = static_cast<std::uint8_t>(detail::floor_log2(p.bucket_size));
  h.shard_bits = static_cast<std::uint8_t>(detail::floor_log2(p.shard_size));
  h.threshold_encoding = static_cast<std::uint8_t>(encoding);
  h.num_layers = static_cast<std::uint8_t>(n);
  std::vector<compact_descriptor> descriptors(n);
  if (n) std::memset(descriptors.data(), 0, n * sizeof(compact_descriptor));
  for (std::size_t l = 0; l < n; ++l) {
    if (full[l].num_starts > UINT32_MAX)
      throw error("the compact layout holds layers of fewer than 2^32 start positions");
    descriptors[l].salt = full[l].salt;
    descriptors[l].bumped_keys = full[l].bumped_keys;
    descriptors[l].num_starts = static_cast<std::uint32_t>(full[l].num_starts);
    descriptors[l].kind = static_cast<std::uint8_t>(full[l].kind);
  }
  std::vector<unsigned char> bytes;
  auto put = [&](auto& header) {
    using header_type = std::decay_t<decltype(header)>;
    header.checksum = compact_checksum(&header, sizeof(header), offsetof(header_type, checksum),
                                       descriptors.data(), full);
    bytes.resize(sizeof(header) + n * sizeof(compact_descriptor));
    std::memcpy(bytes.data(), &header, sizeof(header));
    if (n)
      std::memcpy(bytes.data() + sizeof(header), descriptors.data(),
                  n * sizeof(compact_descriptor));
  };
  const std::uint32_t features = features_of(image);
  if (version_for_features(features) == features_version) {
    compact_header_v7 v7 =
        to_v7(h, features, static_cast<std::uint8_t>(p.groups), image.group_count);
    put(v7);
  } else {
    put(h);
  }
  return bytes;
}

/// Streams the file to a sink, counting bytes so sections land at their canonical offsets.
class image_writer {
 public:
  image_writer(const byte_sink& sink, const section_source& external)
      : sink_(sink), external_(external) {}

  void emit(const void* data, std::uint64_t bytes) {
    if (bytes) sink_(data, bytes);
    written_ += bytes;
  }

  void pad_to(std::uint64_t offset) {
    static const unsigned char zeros[section_alignment] = {};
    while (written_ < offset)
      emit(zeros, std::min<std::uint64_t>(offset - written_, sizeof(zeros)));
  }

  /// A section is in memory, or (after an out-of-core build) comes from the external source.
  void emit_section(std::size_t l, section which, const void* data, std::uint64_t bytes) {
    if (data != nullptr || bytes == 0) return emit(data, bytes);
    if (!external_) throw error("write_image: a section is neither in memory nor external");
    const std::uint64_t end = written_ + bytes;
    external_(l, which, [&](const void* piece, std::size_t size) { emit(piece, size); });
    if (written_ != end) throw error("write_image: an external section has the wrong size");
  }

 private:
  const byte_sink& sink_;
  const section_source& external_;
  std::uint64_t written_ = 0;
};

}  // namespace

void write_image(const filter_image& image, const byte_sink& sink, const section_source& external) {
  const std::size_t n = image.layers.size();
  if (n > max_layers) throw error("a filter has at most 16 layers");
  if (image.params.is_set() ? !group_count_fits(image.group_count, image.key_count)
                            : image.group_count != 0) {
    throw error("a filter set's group count (" + std::to_string(image.group_count) +
                ") does not fit its " + std::to_string(image.key_count) + " keys");
  }
  if (image.names &&
      (image.names->kind() != image.params.groups || image.names->size() < image.group_count)) {
    throw error("a filter set's group names (" + std::to_string(image.names->size()) +
                ") must be of its group kind and at least its " +
                std::to_string(image.group_count) + " groups with keys");
  }
  const std::vector<layer_geometry> geometries = geometries_of(image);
  const bool compact = is_compact(image);
  const frame_shape shape = shape_of(image);
  std::vector<section_layout> sections(n);
  const std::uint64_t layers_end =
      layout(image.params, geometries.data(), n, shape, sections.data());
  const std::vector<std::vector<unsigned char>> payloads = trailing_payloads(image);
  const threshold_encoding encoding = shared_encoding(geometries);

  std::vector<layer_descriptor> descriptors(n);
  for (std::size_t l = 0; l < n; ++l) describe_layer(image.layers[l], sections[l], descriptors[l]);
  image_writer out(sink, external);
  if (compact) {
    const std::vector<unsigned char> frame = compact_frame(image, encoding, descriptors);
    out.emit(frame.data(), frame.size());
  } else {
    file_header h;
    fill_header(image, encoding, with_trailing(layers_end, shape, payloads), descriptors, h);
    out.emit(&h, sizeof(h));
    out.emit(descriptors.data(), n * sizeof(layer_descriptor));
  }
  for (std::size_t l = 0; l < n; ++l) {
    const layer_image& li = image.layers[l];
    if (sections[l].threshold_bytes) {
      out.pad_to(sections[l].threshold_offset);
      out.emit_section(l, section::thresholds, li.thresholds, sections[l].threshold_bytes);
    }
    out.pad_to(sections[l].solution_offset);
    out.emit_section(l, section::solution, li.solution, sections[l].solution_bytes);
  }
  std::uint64_t offset = layers_end;
  for (const std::vector<unsigned char>& payload : payloads) {
    offset = detail::round_up(offset, shape.alignment);
    out.pad_to(offset);
    const trailing_frame frame{payload.size(), checksum(payload.data(), payload.size())};
    out.emit(&frame, sizeof(frame));
    out.emit(payload.data(), payload.size());
    offset += sizeof(frame) + payload.size();
  }
}

std::vector<unsigned char> params_bytes(const filter_params& p) {
  file_header h;
  put_params(p, p.threshold_codes, h);
  h.format_version = features_version;  // features 0: the header alone, no layers
  h.file_bytes = sizeof(file_header);
  h.descriptor_bytes = sizeof(layer_descriptor);
  h.header_checksum = checksum(&h, offsetof(file_header, header_checksum));
  std::vector<unsigned char> bytes(sizeof(h));
  std::memcpy(bytes.data(), &h, sizeof(h));
  return bytes;
}

std::vector<unsigned char> serialize(const filter_image& image) {
  std::vector<unsigned char> bytes;
  bytes.reserve(image_bytes(image));
  write_image(image, [&](const void* data, std::size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    bytes.insert(bytes.end(), p, p + size);
  });
  return bytes;
}

}  // namespace ribbon::format
