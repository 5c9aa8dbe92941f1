// The format's reader: every field of either layout checked against the version table
// (format::version_rules) and the canonical layout, checksums, 1+-bit code regions and version
// 7's trailing sections, before a filter_ref is handed out.
#include <cstring>
#include <memory>
#include <string>

#include "format_frame.hpp"
#include "ribbon/error.hpp"
#include "ribbon/format.hpp"

namespace ribbon::format {

namespace {

using namespace internal;

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw error(source + ": " + what);
}

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

filter_params params_from_bytes(const void* data, std::size_t size) {
  const std::string source = "filter parameters";
  file_header h;
  if (size != sizeof(h)) fail(source, std::to_string(size) + " bytes, not 128");
  std::memcpy(&h, data, sizeof(h));
  if (std::memcmp(h.magic, magic, sizeof(magic)) != 0 ||
      h.header_checksum != checksum(&h, offsetof(file_header, header_checksum)) ||
      h.format_version != features_version || h.file_bytes != sizeof(h) || h.num_layers != 0) {
    fail(source, "not the bytes of format::params_bytes");
  }
  return params_of(h, source);
}

}  // namespace ribbon::format
