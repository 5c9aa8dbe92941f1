/// @file format.hpp
/// The one file format of every builder and reader (docs/format.md).
///
/// Little-endian, in one of two layouts, so a file can be mapped and queried in place:
/// - standard (versions 1 to 4 and 6, and 7 without the compact feature): a 128-byte header,
///   one 128-byte descriptor per layer, then per layer its threshold section (bumped layers)
///   and its solution section, each 64-byte aligned and zero-padded; the header, the
///   descriptors and every section carry an XXH64 checksum;
/// - compact (version 5, and 7 with the compact feature), for small filters: a 56-byte header
///   (72 in version 7) and a 24-byte descriptor per layer holding only what the geometry does
///   not imply, sections 16-byte aligned, and one XXH64 that covers the header, the
///   descriptors and every section's own XXH64.
/// Version 7 states what a file needs of its reader as a word of features (feature_bits),
/// and may end with trailing sections (a set's group names, application metadata), each with
/// its own checksum. Files are written by the CPU library (filter::save), atomically.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ribbon/filter_ref.hpp"
#include "ribbon/group_names.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"

namespace ribbon::format {

inline constexpr char magic[8] = {'R', 'I', 'B', 'B', 'O', 'N', 'F', 'L'};
inline constexpr std::uint32_t compact_version = 5;
inline constexpr std::uint32_t set_version = 6;
/// The last version number: what a file needs is its features word from here on.
inline constexpr std::uint32_t features_version = 7;
inline constexpr std::uint32_t current_version = 7;
inline constexpr std::uint32_t oldest_readable_version = 1;
inline constexpr std::uint64_t section_alignment = 64;
inline constexpr std::uint64_t compact_section_alignment = 16;
/// Where 128 + 128 bytes a layer stop mattering: at 1 MiB of sections they are 0.05 %.
inline constexpr std::uint64_t compact_max_section_bytes = std::uint64_t{1} << 20;

/// What a file needs of its reader, one bit a feature: stated in version 7's features word,
/// implied by the header in versions 1 to 6. A reader refuses a bit it does not know.
namespace feature_bits {
inline constexpr std::uint32_t compact = 1u << 0;             ///< the compact layout
inline constexpr std::uint32_t one_plus_bit_codes = 1u << 1;  ///< threshold_encoding 2
inline constexpr std::uint32_t check_bits = 1u << 2;          ///< retrieval check bits
inline constexpr std::uint32_t filter_set = 1u << 3;          ///< (group, key) pairs
inline constexpr std::uint32_t group_names = 1u << 4;         ///< a set's names section
inline constexpr std::uint32_t metadata = 1u << 5;            ///< application metadata
inline constexpr std::uint32_t known = (1u << 6) - 1;
}  // namespace feature_bits

/// The name of feature bit `bit` (0 to 31) as docs/format.md writes it, or nullptr where this
/// library does not know it.
const char* feature_name(unsigned bit);

/// The names of the features `bits` sets, comma-separated ("bitN" for an unknown one).
std::string feature_names(std::uint32_t bits);

/// What one version admits: the rows of docs/format.md's table. A file of `version` has
/// every feature of `required` and none outside `allowed`.
struct version_rule {
  std::uint32_t version;
  std::uint32_t allowed;
  std::uint32_t required;
  bool written;        ///< whether writers choose it (version 1 is read only)
  bool any_variant;    ///< else bumped filters only (version 1)
  bool fraction_bits;  ///< whether extra_bit_fraction may be non-zero (not in version 1)
};

inline constexpr version_rule version_rules[] = {
    {1, 0, 0, false, false, false},
    {2, 0, 0, true, true, true},
    {3, feature_bits::one_plus_bit_codes, feature_bits::one_plus_bit_codes, true, true, true},
    {4, feature_bits::one_plus_bit_codes | feature_bits::check_bits, feature_bits::check_bits, true,
     true, true},
    {5, feature_bits::compact | feature_bits::one_plus_bit_codes | feature_bits::check_bits,
     feature_bits::compact, true, true, true},
    {6, feature_bits::one_plus_bit_codes | feature_bits::filter_set, feature_bits::filter_set, true,
     true, true},
    {7, feature_bits::known, 0, true, true, true},
};

/// The rule of `version`, or nullptr for a version no release wrote.
const version_rule* rule_of(std::uint32_t version);

/// Why the features `features` cannot be one file (e.g. check bits on a set of filters), or
/// nullptr where they can. Holds in every version.
const char* feature_conflict(std::uint32_t features);

/// The version writers give a file of `features`: the oldest written version whose rule
/// admits them, so that readers of earlier releases keep reading what they read before.
std::uint32_t version_for_features(std::uint32_t features);

/// Which layout a writer uses: `automatic` is compact for filters whose sections take at most
/// compact_max_section_bytes (and whose counts fit the compact fields), standard otherwise.
enum class layout_choice : std::uint32_t { automatic = 0, standard = 1, compact = 2 };

/// The version of the standard-layout files whose thresholds are encoded as `codes`, whose
/// retrieval values carry `check_bits` check bits and that are (or not) filter sets without
/// names or metadata.
std::uint32_t version_for(threshold_encoding codes, std::uint32_t check_bits = 0, bool set = false);

struct file_header {
  char magic[8];
  std::uint32_t format_version;
  union {
    std::uint32_t header_bytes;  ///< versions 1 to 6: 128
    std::uint32_t features;      ///< version 7: feature_bits (the header is 128 bytes)
  };
  std::uint64_t file_bytes;
  std::uint32_t variant;  ///< a ribbon::filter_variant (readers reject unknown ones)
  std::uint32_t key_kind;
  std::uint32_t width;
  std::uint32_t result_bits;
  std::uint32_t bucket_size;
  std::uint32_t threshold_light;
  std::uint32_t threshold_heavy;
  std::uint32_t threshold_encoding;  ///< a ribbon::threshold_encoding, the same for all layers
  std::uint64_t shard_size;
  std::uint64_t seed;
  std::uint64_t key_count;
  std::uint32_t num_layers;
  std::uint32_t descriptor_bytes;
  std::uint64_t descriptors_checksum;  ///< XXH64 of all layer descriptors
  std::uint32_t extra_bit_fraction;    ///< fractional bits per key (version 2; 0 in version 1)
  std::uint32_t check_bits;            ///< retrieval check bits (version 4; 0 before)
  std::uint64_t group_count;           ///< filter sets: distinct groups with keys (else 0)
  std::uint32_t group_kind;            ///< filter sets: a ribbon::group_kind (else 0)
  std::uint32_t reserved;
  std::uint64_t header_checksum;  ///< XXH64 of the 120 bytes before it
};
static_assert(sizeof(file_header) == 128);

struct layer_descriptor {
  std::uint64_t num_starts;
  std::uint32_t shard_bits;
  std::uint32_t kind;
  std::uint64_t salt;
  std::uint64_t input_keys;   ///< keys that reached this layer
  std::uint64_t bumped_keys;  ///< keys passed on to the next layer
  std::uint64_t threshold_offset;
  std::uint64_t threshold_bytes;
  std::uint64_t threshold_checksum;
  std::uint64_t solution_offset;
  std::uint64_t solution_bytes;
  std::uint64_t solution_checksum;
  std::uint64_t upper_start_block;  ///< first block with r + 1 words (version 2; see layer.hpp)
  std::uint64_t reserved[4];
};
static_assert(sizeof(layer_descriptor) == 128);

/// The header of the compact layout (version 5). What the standard header spells out and the
/// parameters imply (sizes, offsets, bucket and shard sizes as powers of two) is left out.
struct compact_header {
  char magic[8];
  std::uint32_t format_version;  ///< 5
  std::uint8_t variant;
  std::uint8_t key_kind;
  std::uint8_t width;
  std::uint8_t result_bits;
  std::uint64_t seed;
  std::uint64_t key_count;
  std::uint64_t checksum;  ///< XXH64 of the header (this field 0), descriptors, section sums
  std::uint32_t threshold_light;
  std::uint32_t threshold_heavy;
  std::uint16_t extra_bit_fraction;
  std::uint8_t check_bits;
  std::uint8_t bucket_bits;  ///< log2(bucket_size)
  std::uint8_t shard_bits;   ///< log2(shard_size)
  std::uint8_t threshold_encoding;
  std::uint8_t num_layers;
  std::uint8_t reserved;
};
static_assert(sizeof(compact_header) == 56);

/// The header of the compact layout in version 7: version 5's fields, the features word after
/// the version, and a set's group fields.
struct compact_header_v7 {
  char magic[8];
  std::uint32_t format_version;  ///< 7
  std::uint32_t features;        ///< feature_bits, compact among them
  std::uint8_t variant;
  std::uint8_t key_kind;
  std::uint8_t width;
  std::uint8_t result_bits;
  std::uint32_t threshold_light;
  std::uint64_t seed;
  std::uint64_t key_count;
  std::uint64_t checksum;  ///< as compact_header's
  std::uint32_t threshold_heavy;
  std::uint16_t extra_bit_fraction;
  std::uint8_t check_bits;
  std::uint8_t bucket_bits;
  std::uint8_t shard_bits;
  std::uint8_t threshold_encoding;
  std::uint8_t num_layers;
  std::uint8_t group_kind;
  std::uint32_t reserved;
  std::uint64_t group_count;
};
static_assert(sizeof(compact_header_v7) == 72);

/// The frame of a trailing section (version 7): its payload's size and XXH64, then the payload.
struct trailing_frame {
  std::uint64_t payload_bytes;
  std::uint64_t payload_checksum;
};
static_assert(sizeof(trailing_frame) == 16);

/// A layer of the compact layout: its input keys, sections, offsets and shard bits follow from
/// the header and the layers before it.
struct compact_descriptor {
  std::uint64_t salt;
  std::uint64_t bumped_keys;
  std::uint32_t num_starts;
  std::uint8_t kind;
  std::uint8_t reserved[3];
};
static_assert(sizeof(compact_descriptor) == 24);

/// One layer handed to the writer: its geometry, counts and section contents.
struct layer_image {
  layer_geometry geometry;
  std::uint64_t salt = 0;
  std::uint64_t input_keys = 0;
  std::uint64_t bumped_keys = 0;
  const void* thresholds = nullptr;  ///< geometry.threshold_words(B) * 8 bytes
  const void* solution = nullptr;    ///< geometry.solution_bytes(w, r) bytes
  /// A section that is not in memory (its pointer null, its size not 0), e.g. one that an
  /// out-of-core build wrote to a spill file, comes from the writer's section_source; its
  /// checksum is then given here.
  std::uint64_t threshold_checksum = 0;
  std::uint64_t solution_checksum = 0;
};

/// Which section of a layer.
enum class section : std::uint32_t { thresholds = 0, solution = 1 };

/// Receives file bytes in order.
using byte_sink = std::function<void(const void*, std::size_t)>;

/// Produces the bytes of a section not held in memory: section_source(layer, which, sink)
/// must pass exactly that section's bytes to `sink`.
using section_source = std::function<void(std::size_t, section, const byte_sink&)>;

/// Everything the writer needs.
struct filter_image {
  filter_image() = default;
  filter_image(const filter_params& params_, std::uint64_t key_count_,
               std::vector<layer_image> layers_, layout_choice layout_ = layout_choice::automatic,
               std::uint64_t group_count_ = 0, std::shared_ptr<const group_names> names_ = nullptr,
               std::shared_ptr<const std::string> metadata_ = nullptr)
      : params(params_),
        key_count(key_count_),
        layers(std::move(layers_)),
        layout(layout_),
        group_count(group_count_),
        names(std::move(names_)),
        metadata(std::move(metadata_)) {}

