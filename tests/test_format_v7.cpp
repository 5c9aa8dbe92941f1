// Format version 7: the version table (format::version_rules) and its rule cases, group names
// (their canonical encoding, what builders record, groups_of against contains_in), metadata,
// compact sets, and writers that keep writing the oldest version that holds a file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "file_helpers.hpp"
#include "format_rule_cases.hpp"
#include "ribbon/error.hpp"
#include "ribbon/filter.hpp"
#include "ribbon/format.hpp"
#include "ribbon/group_names.hpp"
#include "test_util.hpp"

namespace {

namespace fb = ribbon::format::feature_bits;
using ribbon::group_names;
using ribbon::format::layout_choice;
using ribbon_test::contains_text;
using ribbon_test::error_message;

TEST(VersionTable, WritersChooseTheOldestVersionThatHoldsTheFeatures) {
  using ribbon::format::version_for_features;
  EXPECT_EQ(version_for_features(0), 2u);  // version 1 is read only
  EXPECT_EQ(version_for_features(fb::one_plus_bit_codes), 3u);
  EXPECT_EQ(version_for_features(fb::check_bits), 4u);
  EXPECT_EQ(version_for_features(fb::check_bits | fb::one_plus_bit_codes), 4u);
  EXPECT_EQ(version_for_features(fb::compact | fb::check_bits), 5u);
  EXPECT_EQ(version_for_features(fb::filter_set), 6u);
  EXPECT_EQ(version_for_features(fb::filter_set | fb::one_plus_bit_codes), 6u);
  EXPECT_EQ(version_for_features(fb::filter_set | fb::group_names), 7u);
  EXPECT_EQ(version_for_features(fb::filter_set | fb::compact), 7u);
  EXPECT_EQ(version_for_features(fb::metadata | fb::one_plus_bit_codes), 7u);
  EXPECT_THROW(version_for_features(fb::filter_set | fb::check_bits), ribbon::error);
  EXPECT_THROW(version_for_features(fb::group_names), ribbon::error);
  for (unsigned bit = 0; bit < 6; ++bit) EXPECT_NE(ribbon::format::feature_name(bit), nullptr);
  EXPECT_EQ(ribbon::format::feature_name(6), nullptr);
}

TEST(VersionTable, EveryRuleCaseGetsItsVerdictFromTheReader) {
  const std::vector<ribbon_test::rule_case> cases = ribbon_test::format_rule_cases();
  std::set<std::string> names;
  for (const auto& c : cases) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    const std::string message =
        error_message([&] { (void)ribbon::filter::from_bytes(c.bytes.data(), c.bytes.size()); });
    EXPECT_EQ(message.empty(), c.accept) << c.name << ": " << message;
  }
  EXPECT_GE(cases.size(), 30u);
}

TEST(VersionTable, RuleCasesNameWhatIsWrong) {
  std::map<std::string, std::string> expected = {
      {"v7_unknown_feature_bit_6", "needs feature bit 6, which this reader does not know"},
      {"v7_unknown_feature_bit_31", "needs feature bit 31"},
      {"v7_check_bits_on_a_set", "a filter set is a set of filters"},
      {"v7_names_without_a_set", "group names belong to filter sets"},
      {"v7_word_disagrees_on_codes", "disagree on 'one_plus_bit_codes'"},
      {"v7_names_checksum", "group names section checksum mismatch"},
      {"v7_names_fewer_than_groups", "2 names for 5 groups"},
      {"v7_names_not_ascending", "not strictly ascending"},
      {"v7_names_varint_not_minimal", "superfluous zero byte"},
      {"v4_without_check_bits", "without check bits"},
  };
  for (const auto& c : ribbon_test::format_rule_cases()) {
    const auto it = expected.find(c.name);
    if (it == expected.end()) continue;
    const std::string message =
        error_message([&] { (void)ribbon::filter::from_bytes(c.bytes.data(), c.bytes.size()); });
    EXPECT_TRUE(contains_text(message, it->second)) << c.name << ": " << message;
    expected.erase(it);
  }
  EXPECT_TRUE(expected.empty());
}

TEST(VersionTable, AVersionSevenFileMadeByHandFromTheSpecIsTheWritersBytes) {
  // docs/format.md section 12 followed by hand (format_rule_cases.hpp's as_version7) gives the
  // bytes the writer gives: the spec and the writer agree.
  std::vector<std::vector<unsigned char>> by_hand, written;
  for (const auto& c : ribbon_test::format_rule_cases()) {
    if (c.name == "v7_by_hand_equals_the_writer") by_hand.push_back(c.bytes);
    if (c.name == "v7_set_with_names") written.push_back(c.bytes);
  }
  ASSERT_EQ(by_hand.size(), 1u);
  ASSERT_EQ(written.size(), 1u);
  EXPECT_EQ(by_hand[0], written[0]);
}

