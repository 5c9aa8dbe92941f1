// Files that each break one rule of the format's version table (format::version_rules, the
// feature conflicts and version 7's trailing sections), and valid files of every version
// written today, for every reader: test_format_v7 checks the C++ reader's verdicts and writes
// them for the Java reader (`format_rule_cases DIR`, then `java ... check-cases DIR`), so both
// refuse the same files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ribbon/filter.hpp"
#include "ribbon/format.hpp"
#include "ribbon/group_names.hpp"
#include "test_util.hpp"

namespace ribbon_test {

struct rule_case {
  std::string name;  ///< the rule, as a file name
  bool accept;       ///< what every reader must do with it
  std::vector<unsigned char> bytes;
};

namespace rule_detail {

using bytes_t = std::vector<unsigned char>;
using ribbon::format::file_header;

template <class T>
T read_at(const bytes_t& b, std::size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof(v));
  return v;
}
template <class T>
void write_at(bytes_t& b, std::size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof(v));
}

/// A standard-layout file's header checksum after its header changed.
inline void fix_header(bytes_t& b) {
  write_at<std::uint64_t>(
      b, offsetof(file_header, header_checksum),
      ribbon::format::checksum(b.data(), offsetof(file_header, header_checksum)));
}

/// A standard-layout file (version 2, 3 or 6) turned into version 7 with `features` and the
/// trailing sections `payloads` (as written, their checksums computed): what a writer of
/// version 7 makes of the same filter, by hand, so that broken payloads can be made too.
inline bytes_t as_version7(bytes_t b, std::uint32_t features, const std::vector<bytes_t>& payloads,
                           bool corrupt_checksum = false) {
  for (const bytes_t& payload : payloads) {
    while (b.size() % ribbon::format::section_alignment != 0) b.push_back(0);
    const std::uint64_t sum =
        ribbon::format::checksum(payload.data(), payload.size()) ^ (corrupt_checksum ? 1u : 0u);
    const std::uint64_t size = payload.size();
    const auto* s = reinterpret_cast<const unsigned char*>(&size);
    const auto* c = reinterpret_cast<const unsigned char*>(&sum);
    b.insert(b.end(), s, s + 8);
    b.insert(b.end(), c, c + 8);
    b.insert(b.end(), payload.begin(), payload.end());
  }
  write_at<std::uint32_t>(b, offsetof(file_header, format_version), 7);
  write_at<std::uint32_t>(b, 12, features);
  write_at<std::uint64_t>(b, offsetof(file_header, file_bytes), b.size());
  fix_header(b);
  return b;
}

/// A version-1..6 standard file with one header field changed, its checksum fixed.
template <class T>
bytes_t with_field(bytes_t b, std::size_t at, T value) {
  write_at<T>(b, at, value);
  fix_header(b);
  return b;
}

inline bytes_t varint(std::uint64_t v) {
  bytes_t out;
  while (v >= 0x80) {
    out.push_back(static_cast<unsigned char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<unsigned char>(v));
  return out;
}

/// A names payload: the count (u64, little-endian), then `rest`.
inline bytes_t count_then(std::uint64_t count, const bytes_t& rest) {
  bytes_t out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<unsigned char>(count >> (8 * i)));
  for (unsigned char b : rest) out.push_back(b);
  return out;
}

