// filter::build*: the in-memory oneTBB build (layered_builder.hpp).
#include <tbb/blocked_range.h>
#include <tbb/combinable.h>
#include <tbb/parallel_for.h>

#include <cmath>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "layered_builder.hpp"
#include "ribbon/bulk_builder.hpp"
#include "ribbon/options.hpp"

namespace ribbon {

namespace {

/// Filter builds: the records are the key hashes; make_hash(p) gives key i's hash.
template <class MakeHash>
filter build_filter(key_kind kind, std::uint64_t count, const build_options& options,
                    build_stats* stats, const MakeHash& make_hash) {
  const filter_params p = build_params(options, kind);
  return detail::build_in_memory(p, options, count, make_hash(p), stats, options.progress);
}

/// Retrieval builds: the records are key hashes with their values.
template <class MakeHash>
filter build_retrieval(key_kind kind, const std::uint32_t* values, std::uint64_t count,
                       const build_options& options, build_stats* stats,
                       const MakeHash& make_hash) {
  const filter_params p = build_params(options, kind, true);
  check_values(values, count, p.value_bits());
  const auto key_hash = make_hash(p);
  auto record = [&](std::uint64_t i) {
    const std::uint64_t h = key_hash(i);
    return detail::packed_keyed_value{h, p.stored_value(h, values[i])};
  };
  return detail::build_in_memory(p, options, count, record, stats, options.progress);
}

auto u64_hash(const std::uint64_t* keys) {
  return [keys](const filter_params& p) {
    return [keys, mixed = seed_mix(p.seed)](std::uint64_t i) { return hash_u64(keys[i], mixed); };
  };
}
auto bytes_hash(const std::string_view* keys) {
  return [keys](const filter_params& p) {
    return [keys, seed = p.seed](std::uint64_t i) {
      return hash_bytes(keys[i].data(), keys[i].size(), seed);
    };
  };
}
template <class Offset>
auto offsets_hash(const Offset* offsets, const unsigned char* data) {
  return [offsets, data](const filter_params& p) {
    return offsets_key_hash<Offset>{offsets, data, p.seed};
  };
}
auto given_hash(const std::uint64_t* hashes) {
  return [hashes](const filter_params&) { return [hashes](std::uint64_t i) { return hashes[i]; }; };
}

}  // namespace

filter filter::build(const std::uint64_t* keys, std::uint64_t count, const build_options& options,
                     build_stats* stats) {
  return build_filter(key_kind::u64, count, options, stats, u64_hash(keys));
}

filter filter::build(const std::string_view* keys, std::uint64_t count,
                     const build_options& options, build_stats* stats) {
  return build_filter(key_kind::bytes, count, options, stats, bytes_hash(keys));
}

filter filter::build_from_hashes(const std::uint64_t* hashes, std::uint64_t count, key_kind keys,
                                 const build_options& options, build_stats* stats) {
  return build_filter(keys, count, options, stats, given_hash(hashes));
}

filter filter::build(const std::uint64_t* keys, const std::uint32_t* values, std::uint64_t count,
                     const build_options& options, build_stats* stats) {
  return build_retrieval(key_kind::u64, values, count, options, stats, u64_hash(keys));
}

filter filter::build(const std::string_view* keys, const std::uint32_t* values, std::uint64_t count,
                     const build_options& options, build_stats* stats) {
  return build_retrieval(key_kind::bytes, values, count, options, stats, bytes_hash(keys));
}

filter filter::build_from_hashes(const std::uint64_t* hashes, const std::uint32_t* values,
                                 std::uint64_t count, key_kind keys, const build_options& options,
                                 build_stats* stats) {
  return build_retrieval(keys, values, count, options, stats, given_hash(hashes));
}

namespace {

/// Whether two pairs' groups are one: a byte string repeated in a run is usually the same
/// view (one pointer), which needs no comparison of its bytes.
bool same_group(std::uint64_t a, std::uint64_t b) {
  return a == b;
}
bool same_group(std::string_view a, std::string_view b) {
  return (a.data() == b.data() && a.size() == b.size()) || a == b;
}

/// build_set's records: the pairs' hashes. Its sequential reader hashes a group once per run
/// of it, not once per pair (pairs usually come grouped, a data file's keys together, and a
/// file name is a long string to hash); the hashes are the same.
template <class Group, class Key>
struct pair_source {
  const Group* groups;
  const Key* keys;
  set_hasher hash;

  std::uint64_t operator()(std::uint64_t i) const { return hash.pair(groups[i], keys[i]); }

