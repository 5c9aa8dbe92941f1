// The file format's reader rejects every corruption, truncation and extension of a file, in
// either layout, with ribbon::error (never a crash). Loading and saving files: test_files.cpp.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "file_helpers.hpp"
#include "ribbon/error.hpp"
#include "ribbon/filter.hpp"
#include "ribbon/format.hpp"
#include "test_util.hpp"

namespace {

using ribbon::format::compact_descriptor;
using ribbon::format::compact_header;
using ribbon::format::file_header;
using ribbon::format::layer_descriptor;
using ribbon::format::layout_choice;
using ribbon_test::contains_text;
using ribbon_test::error_message;
using ribbon_test::write_bytes;

struct small_case {
  unsigned width;
  std::uint32_t r;
  std::uint64_t n;
  bool bytes;  // byte-string keys
  bool compact;
};

std::string case_name(const small_case& c) {
  return "w" + std::to_string(c.width) + "_r" + std::to_string(c.r) + "_n" + std::to_string(c.n) +
         (c.bytes ? "_bytes" : "_u64") + (c.compact ? "_compact" : "_standard");
}

void PrintTo(const small_case& c, std::ostream* os) {
  *os << case_name(c);
}

/// A small filter, its members (as u64 keys or strings) and its file bytes.
struct small_filter {
  ribbon::filter filter;
  std::vector<std::uint64_t> keys;
  std::vector<std::string> strings;
  std::vector<unsigned char> bytes;
};

small_filter make_small(const small_case& c) {
  small_filter s;
  ribbon::build_options o;
  o.width = c.width;
  o.result_bits = c.r;
  o.seed = 77;
  if (c.bytes) {
    s.strings = ribbon_test::string_keys(21, 0, c.n);
    const std::vector<std::string_view> views = ribbon_test::views(s.strings);
    s.filter = ribbon::filter::build(views.data(), c.n, o);
  } else {
    s.keys = ribbon_test::keys_range(21, 0, c.n);
    s.filter = ribbon::filter::build(s.keys.data(), c.n, o);
  }
  s.bytes = s.filter.serialize(c.compact ? layout_choice::compact : layout_choice::standard);
  return s;
}

/// Where a layout keeps its metadata and the checksums over it, from the spec (format.md).
struct layout_facts {
  std::uint64_t header_bytes, descriptor_bytes, checksums_begin, checksums_end, alignment;

