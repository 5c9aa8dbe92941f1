#include "ribbon/format.hpp"

#include <cstring>
#include <string>

#include "ribbon/detail/xxhash64.hpp"
#include "ribbon/error.hpp"

namespace ribbon::format {

namespace {

struct section_layout {
  std::uint64_t threshold_offset, threshold_bytes, solution_offset, solution_bytes;
};

/// The sizes of a layout's frame: header, descriptor, section alignment.
struct frame_shape {
  std::uint64_t header_bytes, descriptor_bytes, alignment;
  bool compact() const { return alignment == compact_section_alignment; }
};

frame_shape shape_of(bool compact, std::uint32_t version) {
  if (!compact) return {sizeof(file_header), sizeof(layer_descriptor), section_alignment};
  return {version == features_version ? sizeof(compact_header_v7) : sizeof(compact_header),
          sizeof(compact_descriptor), compact_section_alignment};
}

/// The canonical placement of every section in either layout; the writer uses it and the
/// reader insists on it. Returns where the layers' sections end.
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

std::vector<section_layout> sections_of(const filter_image& image, const frame_shape& shape) {
  const std::vector<layer_geometry> geometries = geometries_of(image);
  std::vector<section_layout> sections(geometries.size());
  layout(image.params, geometries.data(), geometries.size(), shape, sections.data());
  return sections;
}

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw error(source + ": " + what);
}

/// A filter set has at least one group when it has keys, none without, and no more groups
/// than keys.
bool group_count_fits(std::uint64_t groups, std::uint64_t keys) {
  return groups <= keys && (groups == 0) == (keys == 0);
}

}  // namespace

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

namespace {

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
  for (const section_layout& s : sections_of(image, shape_of(false, 0)))
    section_bytes += s.threshold_bytes + s.solution_bytes;
  return section_bytes <= compact_max_section_bytes;
}

std::uint32_t features_of(const filter_image& image) {
  return content_features(image) | (is_compact(image) ? feature_bits::compact : 0);
}

std::uint32_t version_of(const filter_image& image) {
  return version_for_features(features_of(image));
}

namespace {

/// The payloads of a version-7 image's trailing sections, in their order.
std::vector<std::vector<unsigned char>> trailing_payloads(const filter_image& image) {
  std::vector<std::vector<unsigned char>> payloads;
  if (image.names) payloads.push_back(image.names->encode());
  if (image.metadata) payloads.emplace_back(image.metadata->begin(), image.metadata->end());
  return payloads;
}

/// The file's size: the layers' end, then each trailing section at the layout's alignment.
std::uint64_t with_trailing(std::uint64_t layers_end, const frame_shape& shape,
                            const std::vector<std::vector<unsigned char>>& payloads) {
  std::uint64_t offset = layers_end;
  for (const auto& payload : payloads)
    offset = detail::round_up(offset, shape.alignment) + sizeof(trailing_frame) + payload.size();
  return offset;
}

}  // namespace

namespace {

frame_shape shape_of(const filter_image& image) {
  return shape_of(is_compact(image), version_of(image));
}

}  // namespace

std::uint64_t image_bytes(const filter_image& image) {
  const std::vector<layer_geometry> geometries = geometries_of(image);
  std::vector<section_layout> sections(geometries.size());
  const frame_shape shape = shape_of(image);
  return with_trailing(
      layout(image.params, geometries.data(), geometries.size(), shape, sections.data()), shape,
      trailing_payloads(image));
}

