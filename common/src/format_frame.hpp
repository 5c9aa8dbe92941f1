// The frame every format file shares, for the reader (format_read.cpp) and the writer
// (format_write.cpp): where a layout puts its sections, which features and version an image
// gets, its trailing sections, and the compact layout's checksum and version-7 header.
// Internal to ribbon::common.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ribbon/format.hpp"

namespace ribbon::format::internal {

/// Where a layer's two sections lie in the file.
struct section_layout {
  std::uint64_t threshold_offset, threshold_bytes, solution_offset, solution_bytes;
};

/// The sizes of a layout's frame: header, descriptor, section alignment.
struct frame_shape {
  std::uint64_t header_bytes, descriptor_bytes, alignment;
  bool compact() const { return alignment == compact_section_alignment; }
};

/// The frame of the standard or compact layout in format version `version`.
frame_shape shape_of(bool compact, std::uint32_t version);
/// The frame write_image() gives `image`.
frame_shape shape_of(const filter_image& image);

/// The canonical placement of every section in either layout; the writer uses it and the
/// reader insists on it. Returns where the layers' sections end.
std::uint64_t layout(const filter_params& p, const layer_geometry* geometries,
                     std::size_t num_layers, const frame_shape& shape, section_layout* out);

std::vector<layer_geometry> geometries_of(const filter_image& image);

/// The payloads of a version-7 image's trailing sections, in their order.
std::vector<std::vector<unsigned char>> trailing_payloads(const filter_image& image);

/// The file's size: the layers' end, then each trailing section at the layout's alignment.
std::uint64_t with_trailing(std::uint64_t layers_end, const frame_shape& shape,
                            const std::vector<std::vector<unsigned char>>& payloads);

/// A filter set has at least one group when it has keys, none without, and no more groups
/// than keys.
inline bool group_count_fits(std::uint64_t groups, std::uint64_t keys) {
  return groups <= keys && (groups == 0) == (keys == 0);
}

/// The compact layout's one checksum: XXH64 of its header (`header_bytes` bytes, the checksum
/// field at `checksum_at` taken as 0) and descriptors, followed by each layer's threshold and
/// solution checksums (taken from the standard descriptors `sums`), so a writer that streams
/// a section knows it beforehand.
std::uint64_t compact_checksum(const void* header, std::size_t header_bytes,
                               std::size_t checksum_at, const compact_descriptor* descriptors,
                               const std::vector<layer_descriptor>& sums);

/// Version 7's compact header from version 5's fields and the features and group fields.
compact_header_v7 to_v7(const compact_header& c, std::uint32_t features, std::uint8_t groups,
                        std::uint64_t group_count);
/// And back: version 5's fields of a version-7 compact header (its version stays 7).
compact_header from_v7(const compact_header_v7& h);

}  // namespace ribbon::format::internal