  static layout_facts of(bool compact) {
    if (compact) {
      return {sizeof(compact_header), sizeof(compact_descriptor),
              offsetof(compact_header, checksum), offsetof(compact_header, checksum) + 8, 16};
    }
    return {sizeof(file_header), sizeof(layer_descriptor),
            offsetof(file_header, descriptors_checksum), sizeof(file_header), 64};
  }
  std::uint64_t metadata_bytes(std::uint64_t num_layers) const {
    return header_bytes + num_layers * descriptor_bytes;
  }
};

/// A small file's bytes in an aligned buffer, parsed (checksums verified), to change in place.
struct editable_image {
  explicit editable_image(const small_filter& s)
      : image(s.bytes.data(), s.bytes.size()),
        parsed(ribbon::format::parse_image(image.data(), image.size(), true, "image")) {}
  ribbon_test::aligned_buffer image;
  ribbon::format::parsed_image parsed;
};

/// Runs queries on a filter that was accepted (whatever its answers): under the sanitizers
/// this checks that an accepted image never leads to an out-of-bounds read.
void exercise(const ribbon::filter& f) {
  const std::vector<std::uint64_t> keys = ribbon_test::keys_range(21, 0, 300);
  bool out[300];
  if (f.params().keys == ribbon::key_kind::u64) {
    for (std::uint64_t k : keys) (void)f.contains(k);
    f.contains(keys.data(), keys.size(), out);
  } else {
    const std::vector<std::string> strings = ribbon_test::string_keys(21, 0, 300);
    const std::vector<std::string_view> views = ribbon_test::views(strings);
    for (std::string_view v : views) (void)f.contains(v);
    f.contains(views.data(), views.size(), out);
  }
}

/// Does parsing `size` bytes at `data` (64-byte aligned) throw ribbon::error? Any other
/// exception fails the test.
bool rejected_by_parse(const unsigned char* data, std::uint64_t size, bool verify) {
  try {
    (void)ribbon::format::parse_image(data, size, verify, "image");
  } catch (const ribbon::error&) {
    return true;
  }
  return false;
}

bool rejected_by_from_bytes(const unsigned char* data, std::uint64_t size, bool verify) {
  ribbon::load_options lo;
  lo.verify_checksums = verify;
  try {
    const ribbon::filter f = ribbon::filter::from_bytes(data, size, lo);
    exercise(f);
  } catch (const ribbon::error&) {
    return true;
  }
  return false;
}

/// The layer count of a file in either layout.
std::uint32_t num_layers_of(const std::vector<unsigned char>& bytes, bool compact) {
  if (compact) return bytes[offsetof(compact_header, num_layers)];
  file_header h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  return h.num_layers;
}

/// Recomputes a compact image's checksum after an edit, as docs/format.md defines it: XXH64 of
/// the header (its checksum field 0) and descriptors, then each layer's threshold and
/// solution checksums, taken where the sections of `original` (the unedited file's layers)
/// lie.
void fix_compact_checksum(unsigned char* data, std::uint64_t size,
                          const std::vector<layer_descriptor>& original) {
  const std::uint64_t n = data[offsetof(compact_header, num_layers)];
  const std::uint64_t frame = sizeof(compact_header) + n * sizeof(compact_descriptor);
  if (frame > size) return;
  std::vector<unsigned char> covered(data, data + frame);
  std::memset(covered.data() + offsetof(compact_header, checksum), 0, 8);
  for (std::uint64_t l = 0; l < n && l < original.size(); ++l) {
    const layer_descriptor& d = original[l];
    for (const std::uint64_t sum :
         {ribbon::format::checksum(data + d.threshold_offset, d.threshold_bytes),
          ribbon::format::checksum(data + d.solution_offset, d.solution_bytes)}) {
      covered.insert(covered.end(), reinterpret_cast<const unsigned char*>(&sum),
                     reinterpret_cast<const unsigned char*>(&sum) + 8);
    }
  }
  const std::uint64_t sum = ribbon::format::checksum(covered.data(), covered.size());
  std::memcpy(data + offsetof(compact_header, checksum), &sum, 8);
}

/// Recomputes the checksums of a `size`-byte image after an edit: a compact one's (see
/// above), or a standard one's descriptor and header checksums (the descriptors' one only if
/// the layer count still fits the image).
void fix_checksums(unsigned char* data, std::uint64_t size, bool compact,
                   const std::vector<layer_descriptor>& original) {
  if (compact) return fix_compact_checksum(data, size, original);
  file_header h;
  std::memcpy(&h, data, sizeof(h));
  const std::uint64_t descriptors = std::uint64_t{h.num_layers} * sizeof(layer_descriptor);
  if (h.num_layers <= ribbon::max_layers && sizeof(file_header) + descriptors <= size) {
    h.descriptors_checksum = ribbon::format::checksum(data + sizeof(file_header), descriptors);
  }
  h.header_checksum = ribbon::format::checksum(&h, offsetof(file_header, header_checksum));
  std::memcpy(data, &h, sizeof(h));
}

/// Offsets of the fields a reader cannot check (any value is a valid filter, answering
/// differently): the seed, the key kind, the bucket thresholds and the layer salts. The
/// compact layout keeps no second copy of what the standard one cross-checks, so there also
/// the key counts (stated once, not as each layer's input and the previous layer's output),
/// the shard size (which a filter of one shard a layer does not use) and the fractional bits
/// (a fraction too small to move the implied boundary between blocks).
bool unverifiable_field(std::uint64_t offset, std::uint32_t num_layers, bool compact) {
  auto in = [offset](std::uint64_t begin, std::uint64_t bytes) {
    return offset >= begin && offset < begin + bytes;
  };
  if (compact) {
    if (in(offsetof(compact_header, seed), 16) || in(offsetof(compact_header, key_kind), 1) ||
        in(offsetof(compact_header, threshold_light), 8) ||
        in(offsetof(compact_header, extra_bit_fraction), 2) ||
        in(offsetof(compact_header, shard_bits), 1)) {
      return true;  // (seed, 16: the seed and the key count)
    }
    for (std::uint32_t l = 0; l < num_layers; ++l) {
      const std::uint64_t d = sizeof(compact_header) + l * sizeof(compact_descriptor);
      if (in(d + offsetof(compact_descriptor, bumped_keys), 8)) return true;
    }
  } else if (in(offsetof(file_header, seed), 8) || in(offsetof(file_header, key_kind), 4) ||
             in(offsetof(file_header, threshold_light), 4) ||
             in(offsetof(file_header, threshold_heavy), 4)) {
    return true;
  }
  const layout_facts f = layout_facts::of(compact);
  const std::uint64_t salt =
      compact ? offsetof(compact_descriptor, salt) : offsetof(layer_descriptor, salt);
  for (std::uint32_t l = 0; l < num_layers; ++l) {
    if (in(f.header_bytes + l * f.descriptor_bytes + salt, 8)) return true;
  }
  return false;
}

class SmallFile : public ::testing::TestWithParam<small_case> {
 protected:
  bool compact() const { return GetParam().compact; }
  layout_facts facts() const { return layout_facts::of(compact()); }
};

TEST_P(SmallFile, IsValidAndMultiLayer) {
  small_filter s = make_small(GetParam());
  ASSERT_GE(s.filter.num_layers(), 2u) << "the case should exercise a bumped and a later layer";
  const editable_image e(s);
  const ribbon::format::parsed_image& parsed = e.parsed;
  EXPECT_EQ(parsed.header.file_bytes, s.bytes.size());
  EXPECT_EQ(parsed.header.num_layers, s.filter.num_layers());
  EXPECT_EQ(parsed.header.format_version,
            compact() ? ribbon::format::compact_version
                      : ribbon::format::version_for(s.filter.threshold_codes()));
  // A small filter is compact unless told otherwise; a loaded file keeps its layout.
  EXPECT_EQ(s.filter.format_version(), ribbon::format::compact_version);
  EXPECT_EQ(ribbon::filter::from_bytes(s.bytes.data(), s.bytes.size()).serialize(), s.bytes);
  // Builders write 1+-bit codes (format version 3), except at w = 32 (2-bit, version 2).
  EXPECT_EQ(s.filter.threshold_codes(), GetParam().width == 32
                                            ? ribbon::threshold_encoding::two_bit
                                            : ribbon::threshold_encoding::one_plus_bit);
  EXPECT_EQ(std::memcmp(parsed.header.magic, ribbon::format::magic, 8), 0);
  // Every section is aligned in the file (64 bytes, 16 in the compact layout), and the first
  // follows the metadata.
  for (const layer_descriptor& d : parsed.layers) {
    EXPECT_EQ(d.solution_offset % facts().alignment, 0u);
    EXPECT_EQ(d.threshold_offset % facts().alignment, 0u);
  }
  EXPECT_EQ(
      parsed.layers[0].threshold_offset,
      ribbon::detail::round_up(facts().metadata_bytes(parsed.layers.size()), facts().alignment));
  std::cout << case_name(GetParam()) << ": " << s.bytes.size() << " bytes, "
            << s.filter.num_layers() << " layers\n";
}

// Parameters travel (to distributed tasks) as the header's bytes: every field comes back, and
// any other bytes are refused.
TEST_P(SmallFile, ParamsTravelAsHeaderBytes) {
  const ribbon::filter_params p = make_small(GetParam()).filter.params();
  const std::vector<unsigned char> bytes = ribbon::format::params_bytes(p);
  ASSERT_EQ(bytes.size(), sizeof(file_header));
  const ribbon::filter_params q = ribbon::format::params_from_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(q.width, p.width);
  EXPECT_EQ(q.result_bits, p.result_bits);
  EXPECT_EQ(q.bucket_size, p.bucket_size);
  EXPECT_EQ(q.threshold_light, p.threshold_light);
  EXPECT_EQ(q.threshold_heavy, p.threshold_heavy);
  EXPECT_EQ(q.variant, p.variant);
  EXPECT_EQ(q.shard_size, p.shard_size);
  EXPECT_EQ(q.seed, p.seed);
  EXPECT_EQ(q.keys, p.keys);
  EXPECT_EQ(q.extra_bit_fraction, p.extra_bit_fraction);
  EXPECT_EQ(q.threshold_codes, p.threshold_codes);
  EXPECT_EQ(q.groups, p.groups);
  EXPECT_EQ(q.check_bits, p.check_bits);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::vector<unsigned char> changed = bytes;
    changed[i] ^= 0x10;
    EXPECT_THROW(ribbon::format::params_from_bytes(changed.data(), changed.size()), ribbon::error)
        << "byte " << i;
  }
  EXPECT_THROW(ribbon::format::params_from_bytes(bytes.data(), bytes.size() - 1), ribbon::error);
}

