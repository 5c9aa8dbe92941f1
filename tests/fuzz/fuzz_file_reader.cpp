// libFuzzer target: the filter file reader (format::parse_image, behind filter::load and
// filter::from_bytes) and queries on whatever it accepts. Each input is read twice: as given,
// with every check, and with the checksums off (a standard file's header and descriptor
// checksums re-sealed; a compact file's one checksum is then not read), so that mutations
// reach the structure checks behind the checksums.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "ribbon/error.hpp"
#include "ribbon/filter_ref.hpp"
#include "ribbon/format.hpp"

namespace {

namespace format = ribbon::format;

/// A 64-byte aligned copy (the reader's requirement) of exactly `size` bytes, so that the
/// address sanitizer flags any read past the end.
struct aligned_copy {
  unsigned char* data = nullptr;
  aligned_copy(const std::uint8_t* from, std::size_t size) {
    void* p = nullptr;
    if (::posix_memalign(&p, format::section_alignment, size == 0 ? 1 : size) != 0) std::abort();
    data = static_cast<unsigned char*>(p);
    if (size) std::memcpy(data, from, size);
  }
  ~aligned_copy() { std::free(data); }
  aligned_copy(const aligned_copy&) = delete;
  aligned_copy& operator=(const aligned_copy&) = delete;
};

/// Queries of members and non-members alike: hashes from a fixed sequence.
void query(const ribbon::filter_ref& ref) {
  const bool retrieval = ribbon::is_retrieval(ref.params.variant);
  std::uint64_t hash = 0x9e3779b97f4a7c15;
  volatile std::uint64_t sink = 0;
  for (int i = 0; i < 64; ++i) {
    hash = hash * 6364136223846793005u + 1442695040888963407u;
    sink = sink + (retrieval ? ref.lookup_hash(hash) : ref.contains_hash(hash));
  }
  sink = sink + ref.contains(std::uint64_t{42}) + ref.contains("key", 3);
}

void read(const unsigned char* data, std::size_t size, bool verify_checksums) {
  try {
    const format::parsed_image parsed =
        format::parse_image(data, size, verify_checksums, "fuzz input");
    query(parsed.ref);
    if (parsed.names) (void)parsed.names->encode();  // names the reader let through re-encode
  } catch (const ribbon::error&) {
    // A rejected file: what the reader must do with bad bytes.
  }
}

/// Rewrites a standard file's descriptor and header checksums to match the bytes.
void reseal(unsigned char* data, std::size_t size) {
  format::file_header h;
  if (size < sizeof(h)) return;
  std::memcpy(&h, data, sizeof(h));
  const bool compact = h.format_version == format::compact_version ||
                       (h.format_version == format::features_version &&
                        (h.features & format::feature_bits::compact) != 0);
  if (compact) return;
  const std::uint64_t descriptors = std::uint64_t{h.num_layers} * sizeof(format::layer_descriptor);
  if (h.num_layers <= ribbon::max_layers && sizeof(h) + descriptors <= size) {
    h.descriptors_checksum = format::checksum(data + sizeof(h), descriptors);
  }
  h.header_checksum = format::checksum(&h, offsetof(format::file_header, header_checksum));
  std::memcpy(data, &h, sizeof(h));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  aligned_copy copy(data, size);
  read(copy.data, size, true);
  reseal(copy.data, size);
  read(copy.data, size, false);
  return 0;
}
