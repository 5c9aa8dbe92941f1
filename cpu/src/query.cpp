// Batched CPU queries: the pipeline of query_kernels.hpp over ranges of keys, in parallel
// (oneTBB) for large batches.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <memory>
#include <string_view>

#include "query_kernels.hpp"
#include "ribbon/filter.hpp"

namespace ribbon {
namespace {

using namespace detail::kernels;

/// Runs run(begin, end) over [0, count), in parallel for large batches: `probes_each` probes
/// an item, tasks of about 2^14 probes.
template <class Run>
void run_batch(std::uint64_t count, std::uint32_t threads, const Run& run,
               std::uint64_t probes_each = 1) {
  constexpr std::uint64_t parallel_threshold = std::uint64_t{1} << 16;
  constexpr std::uint64_t task_probes = std::uint64_t{1} << 14;
  if (count * probes_each < parallel_threshold || count < 2 || threads == 1) {
    run(0, count);
    return;
  }
  const std::uint64_t grain = std::max<std::uint64_t>(1, task_probes / probes_each);
  tbb::task_arena arena(threads == 0 ? tbb::task_arena::automatic : static_cast<int>(threads));
  arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, count, grain),
                      [&](const tbb::blocked_range<std::uint64_t>& r) { run(r.begin(), r.end()); });
  });
}

template <class KeyHash>
void lookup_batch(const filter_params& p, const query_plan& q, std::uint64_t count,
                  const KeyHash& key_hash, std::uint32_t* out, bool* found, std::uint32_t threads) {
  run_batch(count, threads, [&](std::uint64_t begin, std::uint64_t end) {
    lookup_checked_keys(p, q, begin, end, key_hash, out, found);
  });
}

/// Membership in a filter, or in a retrieval structure with check bits.
template <class KeyHash>
void membership_batch(const filter_params& p, const query_plan& q, std::uint64_t count,
                      const KeyHash& key_hash, bool* out, std::uint32_t threads) {
  run_batch(count, threads, [&](std::uint64_t begin, std::uint64_t end) {
    membership_keys(p, q, begin, end, key_hash, out);
  });
}

}  // namespace

void filter::contains(const std::uint64_t* keys, std::uint64_t count, bool* out) const {
  check_query(key_kind::u64, false);
  const filter_ref& f = ref_;
  membership_batch(
      f.params, queries_.plan, count, [keys, &f](std::uint64_t i) { return f.key_hash(keys[i]); },
      out, query_threads_);
}

void filter::contains(const std::string_view* keys, std::uint64_t count, bool* out) const {
  check_query(key_kind::bytes, false);
  const filter_ref& f = ref_;
  membership_batch(
      f.params, queries_.plan, count,
      [keys, &f](std::uint64_t i) { return f.key_hash(keys[i].data(), keys[i].size()); }, out,
      query_threads_);
}

template <class Group, class Key>
void filter::contains_in(const Group* groups, const Key* keys, std::uint64_t count,
                         bool* out) const {
  check_set_query(group_kind_for<Group>, key_kind_for<Key>);
  const set_hasher hash = set_hashes();
  auto pair = [groups, keys, hash](std::uint64_t i) { return hash.pair(groups[i], keys[i]); };
  membership_batch(ref_.params, queries_.plan, count, pair, out, query_threads_);
}

template <class Group, class Key>
void filter::contains_in_group(const Group& group, const Key* keys, std::uint64_t count,
                               bool* out) const {
  check_set_query(group_kind_for<Group>, key_kind_for<Key>);
  const set_hasher hash = set_hashes();
  const std::uint64_t group_hash = hash.group(group);
  auto pair = [group_hash, keys, hash](std::uint64_t i) {
    return pair_hash(group_hash, hash.key(keys[i]));
  };
  membership_batch(ref_.params, queries_.plan, count, pair, out, query_threads_);
}