TEST_P(SmallFile, EverySingleByteCorruptionIsRejected) {
  small_filter s = make_small(GetParam());
  ribbon_test::aligned_buffer image(s.bytes.data(), s.bytes.size());
  ASSERT_FALSE(rejected_by_parse(image.data(), image.size(), true));
  ASSERT_FALSE(rejected_by_from_bytes(image.data(), image.size(), true));
  std::uint64_t accepted = 0, tried = 0;
  for (std::size_t i = 0; i < image.size(); ++i) {
    for (unsigned mask : {0x01u, 0x80u, 0xFFu}) {
      image.data()[i] ^= static_cast<unsigned char>(mask);
      ++tried;
      const bool parse = rejected_by_parse(image.data(), image.size(), true);
      const bool adopt = rejected_by_from_bytes(image.data(), image.size(), true);
      if (!parse || !adopt) {
        if (++accepted <= 10) {
          ADD_FAILURE() << "corruption accepted: byte " << i << " ^= " << mask
                        << (parse ? "" : " (parse_image)") << (adopt ? "" : " (from_bytes)");
        }
      }
      image.data()[i] ^= static_cast<unsigned char>(mask);
    }
  }
  EXPECT_EQ(accepted, 0u) << "of " << tried << " corruptions";
  EXPECT_TRUE(std::memcmp(image.data(), s.bytes.data(), s.bytes.size()) == 0);
}

