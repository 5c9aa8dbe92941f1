// The steps of a distributed build (distributed.hpp): the out-of-core builder's shard-range
// solver, with the ranges solved wherever an engine runs them, and the last layers finished in
// one place; the assembly of the file is in distributed_assembly.cpp.
#include "ribbon/distributed.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>

#include "layered_builder.hpp"
#include "output_file.hpp"
#include "ribbon/detail/counting_sort.hpp"
#include "ribbon/detail/records.hpp"
#include "ribbon/options.hpp"

namespace ribbon::distributed {

namespace {

layer_sizing sizing_of(const filter_params& p) {
  return default_sizing(p.width);  // what build_sizing() gives every bumped build
}

/// Runs f(i) for i < n in parallel pieces (vectorized steps on large batches).
template <class F>
void for_each_index(std::uint64_t n, const F& f) {
  constexpr std::uint64_t piece = 1 << 16;
  if (n <= piece) {
    for (std::uint64_t i = 0; i < n; ++i) f(i);
    return;
  }
  tbb::parallel_for(std::uint64_t{0}, detail::divide_round_up(n, piece), [&](std::uint64_t b) {
    const std::uint64_t end = std::min(n, (b + 1) * piece);
    for (std::uint64_t i = b * piece; i < end; ++i) f(i);
  });
}

}  // namespace

filter_params build_params(const build_options& options, key_kind keys, group_kind groups) {
  if (options.variant != filter_variant::bumped) {
    throw error("the distributed build makes the default (bumped) filter only");
  }
  filter_params p = ribbon::build_params(options, keys, false);
  p.groups = groups;
  if (const char* problem = check_params(p)) throw error(problem);
  return p;
}

filter_params retrieval_params(const build_options& options, key_kind keys) {
  if (options.variant != filter_variant::bumped) {
    throw error("the distributed build makes the default (bumped) retrieval structure only");
  }
  return ribbon::build_params(options, keys, true);
}

void to_stored_values(const filter_params& p, const std::uint64_t* key_hashes,
                      std::uint32_t* values, std::uint64_t n) {
  check_values(values, n, p.value_bits(), 0);
  for_each_index(n, [&](std::uint64_t i) { values[i] = p.stored_value(key_hashes[i], values[i]); });
}

std::uint64_t layer_plan::threshold_bytes(const filter_params& p, std::uint64_t range) const {
  return geometry.shard_range_threshold_bytes(first_shard(range), end_shard(range), p.bucket_size);
}

std::uint64_t layer_plan::solution_bytes(const filter_params& p, std::uint64_t range) const {
  return geometry.shard_range_solution_bytes(first_shard(range), end_shard(range), p.width,
                                             p.result_bits);
}

ranged_layers ranged_layers_for(const filter_params& p, std::uint64_t one_place_keys,
                                std::uint64_t rows) {
  return ranged_layers(p, sizing_of(p), one_place_keys, rows);
}

layer_plan plan_layer(const filter_params& p, std::uint32_t layer, std::uint64_t keys,
                      std::uint64_t range_keys, std::uint64_t task_slots) {
  if (keys == 0) throw error("plan_layer: a layer without keys has nothing to plan");
  const layer_step step = layer_sequence::in_ranges(p, sizing_of(p), 0).at(layer, keys);
  if (!step.in_ranges) {
    throw error("plan_layer: layer " + std::to_string(layer) + " with " + std::to_string(keys) +
                " keys is the final plain layer: finish it with finish_layers");
  }
  layer_plan plan;
  plan.layer = layer;
  plan.input_keys = keys;
  plan.salt = step.salt;
  plan.geometry = step.geometry;
  const double keys_per_shard = static_cast<double>(keys) *
                                static_cast<double>(plan.geometry.shard_size()) /
                                static_cast<double>(plan.geometry.num_starts);
  const std::uint64_t shards = plan.geometry.num_shards();
  plan.shards_per_range = std::clamp<std::uint64_t>(
      static_cast<std::uint64_t>(static_cast<double>(range_keys) / std::ceil(keys_per_shard)), 1,
      shards);
  if (task_slots > 1) {  // fill the last wave: ranges up to a multiple of the slots
    const std::uint64_t waves = detail::divide_round_up(plan.num_ranges(), task_slots);
    plan.shards_per_range = detail::divide_round_up(shards, std::min(shards, waves * task_slots));
  }
  return plan;
}

void to_layer_hashes(const layer_plan& plan, std::uint64_t* hashes, std::uint64_t n) {
  if (!layer_remixes(plan.layer, plan.salt)) return;
  const std::uint64_t salt = plan.salt;
  for_each_index(n, [&](std::uint64_t i) { hashes[i] = remix(hashes[i], salt); });
}

void route(const layer_plan& plan, const std::uint64_t* hashes, std::uint64_t n,
           std::uint64_t* ranges) {
  for_each_index(n, [&](std::uint64_t i) { ranges[i] = plan.range_of(hashes[i]); });
}

namespace {

/// Moves the items of `items` (n of them) to the places `place(i)` gives (a permutation).
template <class T, class Place>
void permute(T* items, std::uint64_t n, const Place& place) {
  std::vector<T> moved(n);
  for (std::uint64_t i = 0; i < n; ++i) moved[place(i)] = items[i];
  std::copy(moved.begin(), moved.end(), items);
}

/// group_by_range's places: the stable counting sort of the hashes by range.
std::vector<std::uint64_t> range_places(const layer_plan& plan, const std::uint64_t* hashes,
                                        std::uint64_t n, std::vector<std::uint64_t>& offsets) {
  return detail::counting_sort_places(
      n, plan.num_ranges(), [&](std::uint64_t i) { return plan.range_of(hashes[i]); }, offsets);
}

}  // namespace

void group_by_range(const layer_plan& plan, std::uint64_t* hashes, std::uint64_t n,
                    std::vector<std::uint64_t>& offsets) {
  const std::vector<std::uint64_t> places = range_places(plan, hashes, n, offsets);
  permute(hashes, n, [&](std::uint64_t i) { return places[i]; });
}

void group_by_range(const layer_plan& plan, std::uint64_t* hashes, std::uint32_t* values,
                    std::uint64_t n, std::vector<std::uint64_t>& offsets) {
  const std::vector<std::uint64_t> places = range_places(plan, hashes, n, offsets);
  permute(hashes, n, [&](std::uint64_t i) { return places[i]; });
  permute(values, n, [&](std::uint64_t i) { return places[i]; });
}

namespace {

/// solve_range over records (hashes, or hashes with stored values); the bumped records come
/// back in `bumped`.
template <class Record>
range_outcome solve_records(const filter_params& p, const layer_plan& plan, std::uint64_t range,
                            std::vector<Record> records, const std::string& part_path,
                            bool skip_if_repeats, std::uint32_t threads,
                            std::vector<Record>& bumped) {
  if (range >= plan.num_ranges()) {
    throw error("solve_range: layer " + std::to_string(plan.layer) + " has " +
                std::to_string(plan.num_ranges()) + " ranges, not " + std::to_string(range + 1));
  }
  for (const Record& record : records) {
    const std::uint64_t h = detail::record_hash(record);
    if (plan.range_of(h) != range) {
      throw error("solve_range: a hash of range " + std::to_string(plan.range_of(h)) +
                  " was given to range " + std::to_string(range) + " of layer " +
                  std::to_string(plan.layer));
    }
  }
  range_outcome outcome;
  outcome.received_keys = records.size();
  const std::uint64_t lo = plan.first_shard(range), hi = plan.end_shard(range);
  aligned_bytes thresholds, solution;
  build_stats stats;
  auto solve = [&](auto width_tag, auto result_tag) {
    // A bumped build: no option changes its sizing.
    detail::layered_builder<decltype(width_tag)::value, decltype(result_tag), Record> builder(
        p, build_options{}, stats, nullptr);
    auto make_windows = [&] {
      thresholds = allocate_aligned(plan.threshold_bytes(p, range));
      solution = allocate_aligned(plan.solution_bytes(p, range));
      return detail::section_windows{reinterpret_cast<std::uint64_t*>(thresholds.get()),
                                     solution.get()};
    };
    bool solved = false;
    auto proceed = [&](const Record*, std::uint64_t distinct) {
      solved = !(skip_if_repeats && distinct != outcome.received_keys);
      return solved;
    };
    outcome.distinct_keys =
        builder.solve_shard_range(plan.geometry, lo, hi, records, make_windows, proceed);
    return solved;
  };
  outcome.solved =
      detail::run_with_threads(threads, [&] { return detail::dispatch_layout(p, solve); });
  if (!outcome.solved) return outcome;
  bumped = std::move(records);
  if (part_path.empty()) {
    outcome.part.resize(plan.part_bytes(p, range));
    std::memcpy(outcome.part.data(), thresholds.get(), plan.threshold_bytes(p, range));
    std::memcpy(outcome.part.data() + plan.threshold_bytes(p, range), solution.get(),
                plan.solution_bytes(p, range));
    return outcome;
  }
  detail::write_atomically(part_path, [&](const format::byte_sink& sink) {
    sink(thresholds.get(), plan.threshold_bytes(p, range));
    sink(solution.get(), plan.solution_bytes(p, range));
  });
  return outcome;
}

void require_values(const filter_params& p, bool with_values, const char* step) {
  if (is_retrieval(p.variant) != with_values) {
    throw error(std::string(step) + (with_values ? ": values given to a filter's build"
                                                 : ": a retrieval build needs the values"));
  }
}

}  // namespace

range_outcome solve_range(const filter_params& p, const layer_plan& plan, std::uint64_t range,
                          std::vector<std::uint64_t> hashes, const std::string& part_path,
                          bool skip_if_repeats, std::uint32_t threads) {
  require_values(p, false, "solve_range");
  std::vector<std::uint64_t> bumped;
  range_outcome outcome =
      solve_records(p, plan, range, std::move(hashes), part_path, skip_if_repeats, threads, bumped);
  outcome.bumped = std::move(bumped);
  return outcome;
}

range_outcome solve_range(const filter_params& p, const layer_plan& plan, std::uint64_t range,
                          std::vector<std::uint64_t> hashes, std::vector<std::uint32_t> values,
                          const std::string& part_path, bool skip_if_repeats,
                          std::uint32_t threads) {
  require_values(p, true, "solve_range");
  if (values.size() != hashes.size()) {
    throw error("solve_range: " + std::to_string(values.size()) + " values for " +
                std::to_string(hashes.size()) + " hashes");
  }
  std::vector<detail::packed_keyed_value> records(hashes.size()), bumped;
  for (std::size_t i = 0; i < hashes.size(); ++i) records[i] = {hashes[i], values[i]};
  hashes = {};
  values = {};
  range_outcome outcome = solve_records(p, plan, range, std::move(records), part_path,
                                        skip_if_repeats, threads, bumped);
  for (const detail::packed_keyed_value& record : bumped) {
    outcome.bumped.push_back(record.hash);
    outcome.bumped_values.push_back(record.value);
  }
  return outcome;
}

struct finished_layers::impl {
  std::vector<format::layer_image> layers;
  std::vector<aligned_bytes> buffers;
};

finished_layers::finished_layers() : impl_(std::make_unique<impl>()) {}
finished_layers::~finished_layers() = default;
finished_layers::finished_layers(finished_layers&&) noexcept = default;
finished_layers& finished_layers::operator=(finished_layers&&) noexcept = default;

const std::vector<format::layer_image>& finished_layers::layers() const {
  return impl_->layers;
}

template <class Record>
finished_layers finish_records(const filter_params& p, std::uint32_t first_layer,
                               const Record* bumped, std::uint64_t n, std::uint32_t threads) {
  finished_layers out;
  if (n == 0) return out;
  if (first_layer == 0) throw error("finish_layers: layer 0 is always distributed");
  auto previous = allocate_array<Record>(n);
  std::copy_n(bumped, n, previous.get());
  build_stats stats;
  auto build = [&](auto width_tag, auto result_tag) {
    // A bumped build: no option changes its sizing.
    detail::layered_builder<decltype(width_tag)::value, decltype(result_tag), Record> builder(
        p, build_options{}, stats, nullptr);
    builder.build_rest(first_layer, std::move(previous), n, out.impl_->layers, out.impl_->buffers);
  };
  detail::run_with_threads(threads, [&] { detail::dispatch_layout(p, build); });
  return out;
}

finished_layers finish_layers(const filter_params& p, std::uint32_t first_layer,
                              const std::uint64_t* bumped_hashes, std::uint64_t n,
                              std::uint32_t threads) {
  require_values(p, false, "finish_layers");
  return finish_records(p, first_layer, bumped_hashes, n, threads);
}

finished_layers finish_layers(const filter_params& p, std::uint32_t first_layer,
                              const std::uint64_t* bumped_hashes,
                              const std::uint32_t* bumped_values, std::uint64_t n,
                              std::uint32_t threads) {
  require_values(p, true, "finish_layers");
  std::vector<detail::packed_keyed_value> records(n);
  for (std::uint64_t i = 0; i < n; ++i) records[i] = {bumped_hashes[i], bumped_values[i]};
  return finish_records(p, first_layer, records.data(), n, threads);
}

}  // namespace ribbon::distributed