template <class Key>
filter::group_matches filter::groups_of(const Key* keys, std::uint64_t count) const {
  const group_names& names = groups();
  check_set_query(ref_.params.groups, key_kind_for<Key>);
  const set_hasher hash = set_hashes();
  std::vector<std::uint64_t> mixed = names.hashes(hash);
  for (std::uint64_t& g : mixed) g = group_mix(g);
  const std::uint64_t num_groups = mixed.size();
  // Each key's matches on their own, then joined: the keys run in parallel for large batches.
  std::vector<std::vector<std::uint64_t>> matches(count);
  run_batch(
      count, query_threads_,
      [&](std::uint64_t begin, std::uint64_t end) {
        std::unique_ptr<bool[]> hits(new bool[num_groups]);
        for (std::uint64_t k = begin; k < end; ++k) {
          const std::uint64_t key_hash = hash.key(keys[k]);
          auto pair = [&](std::uint64_t g) { return mixed_pair_hash(mixed[g], key_hash); };
          membership_keys(ref_.params, queries_.plan, 0, num_groups, pair, hits.get());
          for (std::uint64_t g = 0; g < num_groups; ++g) {
            if (hits[g]) matches[k].push_back(g);
          }
        }
      },
      std::max<std::uint64_t>(num_groups, 1));
  group_matches out;
  out.offsets.reserve(count + 1);
  out.offsets.push_back(0);
  for (const std::vector<std::uint64_t>& m : matches) {
    out.groups.insert(out.groups.end(), m.begin(), m.end());
    out.offsets.push_back(out.groups.size());
  }
  return out;
}

template filter::group_matches filter::groups_of(const std::uint64_t*, std::uint64_t) const;
template filter::group_matches filter::groups_of(const std::string_view*, std::uint64_t) const;

// The batched set queries of every kind of group and key.
template void filter::contains_in(const std::uint64_t*, const std::uint64_t*, std::uint64_t,
                                  bool*) const;
template void filter::contains_in(const std::uint64_t*, const std::string_view*, std::uint64_t,
                                  bool*) const;
template void filter::contains_in(const std::string_view*, const std::uint64_t*, std::uint64_t,
                                  bool*) const;
template void filter::contains_in(const std::string_view*, const std::string_view*, std::uint64_t,
                                  bool*) const;
template void filter::contains_in_group(const std::uint64_t&, const std::uint64_t*, std::uint64_t,
                                        bool*) const;
template void filter::contains_in_group(const std::uint64_t&, const std::string_view*,
                                        std::uint64_t, bool*) const;
template void filter::contains_in_group(const std::string_view&, const std::uint64_t*,
                                        std::uint64_t, bool*) const;
template void filter::contains_in_group(const std::string_view&, const std::string_view*,
                                        std::uint64_t, bool*) const;

void filter::lookup(const std::uint64_t* keys, std::uint64_t count, std::uint32_t* out,
                    bool* found) const {
  check_query(key_kind::u64, true);
  const filter_ref& f = ref_;
  lookup_batch(
      f.params, queries_.plan, count, [keys, &f](std::uint64_t i) { return f.key_hash(keys[i]); },
      out, found, query_threads_);
}

void filter::lookup(const std::string_view* keys, std::uint64_t count, std::uint32_t* out,
                    bool* found) const {
  check_query(key_kind::bytes, true);
  const filter_ref& f = ref_;
  lookup_batch(
      f.params, queries_.plan, count,
      [keys, &f](std::uint64_t i) { return f.key_hash(keys[i].data(), keys[i].size()); }, out,
      found, query_threads_);
}

template <class Offset>
void filter::contains_offsets(const Offset* offsets, const unsigned char* data, std::uint64_t count,
                              bool* out) const {
  check_query(key_kind::bytes, false);
  membership_batch(ref_.params, queries_.plan, count,
                   offsets_key_hash<Offset>{offsets, data, ref_.params.seed}, out, query_threads_);
}

template <class Offset>
void filter::lookup_offsets(const Offset* offsets, const unsigned char* data, std::uint64_t count,
                            std::uint32_t* out, bool* found) const {
  check_query(key_kind::bytes, true);
  lookup_batch(ref_.params, queries_.plan, count,
               offsets_key_hash<Offset>{offsets, data, ref_.params.seed}, out, found,
               query_threads_);
}

template void filter::contains_offsets(const std::int32_t*, const unsigned char*, std::uint64_t,
                                       bool*) const;
template void filter::contains_offsets(const std::int64_t*, const unsigned char*, std::uint64_t,
                                       bool*) const;
template void filter::lookup_offsets(const std::int32_t*, const unsigned char*, std::uint64_t,
                                     std::uint32_t*, bool*) const;
template void filter::lookup_offsets(const std::int64_t*, const unsigned char*, std::uint64_t,
                                     std::uint32_t*, bool*) const;

}  // namespace ribbon