TEST_P(SmallFile, CorruptionWithoutChecksumVerificationNeverCrashes) {
  // Without checksum verification, changed section bytes are accepted (wrong answers are
  // possible) but structural changes are still rejected; nothing crashes either way. A
  // standard file's metadata is still covered by its checksums; a compact file's one
  // checksum is not verified, so only its unverifiable fields may change.
  small_filter s = make_small(GetParam());
  ribbon_test::aligned_buffer image(s.bytes.data(), s.bytes.size());
  const std::uint64_t metadata = facts().metadata_bytes(num_layers_of(s.bytes, compact()));
  std::uint64_t accepted = 0;
  for (std::size_t i = 0; i < image.size(); ++i) {
    image.data()[i] ^= 0x10;
    const bool rejected = rejected_by_from_bytes(image.data(), image.size(), false);
    if (!rejected) {
      ++accepted;
      const bool checksum = i >= facts().checksums_begin && i < facts().checksums_end;
      EXPECT_TRUE(
          i >= metadata ||
          (compact() && (checksum || unverifiable_field(i, num_layers_of(s.bytes, true), true))))
          << "metadata byte " << i << " accepted";
    }
    image.data()[i] ^= 0x10;
  }
  EXPECT_GT(accepted, 0u);
}

TEST_P(SmallFile, CodeRegionChangesWithoutChecksumsAreCheckedNeverCrash) {
  // The 1+-bit codes' lists are read through their headers: without checksum verification,
  // every change to a threshold section is either rejected by the reader's region check or
  // queried within bounds (the sanitizers watch the reads).
  small_filter s = make_small(GetParam());
  if (s.filter.threshold_codes() != ribbon::threshold_encoding::one_plus_bit) {
    GTEST_SKIP() << "2-bit codes: every bit pattern is a valid code";
  }
  editable_image e(s);
  ribbon_test::aligned_buffer& image = e.image;
  std::uint64_t rejected = 0, accepted = 0;
  for (const layer_descriptor& d : e.parsed.layers) {
    for (std::uint64_t i = d.threshold_offset; i < d.threshold_offset + d.threshold_bytes; ++i) {
      for (unsigned mask : {0x01u, 0x10u, 0x80u, 0xFFu}) {
        image.data()[i] ^= static_cast<unsigned char>(mask);
        ++(rejected_by_from_bytes(image.data(), image.size(), false) ? rejected : accepted);
        image.data()[i] ^= static_cast<unsigned char>(mask);
      }
    }
  }
  EXPECT_GT(rejected, 0u);
  EXPECT_GT(accepted, 0u);
  std::cout << "threshold-section changes without checksums: " << rejected << " rejected, "
            << accepted << " accepted\n";
}