  filter_params params;
  std::uint64_t key_count = 0;
  std::vector<layer_image> layers;
  layout_choice layout = layout_choice::automatic;
  std::uint64_t group_count = 0;  ///< filter sets (params.groups): distinct groups with keys
  /// Filter sets: the names of every group the builder was given (null: none written, which
  /// makes a standard-layout set version 6).
  std::shared_ptr<const group_names> names;
  /// Application metadata, written as it is (null: none).
  std::shared_ptr<const std::string> metadata;
};

/// The features a file of `image` needs (feature_bits), its layout resolved.
std::uint32_t features_of(const filter_image& image);

/// Whether write_image() writes `image` in the compact layout (its choice resolved).
bool is_compact(const filter_image& image);

/// The format version write_image() gives `image`.
std::uint32_t version_of(const filter_image& image);

/// Size in bytes of the file that write_image() produces.
std::uint64_t image_bytes(const filter_image& image);

/// Streams the file bytes to `sink` in order (header, descriptors, padded sections).
void write_image(const filter_image& image, const byte_sink& sink,
                 const section_source& external = {});

/// The file bytes in memory.
std::vector<unsigned char> serialize(const filter_image& image);

/// The one serialized form of filter_params (for distributed tasks and caches): a standard
/// header of no layers that records `p`, checksummed (128 bytes).
std::vector<unsigned char> params_bytes(const filter_params& p);

/// The parameters of params_bytes(). Throws ribbon::error for bytes it did not write or
/// parameters that break the rules (check_params).
filter_params params_from_bytes(const void* data, std::size_t size);

/// A parsed, validated file image.
struct parsed_image {
  filter_ref ref;  ///< points into the image
  /// The header and descriptors in the standard layout's terms, also for a compact file (its
  /// format_version then 5 and every field the compact layout implies filled in).
  file_header header;
  std::vector<layer_descriptor> layers;
  std::uint32_t features = 0;  ///< stated (version 7) or implied (feature_bits)
  /// Version 7's trailing sections: a set's group names (decoded and checked; null where
  /// absent) and the application metadata (a view into the image; null where absent).
  std::shared_ptr<const group_names> names = nullptr;
  std::shared_ptr<const std::string> metadata = nullptr;
};

/// Validates an image (64-byte aligned, `size` bytes; 16-byte aligned is enough for a compact
/// one) and returns a view of it. Rejects a wrong magic, an unknown version or variant,
/// truncation, inconsistent sizes or offsets, non-zero padding and (with `verify_checksums`)
/// any checksum mismatch, by throwing ribbon::error with a message that says which. (Without
/// `verify_checksums` a standard file's header and descriptors are still checked against
/// their checksums; a compact file's one checksum covers its sections too, so it is not.)
/// `source` names the file in messages.
parsed_image parse_image(const unsigned char* data, std::uint64_t size, bool verify_checksums,
                         const std::string& source);

/// Builds the query view of a filter held in memory (used by builders, no file involved).
filter_ref make_ref(const filter_image& image);

/// The query view of the file image of `image` at `base` (in any memory, e.g. on a device):
/// every section pointer points to where write_image() puts that section. Lets a builder
/// place the sections it holds elsewhere into one image without writing a file.
filter_ref make_ref_at(const filter_image& image, const unsigned char* base);

/// The same view for a copy of the image at another address (e.g. in device memory):
/// every section pointer moves from `from` to `to`.
filter_ref relocate(const filter_ref& ref, const unsigned char* from, const unsigned char* to);

/// XXH64 checksum used by the format.
std::uint64_t checksum(const void* data, std::size_t bytes);

}  // namespace ribbon::format
