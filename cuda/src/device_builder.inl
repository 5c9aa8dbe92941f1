// The device pipeline's layer driver (pipeline.inl): the layer solver that
// ribbon::detail::build_layers() runs, solving each layer's shards (solve_kernel.inl) and
// compacting the bumped keys, then handing the filter over in host or device memory.
#pragma once

#include <thrust/binary_search.h>
#include <thrust/copy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/transform.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#if !defined(RIBBON_GPU_ON_TBB)
#include "ribbon/cuda/device_filter.cuh"
#endif

#include "key_ops.inl"
#include "pipeline_backend.inl"
#include "ribbon/detail/layer_loop.hpp"
#include "ribbon/detail/shard_rules.hpp"
#include "ribbon/format.hpp"
#include "ribbon/layer.hpp"
#include "solve_kernel.inl"
#include "sort_keys.inl"

namespace ribbon::cuda {
inline namespace RIBBON_GPU_BACKEND {
namespace {

/// Builds every layer from the layer-0 records (hashes, or hashes with values) on the device:
/// the layer solver of ribbon::detail::build_layers(). The layers' sections stay on the
/// device until the build hands them over (hand_over()).
template <unsigned Width, class Result, class Record = std::uint64_t>
class device_builder {
 public:
  using word = ribbon::detail::word_t<Width>;

  device_builder(const filter_params& p, const layer_sizing& sizing, device_build_stats& stats,
                 const device_options& device, staging& stage)
      : p_(p),
        sizing_(sizing),
        stats_(stats),
        workspace_bytes_(device.workspace_bytes ? device.workspace_bytes
                                                : default_workspace_bytes()),
        stage_(stage) {}

  /// Builds every layer from the distinct layer-0 records `hashes`, sorted (drop_repeats),
  /// and returns the filter as `Out`: a ribbon::filter (host memory) or a device_filter.
  template <class Out>
  Out build(device_vector<Record>& hashes) {
    const std::uint64_t n = hashes.size();
    records_ = &hashes;
    ribbon::detail::build_layers(*this, p_, sizing_, 0, n, layers_, stats_);
    records_ = nullptr;
    stats_.layers = static_cast<std::uint32_t>(layers_.size());
    const auto start = clock_type::now();
    Out result = hand_over(n, static_cast<Out*>(nullptr));
    sections_.clear();
    stats_.download_seconds += device_seconds_since(start);
    return result;
  }

  // The layer solver (ribbon::detail::build_layers()) over *records_.

  void bumped(const layer_step& step, format::layer_image& layer) {
    if (step.remixes()) remix_all(*records_, layer.salt);
    solve_layer(layer, *records_, !step.remixes(), true);  // a bumped layer solves
  }

  /// Solving permutes the records but keeps them, so a failed try is undone by unmixing
  /// them in place.
  bool standard(const layer_step& step, format::layer_image& layer) {
    if (step.remixes()) remix_all(*records_, layer.salt);
    if (solve_layer(layer, *records_, !step.remixes(), true)) return true;
    if (step.remixes()) {
      thrust::transform(exec(), records_->begin(), records_->end(), records_->begin(),
                        unmix_op{layer.salt});
    }
    return false;
  }

  bool plain(const layer_step& step, format::layer_image& layer) {
    device_vector<Record> hashes(*records_);
    if (step.remixes()) remix_all(hashes, layer.salt);
    return solve_layer(layer, hashes, !step.remixes(), false);
  }

  void remix_all(device_vector<Record>& hashes, std::uint64_t salt) {
    thrust::transform(exec(), hashes.begin(), hashes.end(), hashes.begin(), remix_op{salt});
  }

  /// The sections of shards [first, end) of a layer, in device memory.
  struct range_sections {
    device_vector<std::uint64_t> thresholds;  // from the range's first threshold word
    device_vector<word> solution;             // from the range's first block
    device_vector<std::uint64_t> offsets;     // of each shard's keys, from `first`
    device_vector<std::uint64_t> bumped_counts;
  };

  bool solve_range(const layer_geometry& g, std::uint64_t first, std::uint64_t end,
                   device_vector<Record>& hashes, range_sections& out, bool sorted) {
    const std::uint64_t n = hashes.size();
    auto start = clock_type::now();
    if (!sorted) {
      sort_hashes(hashes);
      stats_.sort_seconds += device_seconds_since(start);
    }

    start = clock_type::now();
    const std::uint64_t shards = end - first;
    out.offsets.resize(shards + 1);
    const auto shard_of = thrust::make_transform_iterator(hashes.begin(), shard_of_op{g});
    thrust::lower_bound(exec(), shard_of, shard_of + static_cast<std::int64_t>(n),
                        thrust::counting_iterator<std::uint64_t>(first),
                        thrust::counting_iterator<std::uint64_t>(end + 1), out.offsets.begin());
    out.bumped_counts.assign(shards, 0);
    const std::uint64_t threshold_origin = g.shard_first_threshold_word(first, p_.bucket_size);
    const std::uint64_t block_origin = g.shard_first_block(first, Width);
    out.thresholds.resize(g.shard_first_threshold_word(end, p_.bucket_size) - threshold_origin);
    out.solution.resize(g.shard_range_solution_bytes(first, end, Width, p_.result_bits) /
                        sizeof(word));
    device_vector<int> failed(1, 0);

    const std::uint64_t columns = ribbon::detail::max_shard_columns(g, Width);
    using solve_op = solve_shard_op<Width, Result, Record>;
    const std::uint64_t band_bytes = solve_op::band::bytes(p_.bucket_size);
    // The TBB build gives each shard of a batch a band; the GPU gives each tile one on chip.
    const std::uint64_t band_per_shard = on_tbb ? band_bytes : 0;
    const std::uint64_t per_shard = columns * (sizeof(word) + sizeof(Result)) + band_per_shard;
    const std::uint64_t batch = std::clamp<std::uint64_t>(workspace_bytes_ / per_shard, 1,
                                                          std::max<std::uint64_t>(shards, 1));
    device_vector<word> coeffs(batch * columns);
    device_vector<Result> results(batch * columns);
    device_vector<unsigned char> bands(batch * band_per_shard);
    for (std::uint64_t batch_first = first; batch_first < end; batch_first += batch) {
      const std::uint64_t batch_end = std::min(end, batch_first + batch);
      const solve_op solve{p_,
                           g,
                           first,
                           batch_first,
                           raw(hashes),
                           raw(out.offsets),
                           raw(coeffs),
                           raw(results),
                           columns,
                           raw(out.thresholds),
                           threshold_origin,
                           raw(out.solution),
                           block_origin,
                           raw(out.bumped_counts),
                           raw(failed)};
      solve_shards(solve, batch_first, batch_end, raw(bands), band_bytes);
    }
    const bool solved = failed[0] == 0;
    stats_.solve_seconds += device_seconds_since(start);
    return solved;
  }

  /// Replaces `hashes` (a solved range) by its bumped keys.
  void compact_bumped(const layer_geometry& g, std::uint64_t first, device_vector<Record>& hashes,
                      const range_sections& sections) {
    const auto start = clock_type::now();
    device_vector<Record> next(hashes.size());
    const is_bumped_op<Record> bumped{g, first, raw(hashes), raw(sections.offsets),
                                      raw(sections.bumped_counts)};
    const auto end =
        thrust::copy_if(exec(), hashes.begin(), hashes.end(),
                        thrust::counting_iterator<std::uint64_t>(0), next.begin(), bumped);
    next.resize(static_cast<std::uint64_t>(end - next.begin()));
    next.shrink_to_fit();
    hashes.swap(next);
    stats_.compact_seconds += device_seconds_since(start);
  }

 private:
  /// A solved layer's sections, kept on the device until the build hands them over.
  struct layer_sections {
    device_vector<std::uint64_t> thresholds;
    device_vector<word> solution;
  };

  /// Solves a whole layer (salt and geometry in `layer`) over `hashes` and keeps its
  /// sections; with `pass_on`, replaces `hashes` by the bumped keys, the next layer's.
  /// Returns false, keeping nothing, if a shard failed (standard and plain layers).
  bool solve_layer(format::layer_image& layer, device_vector<Record>& hashes, bool sorted,
                   bool pass_on) {
    const layer_geometry& g = layer.geometry;
    range_sections sections;
    if (!solve_range(g, 0, g.num_shards(), hashes, sections, sorted)) return false;
    if (pass_on) {
      compact_bumped(g, 0, hashes, sections);
      layer.bumped_keys = hashes.size();
    }
    sections_.push_back({std::move(sections.thresholds), std::move(sections.solution)});
    return true;
  }

  /// The filter in host memory: each section copied once through the pinned staging and
  /// adopted as it is (no file image is assembled and no checksum computed: filter::save()
  /// computes them as it writes the sections).
  filter hand_over(std::uint64_t key_count, filter*) {
    auto host = std::make_shared<std::vector<std::vector<std::uint64_t>>>();
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      format::layer_image& layer = layers_[l];
      const layer_sections& device = sections_[l];
      host->emplace_back(device.thresholds.size());
      stage_.to_host(host->back().data(), raw(device.thresholds), host->back().size() * 8);
      layer.thresholds = device.thresholds.empty() ? nullptr : host->back().data();
      const std::uint64_t solution_bytes = device.solution.size() * sizeof(word);
      host->emplace_back((solution_bytes + 7) / 8);
      stage_.to_host(host->back().data(), raw(device.solution), solution_bytes);
      layer.solution = host->back().data();
    }
    return filter::adopt(p_, key_count, layers_, std::move(host));
  }

  /// The filter on the device: the sections copied, device to device, into its image.
  device_filter hand_over(std::uint64_t key_count, device_filter*) {
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      const layer_sections& device = sections_[l];
      layers_[l].thresholds = device.thresholds.empty() ? nullptr : raw(device.thresholds);
      layers_[l].solution = raw(device.solution);
    }
    const format::filter_image image{p_, key_count, layers_};
#if defined(RIBBON_GPU_ON_TBB)
    return device_filter(image);
#else
    return device_filter(image, pipeline::build_stream());
#endif
  }

  filter_params p_;
  layer_sizing sizing_;
  device_build_stats& stats_;
  std::uint64_t workspace_bytes_;
  staging& stage_;
  device_vector<Record>* records_ = nullptr;  // of the keys that reach the layer being built
  std::vector<format::layer_image> layers_;
  std::vector<layer_sections> sections_;  // by layer
};

/// Runs the pipeline for the parameters' width and result type; returns the filter as `Out`
/// (ribbon::filter or device_filter).
template <class Out, class Record>
Out run_pipeline(const filter_params& p, const build_options& options,
                 device_vector<Record>& hashes, device_build_stats& stats,
                 const device_options& device, staging& stage) {
  stats.input_keys = hashes.size();
  drop_repeats(p, hashes, stats);
  stats.distinct_keys = hashes.size();
  const layer_sizing sizing = build_sizing(options, p, hashes.size());
  return ribbon::detail::dispatch_layout(p, [&](auto width_tag, auto result_tag) {
    return device_builder<decltype(width_tag)::value, decltype(result_tag), Record>(
               p, sizing, stats, device, stage)
        .template build<Out>(hashes);
  });
}

}  // namespace
}  // namespace RIBBON_GPU_BACKEND
}  // namespace ribbon::cuda