TEST(GroupNames, RoundTripSortedAndOnce) {
  const group_names ints = group_names::of(std::vector<std::uint64_t>{5, 1, UINT64_MAX, 5, 0});
  EXPECT_EQ(ints.integers(), (std::vector<std::uint64_t>{0, 1, 5, UINT64_MAX}));
  const std::vector<unsigned char> encoded = ints.encode();
  EXPECT_EQ(group_names::decode(encoded.data(), encoded.size(), ribbon::group_kind::u64, "t"),
            ints);
  const group_names strings = group_names::of(
      std::vector<std::string>{"part-10", "part-1", "", "part-10", "\xff", "part-2", "q"});
  EXPECT_EQ(strings.strings(),
            (std::vector<std::string>{"", "part-1", "part-10", "part-2", "q", "\xff"}));
  const std::vector<unsigned char> s = strings.encode();
  EXPECT_EQ(group_names::decode(s.data(), s.size(), ribbon::group_kind::bytes, "t"), strings);
  // Front coding: "part-10" after "part-1" is 6 shared bytes and "0".
  const std::vector<unsigned char> expected_prefix = {6, 0,   0,   0,   0,   0,   0,   0, 0, 0,  0,
                                                      6, 'p', 'a', 'r', 't', '-', '1', 6, 1, '0'};
  ASSERT_GE(s.size(), expected_prefix.size());
  EXPECT_TRUE(std::equal(expected_prefix.begin(), expected_prefix.end(), s.begin()));
}

TEST(GroupNames, DecodeRefusesWhatNoWriterWrites) {
  auto refused = [](std::vector<unsigned char> payload, ribbon::group_kind kind,
                    const std::string& why) {
    const std::string message = error_message(
        [&] { (void)group_names::decode(payload.data(), payload.size(), kind, "payload"); });
    EXPECT_TRUE(contains_text(message, why)) << why << ": " << message;
  };
  using bytes = std::vector<unsigned char>;
  auto counted = [](std::uint64_t n, const bytes& rest) {
    return ribbon_test::rule_detail::count_then(n, rest);
  };
  const auto u64 = ribbon::group_kind::u64;
  const auto str = ribbon::group_kind::bytes;
  refused(bytes{1, 2}, u64, "truncated count");
  refused(counted(2, {1, 0}), u64, "not strictly ascending");
  refused(counted(1, {0x81}), u64, "truncated varint");
  refused(counted(1, {0x80, 0}), u64, "superfluous zero byte");
  refused(counted(1, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2}), u64,
          "beyond 64 bits");
  refused(counted(2, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 1}), u64,
          "beyond 64 bits");
  refused(counted(1, {1, 9}), u64, "bytes after the last name");
  refused(counted(9, {1}), u64, "beyond the payload");
  refused(counted(1, {1, 1, 'a'}), str, "longer than the name before it");
  refused(counted(2, {0, 1, 'b', 0, 1, 'a'}), str, "not strictly ascending");
  refused(counted(2, {0, 1, 'a', 0, 1, 'a'}), str, "not strictly ascending");
  refused(counted(2, {0, 2, 'a', 'b', 0, 2, 'a', 'c'}), str, "not the longest");
  refused(counted(1, {0, 5, 'a'}), str, "truncated name");
}

/// Pairs: group 100 + g holds sizes[g] keys.
struct set_input {
  std::vector<std::uint64_t> groups, keys;
};

set_input make_set(const std::vector<std::uint64_t>& sizes) {
  set_input in;
  std::uint64_t next = 0;
  for (std::size_t g = 0; g < sizes.size(); ++g) {
    for (std::uint64_t i = 0; i < sizes[g]; ++i) {
      in.groups.push_back(100 + g);
      in.keys.push_back(ribbon_test::key_at(3, next++));
    }
  }
  return in;
}

ribbon::build_options set_options(bool names = true) {
  ribbon::build_options o;
  o.seed = 9;
  o.group_names = names;
  return o;
}

