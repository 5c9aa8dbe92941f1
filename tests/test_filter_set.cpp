// Filter sets (filter::build_set, format versions 6 and 7): every member of every group found, for
// groups of 1 to 10^5 keys; a key asked under another group, an unknown group and a swapped
// pair answer as non-members do (within 5 sigma of 2^-r); the four kinds of groups and keys;
// byte-identical files whatever the threads and the order of the pairs (groups interleaved at
// random included), the group counter against a std::set; groups hashed once a
// run give each pair's own hash (the bulk builder's set of per-pair hashes); files round-trip as
// version 6, and damaged set fields or any flipped byte are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ribbon/bulk_builder.hpp"
#include "ribbon/error.hpp"
#include "ribbon/filter.hpp"
#include "ribbon/format.hpp"
#include "test_util.hpp"

namespace {

using ribbon::format::file_header;

/// Pairs (group, key): group g holds sizes[g] keys, keys drawn from family 1.
struct pairs {
  std::vector<std::uint64_t> groups;
  std::vector<std::uint64_t> keys;
};

pairs make_pairs(const std::vector<std::uint64_t>& sizes) {
  pairs out;
  std::uint64_t next = 0;
  for (std::size_t g = 0; g < sizes.size(); ++g) {
    for (std::uint64_t i = 0; i < sizes[g]; ++i) {
      out.groups.push_back(1000 + g);
      out.keys.push_back(ribbon_test::key_at(1, next++));
    }
  }
  return out;
}

ribbon::build_options options(std::uint32_t threads = 0) {
  ribbon::build_options o;
  o.seed = 11;
  o.threads = threads;
  return o;
}

ribbon::filter build(const pairs& p, const ribbon::build_options& o = options()) {
  return ribbon::filter::build_set(p.groups.data(), p.keys.data(), p.keys.size(), o);
}

/// At most 5 sigma above 2^-r (binomial), for `trials` queries that should all be negative.
void expect_non_member_rate(std::uint64_t positives, std::uint64_t trials, std::uint32_t r,
                            const std::string& what) {
  const double p = std::ldexp(1.0, -static_cast<int>(r));
  const double mean = p * static_cast<double>(trials);
  const double bound = mean + 5 * std::sqrt(mean * (1 - p)) + 1;
  EXPECT_LE(static_cast<double>(positives), bound) << what << ": " << positives << " of " << trials;
  EXPECT_GE(static_cast<double>(positives), mean - 5 * std::sqrt(mean * (1 - p)) - 1)
      << what << ": suspiciously few positives, " << positives << " of " << trials;
}

TEST(FilterSet, EveryMemberOfEveryGroupIsFound) {
  const std::vector<std::uint64_t> sizes = {1, 2, 64, 1000, ribbon_test::scaled(100000, 20000)};
  const pairs p = make_pairs(sizes);
  const ribbon::filter f = build(p);
  EXPECT_TRUE(f.is_set());
  EXPECT_EQ(f.group_count(), sizes.size());
  EXPECT_EQ(f.key_count(), p.keys.size());
  for (std::size_t i = 0; i < p.keys.size(); ++i) {
    ASSERT_TRUE(f.contains_in(p.groups[i], p.keys[i])) << "pair " << i;
  }
  std::unique_ptr<bool[]> out(new bool[p.keys.size()]);
  f.contains_in(p.groups.data(), p.keys.data(), p.keys.size(), out.get());
  EXPECT_EQ(std::count(out.get(), out.get() + p.keys.size(), true),
            static_cast<std::ptrdiff_t>(p.keys.size()));
}

TEST(FilterSet, OtherGroupsUnknownGroupsAndSwappedPairsAnswerAsNonMembers) {
  const pairs p = make_pairs({20000, 20000});
  const ribbon::filter f = build(p);
  const std::uint32_t r = f.params().result_bits;
  // Every key of group 1000 asked under group 1001 (and the other way round).
  std::uint64_t positives = 0;
  for (std::size_t i = 0; i < p.keys.size(); ++i) {
    positives += f.contains_in(p.groups[i] == 1000 ? 1001 : 1000, p.keys[i]);
  }
  expect_non_member_rate(positives, p.keys.size(), r, "keys under the other group");
  // Under groups never given.
  positives = 0;
  for (std::size_t i = 0; i < p.keys.size(); ++i) positives += f.contains_in(7 + i % 5, p.keys[i]);
  expect_non_member_rate(positives, p.keys.size(), r, "keys under unknown groups");
  // Fresh keys under each group, batched: the batched answers are the scalar ones.
  const std::vector<std::uint64_t> fresh = ribbon_test::keys_range(2, 0, 100000);
  const std::vector<std::uint64_t> group(fresh.size(), 1001);
  std::unique_ptr<bool[]> out(new bool[fresh.size()]);
  f.contains_in(group.data(), fresh.data(), fresh.size(), out.get());
  positives = 0;
  for (std::size_t i = 0; i < fresh.size(); ++i) {
    ASSERT_EQ(out[i], f.contains_in(std::uint64_t{1001}, fresh[i])) << i;
    positives += out[i];
  }
  expect_non_member_rate(positives, fresh.size(), r, "fresh keys");
}

TEST(FilterSet, SwappedPairsAreOtherPairs) {
  pairs p;
  const std::uint64_t n = 50000;
  for (std::uint64_t i = 0; i < n; ++i) {
    p.groups.push_back(i);
    p.keys.push_back(i + 1);
  }
  const ribbon::filter f = build(p);
  EXPECT_EQ(f.group_count(), n);
  std::uint64_t positives = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(f.contains_in(i, i + 1));
    positives += f.contains_in(i + 1, i);
  }
  expect_non_member_rate(positives, n, f.params().result_bits, "(key, group) for (group, key)");
}