namespace {

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

/// Fills in place too: the header checksum covers the header's padding bytes.
void fill_header(const filter_image& image, threshold_encoding encoding, std::uint64_t file_bytes,
                 const std::vector<layer_descriptor>& descriptors, file_header& h) {
  const filter_params& p = image.params;
  const std::size_t n = descriptors.size();
  std::memset(&h, 0, sizeof(h));
  std::memcpy(h.magic, magic, sizeof(magic));
  const std::uint32_t features = features_of(image);
  h.format_version = version_for_features(features);
  if (h.format_version == features_version) {
    h.features = features;
  } else {
    h.header_bytes = sizeof(file_header);
  }
  h.check_bits = p.check_bits;
  h.group_count = image.group_count;
  h.group_kind = static_cast<std::uint32_t>(p.groups);
  h.file_bytes = file_bytes;
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
  h.key_count = image.key_count;
  h.num_layers = static_cast<std::uint32_t>(n);
  h.descriptor_bytes = sizeof(layer_descriptor);
  h.descriptors_checksum = checksum(descriptors.data(), n * sizeof(layer_descriptor));
  h.header_checksum = checksum(&h, offsetof(file_header, header_checksum));
}

/// The compact layout's one checksum: XXH64 of its header (`header_bytes` bytes, the checksum
/// field at `checksum_at` taken as 0) and descriptors, followed by each layer's threshold and
/// solution checksums (taken from the standard descriptors `sums`), so a writer that streams
/// a section knows it beforehand.
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

/// Version 7's compact header from version 5's fields and the features and group fields.
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

/// And back: version 5's fields of a version-7 compact header (its version stays 7).
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

std::vector<unsigned char> serialize(const filter_image& image) {
  std::vector<unsigned char> bytes;
  bytes.reserve(image_bytes(image));
  write_image(image, [&](const void* data, std::size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    bytes.insert(bytes.end(), p, p + size);
  });
  return bytes;
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
  const std::vector<section_layout> sections = sections_of(image, shape_of(image));
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

namespace {

/// What an image's first bytes say: its version, its layout and (version 7) its features.
struct file_kind {
  std::uint32_t version = 0;
  std::uint32_t stated_features = 0;  ///< version 7's features word
  bool compact = false;
};

/// The version of an image, after its magic, and in version 7 the features word: they say
/// which layout the rest has. A feature this library does not know is refused by its bit.
file_kind read_kind(const unsigned char* data, std::uint64_t size, const std::string& source) {
  constexpr std::uint64_t prefix = sizeof(magic) + sizeof(std::uint32_t);
  if (size < prefix) {
    fail(source,
         "truncated: " + std::to_string(size) + " bytes, too short for a ribbon filter header");
  }
  if (std::memcmp(data, magic, sizeof(magic)) != 0) fail(source, "not a ribbon filter (bad magic)");
  file_kind kind;
  std::memcpy(&kind.version, data + sizeof(magic), sizeof(kind.version));
  if (kind.version < oldest_readable_version || kind.version > current_version) {
    fail(source, "unsupported format version " + std::to_string(kind.version) +
                     " (this library reads versions " + std::to_string(oldest_readable_version) +
                     " to " + std::to_string(current_version) + ")");
  }
  if (kind.version != features_version) {
    kind.compact = kind.version == compact_version;
    return kind;
  }
  if (size < prefix + 4) fail(source, "truncated: format version 7 without its features word");
  std::memcpy(&kind.stated_features, data + prefix, 4);
  if (const std::uint32_t unknown = kind.stated_features & ~feature_bits::known) {
    unsigned bit = 0;
    while (!((unknown >> bit) & 1)) ++bit;
    fail(source, "format version 7: needs feature bit " + std::to_string(bit) +
                     ", which this reader does not know; upgrade ribbon");
  }
  if (const char* why = feature_conflict(kind.stated_features))
    fail(source, std::string("format version 7: features that cannot be combined: ") + why);
  kind.compact = (kind.stated_features & feature_bits::compact) != 0;
  return kind;
}

void check_alignment(const unsigned char* data, std::uint64_t alignment,
                     const std::string& source) {
  if (reinterpret_cast<std::uintptr_t>(data) % alignment != 0) {
    fail(source, "image is not " + std::to_string(alignment) + "-byte aligned in memory");
  }
}

/// The features the fields of a header imply: its encoding, check bits and group kind.
std::uint32_t implied_features(const file_header& h) {
  namespace f = feature_bits;
  return (h.threshold_encoding == static_cast<std::uint32_t>(threshold_encoding::one_plus_bit)
              ? f::one_plus_bit_codes
              : 0) |
         (h.check_bits != 0 ? f::check_bits : 0) | (h.group_kind != 0 ? f::filter_set : 0);
}

/// The header's fields against its version's rule (version_rules) and, in version 7, against
/// the features word. Returns the file's features. Checked in the order of docs/format.md.
std::uint32_t check_features(const file_header& h, const file_kind& kind,
                             const std::string& source) {
  namespace f = feature_bits;
  const version_rule& rule = *rule_of(kind.version);
  if (!valid_variant(static_cast<filter_variant>(h.variant)) ||
      (!rule.any_variant && h.variant != static_cast<std::uint32_t>(filter_variant::bumped))) {
    fail(source, "unknown filter variant " + std::to_string(h.variant));
  }
  if (h.reserved != 0 || (!rule.fraction_bits && h.extra_bit_fraction != 0))
    fail(source, "reserved header fields are not zero");
  if (h.threshold_encoding != static_cast<std::uint32_t>(threshold_encoding::two_bit) &&
      h.threshold_encoding != static_cast<std::uint32_t>(threshold_encoding::one_plus_bit)) {
    fail(source, "unknown threshold encoding " + std::to_string(h.threshold_encoding));
  }
  if (h.group_kind > static_cast<std::uint32_t>(group_kind::bytes))
    fail(source, "unknown group kind " + std::to_string(h.group_kind));
  const std::uint32_t layout = kind.compact ? f::compact : 0;
  const std::uint32_t implied = implied_features(h) | layout;
  const std::uint32_t features = kind.version == features_version ? kind.stated_features : implied;
  const std::string version = "format version " + std::to_string(kind.version);
  const std::uint32_t fields = f::one_plus_bit_codes | f::check_bits | f::filter_set | f::compact;
  if (kind.version == features_version && (features & fields) != implied) {
    const std::uint32_t differ = (features & fields) ^ implied;
    unsigned bit = 0;
    while (!((differ >> bit) & 1)) ++bit;
    fail(source,
         version + ": the features word and the header disagree on '" + feature_name(bit) + "'");
  }
  const std::uint32_t missing = rule.required & ~features;
  const std::uint32_t extra = features & ~rule.allowed;
  if ((extra | missing) & f::one_plus_bit_codes) {
    fail(source,
         "unknown threshold encoding " + std::to_string(h.threshold_encoding) + " for " + version);
  }
  if (missing & f::check_bits)
    fail(source, version + " without check bits (files without them are versions 1-3)");
  if (missing & f::filter_set)
    fail(source, version + " (a filter set) with an unknown group kind 0");
  if (extra & (f::check_bits | f::filter_set)) fail(source, "reserved header fields are not zero");
  if (!(features & f::filter_set) && h.group_count != 0)
    fail(source, "reserved header fields are not zero");
  if ((features & f::filter_set) && !group_count_fits(h.group_count, h.key_count)) {
    fail(source, "inconsistent group count: " + std::to_string(h.group_count) + " groups for " +
                     std::to_string(h.key_count) + " keys");
  }
  return features;
}

/// The standard header of an image (versions 1-4, 6, 7): its own checksum and the fields that
/// need no parameters to check.
file_header read_header(const unsigned char* data, std::uint64_t size, const file_kind& kind,
                        const std::string& source) {
  file_header h;
  if (size < sizeof(file_header)) {
    fail(source, "truncated: " + std::to_string(size) +
                     " bytes, too short for a ribbon filter header (128 bytes)");
  }
  check_alignment(data, section_alignment, source);
  std::memcpy(&h, data, sizeof(h));
  if (h.header_checksum != checksum(&h, offsetof(file_header, header_checksum))) {
    fail(source, "header checksum mismatch (corrupt file)");
  }
  if ((kind.version != features_version && h.header_bytes != sizeof(file_header)) ||
      h.descriptor_bytes != sizeof(layer_descriptor)) {
    fail(source, "inconsistent header or descriptor size");
  }
  if (h.file_bytes != size) {
    fail(source, (size < h.file_bytes ? "truncated: " : "trailing bytes: ") + std::to_string(size) +
                     " bytes, header says " + std::to_string(h.file_bytes));
  }
  return h;
}

/// A compact image's header and descriptors as they are in the file (version 7's header in
/// version 5's terms, with its own fields beside).
struct compact_frame_view {
  compact_header header{};
  const unsigned char* raw_header = nullptr;  ///< as in the file, for the checksum
  std::size_t header_bytes = 0;
  std::size_t checksum_at = 0;
  std::uint32_t group_kind = 0;
  std::uint64_t group_count = 0;
  std::vector<compact_descriptor> layers;
};

compact_frame_view read_compact_frame(const unsigned char* data, std::uint64_t size,
                                      const file_kind& kind, const std::string& source) {
  compact_frame_view v;
  compact_header& c = v.header;
  const bool v7 = kind.version == features_version;
  v.header_bytes = v7 ? sizeof(compact_header_v7) : sizeof(compact_header);
  v.checksum_at = v7 ? offsetof(compact_header_v7, checksum) : offsetof(compact_header, checksum);
  v.raw_header = data;
  if (size < v.header_bytes) {
    fail(source, "truncated: " + std::to_string(size) +
                     " bytes, too short for a compact ribbon filter header (" +
                     std::to_string(v.header_bytes) + " bytes)");
  }
  check_alignment(data, compact_section_alignment, source);
  if (v7) {
    compact_header_v7 h;
    std::memcpy(&h, data, sizeof(h));
    if (h.reserved != 0) fail(source, "reserved header fields are not zero");
    c = from_v7(h);
    v.group_kind = h.group_kind;
    v.group_count = h.group_count;
  } else {
    std::memcpy(&c, data, sizeof(c));
    if (c.reserved != 0) fail(source, "reserved header fields are not zero");
  }
  if (c.bucket_bits > 16 || c.shard_bits > 31) fail(source, "bad parameters: bucket or shard size");
  if (c.num_layers > max_layers) fail(source, "too many layers: " + std::to_string(c.num_layers));
  const std::uint64_t n = c.num_layers;
  if (v.header_bytes + n * sizeof(compact_descriptor) > size) {
    fail(source, "truncated layer descriptors");
  }
  v.layers.resize(n);
  if (n) std::memcpy(v.layers.data(), data + v.header_bytes, n * sizeof(compact_descriptor));
  for (std::uint64_t l = 0; l < n; ++l) {
    for (std::uint8_t r : v.layers[l].reserved) {
      if (r != 0) fail(source, "layer " + std::to_string(l) + ": reserved fields are not zero");
    }
  }
  return v;
}

/// A compact frame in the standard layout's terms; the section fields are left to the layout.
void expand_compact_frame(const compact_frame_view& v, std::uint64_t size, file_header& h,
                          std::vector<layer_descriptor>& layers) {
  const compact_header& c = v.header;
  std::memset(&h, 0, sizeof(h));
  std::memcpy(h.magic, c.magic, sizeof(magic));
  h.format_version = c.format_version;
  h.header_bytes = static_cast<std::uint32_t>(v.header_bytes);
  h.file_bytes = size;
  h.variant = c.variant;
  h.key_kind = c.key_kind;
  h.width = c.width;
  h.result_bits = c.result_bits;
  h.bucket_size = std::uint32_t{1} << c.bucket_bits;
  h.threshold_light = c.threshold_light;
  h.threshold_heavy = c.threshold_heavy;
  h.threshold_encoding = c.threshold_encoding;
  h.shard_size = std::uint64_t{1} << c.shard_bits;
  h.seed = c.seed;
  h.key_count = c.key_count;
  h.num_layers = c.num_layers;
  h.descriptor_bytes = sizeof(compact_descriptor);
  h.extra_bit_fraction = c.extra_bit_fraction;
  h.check_bits = c.check_bits;
  h.group_kind = v.group_kind;
  h.group_count = v.group_count;
  layers.assign(v.layers.size(), layer_descriptor{});
  std::uint64_t input = c.key_count;
  for (std::size_t l = 0; l < v.layers.size(); ++l) {
    const compact_descriptor& cd = v.layers[l];
    layer_descriptor& d = layers[l];
    d.num_starts = cd.num_starts;
    d.kind = cd.kind;
    d.shard_bits = cd.kind == static_cast<std::uint8_t>(layer_kind::plain) ? 63 : c.shard_bits;
    d.salt = cd.salt;
    d.input_keys = input;
    d.bumped_keys = cd.bumped_keys;
    input = cd.bumped_keys;
  }
}

/// The parameters a header records, checked.
filter_params params_of(const file_header& h, const std::string& source) {
  filter_params p;
  p.width = h.width;
  p.result_bits = h.result_bits;
  p.bucket_size = h.bucket_size;
  p.threshold_light = h.threshold_light;
  p.threshold_heavy = h.threshold_heavy;
  p.shard_size = h.shard_size;
  p.seed = h.seed;
  p.keys = static_cast<key_kind>(h.key_kind);
  p.variant = static_cast<filter_variant>(h.variant);
  p.extra_bit_fraction = h.extra_bit_fraction;
  p.check_bits = h.check_bits;
  p.groups = static_cast<group_kind>(h.group_kind);
  p.threshold_codes =
      static_cast<threshold_encoding>(h.threshold_encoding);  // read_header checked it
  if (const char* problem = check_params(p))
    fail(source, std::string("bad parameters: ") + problem);
  return p;
}

/// The layer descriptors after the header, their checksum checked.
std::vector<layer_descriptor> read_descriptors(const unsigned char* data, std::uint64_t size,
                                               const file_header& h, const std::string& source) {
  if (h.num_layers > max_layers) fail(source, "too many layers: " + std::to_string(h.num_layers));
  const std::uint64_t n = h.num_layers;
  if (sizeof(file_header) + n * sizeof(layer_descriptor) > size) {
    fail(source, "truncated layer descriptors");
  }
  if (h.descriptors_checksum !=
      checksum(data + sizeof(file_header), n * sizeof(layer_descriptor))) {
    fail(source, "layer descriptor checksum mismatch (corrupt file)");
  }
  std::vector<layer_descriptor> layers(n);
  if (n) std::memcpy(layers.data(), data + sizeof(file_header), n * sizeof(layer_descriptor));
  return layers;
}

/// Layer l's geometry from its descriptor, checked against the variant, the shard size, the
/// file size and the keys the previous layer bumped (`expected_input`, updated).
layer_geometry geometry_of(const layer_descriptor& d, std::uint64_t l, std::uint64_t num_layers,
                           const filter_params& p, const file_header& h, std::uint64_t size,
                           std::uint64_t& expected_input, const std::string& source) {
  const bool version1 = h.format_version == 1;
  const std::string which = "layer " + std::to_string(l) + ": ";
  for (std::uint64_t r : d.reserved) {
    if (r != 0) fail(source, which + "reserved fields are not zero");
  }
  if (version1 && d.upper_start_block != 0) fail(source, which + "reserved fields are not zero");
  if (d.kind > static_cast<std::uint32_t>(layer_kind::standard))
    fail(source, which + "unknown kind");
  const auto kind = static_cast<layer_kind>(d.kind);
  // Bumped variants: bumped layers, then plain. Others: a standard layer 0, then plain.
  const bool kind_fits = kind == layer_kind::plain    ? l > 0 || !uses_bumping(p.variant)
                         : kind == layer_kind::bumped ? uses_bumping(p.variant)
                                                      : l == 0 && !uses_bumping(p.variant);
  if (!kind_fits) fail(source, which + "layer kind does not fit the variant");
  if (l == 0 && kind != layer_kind::standard && d.salt != 0) {
    fail(source, which + "layer 0 of this kind has no salt");
  }
  // A layer cannot have more start positions than the file has bits; this also keeps
  // every size computation below far from overflow.
  if (d.num_starts == 0 || d.num_starts > size * 8) fail(source, which + "bad slot count");
  if (kind != layer_kind::plain) {
    // Sharded layers: whole buckets (bumped) or whole blocks (standard), shards of S.
    const std::uint32_t unit = kind == layer_kind::bumped ? p.bucket_size : p.width;
    if (d.shard_bits != static_cast<std::uint32_t>(detail::floor_log2(p.shard_size)) ||
        d.num_starts % unit != 0) {
      fail(source, which + "inconsistent sharded-layer geometry");
    }
  } else if (d.shard_bits != 63 || d.num_starts % p.width != 0 || l + 1 != num_layers) {
    fail(source, which + "inconsistent plain-layer geometry");
  }
  if (d.input_keys != expected_input || d.bumped_keys > d.input_keys ||
      (l + 1 == num_layers && d.bumped_keys != 0)) {
    fail(source, which + "inconsistent key counts");
  }
  expected_input = d.bumped_keys;
  layer_geometry g = make_geometry(d.num_starts, d.shard_bits, kind, p);
  g.codes = static_cast<threshold_encoding>(h.threshold_encoding);
  // (The compact layout leaves the boundary out: it is implied.)
  if (!version1 && h.descriptor_bytes == sizeof(layer_descriptor) &&
      d.upper_start_block != g.upper_start_block) {
    fail(source, which + "inconsistent fractional-bits boundary");
  }
  return g;
}

/// Checks that the sections lie where the canonical layout puts them, with zero padding
/// between them, and (with `verify_checksums`) their checksums.
void check_sections(const unsigned char* data, const std::vector<layer_descriptor>& layers,
                    const std::vector<section_layout>& sections, std::uint64_t metadata_bytes,
                    bool verify_checksums, const std::string& source) {
  std::uint64_t cursor = metadata_bytes;
  auto check_gap = [&](std::uint64_t until) {
    for (; cursor < until; ++cursor) {
      if (data[cursor] != 0) fail(source, "non-zero padding at byte " + std::to_string(cursor));
    }
  };
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const layer_descriptor& d = layers[l];
    const section_layout& s = sections[l];
    const std::string which = "layer " + std::to_string(l) + ": ";
    if (d.threshold_offset != s.threshold_offset || d.threshold_bytes != s.threshold_bytes ||
        d.solution_offset != s.solution_offset || d.solution_bytes != s.solution_bytes) {
      fail(source, which + "section offsets or sizes are inconsistent");
    }
    if (s.threshold_bytes) {
      check_gap(s.threshold_offset);
      cursor = s.threshold_offset + s.threshold_bytes;
    }
    check_gap(s.solution_offset);
    cursor = s.solution_offset + s.solution_bytes;
    if (!verify_checksums) continue;
    if (checksum(data + s.threshold_offset, s.threshold_bytes) != d.threshold_checksum) {
      fail(source, which + "threshold section checksum mismatch (corrupt file)");
    }
    if (checksum(data + s.solution_offset, s.solution_bytes) != d.solution_checksum) {
      fail(source, which + "solution section checksum mismatch (corrupt file)");
    }
  }
}

/// Checks every shard region of a layer's 1+-bit codes (threshold_codes.hpp) as the writer
/// makes them, so that queries can trust the lists: counts within capacity (what keeps the
/// reads in bounds), then the canonical form: ascending entries before the tails, each with
/// its bit set, code-3 buckets in order, tails only where the list or the slots are full, and
/// unused bits zero.
void check_code_regions(const std::uint64_t* thresholds, const layer_geometry& g,
                        const filter_params& p, const std::string& which,
                        const std::string& source) {
  using detail::exception_field;
  const unsigned index_bits = g.code_index_bits(p.bucket_size);
  for (std::uint64_t shard = 0; shard < g.num_shards(); ++shard) {
    const std::uint64_t* region = thresholds + g.shard_first_threshold_word(shard, p.bucket_size);
    const std::uint64_t m = g.shard_buckets(shard, p.bucket_size);
    const std::string where = which + "shard " + std::to_string(shard) + ": ";
    auto bad = [&](const char* what) { fail(source, where + what); };
    const std::uint64_t* bits = region + detail::code_header_words(index_bits);
    if (m % 64 != 0 && (bits[detail::code_bit_words(m) - 1] >> (m % 64)) != 0) {
      bad("bucket bits past the last bucket");
    }
    const detail::exception_list list = detail::exception_list::of(region, m, index_bits);
    const std::uint64_t count = list.field(exception_field::count);
    const std::uint64_t all_a = list.field(exception_field::all_a);
    const std::uint64_t all_b = list.field(exception_field::all_b);
    const std::uint64_t heavy_from = list.field(exception_field::heavy_from);
    const std::uint64_t all_from = list.field(exception_field::all_from);
    const std::uint64_t capacity = detail::exception_capacity(m, index_bits);
    if (count > capacity) bad("exception list longer than its capacity");
    // In this order: a slot is read as a bucket only once it is known to be one.
    const bool slots_in_order = all_b <= m && (all_a < all_b || (all_a == m && all_b == m));
    const bool slots_marked = slots_in_order &&
                              (all_a == m || detail::bucket_bit(region, index_bits, all_a)) &&
                              (all_b == m || detail::bucket_bit(region, index_bits, all_b));
    if (!slots_marked || (all_b < m && all_b >= all_from) || all_from > m ||
        (all_from < m && all_b == m) || heavy_from > m || (heavy_from < m && count != capacity)) {
      bad("bad exception list header");
    }
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t bucket = list.entry(i);
      if ((i > 0 && bucket <= list.entry(i - 1)) || bucket >= heavy_from || bucket >= all_from ||
          bucket == all_a || bucket == all_b || !detail::bucket_bit(region, index_bits, bucket)) {
        bad("bad exception list entry");
      }
    }
    // Unused bits: after the entries, and after the header's fields.
    auto zero_from = [&](const std::uint64_t* words, std::uint64_t bit, std::uint64_t end) {
      for (; bit < end; bit += 63) {
        const auto n = static_cast<unsigned>(end - bit < 63 ? end - bit : 63);
        if (detail::read_bit_field(words, bit, n) != 0) return false;
      }
      return true;
    };
    if (!zero_from(list.entries, count * index_bits, detail::exception_words(m, index_bits) * 64) ||
        !zero_from(list.header,
                   std::uint64_t{static_cast<unsigned>(exception_field::fields)} *
                       detail::exception_field_bits(index_bits),
                   detail::code_header_words(index_bits) * 64)) {
      bad("non-zero unused bits in the exception list");
    }
  }
}

/// Fills in what a compact file's descriptors imply: the sections' places, the fractional-bits
/// boundary and (`with_checksums`) the sections' checksums.
void fill_compact_sections(const unsigned char* data, const std::vector<section_layout>& sections,
                           const std::vector<layer_geometry>& geometries, bool with_checksums,
                           std::vector<layer_descriptor>& layers) {
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const section_layout& s = sections[l];
    layer_descriptor& d = layers[l];
    d.threshold_offset = s.threshold_offset;
    d.threshold_bytes = s.threshold_bytes;
    if (with_checksums) {
      d.threshold_checksum = checksum(data + s.threshold_offset, s.threshold_bytes);
      d.solution_checksum = checksum(data + s.solution_offset, s.solution_bytes);
    }
    d.solution_offset = s.solution_offset;
    d.solution_bytes = s.solution_bytes;
    d.upper_start_block = geometries[l].upper_start_block;
  }
}

