// build_many(): a filter per group, all groups in one oneTBB arena (layered_builder.hpp).
#include "ribbon/build_many.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <optional>
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

/// The filters of groups [first, end) into `filters`, on this thread but for the shards of
/// large groups. Groups whose layer 0 is one shard (up to about 10^5 keys) have it eliminated
/// interleaved_shards at a time (solve_first_layers_together()): one shard's elimination
/// alone leaves the core waiting on its chain of dependent loads.
template <unsigned Width, class Result, class KeyHash>
void build_range(const filter_params& p, const build_options& options, const key_groups& groups,
                 const KeyHash& key_hash, std::uint64_t first, std::uint64_t end,
                 std::vector<filter>& filters) {
  using builder = detail::layered_builder<Width, Result, std::uint64_t>;
  constexpr unsigned lanes = detail::interleaved_shards;
  detail::workspace<Width, Result, std::uint64_t> ws;
  build_stats stats[lanes];
  std::optional<builder> builders[lanes];
  typename builder::started_build started[lanes];
  std::uint64_t owners[lanes];
  unsigned waiting = 0;  // started builds whose layer 0 waits for the others'
  auto finish_waiting = [&] {
    format::layer_image layers[lanes];
    std::vector<aligned_bytes> buffers[lanes];
    detail::solve_first_layers_together<Width, Result, std::uint64_t>(p, started, waiting, ws,
                                                                      layers, buffers);
    for (unsigned i = 0; i < waiting; ++i) {
      filters[owners[i]] = builders[i]->finish(started[i], &layers[i], std::move(buffers[i]));
      builders[i].reset();
    }
    waiting = 0;
  };
  for (std::uint64_t g = first; g != end; ++g) {
    const std::uint64_t offset = groups.offsets[g];
    const std::uint64_t* order = groups.order;
    auto group_hash = [&](std::uint64_t i) {
      return key_hash(order ? order[offset + i] : offset + i);
    };
    builder& b = builders[waiting].emplace(p, options, stats[waiting], nullptr);
    started[waiting] = b.start(groups.size(g), group_hash);
    if (!builder::first_layer_is_one_shard(started[waiting])) {
      filters[g] = b.finish(started[waiting], nullptr, {});
      builders[waiting].reset();
      continue;
    }
    owners[waiting] = g;
    if (++waiting == lanes) finish_waiting();
  }
  if (waiting != 0) finish_waiting();
}

/// The filters of every group; key_hash(i) is the hash of key position i.
template <class KeyHash>
std::vector<filter> build_groups(const filter_params& p, const build_options& options,
                                 const key_groups& groups, const KeyHash& key_hash) {
  std::vector<filter> filters(groups.num_groups);
  build_options one = options;
  one.progress = nullptr;
  detail::run_with_threads(options.threads, [&] {
    detail::dispatch_layout(p, [&](auto width_tag, auto result_tag) {
      constexpr unsigned width = decltype(width_tag)::value;
      using result = decltype(result_tag);
      // Many small groups to a task, in runs of whole lanes (at least four tasks a thread
      // where there are groups enough); a large group's shards spread over the arena from
      // within.
      constexpr std::uint64_t lanes = detail::interleaved_shards;
      const auto threads = static_cast<std::uint64_t>(tbb::this_task_arena::max_concurrency());
      const std::uint64_t per_task =
          lanes * std::clamp<std::uint64_t>(groups.num_groups / (4 * threads * lanes), 1, 8);
      tbb::parallel_for(std::uint64_t{0}, detail::divide_round_up(groups.num_groups, per_task),
                        [&](std::uint64_t task) {
                          const std::uint64_t first = task * per_task;
                          build_range<width, result>(p, one, groups, key_hash, first,
                                                     std::min(groups.num_groups, first + per_task),
                                                     filters);
                        });
    });
  });
  return filters;
}

template <class MakeHash>
std::vector<filter> build_many_of(key_kind kind, std::uint64_t key_count, const key_groups& groups,
                                  const build_options& options, const MakeHash& make_hash) {
  const filter_params p = build_params(options, kind);
  (void)build_sizing(options, p, 1);  // bad options fail before any work
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