TEST_P(SmallFile, ExceptionListBeyondItsCapacityIsRejected) {
  small_filter s = make_small(GetParam());
  if (s.filter.threshold_codes() != ribbon::threshold_encoding::one_plus_bit) {
    GTEST_SKIP() << "2-bit codes have no exception lists";
  }
  editable_image e(s);
  ribbon_test::aligned_buffer& image = e.image;
  const ribbon::format::parsed_image& parsed = e.parsed;
  const ribbon::layer_geometry& g = parsed.ref.layers[0].geometry;
  const ribbon::filter_params& p = parsed.ref.params;
  ASSERT_TRUE(g.bumping());
  // Shard 0's header (the first bits of its region): its count set to its largest value.
  const unsigned index_bits = g.code_index_bits(p.bucket_size);
  auto* region = reinterpret_cast<std::uint64_t*>(image.data() + parsed.layers[0].threshold_offset);
  *region |= (std::uint64_t{2} << index_bits) - 1;  // the header's first field
  fix_checksums(image.data(), image.size(), compact(), parsed.layers);
  const std::string message = error_message(
      [&] { (void)ribbon::format::parse_image(image.data(), image.size(), false, "image"); });
  EXPECT_TRUE(contains_text(message, "exception list longer than its capacity")) << message;
}

TEST_P(SmallFile, EveryTruncationIsRejected) {
  small_filter s = make_small(GetParam());
  ribbon_test::aligned_buffer image(s.bytes.data(), s.bytes.size());
  for (std::uint64_t size = 0; size < s.bytes.size(); ++size) {
    ASSERT_TRUE(rejected_by_parse(image.data(), size, true)) << "length " << size;
    ASSERT_TRUE(rejected_by_parse(image.data(), size, false)) << "length " << size;
    ASSERT_TRUE(rejected_by_from_bytes(image.data(), size, true)) << "length " << size;
  }
  // Truncated files on disk, both loaders, with the path in the message.
  ribbon_test::temp_dir dir;
  const std::string path = dir.file("truncated.rbn");
  for (std::uint64_t size = 0; size < s.bytes.size(); size += (size < 300 ? 1 : 17)) {
    write_bytes(path, s.bytes.data(), size);
    for (bool use_mmap : {true, false}) {
      ribbon::load_options lo;
      lo.use_mmap = use_mmap;
      const std::string message = error_message([&] { (void)ribbon::filter::load(path, lo); });
      ASSERT_TRUE(contains_text(message, path)) << "length " << size << ": '" << message << "'";
    }
  }
}

TEST_P(SmallFile, AppendedBytesAreRejected) {
  small_filter s = make_small(GetParam());
  for (std::size_t extra : {1u, 7u, 64u}) {
    for (unsigned fill : {0x00u, 0xABu}) {
      std::vector<unsigned char> longer = s.bytes;
      longer.insert(longer.end(), extra, static_cast<unsigned char>(fill));
      ribbon_test::aligned_buffer image(longer.data(), longer.size());
      EXPECT_TRUE(rejected_by_parse(image.data(), image.size(), true)) << extra;
      EXPECT_TRUE(rejected_by_from_bytes(image.data(), image.size(), true)) << extra;
      EXPECT_TRUE(rejected_by_from_bytes(image.data(), image.size(), false)) << extra;
      ribbon_test::temp_dir dir;
      write_bytes(dir.file("long.rbn"), longer.data(), longer.size());
      const std::string message =
          error_message([&] { (void)ribbon::filter::load(dir.file("long.rbn")); });
      EXPECT_TRUE(contains_text(message, dir.file("long.rbn"))) << message;
    }
  }
}

TEST_P(SmallFile, MetadataChangesWithRecomputedChecksumsAreValidatedNeverCrash) {
  // An adversarial file with correct checksums: every byte of the header and descriptors is
  // changed and the checksums recomputed. Structural fields must be rejected; only fields
  // that no reader can verify may be accepted, and an accepted file must be queryable.
  small_filter s = make_small(GetParam());
  const editable_image original(s);
  const std::uint32_t num_layers = num_layers_of(s.bytes, compact());
  const std::uint64_t metadata = facts().metadata_bytes(num_layers);
  ribbon_test::aligned_buffer image(s.bytes.size());
  std::uint64_t accepted = 0, rejected = 0;
  for (std::uint64_t i = 0; i < metadata; ++i) {
    if (i >= facts().checksums_begin && i < facts().checksums_end) continue;
    for (unsigned mask : {0x01u, 0x02u, 0x80u, 0xFFu}) {
      std::memcpy(image.data(), s.bytes.data(), s.bytes.size());
      image.data()[i] ^= static_cast<unsigned char>(mask);
      fix_checksums(image.data(), image.size(), compact(), original.parsed.layers);
      const bool parse = rejected_by_parse(image.data(), image.size(), true);
      const bool adopt = rejected_by_from_bytes(image.data(), image.size(), true);
      EXPECT_EQ(parse, adopt) << "byte " << i;
      if (adopt) {
        ++rejected;
      } else {
        ++accepted;
        EXPECT_TRUE(unverifiable_field(i, num_layers, compact()))
            << "structural change accepted: byte " << i << " ^= " << mask;
      }
    }
  }
  std::cout << "metadata changes with valid checksums: " << rejected << " rejected, " << accepted
            << " accepted (unverifiable fields)\n";
  EXPECT_GT(rejected, accepted);
}

