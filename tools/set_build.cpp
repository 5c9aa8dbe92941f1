// `ribbon build --groups -o SET`: one filter set of (group, key) pairs (format version 7 with
// its groups' names, 6 with --no-group-names), streamed into the bulk builder as a filter's
// keys are: in memory, or out of core beyond --memory-limit. Groups of group<TAB>key lines are
// byte strings; with --format u64 the pairs are little-endian 8-byte integers, the group then
// the key.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "build_settings.hpp"
#include "ribbon/bulk_builder.hpp"
#include "ribbon/error.hpp"
#include "ribbon/options.hpp"

namespace ribbon::cli {
namespace {

/// The distinct groups of a set's pairs, by hash (what the file counts), with their names. A
/// group repeated in a run (the usual order of grouped inputs) costs one comparison.
template <class Name>
class group_collector {
 public:
  template <class Given>  // Name, or a view of it (made a Name only when new)
  void add(std::uint64_t group_hash, const Given& name) {
    if (any_ && group_hash == last_) return;
    names_.try_emplace(group_hash, name);
    last_ = group_hash;
    any_ = true;
  }
  std::uint64_t count() const { return names_.size(); }
  group_names names() const {
    std::vector<std::conditional_t<std::is_same_v<Name, std::uint64_t>, std::uint64_t, std::string>>
        all;
    all.reserve(names_.size());
    for (const auto& [hash, name] : names_) all.emplace_back(name);
    return group_names::of(std::move(all));
  }

 private:
  std::unordered_map<std::uint64_t, Name> names_;
  std::uint64_t last_ = 0;
  bool any_ = false;
};

/// Gives the builder the count and (unless --no-group-names) the names of the set's groups.
template <class Name>
void record_groups(const build_settings& s, const group_collector<Name>& groups,
                   bulk_builder& builder) {
  builder.set_group_count(groups.count());
  if (s.group_names) builder.set_group_names(groups.names());
}

/// group<TAB>key lines: the pairs' hashes are made in the reader's parallel stage (in
/// c.values), the groups' in c.group_hashes for the count.
void add_group_key_lines(const build_settings& s, input_format key_format, input_reader& reader,
                         bulk_builder& builder, group_collector<std::string>& groups) {
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
        for (std::size_t i = 0; i < c.group_hashes.size(); ++i) {
          groups.add(c.group_hashes[i], c.groups[i]);
        }
      });
}

/// Where a chunk of --format u64 (group, key) pairs cuts them (each input holds whole pairs, so
/// a chunk's integers alternate from its byte offset on): does it start with a key whose group
/// ended the previous chunk, or end with a group whose key starts the next?
bool starts_with_key(const input_chunk& c) {
  return (c.byte_offset / 8) % 2 == 1;
}
bool ends_with_group(const input_chunk& c) {
  return c.key_count > 0 && (c.byte_offset / 8 + c.key_count) % 2 == 1;
}

/// --format u64, the reader's parallel stage: each input holds (group, key) pairs of integers,
/// so a chunk's integers alternate from its byte offset on. Rewrites c.values as: the hash of
/// a leading key (its group ended the previous chunk), the pair hashes of the whole pairs,
/// the group hash of a trailing group (its key starts the next chunk); c.group_hashes: the
/// group hashes of the pairs and the trailing group. In place: pair j is written at or before
/// the integers it was made from.
void hash_u64_pairs(const set_hasher& hash, input_chunk& c) {
  const std::size_t n = c.values.size();
  const std::size_t lead = starts_with_key(c) ? 1 : 0;
  std::vector<std::uint64_t>& v = c.values;
  c.group_hashes.clear();
  c.group_ids.clear();
  if (n == 0) return;
  c.group_hashes.reserve(n / 2 + 1);
  c.group_ids.reserve(n / 2 + 1);
  if (lead == 1) v[0] = hash.key(v[0]);
  std::size_t out = lead;
  std::size_t i = lead;
  for (; i + 1 < n; i += 2) {
    const std::uint64_t group = hash.group(v[i]);
    c.group_hashes.push_back(group);
    c.group_ids.push_back(v[i]);
    v[out++] = pair_hash(group, hash.key(v[i + 1]));
  }
  if (i < n) {  // a trailing group
    c.group_hashes.push_back(hash.group(v[i]));
    c.group_ids.push_back(v[i]);
    v[out++] = c.group_hashes.back();
  }
  v.resize(out);
}

/// --format u64: (group, key) pairs of little-endian 8-byte integers, hashed by
/// hash_u64_pairs() in the reader's parallel stage; the ordered stage joins the pairs cut
/// between chunks. Each input holds whole pairs.
void add_u64_pairs(const build_settings& s, input_reader& reader, bulk_builder& builder,
                   group_collector<std::uint64_t>& groups) {
  const set_hasher hash{s.seed, seed_mix(s.seed)};
  std::optional<std::uint64_t> open_group;  // the hash of a group whose key is to come
  std::size_t open_source = 0;
  reader.run(
      s.threads, parse_output::keys, s.seed, [&](input_chunk& c) { hash_u64_pairs(hash, c); },
      [&](input_chunk& c) {
        if (open_group && c.source != open_source)
          throw u64_pair_cut_error(reader.name(open_source));
        std::uint64_t* first = c.values.data();
        std::uint64_t* last = first + c.values.size();
        if (starts_with_key(c) && first != last) {
          const std::uint64_t pair = pair_hash(*open_group, *first);
          builder.add_hashes(&pair, 1);
          open_group.reset();
          ++first;
        }
        const bool trailing = ends_with_group(c);
        if (trailing) --last;
        builder.add_hashes(first, static_cast<std::size_t>(last - first));
        for (std::size_t i = 0; i < c.group_hashes.size(); ++i)
          groups.add(c.group_hashes[i], c.group_ids[i]);
        if (trailing) {
          open_group = *last;
          open_source = c.source;
        }
      });
  if (open_group) throw u64_pair_cut_error(reader.name(open_source));
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
  if (format == input_format::u64) {
    group_collector<std::uint64_t> groups;
    add_u64_pairs(s, reader, builder, groups);
    record_groups(s, groups, builder);
  } else {
    group_collector<std::string> groups;
    add_group_key_lines(s, format, reader, builder, groups);
    record_groups(s, groups, builder);
  }
  const bulk_result result = builder.finish(s.output);
  display.stop(true);
  if (mode != progress_mode::quiet) {
    print_summary(s, result, seconds_since(start),
                  reader.counters().bytes.load(std::memory_order_relaxed), false);
  }
  return 0;
}

}  // namespace ribbon::cli
