// The oneTBB builder: hash -> partition by shard -> per shard (sort, eliminate, back-substitute)
// -> gather bumped keys -> next layer; the last layer is plain and retried on failure.
#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "ribbon/detail/partition.hpp"
#include "ribbon/detail/shard_solver.hpp"
#include "ribbon/error.hpp"
#include "ribbon/filter.hpp"
#include "storage.hpp"

namespace ribbon {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

/// Shards whose elimination steps one thread interleaves.
constexpr unsigned interleaved_shards = 8;  // detail::interleave() takes 1 to 8

/// Per-thread working memory of the shard solver: one set of arrays per interleaved shard.
template <unsigned Width, class Result>
struct workspace {
  struct lane_arrays {
    std::vector<detail::word_t<Width>> coeffs;
    std::vector<Result> results;
    std::vector<std::uint32_t> undo_columns, undo_offsets;
  };
  lane_arrays lanes[interleaved_shards];
  std::vector<std::uint64_t> scratch;

  detail::shard_workspace<Width, Result> lane(unsigned index, std::uint64_t columns,
                                              std::uint32_t bucket_size) {
    lane_arrays& a = lanes[index];
    if (a.coeffs.size() < columns) {
      a.coeffs.resize(columns);
      a.results.resize(columns);
    }
    const std::uint32_t undo = detail::undo_capacity(bucket_size, Width);
    if (a.undo_columns.size() < undo) {
      a.undo_columns.resize(undo);
      a.undo_offsets.resize(undo);
    }
    return {a.coeffs.data(), a.results.data(), a.undo_columns.data(), a.undo_offsets.data()};
  }
};

struct thread_seconds {
  std::atomic<std::int64_t> sort_ns{0}, eliminate_ns{0}, back_substitute_ns{0};
};

std::int64_t nanoseconds_since(clock_type::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - start).count();
}

/// Tries of the final plain layer before giving up (only adversarial keys get near it).
constexpr std::uint32_t max_plain_attempts = 32;

/// Builds the layers of one filter for one (width, result type) combination.
template <unsigned Width, class Result>
class layered_builder {
 public:
  layered_builder(const filter_params& p, build_stats& stats) : p_(p), stats_(stats) {}

  template <class Source>
  filter build(std::uint64_t n, const Source& key_hash) {
    const auto build_start = clock_type::now();
    const layer_sizing sizing = default_sizing(p_.width);
    std::vector<format::layer_image> layers;
    std::vector<aligned_bytes> buffers;

    aligned_array<std::uint64_t> bumped;  // layer hashes passed to the next layer
    std::uint64_t remaining = n;
    for (std::uint32_t l = 0; remaining > 0; ++l) {
      const auto layer_start = clock_type::now();
      const bool plain = l + 1 == max_layers || (l > 0 && remaining <= sizing.plain_max_keys);
      format::layer_image layer;
      layer.input_keys = remaining;
      if (plain) {
        std::vector<std::uint64_t> hashes(remaining);
        for (std::uint32_t attempt = 0;; ++attempt) {
          // Each retry has a fresh salt, and from the fifth on 25 % more slots: with random
          // hashes the first try almost always succeeds (see plain_layer_attempts).
          if (attempt == max_plain_attempts) {
            throw error("the final plain layer failed to build " +
                        std::to_string(max_plain_attempts) + " times (" +
                        std::to_string(remaining) + " keys)");
          }
          layer.salt = layer_salt(p_.seed, l, attempt);
          for (std::uint64_t i = 0; i < remaining; ++i) hashes[i] = remix(bumped[i], layer.salt);
          std::sort(hashes.begin(), hashes.end());
          layer.geometry = plain_geometry(plain_layer_starts(remaining, p_, sizing, attempt));
          if (solve_layer(layer, buffers, hashes.data(), {0, remaining})) {
            stats_.plain_layer_attempts = attempt + 1;
            break;
          }
        }
        layer.bumped_keys = 0;
        remaining = 0;
      } else {
        layer.salt = l == 0 ? 0 : layer_salt(p_.seed, l, 0);
        layer.geometry = bumped_geometry(bumped_layer_starts(remaining, p_, sizing), p_);
        auto hashes = allocate_array<std::uint64_t>(remaining);
        std::vector<std::uint64_t> shard_offsets;
        const std::uint64_t* previous = bumped.get();
        const std::uint64_t salt = layer.salt;
        double* hash_s = l == 0 ? &stats_.hash_seconds : nullptr;
        double* partition_s = l == 0 ? &stats_.partition_seconds : nullptr;
        if (l == 0) {
          detail::partition_by_shard(remaining, key_hash, layer.geometry, hashes.get(),
                                     shard_offsets, hash_s, partition_s);
        } else {
          auto source = [previous, salt](std::uint64_t i) { return remix(previous[i], salt); };
          detail::partition_by_shard(remaining, source, layer.geometry, hashes.get(), shard_offsets,
                                     nullptr, nullptr);
        }
        bumped.reset();
        auto solve_start = clock_type::now();
        std::vector<std::uint64_t> bumped_counts(layer.geometry.num_shards());
        solve_layer(layer, buffers, hashes.get(), shard_offsets, &bumped_counts);
        if (l == 0) stats_.solve_seconds += seconds_since(solve_start);

        // Gather the bumped hashes (each shard left them at the front of its range) at the
        // front of the same array: no second buffer at the layer's peak. Sequential, because
        // the ranges overlap; the bumped keys are a few percent of the layer.
        const auto gather_start = clock_type::now();
        std::uint64_t gathered = 0;
        for (std::size_t s = 0; s < bumped_counts.size(); ++s) {
          std::copy_n(hashes.get() + shard_offsets[s], bumped_counts[s], hashes.get() + gathered);
          gathered += bumped_counts[s];
        }
        layer.bumped_keys = gathered;
        bumped = std::move(hashes);  // freed once the next layer has partitioned them
        remaining = layer.bumped_keys;
        if (l == 0) stats_.gather_seconds += seconds_since(gather_start);
      }
      layers.push_back(layer);
      if (l > 0) stats_.later_layers_seconds += seconds_since(layer_start);
    }
    stats_.total_seconds = seconds_since(build_start);
    stats_.sort_thread_seconds = 1e-9 * static_cast<double>(threads_.sort_ns);
    stats_.eliminate_thread_seconds = 1e-9 * static_cast<double>(threads_.eliminate_ns);
    stats_.back_substitute_thread_seconds = 1e-9 * static_cast<double>(threads_.back_substitute_ns);
    return builder_access::make(p_, n, std::move(layers), std::move(buffers));
  }

