// `ribbon build --groups -o SET`: one filter set of (group, key) pairs (format version 7 with
// its groups' names, 6 with --no-group-names), streamed into the bulk builder as a filter's
// keys are: in memory, or out of core beyond --memory-limit. Groups of group<TAB>key lines are
// byte strings; with --format u64 the pairs are little-endian 8-byte integers, the group then
// the key.
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "build_settings.hpp"
#include "ribbon/bulk_builder.hpp"
#include "ribbon/error.hpp"
#include "ribbon/options.hpp"

namespace ribbon::cli {
namespace {

/// The distinct groups of a set's pairs, by hash (what the file counts), with their names
/// (Group: std::string_view or std::uint64_t, as group_at gives them). A group repeated in a
/// run (the usual order of grouped inputs) costs one comparison.
template <class Group>
class group_collector {
  using name_type =
      std::conditional_t<std::is_same_v<Group, std::uint64_t>, std::uint64_t, std::string>;

 public:
  void add(std::uint64_t group_hash, Group group) {
    if (any_ && group_hash == last_) return;
    names_.try_emplace(group_hash, group);
    last_ = group_hash;
    any_ = true;
  }
  std::uint64_t count() const { return names_.size(); }
  group_names names() const {
    std::vector<name_type> all;
    all.reserve(names_.size());
    for (const auto& [hash, name] : names_) all.emplace_back(name);
    return group_names::of(std::move(all));
  }

 private:
  std::unordered_map<std::uint64_t, name_type> names_;
  std::uint64_t last_ = 0;
  bool any_ = false;
};

/// Streams the pairs into the builder: the reader hashes the keys, the parallel stage makes
/// the pair hashes (c.values) and the group hashes (c.group_hashes, for the count); then gives
/// the builder the count and (unless --no-group-names) the names of the set's groups.
template <class Group>
void add_pairs(const build_settings& s, input_reader& reader, bulk_builder& builder) {
  const set_hasher hash{s.options.seed, seed_mix(s.options.seed)};
  group_collector<Group> groups;
  reader.run(
      s.options.threads, parse_output::hashes, s.options.seed,
      [&](input_chunk& c) {
        c.group_hashes.resize(c.key_count);
        for (std::size_t i = 0; i < c.key_count; ++i) {
          c.group_hashes[i] = hash.group(group_at<Group>(c, i));
          c.values[i] = pair_hash(c.group_hashes[i], c.values[i]);
        }
      },
      [&](input_chunk& c) {
        builder.add_hashes(c.values.data(), c.values.size());
        for (std::size_t i = 0; i < c.key_count; ++i) {
          groups.add(c.group_hashes[i], group_at<Group>(c, i));
        }
      });
  builder.set_group_count(groups.count());
  if (s.group_names) builder.set_group_names(groups.names());
}

}  // namespace

int run_set_build(const build_settings& s, input_format format, filter_variant variant,
                  std::uint64_t memory_limit, clock_type::time_point start, progress_mode mode) {
  streamed_build streamed(s, format, input_records::pairs, variant, memory_limit);
  const bool u64 = format == input_format::u64;
  streamed.options.groups = u64 ? group_kind::u64 : group_kind::bytes;
  return run_streamed_build(s, streamed, key_kind_of(format), false, memory_limit, start, mode,
                            [&](bulk_builder& builder) {
                              if (u64) {
                                add_pairs<std::uint64_t>(s, streamed.reader, builder);
                              } else {
                                add_pairs<std::string_view>(s, streamed.reader, builder);
                              }
                            });
}

}  // namespace ribbon::cli
