// The device pipeline for many filters at once (pipeline.inl): a filter per group of keys,
// every group's next layer in the same launches. Each group's filter is the bytes that
// ribbon::build_many (and filter::build of the group's keys alone) writes.
//
// A round tries one layer of every group whose filter is not finished: the records (hash,
// owner group) of all of them are remixed by their group's salt, sorted by (group, hash),
// cut into shards by one search over the round's shard numbering, solved by one kernel and
// compacted once. Each group walks its own layer sequence (ribbon::detail::layer_walk): a
// group whose standard or plain layer failed keeps its records and tries again next round,
// while the others go on to their next layer.
#pragma once

#include <thrust/binary_search.h>
#include <thrust/copy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/tuple.h>
#include <thrust/unique.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "pipeline_backend.inl"
#include "ribbon/build_many.hpp"
#include "ribbon/detail/layer_loop.hpp"
#include "ribbon/detail/shard_rules.hpp"
#include "ribbon/format.hpp"
#include "ribbon/hash.hpp"
#include "ribbon/layer.hpp"
#include "solve_kernel.inl"

namespace ribbon::cuda {
inline namespace RIBBON_GPU_BACKEND {
namespace {

/// A group's try in a round, as the device sees it: its layer's geometry, where its shards,
/// threshold words and solution words start in the round's numbering and buffers, and its
/// salt, with which its records are remixed where the try remixes (layer_step::remixes();
/// else they are the key hashes as they are).
struct group_try {
  layer_geometry g;
  std::uint64_t first_shard = 0;
  std::uint64_t shards = 0;
  std::uint64_t first_threshold_word = 0;
  std::uint64_t first_solution_word = 0;
  std::uint64_t salt = 0;
  bool remix = false;
  bool passes_bumped = false;  ///< solved, and its bumped keys go on (set after the solve)
  bool retries = false;        ///< failed: tries again next round with the same records
};

/// The hash a record has in its group's try.
struct mix_for_try_op {
  const group_try* tries;
  RIBBON_HD std::uint64_t operator()(std::uint64_t hash, std::uint64_t owner) const {
    const group_try& t = tries[owner];
    return t.remix ? remix(hash, t.salt) : hash;
  }
};

/// The round's shard of record i (records sorted by group, then hash).
struct round_shard_op {
  const group_try* tries;
  const std::uint64_t* hashes;
  const std::uint64_t* owners;
  RIBBON_HD std::uint64_t operator()(std::uint64_t i) const {
    const group_try& t = tries[owners[i]];
    return t.first_shard + t.g.shard_of(hashes[i]);
  }
};

/// Does record i of the solved round go on to its group's next layer?
struct goes_on_op {
  round_shard_op shard_of;
  const std::uint64_t* offsets;        // of each round shard's records
  const std::uint64_t* bumped_counts;  // of each round shard: a prefix of its records
  RIBBON_HD bool operator()(std::uint64_t i) const {
    if (!shard_of.tries[shard_of.owners[i]].passes_bumped) return false;
    const std::uint64_t shard = shard_of(i);
    return i - offsets[shard] < bumped_counts[shard];
  }
};

/// Is a record's group trying its layer again?
struct retries_op {
  const group_try* tries;
  RIBBON_HD bool operator()(std::uint64_t owner) const { return tries[owner].retries; }
};

/// Solves round shard `shard` (of group shard_owners[shard]) with a tile, as solve_shard_op
/// solves a shard of one filter; a failed shard marks its group.
template <unsigned Width, class Result>
struct solve_group_shard_op {
  using band = ribbon::detail::tile_band<Width, Result>;
  using word = ribbon::detail::word_t<Width>;

  filter_params p;
  const group_try* tries;
  const std::uint64_t* shard_owners;
  std::uint64_t batch_first;
  std::uint64_t* hashes;
  const std::uint64_t* offsets;
  word* coeffs;
  Result* results;
  std::uint64_t columns;
  std::uint64_t* thresholds;
  word* solution;
  std::uint64_t* bumped_counts;
  int* failed;  // by group

  template <class Tile>
  RIBBON_HD void operator()(const Tile& tile, std::uint64_t shard, void* band_memory) const {
    const std::uint64_t slot = shard - batch_first;
    const std::uint64_t owner = shard_owners[shard];
    const group_try& t = tries[owner];
    const ribbon::detail::tile_workspace<Width, Result> ws{
        band::in(band_memory, p.bucket_size), coeffs + slot * columns, results + slot * columns};
    const std::uint64_t begin = offsets[shard];
    const ribbon::detail::shard_outcome outcome =
        ribbon::detail::solve_shard_with_tile<Width, Result, std::uint64_t>(
            tile, p, t.g, shard - t.first_shard, hashes + begin, offsets[shard + 1] - begin, ws,
            thresholds + t.first_threshold_word, 0, solution + t.first_solution_word, 0);
    if (!outcome.solved) {
      failed[owner] = 1;  // every writer writes 1
      return;
    }
    bumped_counts[shard] = outcome.bumped;
  }
};

/// Records of many groups: each hash with the group it belongs to.
struct group_records {
  device_vector<std::uint64_t> hashes;
  device_vector<std::uint64_t> owners;

  auto begin() {
    return thrust::make_zip_iterator(thrust::make_tuple(hashes.begin(), owners.begin()));
  }
  auto end() { return thrust::make_zip_iterator(thrust::make_tuple(hashes.end(), owners.end())); }
  std::uint64_t size() const { return hashes.size(); }
  void resize(std::uint64_t n) {
    hashes.resize(n);
    owners.resize(n);
  }

  /// Sorts by (group, hash): two stable radix sorts on CUDA.
  void sort() {
    thrust::sort_by_key(exec(), hashes.begin(), hashes.end(), owners.begin());
    thrust::stable_sort_by_key(exec(), owners.begin(), owners.end(), hashes.begin());
  }
};

/// Builds the filters of every group of `records` (key hashes with their groups, repeats
/// allowed) in rounds of one layer per unfinished group.
template <unsigned Width, class Result>
class many_builder {
 public:
  using word = ribbon::detail::word_t<Width>;

  many_builder(const filter_params& p, const build_options& options, std::uint64_t num_groups,
               device_build_stats& stats, const device_options& device, staging& stage)
      : p_(p),
        options_(options),
        stats_(stats),
        workspace_bytes_(device.workspace_bytes ? device.workspace_bytes
                                                : default_workspace_bytes()),
        stage_(stage),
        tries_(num_groups),
        layers_(num_groups) {}

  std::vector<filter> build(group_records& records) {
    const std::vector<std::uint64_t> keys = drop_repeats(records);
    std::vector<ribbon::detail::layer_walk> walks;
    walks.reserve(keys.size());
    for (const std::uint64_t n : keys) {
      walks.emplace_back(p_, build_sizing(options_, p_, n), 0, n);
    }
    std::vector<std::shared_ptr<std::vector<std::vector<std::uint64_t>>>> sections(keys.size());
    for (auto& s : sections) s = std::make_shared<std::vector<std::vector<std::uint64_t>>>();
    while (plan_round(walks) != 0) solve_round(records, walks, sections);
    std::vector<filter> filters;
    filters.reserve(keys.size());
    for (std::uint64_t g = 0; g < keys.size(); ++g) {
      stats_.layers = std::max(stats_.layers, static_cast<std::uint32_t>(layers_[g].size()));
      filters.push_back(filter::adopt(p_, keys[g], layers_[g], std::move(sections[g])));
    }
    return filters;
  }

 private:
  /// Sorts the records by (group, hash), drops repeats, and returns each group's distinct keys.
  std::vector<std::uint64_t> drop_repeats(group_records& records) {
    const auto start = clock_type::now();
    records.sort();
    const auto end = thrust::unique(exec(), records.begin(), records.end());
    records.resize(static_cast<std::uint64_t>(end - records.begin()));
    const std::uint64_t groups = tries_.size();
    device_vector<std::uint64_t> bounds(groups + 1);
    thrust::lower_bound(exec(), records.owners.begin(), records.owners.end(),
                        thrust::counting_iterator<std::uint64_t>(0),
                        thrust::counting_iterator<std::uint64_t>(groups + 1), bounds.begin());
    const std::vector<std::uint64_t> host_bounds = pipeline::download(stage_, bounds);
    std::vector<std::uint64_t> keys(groups);
    for (std::uint64_t g = 0; g < groups; ++g) keys[g] = host_bounds[g + 1] - host_bounds[g];
    stats_.distinct_keys = records.size();
    stats_.sort_seconds += device_seconds_since(start);
    return keys;
  }

  /// Lays out the current try of every unfinished group; returns the round's shards.
  std::uint64_t plan_round(const std::vector<ribbon::detail::layer_walk>& walks) {
    shards_ = 0;
    threshold_words_ = 0;
    solution_words_ = 0;
    columns_ = 0;
    for (std::uint64_t g = 0; g < walks.size(); ++g) {
      group_try& t = tries_[g];
      t = group_try{};
      t.first_shard = shards_;
      if (walks[g].done()) continue;
      const layer_step& step = walks[g].current();
      t.g = step.geometry;
      t.shards = t.g.num_shards();
      t.first_threshold_word = threshold_words_;
      t.first_solution_word = solution_words_;
      t.salt = step.salt;
      t.remix = step.remixes();
      shards_ += t.shards;
      threshold_words_ += t.g.shard_first_threshold_word(t.shards, p_.bucket_size);
      solution_words_ +=
          t.g.shard_range_solution_bytes(0, t.shards, Width, p_.result_bits) / sizeof(word);
      columns_ = std::max(columns_, ribbon::detail::max_shard_columns(t.g, Width));
    }
    return shards_;
  }

  /// Solves the round planned by plan_round(), ends each group's try, and leaves in
  /// `records` what the next round starts from.
  void solve_round(
      group_records& records, std::vector<ribbon::detail::layer_walk>& walks,
      std::vector<std::shared_ptr<std::vector<std::vector<std::uint64_t>>>>& sections) {
    device_vector<group_try> tries = pipeline::upload(stage_, tries_.data(), tries_.size());
    auto start = clock_type::now();
    group_records work;
    work.hashes.resize(records.size());
    thrust::transform(exec(), records.hashes.begin(), records.hashes.end(), records.owners.begin(),
                      work.hashes.begin(), mix_for_try_op{raw(tries)});
    work.owners = records.owners;
    // The first round of bumped filters takes the key hashes as they are, sorted already.
    const bool remixed =
        std::any_of(tries_.begin(), tries_.end(), [](const group_try& t) { return t.remix; });
    if (remixed || !records_sorted_) work.sort();
    records_sorted_ = false;  // pass_on() appends the retried groups' records
    stats_.sort_seconds += device_seconds_since(start);

    start = clock_type::now();
    const round_shard_op shard_of{raw(tries), raw(work.hashes), raw(work.owners)};
    device_vector<std::uint64_t> offsets(shards_ + 1);
    const auto shard_of_record =
        thrust::make_transform_iterator(thrust::counting_iterator<std::uint64_t>(0), shard_of);
    thrust::lower_bound(exec(), shard_of_record,
                        shard_of_record + static_cast<std::int64_t>(work.size()),
                        thrust::counting_iterator<std::uint64_t>(0),
                        thrust::counting_iterator<std::uint64_t>(shards_ + 1), offsets.begin());
    const device_vector<int> failed = solve_shards_of_round(tries, work, offsets);
    stats_.solve_seconds += device_seconds_since(start);

    const std::vector<int> host_failed = pipeline::download(stage_, failed);
    const std::vector<std::uint64_t> bumped = pipeline::download(stage_, bumped_counts_);
    const std::vector<std::uint64_t> thresholds = pipeline::download(stage_, thresholds_);
    const std::vector<word> solution = pipeline::download(stage_, solution_);
    for (std::uint64_t g = 0; g < walks.size(); ++g) {
      if (walks[g].done()) continue;
      group_try& t = tries_[g];
      const layer_step& step = walks[g].current();
      const bool solved = host_failed[g] == 0;
      if (!solved && step.kind == layer_kind::bumped) {
        throw error("internal error: a bumped layer failed to solve");
      }
      format::layer_image& layer = walks[g].layer();
      if (solved) {
        layer.bumped_keys = 0;
        for (std::uint64_t s = t.first_shard; s < t.first_shard + t.shards; ++s) {
          layer.bumped_keys += bumped[s];
        }
        keep_sections(t, thresholds, solution, layer, *sections[g]);
        if (step.kind == layer_kind::plain) stats_.plain_layer_attempts = walks[g].attempt() + 1;
        if (step.kind == layer_kind::standard) stats_.standard_attempts = walks[g].attempt() + 1;
      }
      t.passes_bumped = solved && step.kind != layer_kind::plain;
      t.retries = !solved;
      walks[g].end_try(solved, layers_[g]);
    }
    pass_on(records, work, offsets);
  }

  /// Solves every shard of the round in batches whose column arrays fit the workspace.
  device_vector<int> solve_shards_of_round(const device_vector<group_try>& tries,
                                           group_records& work,
                                           const device_vector<std::uint64_t>& offsets) {
    std::vector<std::uint64_t> owners(shards_);
    for (std::uint64_t g = 0; g < tries_.size(); ++g) {
      const group_try& t = tries_[g];
      std::fill_n(owners.begin() + static_cast<std::int64_t>(t.first_shard), t.shards, g);
    }
    const device_vector<std::uint64_t> shard_owners =
        pipeline::upload(stage_, owners.data(), owners.size());
    device_vector<int> failed(tries_.size(), 0);
    bumped_counts_.assign(shards_, 0);
    thresholds_.assign(threshold_words_, 0);
    solution_.assign(solution_words_, word{});

    using solve_op = solve_group_shard_op<Width, Result>;
    const std::uint64_t band_bytes = solve_op::band::bytes(p_.bucket_size);
    const std::uint64_t band_per_shard = on_tbb ? band_bytes : 0;
    const std::uint64_t per_shard = columns_ * (sizeof(word) + sizeof(Result)) + band_per_shard;
    const std::uint64_t batch = std::clamp<std::uint64_t>(workspace_bytes_ / per_shard, 1,
                                                          std::max<std::uint64_t>(shards_, 1));
    device_vector<word> coeffs(batch * columns_);
    device_vector<Result> results(batch * columns_);
    device_vector<unsigned char> bands(batch * band_per_shard);
    for (std::uint64_t batch_first = 0; batch_first < shards_; batch_first += batch) {
      const solve_op solve{p_,
                           raw(tries),
                           raw(shard_owners),
                           batch_first,
                           raw(work.hashes),
                           raw(offsets),
                           raw(coeffs),
                           raw(results),
                           columns_,
                           raw(thresholds_),
                           raw(solution_),
                           raw(bumped_counts_),
                           raw(failed)};
      solve_shards(solve, batch_first, std::min(shards_, batch_first + batch), raw(bands),
                   band_bytes);
    }
    return failed;
  }

  /// The group's sections of the round, copied into the group's own storage.
  void keep_sections(const group_try& t, const std::vector<std::uint64_t>& thresholds,
                     const std::vector<word>& solution, format::layer_image& layer,
                     std::vector<std::vector<std::uint64_t>>& storage) const {
    const std::uint64_t threshold_words = t.g.shard_first_threshold_word(t.shards, p_.bucket_size);
    const auto first_threshold =
        thresholds.begin() + static_cast<std::int64_t>(t.first_threshold_word);
    storage.emplace_back(first_threshold,
                         first_threshold + static_cast<std::int64_t>(threshold_words));
    layer.thresholds = threshold_words == 0 ? nullptr : storage.back().data();
    const std::uint64_t solution_bytes =
        t.g.shard_range_solution_bytes(0, t.shards, Width, p_.result_bits);
    storage.emplace_back((solution_bytes + 7) / 8);
    std::memcpy(storage.back().data(), solution.data() + t.first_solution_word, solution_bytes);
    layer.solution = storage.back().data();
  }

  /// Replaces `records` by the next round's: the bumped records of the groups that go on, and
  /// the records of the groups that try again.
  void pass_on(group_records& records, group_records& work,
               const device_vector<std::uint64_t>& offsets) {
    const auto start = clock_type::now();
    const device_vector<group_try> tries = pipeline::upload(stage_, tries_.data(), tries_.size());
    const round_shard_op shard_of{raw(tries), raw(work.hashes), raw(work.owners)};
    group_records next;
    next.resize(records.size());  // each group passes on at most its own records
    auto end = thrust::copy_if(exec(), work.begin(), work.end(),
                               thrust::counting_iterator<std::uint64_t>(0), next.begin(),
                               goes_on_op{shard_of, raw(offsets), raw(bumped_counts_)});
    end = thrust::copy_if(exec(), records.begin(), records.end(), records.owners.begin(), end,
                          retries_op{raw(tries)});
    next.resize(static_cast<std::uint64_t>(end - next.begin()));
    records = std::move(next);
    stats_.compact_seconds += device_seconds_since(start);
  }

  filter_params p_;
  build_options options_;
  device_build_stats& stats_;
  std::uint64_t workspace_bytes_;
  staging& stage_;
  std::vector<group_try> tries_;                          // by group, for the current round
  std::vector<std::vector<format::layer_image>> layers_;  // by group
  // The current round: its size and its sections, on the device.
  std::uint64_t shards_ = 0;
  std::uint64_t threshold_words_ = 0;
  std::uint64_t solution_words_ = 0;
  std::uint64_t columns_ = 0;
  device_vector<std::uint64_t> bumped_counts_;
  device_vector<std::uint64_t> thresholds_;
  device_vector<word> solution_;
  bool records_sorted_ = true;  // by (group, hash): so drop_repeats() leaves them
};

/// The filters of every group in `groups`, from the hashes of their keys in group order
/// (`hashes[i]` is position i of the groups), on the device.
std::vector<filter> build_groups(const filter_params& p, const build_options& options,
                                 const key_groups& groups, device_vector<std::uint64_t>& hashes,
                                 device_build_stats& stats, const device_options& device,
                                 staging& stage) {
  stats.input_keys = hashes.size();
  group_records records;
  records.hashes.swap(hashes);
  records.owners.resize(records.size());
  const device_vector<std::uint64_t> offsets =
      pipeline::upload(stage, groups.offsets, groups.num_groups + 1);
  // Position i belongs to the group whose range holds it: the first offset beyond i, less one.
  thrust::upper_bound(
      exec(), offsets.begin() + 1, offsets.end(), thrust::counting_iterator<std::uint64_t>(0),
      thrust::counting_iterator<std::uint64_t>(records.size()), records.owners.begin());
  return ribbon::detail::dispatch_layout(p, [&](auto width_tag, auto result_tag) {
    return many_builder<decltype(width_tag)::value, decltype(result_tag)>(
               p, options, groups.num_groups, stats, device, stage)
        .build(records);
  });
}

}  // namespace
}  // namespace RIBBON_GPU_BACKEND
}  // namespace ribbon::cuda
