// Progress on stderr for long-running subcommands. A display thread polls atomic counters
// (the input reader's and the bulk builder's) so the work itself never waits for output.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "input.hpp"
#include "ribbon/bulk_builder.hpp"
#include "util.hpp"

namespace ribbon::cli {

enum class progress_mode {
  quiet,  ///< nothing
  plain,  ///< one line per finished stage (logs, pipes)
  live,   ///< one line rewritten in place ~4 times a second (terminals)
};

/// --progress forces the live line, --quiet silences it; otherwise live on a terminal and
/// plain lines elsewhere. Throws ribbon::error if both flags are given.
progress_mode choose_progress_mode(bool progress_flag, bool quiet_flag);

class progress_display {
 public:
  /// `build` may be null (no build stages). `input_total_bytes` 0: unknown (no ETA while
  /// reading). Starts the display thread unless `mode` is quiet.
  progress_display(progress_mode mode, std::string command, const input_counters* input,
                   std::uint64_t input_total_bytes, const build_progress* build);
  ~progress_display();
  progress_display(const progress_display&) = delete;
  progress_display& operator=(const progress_display&) = delete;

  /// Stops the display and clears the live line; with `finished`, plain mode reports the
  /// last stage. Called by the destructor (without `finished`) if not before.
  void stop(bool finished);

 private:
  enum class stage { reading, spilling, solving, writing, finished };
  struct snapshot {
    stage current = stage::reading;
    std::uint32_t layer = 0;
    std::uint64_t bytes = 0, keys = 0, done = 0, total = 0;
    bool spilling_while_reading = false;
  };
  snapshot take_snapshot() const;
  void loop();
  void show_live(const snapshot& s);
  void report_finished_stage(const snapshot& last);

  const progress_mode mode_;
  const std::string command_;
  const input_counters* input_;
  const std::uint64_t input_total_bytes_;
  const build_progress* build_;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool stopped_ = false;
  std::thread thread_;

  // Display thread state.
  snapshot last_;
  clock_type::time_point stage_start_;
  bool line_shown_ = false;
};

}  // namespace ribbon::cli