TEST(FilterSet, GroupsAndKeysOfEitherKind) {
  const std::vector<std::string> names = ribbon_test::string_keys(3, 0, 4000);
  const std::vector<std::string_view> views = ribbon_test::views(names);
  std::vector<std::string_view> group_names;
  std::vector<std::uint64_t> group_ids, keys;
  for (std::size_t i = 0; i < names.size(); ++i) {
    group_names.push_back(i % 2 ? "part-00001.parquet" : "part-00000.parquet");
    group_ids.push_back(i % 2);
    keys.push_back(ribbon_test::key_at(4, i));
  }
  const std::size_t n = names.size();
  const ribbon::filter by_ids = ribbon::filter::build_set(group_ids.data(), views.data(), n);
  const ribbon::filter by_names = ribbon::filter::build_set(group_names.data(), keys.data(), n);
  const ribbon::filter both_bytes = ribbon::filter::build_set(group_names.data(), views.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(by_ids.contains_in(group_ids[i], views[i]));
    ASSERT_TRUE(by_names.contains_in(group_names[i], keys[i]));
    ASSERT_TRUE(both_bytes.contains_in(group_names[i], views[i]));
  }
  EXPECT_EQ(by_names.group_count(), 2u);
  EXPECT_EQ(by_names.params().groups, ribbon::group_kind::bytes);
  EXPECT_EQ(by_ids.params().keys, ribbon::key_kind::bytes);
  // Mismatched kinds, a set asked as a filter and a filter asked as a set are errors.
  EXPECT_THROW((void)by_ids.contains_in(std::string_view("0"), views[0]), ribbon::error);
  EXPECT_THROW((void)by_ids.contains_in(std::uint64_t{0}, keys[0]), ribbon::error);
  EXPECT_THROW((void)by_ids.contains(views[0]), ribbon::error);
  const ribbon::filter plain = ribbon::filter::build(keys.data(), n);
  EXPECT_THROW((void)plain.contains_in(std::uint64_t{0}, keys[0]), ribbon::error);
  EXPECT_FALSE(plain.is_set());
  EXPECT_EQ(plain.group_count(), 0u);
  // Retrieval structures have no sets.
  ribbon::build_options retrieval = options();
  retrieval.variant = ribbon::filter_variant::bumped_retrieval;
  EXPECT_THROW((void)ribbon::filter::build_set(group_ids.data(), keys.data(), n, retrieval),
               ribbon::error);
}

TEST(FilterSet, SameBytesWhateverTheThreadsTheOrderAndTheRepeats) {
  const pairs p = make_pairs({3000, 1, 70000, 500});
  const std::vector<unsigned char> one = build(p, options(1)).serialize();
  EXPECT_EQ(build(p, options(2)).serialize(), one);
  pairs shuffled = p;
  std::vector<std::size_t> order(p.keys.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(5));
  for (std::size_t i = 0; i < order.size(); ++i) {
    shuffled.groups[i] = p.groups[order[i]];
    shuffled.keys[i] = p.keys[order[i]];
  }
  // Repeated pairs count once.
  shuffled.groups.insert(shuffled.groups.end(), p.groups.begin(), p.groups.begin() + 1000);
  shuffled.keys.insert(shuffled.keys.end(), p.keys.begin(), p.keys.begin() + 1000);
  const ribbon::filter again = build(shuffled, options(2));
  EXPECT_EQ(again.key_count(), p.keys.size());
  EXPECT_EQ(again.group_count(), 4u);
  EXPECT_EQ(again.serialize(), one);
}