 private:
  /// Solves every shard of `layer` over `hashes` (grouped by shard at `shard_offsets`),
  /// allocating its sections into `buffers`. Returns false if a plain layer failed.
  bool solve_layer(format::layer_image& layer, std::vector<aligned_bytes>& buffers,
                   std::uint64_t* hashes, const std::vector<std::uint64_t>& shard_offsets,
                   std::vector<std::uint64_t>* bumped_counts = nullptr) {
    const layer_geometry& g = layer.geometry;
    aligned_bytes thresholds = allocate_aligned(g.threshold_words(p_.bucket_size) * 8);
    aligned_bytes solution = allocate_aligned(g.solution_bytes(p_.width, p_.result_bits));
    auto* threshold_words = reinterpret_cast<std::uint64_t*>(thresholds.get());
    auto* solution_words = reinterpret_cast<detail::word_t<Width>*>(solution.get());
    const std::uint64_t columns = detail::max_shard_columns(g, Width);
    std::atomic<bool> solved{true};
    // Each task solves a group of shards, interleaving their elimination steps (see
    // detail::shard_eliminator).
    const std::uint64_t shards = g.num_shards();
    // Fewer shards per group when a layer has too few to keep every thread busy (the later,
    // smaller layers). The grouping does not change the output: shards are independent.
    const auto threads = static_cast<std::uint64_t>(tbb::this_task_arena::max_concurrency());
    const std::uint64_t per_group =
        std::clamp<std::uint64_t>(detail::divide_round_up(shards, threads), 1, interleaved_shards);
    const std::uint64_t groups = detail::divide_round_up(shards, per_group);
    auto solve_group = [&](std::uint64_t group) {
      workspace<Width, Result>& ws = workspaces_.local();
      const std::uint64_t first = group * per_group;
      const auto lanes = static_cast<unsigned>(std::min<std::uint64_t>(per_group, shards - first));
      auto t = clock_type::now();
      for (unsigned lane = 0; lane < lanes; ++lane) {
        const std::uint64_t shard = first + lane;
        detail::sort_shard(hashes + shard_offsets[shard],
                           shard_offsets[shard + 1] - shard_offsets[shard], g, shard, ws.scratch);
      }
      threads_.sort_ns += nanoseconds_since(t);
      t = clock_type::now();
      using eliminator = detail::shard_eliminator<Width, Result>;
      static_assert(std::is_trivially_destructible_v<eliminator>, "placed without destruction");
      alignas(eliminator) unsigned char storage[interleaved_shards * sizeof(eliminator)];
      auto* eliminators = reinterpret_cast<eliminator*>(storage);
      for (unsigned lane = 0; lane < lanes; ++lane) {
        const std::uint64_t shard = first + lane;
        new (eliminators + lane)
            eliminator(p_, g, shard, hashes + shard_offsets[shard],
                       shard_offsets[shard + 1] - shard_offsets[shard],
                       ws.lane(lane, columns, p_.bucket_size), threshold_words);
      }
      detail::interleave(eliminators, lanes);
      threads_.eliminate_ns += nanoseconds_since(t);
      t = clock_type::now();
      for (unsigned lane = 0; lane < lanes; ++lane) {
        const std::uint64_t shard = first + lane;
        const detail::shard_outcome outcome = eliminators[lane].outcome();
        if (!outcome.solved) {
          solved = false;
          continue;
        }
        if (bumped_counts) (*bumped_counts)[shard] = outcome.bumped;
        const auto view = ws.lane(lane, columns, p_.bucket_size);
        detail::back_substitute_shard<Width, Result>(p_, g, shard, view.coeffs, view.results,
                                                     solution_words);
      }
      threads_.back_substitute_ns += nanoseconds_since(t);
    };
    if (groups == 1) {
      solve_group(0);
    } else {
      tbb::parallel_for(std::uint64_t{0}, groups, solve_group);
    }
    if (!solved) return false;
    layer.thresholds = thresholds.get();
    layer.solution = solution.get();
    buffers.push_back(std::move(thresholds));
    buffers.push_back(std::move(solution));
    return true;
  }

