/// @file build_progress.hpp
/// The counters a build stores its progress into (filter::build, bulk_builder).
#pragma once

#include <atomic>
#include <cstdint>

namespace ribbon {

/// What a build is doing, for progress displays. The builder stores into these atomics
/// (relaxed) and never calls back: a display thread polls them.
struct build_progress {
  enum stage : std::uint32_t {
    adding = 0,  ///< keys are being added (the caller's reading stage)
    spilling,    ///< flushing in-memory hashes to partition files
    solving,     ///< solving a layer; done/total count shards of `layer`
    writing,     ///< writing the output file; done/total count bytes
    finished,
  };
  std::atomic<std::uint32_t> current{adding};
  std::atomic<std::uint32_t> layer{0};
  std::atomic<std::uint64_t> keys{0};  ///< keys added so far
  std::atomic<std::uint64_t> done{0};
  std::atomic<std::uint64_t> total{0};
  /// Set by another thread (e.g. on Ctrl-C) to stop the build: the builder throws
  /// ribbon::error("build cancelled") at its next group of shards, and writes no file.
  std::atomic<bool> cancel{false};
};

}  // namespace ribbon