TEST_P(SmallFile, BumpedFormatVersionIsRejectedWithTheVersionInTheMessage) {
  small_filter s = make_small(GetParam());
  const editable_image original(s);
  ribbon_test::temp_dir dir;
  for (std::uint32_t version : {0u, 7u, 8u, 0xFFFFFFFFu}) {  // 6 is a filter set: test_filter_set
    std::vector<unsigned char> bytes = s.bytes;
    std::memcpy(bytes.data() + offsetof(file_header, format_version), &version, 4);
    fix_checksums(bytes.data(), bytes.size(), compact(), original.parsed.layers);
    // Only the version (and its checksum) differ from the valid file.
    std::size_t differing = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      const bool checksum_byte = compact()
                                     ? i >= facts().checksums_begin && i < facts().checksums_end
                                     : i >= offsetof(file_header, header_checksum) && i < 128;
      const bool version_byte = i >= offsetof(file_header, format_version) &&
                                i < offsetof(file_header, format_version) + 4;
      if (!checksum_byte && !version_byte) differing += bytes[i] != s.bytes[i];
    }
    ASSERT_EQ(differing, 0u);
    const std::string message =
        error_message([&] { (void)ribbon::filter::from_bytes(bytes.data(), bytes.size()); });
    EXPECT_TRUE(contains_text(message, "version")) << message;
    EXPECT_TRUE(contains_text(message, std::to_string(version))) << message;
    const std::string path = dir.file("v" + std::to_string(version) + ".rbn");
    write_bytes(path, bytes.data(), bytes.size());
    const std::string from_file = error_message([&] { (void)ribbon::filter::load(path); });
    EXPECT_TRUE(contains_text(from_file, "version")) << from_file;
    EXPECT_TRUE(contains_text(from_file, path)) << from_file;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SmallFile,
    ::testing::Values(small_case{64, 8, 950, false, false}, small_case{32, 3, 500, true, false},
                      small_case{128, 2, 10000, false, false}, small_case{64, 8, 950, false, true},
                      small_case{32, 3, 500, true, true}, small_case{128, 2, 10000, false, true}),
    [](const ::testing::TestParamInfo<small_case>& param_info) {
      return case_name(param_info.param);
    });

TEST(Format, EmptyFilterRoundTrips) {
  const ribbon::filter f = ribbon::filter::build(static_cast<const std::uint64_t*>(nullptr), 0);
  for (const layout_choice layout : {layout_choice::automatic, layout_choice::standard}) {
    const std::vector<unsigned char> bytes = f.serialize(layout);
    EXPECT_EQ(bytes.size(),
              layout == layout_choice::automatic ? sizeof(compact_header) : sizeof(file_header));
    const ribbon::filter g = ribbon::filter::from_bytes(bytes.data(), bytes.size());
    EXPECT_EQ(g.num_layers(), 0u);
    EXPECT_FALSE(g.contains(std::uint64_t{1}));
    EXPECT_EQ(g.serialize(), bytes);
    for (std::uint64_t size = 0; size < bytes.size(); ++size) {
      EXPECT_THROW((void)ribbon::filter::from_bytes(bytes.data(), size), ribbon::error);
    }
  }
}