  filter_params p_;
  build_stats& stats_;
  thread_seconds threads_;
  tbb::enumerable_thread_specific<workspace<Width, Result>> workspaces_;
};

template <class Source>
filter build_with(const filter_params& p, std::uint64_t n, const Source& key_hash,
                  std::uint32_t threads, build_stats* stats) {
  if (const char* problem = check_params(p))
    throw error(std::string("invalid build options: ") + problem);
  build_stats local_stats;
  build_stats& s = stats ? *stats : local_stats;
  s = build_stats{};
  // An explicit thread count above the machine's is honoured too (tests use it to check
  // that the output does not depend on the number of threads).
  std::optional<tbb::global_control> allow;
  if (static_cast<int>(threads) > tbb::this_task_arena::max_concurrency()) {
    allow.emplace(tbb::global_control::max_allowed_parallelism, threads);
  }
  tbb::task_arena arena(threads == 0 ? tbb::task_arena::automatic : static_cast<int>(threads));
  return arena.execute([&]() -> filter {
    auto dispatch = [&](auto width_tag) -> filter {
      constexpr unsigned width = decltype(width_tag)::value;
      if (p.result_bits <= 8) return layered_builder<width, std::uint8_t>(p, s).build(n, key_hash);
      if (p.result_bits <= 16)
        return layered_builder<width, std::uint16_t>(p, s).build(n, key_hash);
      return layered_builder<width, std::uint32_t>(p, s).build(n, key_hash);
    };
    switch (p.width) {
      case 32: return dispatch(std::integral_constant<unsigned, 32>{});
      case 64: return dispatch(std::integral_constant<unsigned, 64>{});
      default: return dispatch(std::integral_constant<unsigned, 128>{});
    }
  });
}

filter_params params_from(const build_options& o, key_kind keys) {
  std::uint32_t bits = o.result_bits;
  if (o.target_fpr != 0) {
    bits = result_bits_for_fpr(o.target_fpr);
    if (bits == 0) throw error("invalid build options: target FPR must be in (0, 1)");
  }
  return make_params(o.width, bits, o.shard_size, o.seed, keys);
}

}  // namespace

filter filter::build(const std::uint64_t* keys, std::uint64_t count, const build_options& options,
                     build_stats* stats) {
  const filter_params p = params_from(options, key_kind::u64);
  const std::uint64_t mixed = seed_mix(p.seed);
  auto key_hash = [keys, mixed](std::uint64_t i) { return hash_u64(keys[i], mixed); };
  return build_with(p, count, key_hash, options.threads, stats);
}

filter filter::build(const std::string_view* keys, std::uint64_t count,
                     const build_options& options, build_stats* stats) {
  const filter_params p = params_from(options, key_kind::bytes);
  const std::uint64_t seed = p.seed;
  auto key_hash = [keys, seed](std::uint64_t i) {
    return hash_bytes(keys[i].data(), keys[i].size(), seed);
  };
  return build_with(p, count, key_hash, options.threads, stats);
}

filter filter::build_from_hashes(const std::uint64_t* hashes, std::uint64_t count, key_kind keys,
                                 const build_options& options, build_stats* stats) {
  const filter_params p = params_from(options, keys);
  auto key_hash = [hashes](std::uint64_t i) { return hashes[i]; };
  return build_with(p, count, key_hash, options.threads, stats);
}

}  // namespace ribbon