/// The bytes of the set that the bulk builder makes of the pairs' hashes, each pair hashed on
/// its own (set_hasher::pair): what build_set's hashing must agree with.
std::vector<unsigned char> set_of_pair_hashes(const std::vector<std::string_view>& groups,
                                              const std::vector<std::uint64_t>& keys,
                                              std::uint64_t group_count,
                                              const ribbon::build_options& o) {
  const ribbon::set_hasher hash{o.seed, ribbon::seed_mix(o.seed)};
  std::vector<std::uint64_t> hashes;
  for (std::size_t i = 0; i < keys.size(); ++i) hashes.push_back(hash.pair(groups[i], keys[i]));
  ribbon_test::temp_dir dir;
  ribbon::bulk_options bulk;
  bulk.build = o;
  bulk.groups = ribbon::group_kind::bytes;
  ribbon::bulk_builder builder(ribbon::key_kind::u64, bulk);
  builder.add_hashes(hashes.data(), hashes.size());
  builder.set_group_count(group_count);
  builder.finish(dir.file("set.ribbon"));
  std::ifstream in(dir.file("set.ribbon"), std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// build_set hashes a group once per run of it: runs of one view, runs of equal bytes in other
// views, views of one buffer that differ only in length ("part-1" and "part-10"), runs of one
// pair and a group that comes back after another all give each pair's own hash.
TEST(FilterSet, GroupsInRunsHashAsEachPairAlone) {
  const std::string buffer = "part-10.parquet";
  const std::string copy = "part-10";
  const std::string_view names[] = {std::string_view(buffer).substr(0, 7),  // part-10
                                    std::string_view(buffer).substr(0, 6),  // part-1
                                    std::string_view(buffer),               // part-10.parquet
                                    std::string_view(copy)};                // part-10 again
  std::vector<std::string_view> groups;
  std::vector<std::uint64_t> keys;
  ribbon_test::rng random(3);
  for (std::uint64_t run = 0; run < 400; ++run) {
    const std::string_view name = names[random.between(0, 3)];
    const std::uint64_t length = run % 7 == 0 ? 1 : random.between(1, 3000);
    for (std::uint64_t i = 0; i < length; ++i) {
      groups.push_back(name);
      keys.push_back(ribbon_test::key_at(6, keys.size()));
    }
  }
  for (const std::uint32_t threads : {1u, 2u}) {
    ribbon::build_options o = options(threads);
    o.group_names = false;  // the bulk builder here is given no names: both version 6
    const ribbon::filter set =
        ribbon::filter::build_set(groups.data(), keys.data(), keys.size(), o);
    EXPECT_EQ(set.group_count(), 3u);
    EXPECT_EQ(set.serialize(), set_of_pair_hashes(groups, keys, 3, o)) << threads << " threads";
  }
}

// group_counter against a std::set of the same hashes: groups in runs, interleaved at random
// (the table grows past its first 64 slots), the hash 0, and counters of parts merged.
TEST(FilterSet, GroupCounterCountsDistinctHashesInAnyOrder) {
  ribbon_test::rng random(9);
  std::vector<std::uint64_t> hashes = {0, 0, 5};
  for (std::uint64_t g = 0; g < 3000; ++g) hashes.push_back(ribbon_test::key_at(2, g));
  std::vector<std::uint64_t> stream;
  for (int i = 0; i < 40000; ++i) stream.push_back(hashes[random.between(0, hashes.size() - 1)]);
  std::set<std::uint64_t> oracle;
  ribbon::group_counter whole, first_half, second_half;
  for (std::size_t i = 0; i < stream.size(); ++i) {
    const bool fresh = oracle.insert(stream[i]).second;
    EXPECT_EQ(whole.add(stream[i]), fresh) << i;
    (i < stream.size() / 2 ? first_half : second_half).add(stream[i]);
  }
  EXPECT_EQ(whole.count(), oracle.size());
  first_half.merge(second_half);
  EXPECT_EQ(first_half.count(), oracle.size());
}

// Byte-string groups interleaved at random name each group once, as their runs do: the same
// file (group names included) from 2000 groups in runs and shuffled, on 1 and 2 threads.
TEST(FilterSet, InterleavedGroupsGiveTheFileOfTheirRuns) {
  std::vector<std::string> names;
  for (int g = 0; g < 2000; ++g) names.push_back("data/part-" + std::to_string(g) + ".parquet");
  std::vector<std::string_view> groups;
  std::vector<std::uint64_t> keys;
  for (std::uint64_t i = 0; i < 60000; ++i) {
    groups.push_back(names[i % names.size()]);
    keys.push_back(ribbon_test::key_at(4, i));
  }
  std::vector<std::size_t> order(keys.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return groups[a] < groups[b]; });
  std::vector<std::string_view> run_groups;
  std::vector<std::uint64_t> run_keys;
  for (const std::size_t i : order) {
    run_groups.push_back(groups[i]);
    run_keys.push_back(keys[i]);
  }
  const std::vector<unsigned char> runs =
      ribbon::filter::build_set(run_groups.data(), run_keys.data(), run_keys.size(), options(1))
          .serialize();
  for (const std::uint32_t threads : {1u, 2u}) {
    const ribbon::filter set =
        ribbon::filter::build_set(groups.data(), keys.data(), keys.size(), options(threads));
    EXPECT_EQ(set.group_count(), names.size());
    EXPECT_EQ(set.groups().size(), names.size());
    EXPECT_EQ(set.serialize(), runs) << threads << " threads";
  }
}

/// A set's file bytes, its header as a struct, and a way to write the header back with a
/// valid checksum.
struct set_file {
  std::vector<unsigned char> bytes;
  file_header header() const {
    file_header h;
    std::memcpy(&h, bytes.data(), sizeof(h));
    return h;
  }
  void put(file_header h) {
    h.header_checksum = ribbon::format::checksum(&h, offsetof(file_header, header_checksum));
    std::memcpy(bytes.data(), &h, sizeof(h));
  }
  std::string error_of() const {
    try {
      (void)ribbon::filter::from_bytes(bytes.data(), bytes.size());
    } catch (const ribbon::error& e) {
      return e.what();
    }
    return "";
  }
};

TEST(FilterSet, FilesRoundTripAsVersionSix) {
  // Without group names (test_format_v7 has the sets with them).
  const pairs p = make_pairs({100, 2000, 5});
  ribbon::build_options unnamed = options();
  unnamed.group_names = false;
  const ribbon::filter f = build(p, unnamed);
  EXPECT_EQ(f.format_version(), ribbon::format::set_version);
  const std::vector<unsigned char> bytes = f.serialize();
  const ribbon::filter g = ribbon::filter::from_bytes(bytes.data(), bytes.size());
  EXPECT_TRUE(g.is_set());
  EXPECT_EQ(g.group_count(), 3u);
  EXPECT_EQ(g.params().groups, ribbon::group_kind::u64);
  EXPECT_EQ(g.serialize(), bytes);
  for (std::size_t i = 0; i < p.keys.size(); ++i)
    ASSERT_TRUE(g.contains_in(p.groups[i], p.keys[i]));
  EXPECT_EQ(ribbon::summarize(g).group_count, 3u);
  // Version 6 is the standard layout; a compact set is version 7.
  EXPECT_EQ(f.serialize(ribbon::format::layout_choice::standard), bytes);
  const std::vector<unsigned char> compact = f.serialize(ribbon::format::layout_choice::compact);
  EXPECT_EQ(ribbon::filter::from_bytes(compact.data(), compact.size()).format_version(), 7u);
  // The empty set.
  const ribbon::filter empty =
      ribbon::filter::build_set(p.groups.data(), p.keys.data(), 0, unnamed);
  const std::vector<unsigned char> nothing = empty.serialize();
  const ribbon::filter h = ribbon::filter::from_bytes(nothing.data(), nothing.size());
  EXPECT_TRUE(h.is_set());
  EXPECT_EQ(h.group_count(), 0u);
  EXPECT_FALSE(h.contains_in(std::uint64_t{1000}, p.keys[0]));
}

TEST(FilterSet, DamagedSetFieldsAreRefused) {
  ribbon::build_options unnamed = options();
  unnamed.group_names = false;  // version 6: the header of section 2 (test_format_v7: version 7)
  set_file valid{build(make_pairs({100, 200}), unnamed).serialize()};
  ASSERT_EQ(valid.error_of(), "");
  auto refused = [&](const std::function<void(file_header&)>& change, const char* expected) {
    set_file damaged = valid;
    file_header h = damaged.header();
    change(h);
    damaged.put(h);
    const std::string message = damaged.error_of();
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  };
  refused([](file_header& h) { h.group_kind = 0; }, "unknown group kind 0");
  refused([](file_header& h) { h.group_kind = 3; }, "unknown group kind 3");
  refused([](file_header& h) { h.group_count = h.key_count + 1; }, "inconsistent group count");
  refused([](file_header& h) { h.group_count = 0; }, "inconsistent group count");
  refused([](file_header& h) { h.reserved = 1; }, "reserved header fields");
  refused([](file_header& h) { h.format_version = 3; }, "reserved header fields");
  refused([](file_header& h) { h.variant = 3; }, "retrieval structures have no groups");
  // Any flipped byte, checksums verified.
  for (std::size_t i = 0; i < valid.bytes.size(); ++i) {
    set_file flipped = valid;
    flipped.bytes[i] ^= 0x10;
    ASSERT_NE(flipped.error_of(), "") << "byte " << i;
  }
}

}  // namespace