/// The one checksum of a compact file, over its frame and its sections' checksums.
void check_compact_checksum(const compact_frame_view& frame,
                            const std::vector<layer_descriptor>& layers,
                            const std::string& source) {
  if (compact_checksum(frame.raw_header, frame.header_bytes, frame.checksum_at, frame.layers.data(),
                       layers) != frame.header.checksum) {
    fail(source, "checksum mismatch (corrupt file)");
  }
}

/// Version 7's trailing sections after the layers' end: each at the layout's alignment after
/// zero bytes, its frame, its payload (checksummed where asked); the file ends with the last.
void read_trailing_sections(const unsigned char* data, std::uint64_t size, std::uint64_t layers_end,
                            const frame_shape& shape, std::uint32_t features, const file_header& h,
                            bool verify_checksums, const std::string& source, parsed_image& out) {
  std::uint64_t offset = layers_end;
  auto next = [&](const char* what) -> std::string_view {
    const std::uint64_t start = detail::round_up(offset, shape.alignment);
    if (start > size || size - start < sizeof(trailing_frame))
      fail(source, std::string("truncated: no room for the ") + what + " section");
    for (std::uint64_t i = offset; i < start; ++i) {
      if (data[i] != 0) fail(source, "non-zero padding at byte " + std::to_string(i));
    }
    trailing_frame frame;
    std::memcpy(&frame, data + start, sizeof(frame));
    const std::uint64_t at = start + sizeof(frame);
    if (frame.payload_bytes > size - at)
      fail(source, std::string("truncated: the ") + what + " section runs past the file's end");
    if (verify_checksums && checksum(data + at, frame.payload_bytes) != frame.payload_checksum)
      fail(source, std::string(what) + " section checksum mismatch (corrupt file)");
    offset = at + frame.payload_bytes;
    return {reinterpret_cast<const char*>(data + at),
            static_cast<std::size_t>(frame.payload_bytes)};
  };
  if (features & feature_bits::group_names) {
    const std::string_view payload = next("group names");
    auto names = std::make_shared<group_names>(
        group_names::decode(reinterpret_cast<const unsigned char*>(payload.data()), payload.size(),
                            static_cast<group_kind>(h.group_kind), source));
    if (names->size() < h.group_count) {
      fail(source, "group names: " + std::to_string(names->size()) + " names for " +
                       std::to_string(h.group_count) + " groups with keys");
    }
    out.names = std::move(names);
  }
  if (features & feature_bits::metadata) {
    const std::string_view payload = next("metadata");
    out.metadata = std::make_shared<const std::string>(payload);
  }
  if (offset != size) {
    fail(source, (size < offset ? "truncated: " : "trailing bytes: ") + std::to_string(size) +
                     " bytes, its sections take " + std::to_string(offset));
  }
}

}  // namespace

