// build_many(): a filter per group, all groups in one oneTBB arena (layered_builder.hpp).
#include "ribbon/build_many.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <string>

#include "layered_builder.hpp"

namespace ribbon {

void detail::check_groups(const key_groups& groups, std::uint64_t key_count) {
  if (groups.num_groups == 0) return;
  if (groups.offsets == nullptr) throw error("build_many: no group offsets");
  if (groups.offsets[0] != 0) throw error("build_many: the first group offset must be 0");
  for (std::uint64_t g = 0; g < groups.num_groups; ++g) {
    if (groups.offsets[g + 1] < groups.offsets[g]) {
      throw error("build_many: group offsets decrease at group " + std::to_string(g));
    }
  }
  const std::uint64_t positions = groups.offsets[groups.num_groups];
  if (groups.order == nullptr) {
    if (positions > key_count) {
      throw error("build_many: the groups hold " + std::to_string(positions) +
                  " keys, more than the " + std::to_string(key_count) + " given");
    }
    return;
  }
  for (std::uint64_t i = 0; i < positions; ++i) {
    if (groups.order[i] >= key_count) {
      throw error("build_many: order[" + std::to_string(i) +
                  "] = " + std::to_string(groups.order[i]) + " is not a key position (below " +
                  std::to_string(key_count) + ")");
    }
  }
}

namespace {

/// The filters of every group; key_hash(i) is the hash of key position i.
template <class KeyHash>
std::vector<filter> build_groups(const filter_params& p, const build_options& options,
                                 const key_groups& groups, const KeyHash& key_hash) {
  std::vector<filter> filters(groups.num_groups);
  build_options one = options;
  one.progress = nullptr;
  detail::run_with_threads(options.threads, [&] {
    // Many small groups to a task; a large group's shards spread over the arena from within.
    tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, groups.num_groups),
                      [&](const tbb::blocked_range<std::uint64_t>& range) {
                        for (std::uint64_t g = range.begin(); g != range.end(); ++g) {
                          const std::uint64_t first = groups.offsets[g];
                          const std::uint64_t* order = groups.order;
                          auto group_hash = [&](std::uint64_t i) {
                            return key_hash(order ? order[first + i] : first + i);
                          };
                          filters[g] = detail::build_in_this_arena(p, one, groups.size(g),
                                                                   group_hash, nullptr, nullptr);
                        }
                      });
  });
  return filters;
}

template <class MakeHash>
std::vector<filter> build_many_of(key_kind kind, std::uint64_t key_count, const key_groups& groups,
                                  const build_options& options, const MakeHash& make_hash) {
  const filter_params p = detail::params_from(options, kind);
  (void)detail::sizing_from(options, p, 1);  // bad options fail before any work
  detail::check_groups(groups, key_count);
  return build_groups(p, options, groups, make_hash(p));
}

}  // namespace

std::vector<filter> build_many(const std::uint64_t* keys, std::uint64_t key_count,
                               const key_groups& groups, const build_options& options) {
  return build_many_of(key_kind::u64, key_count, groups, options, [keys](const filter_params& p) {
    return [keys, mixed = seed_mix(p.seed)](std::uint64_t i) { return hash_u64(keys[i], mixed); };
  });
}

std::vector<filter> build_many(const std::string_view* keys, std::uint64_t key_count,
                               const key_groups& groups, const build_options& options) {
  return build_many_of(key_kind::bytes, key_count, groups, options, [keys](const filter_params& p) {
    return [keys, seed = p.seed](std::uint64_t i) {
      return hash_bytes(keys[i].data(), keys[i].size(), seed);
    };
  });
}

std::vector<filter> build_many_from_hashes(const std::uint64_t* hashes, std::uint64_t key_count,
                                           key_kind kind, const key_groups& groups,
                                           const build_options& options) {
  return build_many_of(kind, key_count, groups, options, [hashes](const filter_params&) {
    return [hashes](std::uint64_t i) { return hashes[i]; };
  });
}

}  // namespace ribbon
