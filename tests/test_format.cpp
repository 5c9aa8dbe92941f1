// The file format's reader rejects every corruption, truncation and extension of a file with
// ribbon::error (never a crash). Loading and saving files: test_files.cpp.
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

using ribbon::format::file_header;
using ribbon::format::layer_descriptor;
using ribbon_test::contains_text;
using ribbon_test::error_message;
using ribbon_test::write_bytes;

struct small_case {
  unsigned width;
  std::uint32_t r;
  std::uint64_t n;
  bool bytes;  // byte-string keys
};

std::string case_name(const small_case& c) {
  return "w" + std::to_string(c.width) + "_r" + std::to_string(c.r) + "_n" + std::to_string(c.n) +
         (c.bytes ? "_bytes" : "_u64");
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
  s.bytes = s.filter.serialize();
  return s;
}

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

/// The file's header and descriptors.
file_header header_of(const std::vector<unsigned char>& bytes) {
  file_header h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  return h;
}

/// Recomputes the descriptors' and the header's checksums of a `size`-byte image after an
/// edit (the descriptors' one only if the layer count still fits the image).
void fix_checksums(unsigned char* data, std::uint64_t size) {
  file_header h;
  std::memcpy(&h, data, sizeof(h));
  const std::uint64_t descriptors = std::uint64_t{h.num_layers} * sizeof(layer_descriptor);
  if (h.num_layers <= ribbon::max_layers && sizeof(file_header) + descriptors <= size) {
    h.descriptors_checksum = ribbon::format::checksum(data + sizeof(file_header), descriptors);
  }
  h.header_checksum = ribbon::format::checksum(&h, offsetof(file_header, header_checksum));
  std::memcpy(data, &h, sizeof(h));
}

class SmallFile : public ::testing::TestWithParam<small_case> {};