// A compact file (format version 5) as written on 2026-12-03 (plain layers of about
// (1 + 1/w) n columns): still read, still written byte for byte, and as a standard file the
// same filter.
TEST(Format, CompactGoldenFileReadsAndIsRebuiltByteForByte) {
  // `seq 1 3000 | ribbon build --seed 7` (lines, w = 64, r = 8).
  const std::string path = std::string(RIBBON_TEST_DATA_DIR) + "/v5_lines_3000.rbn";
  const ribbon::filter f = ribbon::filter::load(path);
  EXPECT_EQ(f.format_version(), ribbon::format::compact_version);
  std::vector<std::string> keys;
  for (int i = 1; i <= 3000; ++i) keys.push_back(std::to_string(i));
  for (const std::string& k : keys) ASSERT_TRUE(f.contains(k)) << k;
  std::uint64_t positives = 0;
  for (int i = 3001; i <= 103000; ++i) positives += f.contains(std::to_string(i));
  EXPECT_LT(positives, 100000 / 256 * 1.3);
  const std::vector<std::string_view> views = ribbon_test::views(keys);
  ribbon::build_options o;
  o.seed = 7;
  const ribbon::filter rebuilt = ribbon::filter::build(views.data(), views.size(), o);
  const std::vector<unsigned char> golden = ribbon_test::read_bytes(path);
  EXPECT_TRUE(rebuilt.serialize() == golden);
  EXPECT_TRUE(f.serialize() == golden);
  // The standard layout of the same filter: the same sections, only the frame differs.
  const std::vector<unsigned char> standard = f.serialize(layout_choice::standard);
  const ribbon::filter g = ribbon::filter::from_bytes(standard.data(), standard.size());
  EXPECT_EQ(g.format_version(), 3u);
  EXPECT_TRUE(g.serialize(layout_choice::compact) == golden);
  EXPECT_GT(standard.size(), golden.size() + 256);
}

TEST(Format, MisalignedImageIsRejectedByParseImage) {
  const std::vector<std::uint64_t> keys = ribbon_test::keys_range(22, 0, 500);
  const ribbon::filter built = ribbon::filter::build(keys.data(), 500);
  const std::vector<unsigned char> bytes = built.serialize(layout_choice::standard);
  ribbon_test::aligned_buffer buffer(bytes.size() + 64);
  for (std::size_t shift : {1u, 8u, 32u}) {
    std::memcpy(buffer.data() + shift, bytes.data(), bytes.size());
    const std::string message = error_message([&] {
      (void)ribbon::format::parse_image(buffer.data() + shift, bytes.size(), true, "image");
    });
    EXPECT_TRUE(contains_text(message, "64-byte aligned")) << message;
  }
  // A compact image needs 16-byte alignment only.
  const std::vector<unsigned char> compact = built.serialize(layout_choice::compact);
  for (std::size_t shift : {1u, 8u, 16u, 32u}) {
    std::memcpy(buffer.data() + shift, compact.data(), compact.size());
    const std::string message = error_message([&] {
      (void)ribbon::format::parse_image(buffer.data() + shift, compact.size(), true, "image");
    });
    EXPECT_EQ(contains_text(message, "16-byte aligned"), shift % 16 != 0) << message;
  }
  // from_bytes copies into aligned memory, so any input address works.
  std::memcpy(buffer.data() + 1, bytes.data(), bytes.size());
  const ribbon::filter f = ribbon::filter::from_bytes(buffer.data() + 1, bytes.size());
  for (std::uint64_t k : keys) ASSERT_TRUE(f.contains(k));
}

TEST(Format, WrongMagicAndGarbageAreRejected) {
  const std::vector<std::uint64_t> keys = ribbon_test::keys_range(22, 0, 500);
  std::vector<unsigned char> bytes = ribbon::filter::build(keys.data(), 500).serialize();
  bytes[0] = 'X';
  const std::string message =
      error_message([&] { (void)ribbon::filter::from_bytes(bytes.data(), bytes.size()); });
  EXPECT_TRUE(contains_text(message, "magic")) << message;
  ribbon_test::rng random(5);
  for (std::size_t size : {0u, 1u, 127u, 128u, 129u, 1000u, 4096u}) {
    std::vector<unsigned char> garbage(size);
    for (auto& b : garbage) b = static_cast<unsigned char>(random.next());
    EXPECT_THROW((void)ribbon::filter::from_bytes(garbage.data(), size), ribbon::error);
    // Garbage behind a valid magic.
    if (size >= 8) {
      std::memcpy(garbage.data(), ribbon::format::magic, 8);
      EXPECT_THROW((void)ribbon::filter::from_bytes(garbage.data(), size), ribbon::error);
    }
  }
}

}  // namespace
