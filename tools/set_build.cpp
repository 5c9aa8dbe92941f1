// `ribbon build --groups -o SET`: one filter set of (group, key) pairs (format version 6),
// streamed into the bulk builder as a filter's keys are: in memory, or out of core beyond
// --memory-limit. Groups of group<TAB>key lines are byte strings; with --format u64 the
// pairs are little-endian 8-byte integers, the group then the key.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "build_settings.hpp"
#include "ribbon/bulk_builder.hpp"
#include "ribbon/error.hpp"
#include "ribbon/options.hpp"

namespace ribbon::cli {
namespace {

/// group<TAB>key lines: the pairs' hashes are made in the reader's parallel stage (in
/// c.values), the groups' in c.group_hashes for the count.
void add_group_key_lines(const build_settings& s, input_format key_format, input_reader& reader,
                         bulk_builder& builder, group_counter& groups) {
  const set_hasher hash{s.seed, seed_mix(s.seed)};
  reader.run(
      s.threads, parse_output::keys, s.seed,
      [&](input_chunk& c) {
        parse_group_key_lines(c, key_format);
        if (!c.error.empty()) return;
        const std::size_t n = c.texts.size();
        c.values.resize(n);
        c.group_hashes.resize(n);
        for (std::size_t i = 0; i < n; ++i) {
          c.group_hashes[i] = hash.group(c.groups[i]);
          const std::uint64_t key =
              key_format == input_format::hex64 ? hash.key(c.values[i]) : hash.key(c.texts[i]);
          c.values[i] = pair_hash(c.group_hashes[i], key);
        }
      },
      [&](input_chunk& c) {
        builder.add_hashes(c.values.data(), c.values.size());
        for (const std::uint64_t g : c.group_hashes) groups.add(g);
      });
}

/// --format u64: (group, key) pairs of integers, hashed in input order (a chunk may end
/// between a pair's group and its key).
void add_u64_pairs(const build_settings& s, input_reader& reader, bulk_builder& builder,
                   group_counter& groups) {
  const set_hasher hash{s.seed, seed_mix(s.seed)};
  bool have_group = false;
  std::uint64_t group = 0;
  std::vector<std::uint64_t> pairs;
  reader.run(
      s.threads, parse_output::keys, s.seed, [](input_chunk&) {},
      [&](input_chunk& c) {
        pairs.clear();
        for (const std::uint64_t value : c.values) {
          if (!have_group) {
            group = hash.group(value);
            groups.add(group);
          } else {
            pairs.push_back(pair_hash(group, hash.key(value)));
          }
          have_group = !have_group;
        }
        builder.add_hashes(pairs.data(), pairs.size());
      });
  if (have_group) {
    throw error(
        "--groups --format u64 reads (group, key) pairs of 8-byte integers: the input "
        "ends with a group and no key (an odd number of integers)");
  }
}

}  // namespace

int run_set_build(const build_settings& s, input_format format, filter_variant variant,
                  std::uint64_t memory_limit, clock_type::time_point start, progress_mode mode) {
  streamed_build streamed(s, format == input_format::u64 ? format : input_format::lines, variant,
                          memory_limit);
  input_reader& reader = streamed.reader;
  streamed.options.groups = format == input_format::u64 ? group_kind::u64 : group_kind::bytes;
  bulk_builder builder(key_kind_of(format), streamed.options);
  if (mode != progress_mode::quiet) {
    note_memory_limit(builder, streamed.options, false, memory_limit, streamed.reader_bytes);
  }
  progress_display display(mode, "build", &reader.counters(), reader.total_bytes(),
                           &streamed.progress);
  group_counter groups;
  if (format == input_format::u64) {
    add_u64_pairs(s, reader, builder, groups);
  } else {
    add_group_key_lines(s, format, reader, builder, groups);
  }
  builder.set_group_count(groups.count());
  const bulk_result result = builder.finish(s.output);
  display.stop(true);
  if (mode != progress_mode::quiet) {
    print_summary(s, result, seconds_since(start),
                  reader.counters().bytes.load(std::memory_order_relaxed), false);
  }
  return 0;
}

}  // namespace ribbon::cli