TEST(SetsWithNames, BuildersRecordEveryGroupAndVersionSeven) {
  const set_input in = make_set({300, 1, 50, 2000});
  const ribbon::filter f =
      ribbon::filter::build_set(in.groups.data(), in.keys.data(), in.keys.size(), set_options());
  ASSERT_TRUE(f.has_group_names());
  EXPECT_EQ(f.groups().integers(), (std::vector<std::uint64_t>{100, 101, 102, 103}));
  EXPECT_EQ(f.format_version(), 7u);
  const std::vector<unsigned char> bytes = f.serialize();
  const ribbon::filter loaded = ribbon::filter::from_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(loaded.format_version(), 7u);
  EXPECT_EQ(loaded.groups(), f.groups());
  EXPECT_EQ(loaded.serialize(), bytes);

  // Without names: version 6, the same layers, and groups_of cannot answer.
  const ribbon::filter v6 = ribbon::filter::build_set(in.groups.data(), in.keys.data(),
                                                      in.keys.size(), set_options(false));
  EXPECT_EQ(v6.format_version(), 6u);
  EXPECT_FALSE(v6.has_group_names());
  const std::string message = error_message([&] { (void)v6.groups(); });
  EXPECT_TRUE(contains_text(message, "no group names")) << message;
  // The standard layout of the set with names is version 6's bytes (header aside), then the
  // names section.
  const std::vector<unsigned char> v6_bytes = v6.serialize();
  const std::vector<unsigned char> standard = f.serialize(layout_choice::standard);
  ASSERT_LT(v6_bytes.size(), standard.size());
  EXPECT_TRUE(std::equal(v6_bytes.begin() + 128, v6_bytes.end(), standard.begin() + 128));
}

TEST(SetsWithNames, GroupsWithoutKeysAreListedAndCountChecked) {
  const set_input in = make_set({20, 30});
  ribbon::filter f =
      ribbon::filter::build_set(in.groups.data(), in.keys.data(), in.keys.size(), set_options());
  f.set_group_names(group_names::of(std::vector<std::uint64_t>{100, 101, 7, 999}));
  const std::vector<unsigned char> bytes = f.serialize();
  const ribbon::filter loaded = ribbon::filter::from_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(loaded.groups().size(), 4u);
  EXPECT_EQ(loaded.group_count(), 2u);
  EXPECT_THROW(f.set_group_names(group_names::of(std::vector<std::uint64_t>{100})), ribbon::error);
  EXPECT_THROW(f.set_group_names(group_names::of(std::vector<std::string>{"a", "b"})),
               ribbon::error);
}

TEST(SetsWithNames, GroupsOfIsContainsInOverEveryGroup) {
  // The oracle: contains_in for every (group, key); members' own groups always among them.
  const set_input in = make_set({200, 5, 1, 700, 64, 0 + 1, 333});
  ribbon::build_options o = set_options();
  o.result_bits = 4;  // false positives at 1/16: groups_of must list those too
  const ribbon::filter f =
      ribbon::filter::build_set(in.groups.data(), in.keys.data(), in.keys.size(), o);
  std::vector<std::uint64_t> probes = in.keys;
  for (std::uint64_t i = 0; i < 500; ++i) probes.push_back(ribbon_test::key_at(99, i));
  const ribbon::filter::group_matches m = f.groups_of(probes.data(), probes.size());
  ASSERT_EQ(m.offsets.size(), probes.size() + 1);
  const std::vector<std::uint64_t>& names = f.groups().integers();
  std::uint64_t false_positives = 0;
  for (std::size_t k = 0; k < probes.size(); ++k) {
    std::vector<std::uint64_t> expected;
    for (std::uint64_t g = 0; g < names.size(); ++g) {
      if (f.contains_in(names[g], probes[k])) expected.push_back(g);
    }
    const std::vector<std::uint64_t> got(m.groups.begin() + m.offsets[k],
                                         m.groups.begin() + m.offsets[k + 1]);
    ASSERT_EQ(got, expected) << "key " << k;
    if (k < in.keys.size()) {
      EXPECT_TRUE(std::count(got.begin(), got.end(), in.groups[k] - 100)) << "key " << k;
      false_positives += got.size() - 1;
    }
  }
  EXPECT_GT(false_positives, 0u);  // r = 4: the comparison above saw positives of both kinds
  // Many keys run in parallel: the same answers.
  ribbon::filter g = ribbon::filter::from_bytes(f.serialize().data(), f.serialize().size());
  std::vector<std::uint64_t> many;
  for (int copy = 0; copy < 40; ++copy) many.insert(many.end(), probes.begin(), probes.end());
  g.set_query_threads(2);
  const ribbon::filter::group_matches big = g.groups_of(many.data(), many.size());
  for (std::size_t k = 0; k < many.size(); k += 97) {
    const std::size_t p = k % probes.size();
    EXPECT_TRUE(std::equal(big.groups.begin() + big.offsets[k],
                           big.groups.begin() + big.offsets[k + 1], m.groups.begin() + m.offsets[p],
                           m.groups.begin() + m.offsets[p + 1]));
  }
}

