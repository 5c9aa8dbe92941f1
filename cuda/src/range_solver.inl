// The device pipeline as the shard-range solver of out-of-core builds (ribbon::bulk_builder):
// one shard range of one layer at a time, through device_builder (device_builder.inl).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "device_builder.inl"
#include "pipeline_backend.inl"
#include "ribbon/error.hpp"
#include "sort_keys.inl"

namespace ribbon::cuda {
inline namespace RIBBON_GPU_BACKEND {
namespace {

/// Solves the shard ranges of an out-of-core build (ribbon::bulk_builder) on the device.
class device_range_solver final : public shard_range_solver {
 public:
  explicit device_range_solver(const device_options& device) : device_(device) {}
  ~device_range_solver() override { pipeline::release_idle_memory(); }

  std::uint64_t solve(const filter_params& p, const layer_geometry& g, std::uint64_t first,
                      std::uint64_t end, std::vector<std::uint64_t>& keys,
                      std::uint64_t* threshold_window, void* solution_window) override {
    std::unique_ptr<staging> stage = take_staging();
    std::uint64_t distinct = 0;
    ribbon::detail::dispatch_layout(p, [&](auto width_tag, auto result_tag) {
      using builder = device_builder<decltype(width_tag)::value, decltype(result_tag)>;
      using word = typename builder::word;
      device_build_stats stats;  // per call: calls come from several threads
      builder b(p, default_sizing(p.width), stats, device_, *stage);
      device_vector<std::uint64_t> hashes = pipeline::upload(*stage, keys.data(), keys.size());
      drop_repeats(p, hashes, stats);
      distinct = hashes.size();
      typename builder::range_sections sections;
      if (!b.solve_range(g, first, end, hashes, sections, true)) {
        throw error("internal error: a bumped layer failed to solve");
      }
      stage->to_host(threshold_window, raw(sections.thresholds), sections.thresholds.size() * 8);
      stage->to_host(solution_window, raw(sections.solution),
                     sections.solution.size() * sizeof(word));
      b.compact_bumped(g, first, hashes, sections);
      keys.resize(hashes.size());
      stage->to_host(keys.data(), raw(hashes), hashes.size() * 8);
    });
    give_back(std::move(stage));
    return distinct;
  }

  /// Two ranges at once: one's copies overlap the other's kernels.
  unsigned ranges_in_flight() const override { return 2; }

 private:
  /// Staging buffers are kept across ranges, one set per range in flight.
  std::unique_ptr<staging> take_staging() {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (idle_.empty()) return std::make_unique<staging>();
    std::unique_ptr<staging> stage = std::move(idle_.back());
    idle_.pop_back();
    return stage;
  }
  void give_back(std::unique_ptr<staging> stage) {
    const std::lock_guard<std::mutex> lock(mutex_);
    idle_.push_back(std::move(stage));
  }

  device_options device_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<staging>> idle_;
};

}  // namespace
}  // namespace RIBBON_GPU_BACKEND
}  // namespace ribbon::cuda