TEST_P(SmallFile, IsValidAndMultiLayer) {
  small_filter s = make_small(GetParam());
  ASSERT_GE(s.filter.num_layers(), 2u) << "the case should exercise a bumped and a later layer";
  const editable_image e(s);
  const ribbon::format::parsed_image& parsed = e.parsed;
  EXPECT_EQ(parsed.header.file_bytes, s.bytes.size());
  EXPECT_EQ(parsed.header.num_layers, s.filter.num_layers());
  EXPECT_EQ(parsed.header.format_version, ribbon::format::version_for(s.filter.threshold_codes()));
  EXPECT_EQ(parsed.header.format_version, s.filter.format_version());
  // Builders write 1+-bit codes (format version 3), except at w = 32 (2-bit, version 2).
  EXPECT_EQ(s.filter.threshold_codes(), GetParam().width == 32
                                            ? ribbon::threshold_encoding::two_bit
                                            : ribbon::threshold_encoding::one_plus_bit);
  EXPECT_EQ(std::memcmp(parsed.header.magic, ribbon::format::magic, 8), 0);
  // Every section is 64-byte aligned in the file.
  for (const layer_descriptor& d : parsed.layers) {
    EXPECT_EQ(d.solution_offset % 64, 0u);
    EXPECT_EQ(d.threshold_offset % 64, 0u);
  }
  std::cout << case_name(GetParam()) << ": " << s.bytes.size() << " bytes, "
            << s.filter.num_layers() << " layers\n";
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
  // possible) but structural changes are still rejected; nothing crashes either way.
  small_filter s = make_small(GetParam());
  ribbon_test::aligned_buffer image(s.bytes.data(), s.bytes.size());
  const file_header h = header_of(s.bytes);
  const std::uint64_t metadata = sizeof(file_header) + h.num_layers * sizeof(layer_descriptor);
  std::uint64_t accepted = 0;
  for (std::size_t i = 0; i < image.size(); ++i) {
    image.data()[i] ^= 0x10;
    const bool rejected = rejected_by_from_bytes(image.data(), image.size(), false);
    if (!rejected) {
      ++accepted;
      // Header and descriptors are still covered by their checksums.
      EXPECT_GE(i, metadata) << "metadata byte " << i << " accepted";
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

/// Offsets of the fields a reader cannot check (any value is a valid filter, answering
/// differently): the seed, the key kind, the bucket thresholds and the layer salts.
bool unverifiable_field(std::uint64_t offset, std::uint32_t num_layers) {
  auto in = [offset](std::uint64_t begin, std::uint64_t bytes) {
    return offset >= begin && offset < begin + bytes;
  };
  if (in(offsetof(file_header, seed), 8) || in(offsetof(file_header, key_kind), 4) ||
      in(offsetof(file_header, threshold_light), 4) ||
      in(offsetof(file_header, threshold_heavy), 4)) {
    return true;
  }
  for (std::uint32_t l = 0; l < num_layers; ++l) {
    if (in(sizeof(file_header) + l * sizeof(layer_descriptor) + offsetof(layer_descriptor, salt),
           8)) {
      return true;
    }
  }
  return false;
}

TEST_P(SmallFile, MetadataChangesWithRecomputedChecksumsAreValidatedNeverCrash) {
  // An adversarial file with correct checksums: every byte of the header and descriptors is
  // changed and the checksums recomputed. Structural fields must be rejected; only fields
  // that no reader can verify may be accepted, and an accepted file must be queryable.
  small_filter s = make_small(GetParam());
  const file_header h = header_of(s.bytes);
  const std::uint64_t metadata = sizeof(file_header) + h.num_layers * sizeof(layer_descriptor);
  ribbon_test::aligned_buffer image(s.bytes.size());
  std::uint64_t accepted = 0, rejected = 0;
  for (std::uint64_t i = 0; i < metadata; ++i) {
    if (i >= offsetof(file_header, descriptors_checksum) && i < sizeof(file_header)) continue;
    for (unsigned mask : {0x01u, 0x02u, 0x80u, 0xFFu}) {
      std::memcpy(image.data(), s.bytes.data(), s.bytes.size());
      image.data()[i] ^= static_cast<unsigned char>(mask);
      fix_checksums(image.data(), image.size());
      const bool parse = rejected_by_parse(image.data(), image.size(), true);
      const bool adopt = rejected_by_from_bytes(image.data(), image.size(), true);
      EXPECT_EQ(parse, adopt) << "byte " << i;
      if (adopt) {
        ++rejected;
      } else {
        ++accepted;
        EXPECT_TRUE(unverifiable_field(i, h.num_layers))
            << "structural change accepted: byte " << i << " ^= " << mask;
      }
    }
  }
  std::cout << "metadata changes with valid checksums: " << rejected << " rejected, " << accepted
            << " accepted (seed, key kind, thresholds, salts)\n";
  EXPECT_GT(rejected, accepted);
}

TEST_P(SmallFile, BumpedFormatVersionIsRejectedWithTheVersionInTheMessage) {
  small_filter s = make_small(GetParam());
  ribbon_test::temp_dir dir;
  for (std::uint32_t version : {0u, 4u, 5u, 0xFFFFFFFFu}) {
    std::vector<unsigned char> bytes = s.bytes;
    file_header h = header_of(bytes);
    h.format_version = version;
    std::memcpy(bytes.data(), &h, sizeof(h));
    fix_checksums(bytes.data(), bytes.size());
    // Only the version (and its checksum) differ from the valid file.
    std::size_t differing = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      const bool checksum_byte = i >= offsetof(file_header, header_checksum) && i < 128;
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

INSTANTIATE_TEST_SUITE_P(Cases, SmallFile,
                         ::testing::Values(small_case{64, 8, 950, false},
                                           small_case{32, 3, 500, true},
                                           small_case{128, 2, 10000, false}),
                         [](const ::testing::TestParamInfo<small_case>& param_info) {
                           return case_name(param_info.param);
                         });

TEST(Format, EmptyFilterRoundTrips) {
  const ribbon::filter f = ribbon::filter::build(static_cast<const std::uint64_t*>(nullptr), 0);
  const std::vector<unsigned char> bytes = f.serialize();
  EXPECT_EQ(bytes.size(), sizeof(file_header));
  const ribbon::filter g = ribbon::filter::from_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(g.num_layers(), 0u);
  EXPECT_FALSE(g.contains(std::uint64_t{1}));
  for (std::uint64_t size = 0; size < bytes.size(); ++size) {
    EXPECT_THROW((void)ribbon::filter::from_bytes(bytes.data(), size), ribbon::error);
  }
}

TEST(Format, MisalignedImageIsRejectedByParseImage) {
  const std::vector<std::uint64_t> keys = ribbon_test::keys_range(22, 0, 500);
  const std::vector<unsigned char> bytes = ribbon::filter::build(keys.data(), 500).serialize();
  ribbon_test::aligned_buffer buffer(bytes.size() + 64);
  for (std::size_t shift : {1u, 8u, 32u}) {
    std::memcpy(buffer.data() + shift, bytes.data(), bytes.size());
    const std::string message = error_message([&] {
      (void)ribbon::format::parse_image(buffer.data() + shift, bytes.size(), true, "image");
    });
    EXPECT_TRUE(contains_text(message, "aligned")) << message;
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