TEST(SetsWithNames, StringGroupsAndStringKeys) {
  std::vector<std::string> groups, keys;
  for (int i = 0; i < 3000; ++i) {
    groups.push_back("dt=2026-12-0" + std::to_string(i % 7) + "/part-" + std::to_string(i % 11));
    keys.push_back("order-" + std::to_string(i));
  }
  const std::vector<std::string_view> g = ribbon_test::views(groups), k = ribbon_test::views(keys);
  const ribbon::filter f = ribbon::filter::build_set(g.data(), k.data(), k.size(), set_options());
  EXPECT_EQ(f.groups().size(), 77u);
  const ribbon::filter::group_matches m = f.groups_of(k.data(), k.size());
  for (std::size_t i = 0; i < k.size(); ++i) {
    bool own = false;
    for (std::uint64_t j = m.offsets[i]; j < m.offsets[i + 1]; ++j)
      own |= f.groups().strings()[m.groups[j]] == groups[i];
    ASSERT_TRUE(own) << i;
  }
}

TEST(SetsWithNames, CompactSetsAnswerAsStandardOnes) {
  const set_input in = make_set({100, 200, 3});
  const ribbon::filter f =
      ribbon::filter::build_set(in.groups.data(), in.keys.data(), in.keys.size(), set_options());
  const std::vector<unsigned char> compact = f.serialize(layout_choice::compact);
  const std::vector<unsigned char> standard = f.serialize(layout_choice::standard);
  EXPECT_LT(compact.size(), standard.size());
  EXPECT_EQ(f.serialize(), compact);  // small: compact when the set is version 7 anyway
  const ribbon::filter c = ribbon::filter::from_bytes(compact.data(), compact.size());
  EXPECT_EQ(c.format_version(), 7u);
  EXPECT_EQ(c.groups(), f.groups());
  for (std::size_t i = 0; i < in.keys.size(); ++i)
    ASSERT_TRUE(c.contains_in(in.groups[i], in.keys[i]));
  EXPECT_EQ(c.serialize(), compact);  // a loaded file keeps its layout
  // Without names a set stays version 6, in the standard layout, unless asked otherwise.
  const ribbon::filter v6 = ribbon::filter::build_set(in.groups.data(), in.keys.data(),
                                                      in.keys.size(), set_options(false));
  EXPECT_EQ(v6.format_version(), 6u);
  const std::vector<unsigned char> v6_compact = v6.serialize(layout_choice::compact);
  EXPECT_EQ(ribbon::filter::from_bytes(v6_compact.data(), v6_compact.size()).format_version(), 7u);
}

TEST(Metadata, StoredAsGivenInEitherLayout) {
  const std::vector<std::uint64_t> keys = ribbon_test::keys_range(4, 0, 5000);
  ribbon::build_options o;
  o.result_bits = 5;  // a solution that ends off an aligned boundary: the metadata is padded
  ribbon::filter f = ribbon::filter::build(keys.data(), keys.size(), o);
  const std::vector<unsigned char> plain = f.serialize();
  EXPECT_EQ(f.format_version(), 5u);
  const std::string metadata("{\"table\": \"s3://lake/t\", \"bytes\": \"\\u0000\"}\0x", 46);
  f.set_metadata(metadata);
  EXPECT_EQ(f.format_version(), 7u);
  for (layout_choice layout : {layout_choice::compact, layout_choice::standard}) {
    const std::vector<unsigned char> bytes = f.serialize(layout);
    const ribbon::filter loaded = ribbon::filter::from_bytes(bytes.data(), bytes.size());
    ASSERT_TRUE(loaded.metadata().has_value());
    EXPECT_EQ(*loaded.metadata(), metadata);
    EXPECT_EQ(loaded.format_version(), 7u);
    for (std::uint64_t k : keys) ASSERT_TRUE(loaded.contains(k));
  }
  f.clear_metadata();
  EXPECT_EQ(f.serialize(), plain);  // the file of before: version 5, byte for byte
}

TEST(Metadata, EveryByteOfAVersionSevenFileIsChecked) {
  const set_input in = make_set({40, 9});
  ribbon::filter f =
      ribbon::filter::build_set(in.groups.data(), in.keys.data(), in.keys.size(), set_options());
  f.set_metadata("meta");
  for (layout_choice layout : {layout_choice::compact, layout_choice::standard}) {
    const std::vector<unsigned char> bytes = f.serialize(layout);
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      std::vector<unsigned char> broken = bytes;
      broken[i] ^= 0x10;
      EXPECT_THROW((void)ribbon::filter::from_bytes(broken.data(), broken.size()), ribbon::error)
          << "byte " << i << " of " << bytes.size();
    }
    for (std::size_t size = 0; size < bytes.size(); size += 7) {
      EXPECT_THROW((void)ribbon::filter::from_bytes(bytes.data(), size), ribbon::error) << size;
    }
  }
}

}  // namespace