inline bytes_t join(std::initializer_list<bytes_t> parts) {
  bytes_t out;
  for (const bytes_t& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace rule_detail

/// Every case: valid files of versions 2 to 7 and one file per broken rule.
inline std::vector<rule_case> format_rule_cases() {
  using namespace rule_detail;
  namespace fb = ribbon::format::feature_bits;
  using ribbon::format::layout_choice;
  std::vector<rule_case> cases;
  auto add = [&](const std::string& name, bool accept, bytes_t bytes) {
    cases.push_back({name, accept, std::move(bytes)});
  };

  const std::vector<std::uint64_t> keys = keys_range(7, 0, 2000);
  ribbon::build_options o;
  o.seed = 5;
  o.threads = 1;
  o.result_bits = 7;  // sections that end off a 64-byte boundary: trailing sections are padded
  const ribbon::filter v3 = ribbon::filter::build(keys.data(), keys.size(), o);
  const bytes_t v3_bytes = v3.serialize(layout_choice::standard);
  ribbon::build_options two_bit = o;
  two_bit.threshold_codes = ribbon::threshold_encoding::two_bit;
  const bytes_t v2_bytes =
      ribbon::filter::build(keys.data(), keys.size(), two_bit).serialize(layout_choice::standard);
  std::vector<std::uint32_t> values(keys.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::uint32_t>(i % 7);
  ribbon::build_options checked = o;
  checked.result_bits = 12;
  checked.check_bits = 4;
  const bytes_t v4_bytes = ribbon::filter::build(keys.data(), values.data(), keys.size(), checked)
                               .serialize(layout_choice::standard);
  std::vector<std::uint64_t> groups(keys.size());
  for (std::size_t i = 0; i < groups.size(); ++i) groups[i] = 10 + i % 5;
  ribbon::build_options unnamed = o;
  unnamed.group_names = false;
  const ribbon::filter v6 =
      ribbon::filter::build_set(groups.data(), keys.data(), keys.size(), unnamed);
  const bytes_t v6_bytes = v6.serialize();
  const ribbon::filter named =
      ribbon::filter::build_set(groups.data(), keys.data(), keys.size(), o);
  const bytes_t names = named.groups().encode();

  add("v2_two_bit_codes", true, v2_bytes);
  add("v3_standard", true, v3_bytes);
  add("v4_check_bits", true, v4_bytes);
  add("v5_compact", true, v3.serialize(layout_choice::compact));
  add("v6_set_without_names", true, v6_bytes);
  add("v7_set_with_names", true, named.serialize(layout_choice::standard));
  add("v7_compact_set", true, named.serialize(layout_choice::compact));
  {
    ribbon::filter with_metadata = ribbon::filter::from_bytes(v3_bytes.data(), v3_bytes.size());
    with_metadata.set_metadata("{\"table\": \"t\"}");
    add("v7_metadata_standard", true, with_metadata.serialize(layout_choice::standard));
    add("v7_metadata_compact", true, with_metadata.serialize(layout_choice::compact));
  }
  const std::uint32_t set_names = fb::one_plus_bit_codes | fb::filter_set | fb::group_names;
  add("v7_by_hand_equals_the_writer", true, as_version7(v6_bytes, set_names, {names}));

  // Versions 1 to 6: what each version's rule admits (version_rules).
  const std::size_t encoding_at = offsetof(file_header, threshold_encoding);
  add("v3_with_two_bit_codes", false, with_field<std::uint32_t>(v3_bytes, encoding_at, 1));
  add("v2_with_one_plus_bit_codes", false, with_field<std::uint32_t>(v2_bytes, encoding_at, 2));
  add("v3_with_check_bits", false,
      with_field<std::uint32_t>(v3_bytes, offsetof(file_header, check_bits), 3));
  add("v4_without_check_bits", false,
      with_field<std::uint32_t>(v4_bytes, offsetof(file_header, check_bits), 0));
  add("v6_without_group_kind", false,
      with_field<std::uint32_t>(v6_bytes, offsetof(file_header, group_kind), 0));
  add("v3_with_group_kind", false,
      with_field<std::uint32_t>(v3_bytes, offsetof(file_header, group_kind), 1));
  add("v6_unknown_group_kind", false,
      with_field<std::uint32_t>(v6_bytes, offsetof(file_header, group_kind), 3));
  add("v1_with_standard_variant", false,
      with_field<std::uint32_t>(with_field<std::uint32_t>(v2_bytes, 8, 1),
                                offsetof(file_header, variant), 1));
  add("v6_with_names_section", false,
      with_field<std::uint32_t>(as_version7(v6_bytes, set_names, {names}), 8, 6));

  // Version 7: the features word.
  add("v7_unknown_feature_bit_6", false, as_version7(v6_bytes, set_names | (1u << 6), {names}));
  add("v7_unknown_feature_bit_31", false, as_version7(v6_bytes, set_names | (1u << 31), {names}));
  add("v7_word_disagrees_on_codes", false,
      as_version7(v6_bytes, set_names & ~fb::one_plus_bit_codes, {names}));
  add("v7_word_disagrees_on_set", false,
      as_version7(v3_bytes, fb::one_plus_bit_codes | fb::filter_set, {}));
  add("v7_word_claims_compact", false,
      as_version7(v3_bytes, fb::one_plus_bit_codes | fb::compact, {}));
  add("v7_check_bits_on_a_set", false, as_version7(v6_bytes, set_names | fb::check_bits, {names}));
  add("v7_names_without_a_set", false,
      as_version7(v3_bytes, fb::one_plus_bit_codes | fb::group_names, {count_then(1, varint(5))}));
  add("v7_features_only_implied", true, as_version7(v3_bytes, fb::one_plus_bit_codes, {}));

  // Version 7: the trailing sections.
  add("v7_names_bit_without_section", false, as_version7(v6_bytes, set_names, {}));
  add("v7_names_checksum", false, as_version7(v6_bytes, set_names, {names}, true));
  add("v7_names_fewer_than_groups", false,
      as_version7(v6_bytes, set_names, {count_then(2, join({varint(10), varint(1)}))}));
  add("v7_names_not_ascending", false,
      as_version7(v6_bytes, set_names,
                  {count_then(5, join({varint(10), varint(1), varint(0), varint(1), varint(1)}))}));
  add("v7_names_bytes_after_the_last", false,
      as_version7(v6_bytes, set_names, {join({names, bytes_t{0}})}));
  add("v7_names_count_beyond_payload", false,
      as_version7(v6_bytes, set_names, {count_then(1000000, varint(1))}));
  add("v7_names_varint_not_minimal", false,
      as_version7(v6_bytes, set_names,
                  {count_then(5, join({bytes_t{0x8A, 0x00}, varint(1), varint(1), varint(1),
                                       varint(1)}))}));
  add("v7_metadata_checksum", false,
      as_version7(v3_bytes, fb::one_plus_bit_codes | fb::metadata, {bytes_t{'x'}}, true));
  {
    bytes_t trailing = as_version7(v3_bytes, fb::one_plus_bit_codes | fb::metadata, {bytes_t{'x'}});
    trailing.push_back(0);
    add("v7_bytes_after_the_last_section", false,
        with_field<std::uint64_t>(trailing, offsetof(file_header, file_bytes), trailing.size()));
  }
  {
    bytes_t gap = as_version7(v3_bytes, fb::one_plus_bit_codes | fb::metadata, {bytes_t{'x'}});
    gap[v3_bytes.size() + 1] = 7;  // between the last layer section and the metadata frame
    if (v3_bytes.size() % 64 != 0) add("v7_non_zero_gap_before_a_section", false, gap);
  }
  return cases;
}

}  // namespace ribbon_test