  auto sequential() const {
    return [this, started = false, last = std::uint64_t{0},
            group_hash = std::uint64_t{0}](std::uint64_t i) mutable {
      if (!started || i != last + 1 || !same_group(groups[i], groups[last])) {
        group_hash = hash.group(groups[i]);
        started = true;
      }
      last = i;
      return pair_hash(group_hash, hash.key(keys[i]));
    };
  }
};

/// What a set records of its groups: how many distinct ones, and their names where asked.
struct groups_seen {
  std::uint64_t count = 0;
  std::shared_ptr<const group_names> names;  ///< null unless asked for
};

/// The distinct groups among `count` given ones, counted (by their hashes) and, with
/// `with_names`, named (group_names sorts and drops repeats), in one parallel pass over the
/// groups; a group repeated in a run is compared, not hashed again, and a group is taken
/// once per thread (not once per run: interleaved groups would make a name of every pair).
template <class Group>
groups_seen survey_groups(const Group* groups, std::uint64_t count, const set_hasher& hash,
                          bool with_names) {
  using name = std::conditional_t<std::is_same_v<Group, std::uint64_t>, std::uint64_t, std::string>;
  struct found {
    group_counter counter;
    std::vector<name> names;
  };
  tbb::combinable<found> each;
  tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, count, std::uint64_t{1} << 14),
                    [&](const tbb::blocked_range<std::uint64_t>& r) {
                      found& mine = each.local();
                      for (std::uint64_t i = r.begin(); i < r.end(); ++i) {
                        if (i != r.begin() && same_group(groups[i], groups[i - 1])) continue;
                        // A group is named once per thread, however its pairs are ordered.
                        if (mine.counter.add(hash.group(groups[i])) && with_names) {
                          mine.names.emplace_back(groups[i]);
                        }
                      }
                    });
  group_counter all;
  std::vector<name> names;
  each.combine_each([&](found& some) {
    all.merge(some.counter);
    names.insert(names.end(), std::make_move_iterator(some.names.begin()),
                 std::make_move_iterator(some.names.end()));
  });
  groups_seen seen{all.count(), nullptr};
  if (with_names)
    seen.names = std::make_shared<const group_names>(group_names::of(std::move(names)));
  return seen;
}

}  // namespace

template <class Group, class Key>
filter filter::build_set(const Group* groups, const Key* keys, std::uint64_t count,
                         const build_options& options, build_stats* stats) {
  filter_params p = build_params(options, key_kind_for<Key>);
  p.groups = group_kind_for<Group>;
  if (const char* problem = check_params(p)) {
    throw error(std::string("invalid build options: ") + problem);
  }
  const set_hasher hash{p.seed, seed_mix(p.seed)};
  const pair_source<Group, Key> pairs{groups, keys, hash};
  filter f = detail::build_in_memory(p, options, count, pairs, stats, options.progress);
  const groups_seen seen = survey_groups(groups, count, hash, options.group_names);
  builder_access::set_group_count(f, seen.count);
  if (seen.names) builder_access::set_group_names(f, seen.names);
  return f;
}

template filter filter::build_set(const std::uint64_t*, const std::uint64_t*, std::uint64_t,
                                  const build_options&, build_stats*);
template filter filter::build_set(const std::uint64_t*, const std::string_view*, std::uint64_t,
                                  const build_options&, build_stats*);
template filter filter::build_set(const std::string_view*, const std::uint64_t*, std::uint64_t,
                                  const build_options&, build_stats*);
template filter filter::build_set(const std::string_view*, const std::string_view*, std::uint64_t,
                                  const build_options&, build_stats*);

template <class Offset>
filter filter::build_offsets(const Offset* offsets, const unsigned char* data, std::uint64_t count,
                             const build_options& options, build_stats* stats) {
  return build_filter(key_kind::bytes, count, options, stats, offsets_hash(offsets, data));
}

template <class Offset>
filter filter::build_offsets(const Offset* offsets, const unsigned char* data,
                             const std::uint32_t* values, std::uint64_t count,
                             const build_options& options, build_stats* stats) {
  return build_retrieval(key_kind::bytes, values, count, options, stats,
                         offsets_hash(offsets, data));
}

template filter filter::build_offsets(const std::int32_t*, const unsigned char*, std::uint64_t,
                                      const build_options&, build_stats*);
template filter filter::build_offsets(const std::int64_t*, const unsigned char*, std::uint64_t,
                                      const build_options&, build_stats*);
template filter filter::build_offsets(const std::int32_t*, const unsigned char*,
                                      const std::uint32_t*, std::uint64_t, const build_options&,
                                      build_stats*);
template filter filter::build_offsets(const std::int64_t*, const unsigned char*,
                                      const std::uint32_t*, std::uint64_t, const build_options&,
                                      build_stats*);

}  // namespace ribbon
