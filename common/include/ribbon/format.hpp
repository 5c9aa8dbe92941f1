/// @file format.hpp
/// The one file format of every builder and reader.
///
/// Little-endian. A 128-byte header, then one 128-byte descriptor per layer, then per layer
/// its threshold section (bumped layers) and its solution section, each 64-byte aligned and
/// zero-padded, so a file can be mapped and queried in place. The header, the descriptors and
/// every section carry an XXH64 checksum. Files are written by the CPU library (filter::save),
/// atomically.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ribbon/filter_ref.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"

namespace ribbon::format {

inline constexpr char magic[8] = {'R', 'I', 'B', 'B', 'O', 'N', 'F', 'L'};
/// Version 2 added the variant (standard, homogeneous, retrieval) and fractional bits per key;
/// version 3 the 1+-bit threshold encoding (threshold_codes.hpp); version 4 check bits in
/// retrieval structures (filter_params::check_bits, at header offset 100), with either
/// encoding. Files with 2-bit codes (the builders' choice at w = 32, and every older file)
/// and no check bits are version 2 (or 1), with 1+-bit codes version 3, so older readers
/// read every file that needs nothing newer; all are read, and re-saved files keep their
/// version.
inline constexpr std::uint32_t current_version = 4;
inline constexpr std::uint32_t oldest_readable_version = 1;
inline constexpr std::uint64_t section_alignment = 64;

/// The version of the files whose thresholds are encoded as `codes` and whose retrieval
/// values carry `check_bits` check bits.
constexpr std::uint32_t version_for(threshold_encoding codes, std::uint32_t check_bits = 0) {
  return check_bits != 0 ? 4 : codes == threshold_encoding::one_plus_bit ? 3 : 2;
}

struct file_header {
  char magic[8];
  std::uint32_t format_version;
  std::uint32_t header_bytes;
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
  std::uint64_t reserved[2];
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
  filter_params params;
  std::uint64_t key_count = 0;
  std::vector<layer_image> layers;
};

/// Size in bytes of the file that write_image() produces.
std::uint64_t image_bytes(const filter_image& image);

/// Streams the file bytes to `sink` in order (header, descriptors, padded sections).
void write_image(const filter_image& image, const byte_sink& sink,
                 const section_source& external = {});

/// The file bytes in memory.
std::vector<unsigned char> serialize(const filter_image& image);

/// A parsed, validated file image.
struct parsed_image {
  filter_ref ref;  ///< points into the image
  file_header header;
  std::vector<layer_descriptor> layers;
};

/// Validates an image (64-byte aligned, `size` bytes) and returns a view of it. Rejects a
/// wrong magic, an unknown version or variant, truncation, inconsistent sizes or offsets,
/// non-zero padding and (with `verify_checksums`) any checksum mismatch, by throwing
/// ribbon::error with a message that says which. `source` names the file in messages.
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