parsed_image parse_image(const unsigned char* data, std::uint64_t size, bool verify_checksums,
                         const std::string& source) {
  parsed_image out;
  const file_kind kind = read_kind(data, size, source);
  const bool compact = kind.compact;
  const frame_shape shape = shape_of(compact, kind.version);
  compact_frame_view frame;
  if (compact) {
    frame = read_compact_frame(data, size, kind, source);
    expand_compact_frame(frame, size, out.header, out.layers);
    out.features = check_features(out.header, kind, source);
  } else {
    out.header = read_header(data, size, kind, source);
    out.features = check_features(out.header, kind, source);
    out.layers = read_descriptors(data, size, out.header, source);
  }
  const file_header& h = out.header;
  const filter_params p = params_of(h, source);
  const std::size_t n = out.layers.size();

  std::vector<layer_geometry> geometries(n);
  std::uint64_t expected_input = h.key_count;
  for (std::size_t l = 0; l < n; ++l) {
    geometries[l] = geometry_of(out.layers[l], l, n, p, h, size, expected_input, source);
  }
  if (expected_input != 0) fail(source, "keys bumped out of the last layer");
  std::vector<section_layout> sections(n);
  const std::uint64_t layers_end = layout(p, geometries.data(), n, shape, sections.data());
  if (kind.version == features_version) {
    if (layers_end > size) {
      fail(source, "truncated: " + std::to_string(size) + " bytes, its layers take " +
                       std::to_string(layers_end));
    }
    read_trailing_sections(data, size, layers_end, shape, out.features, h, verify_checksums, source,
                           out);
  } else if (layers_end != size) {
    fail(source, compact ? (size < layers_end ? "truncated: " : "trailing bytes: ") +
                               std::to_string(size) + " bytes, its layers take " +
                               std::to_string(layers_end)
                         : std::string("section sizes do not add up to the file size"));
  }
  if (compact) {
    fill_compact_sections(data, sections, geometries, verify_checksums, out.layers);
    if (verify_checksums) check_compact_checksum(frame, out.layers, source);
    verify_checksums = false;  // a compact file has no checksum per section
  }
  const std::uint64_t metadata_bytes = shape.header_bytes + n * shape.descriptor_bytes;
  check_sections(data, out.layers, sections, metadata_bytes, verify_checksums, source);
  for (std::size_t l = 0; l < n; ++l) {
    if (geometries[l].bumping() && geometries[l].codes == threshold_encoding::one_plus_bit) {
      check_code_regions(
          reinterpret_cast<const std::uint64_t*>(data + sections[l].threshold_offset),
          geometries[l], p, "layer " + std::to_string(l) + ": ", source);
    }
  }

  out.ref.params = p;
  for (std::size_t l = 0; l < n; ++l) {
    const section_layout& s = sections[l];
    layer_ref& ref = out.ref.layers[l];
    ref.geometry = geometries[l];
    ref.salt = out.layers[l].salt;
    ref.thresholds = s.threshold_bytes
                         ? reinterpret_cast<const std::uint64_t*>(data + s.threshold_offset)
                         : nullptr;
    ref.solution = data + s.solution_offset;
  }
  out.ref.seed_mixed = seed_mix(p.seed);
  out.ref.key_count = h.key_count;
  out.ref.num_layers = static_cast<std::uint32_t>(n);
  return out;
}

}  // namespace ribbon::format
