#include "progress.hpp"

#include <unistd.h>

#include <cstdio>

#include "ribbon/error.hpp"

namespace ribbon::cli {

namespace {

// Live: often enough to look alive. Plain: often enough not to miss short stages.
constexpr auto live_interval = std::chrono::milliseconds(250);
constexpr auto plain_interval = std::chrono::milliseconds(20);

}  // namespace

progress_mode choose_progress_mode(bool progress_flag, bool quiet_flag) {
  if (progress_flag && quiet_flag) throw error("--progress and --quiet cannot be combined");
  if (quiet_flag) return progress_mode::quiet;
  if (progress_flag || ::isatty(STDERR_FILENO)) return progress_mode::live;
  return progress_mode::plain;
}

progress_display::progress_display(progress_mode mode, std::string command,
                                   const input_counters* input, std::uint64_t input_total_bytes,
                                   const build_progress* build)
    : mode_(mode),
      command_(std::move(command)),
      input_(input),
      input_total_bytes_(input_total_bytes),
      build_(build),
      stage_start_(clock_type::now()) {
  if (mode_ != progress_mode::quiet) thread_ = std::thread([this] { loop(); });
}

progress_display::~progress_display() {
  stop(false);
}

void progress_display::stop(bool finished) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
    stopping_ = true;
  }
  wake_.notify_all();
  if (!thread_.joinable()) return;
  thread_.join();
  if (mode_ == progress_mode::live && line_shown_) std::fputs("\r\033[K", stderr);
  if (mode_ == progress_mode::plain && finished) {
    report_finished_stage(last_);
  }
  std::fflush(stderr);
}

progress_display::snapshot progress_display::take_snapshot() const {
  snapshot s;
  s.bytes = input_->bytes.load(std::memory_order_relaxed);
  s.keys = input_->keys.load(std::memory_order_relaxed);
  const bool input_done = input_->done.load(std::memory_order_relaxed);
  std::uint32_t build_stage = build_progress::adding;
  if (build_ != nullptr) {
    build_stage = build_->current.load(std::memory_order_relaxed);
    s.layer = build_->layer.load(std::memory_order_relaxed);
    s.done = build_->done.load(std::memory_order_relaxed);
    s.total = build_->total.load(std::memory_order_relaxed);
  }
  if (!input_done) {
    s.current = stage::reading;
    s.spilling_while_reading = build_stage == build_progress::spilling;
    return s;
  }
  switch (build_ == nullptr ? build_progress::finished : build_stage) {
    case build_progress::adding: s.current = stage::reading; break;
    case build_progress::spilling: s.current = stage::spilling; break;
    case build_progress::solving: s.current = stage::solving; break;
    case build_progress::writing: s.current = stage::writing; break;
    default: s.current = stage::finished; break;
  }
  return s;
}

void progress_display::loop() {
  const auto interval = mode_ == progress_mode::live ? live_interval : plain_interval;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    const snapshot s = take_snapshot();
    // Input counters are final once reading is over: report the reading stage with them.
    last_.bytes = s.bytes;
    last_.keys = s.keys;
    const bool changed =
        s.current != last_.current || (s.current == stage::solving && s.layer != last_.layer);
    if (changed) {
      // last_ still holds the finished stage's done/total.
      if (mode_ == progress_mode::plain) report_finished_stage(last_);
      stage_start_ = clock_type::now();
    }
    last_ = s;
    if (mode_ == progress_mode::live) show_live(s);
    if (stopping_) break;
    wake_.wait_for(lock, interval, [this] { return stopping_; });
  }
}

void progress_display::show_live(const snapshot& s) {
  const double elapsed = seconds_since(stage_start_);
  std::string line = "ribbon " + command_ + ": ";
  auto eta = [&](double done, double total) {
    if (done <= 0 || total <= done || elapsed < 0.5) return std::string();
    return ", ETA " + format_duration(elapsed * (total - done) / done);
  };
  switch (s.current) {
    case stage::reading: {
      const double rate = elapsed > 0 ? 1.0 / elapsed : 0;
      line += "reading: " + format_count(static_cast<double>(s.keys)) + " keys, " +
              format_bytes(static_cast<double>(s.bytes));
      if (input_total_bytes_ != 0) {
        line += " of " + format_bytes(static_cast<double>(input_total_bytes_));
      }
      line += ", " + format_bytes(static_cast<double>(s.bytes) * rate) + "/s, " +
              format_count(static_cast<double>(s.keys) * rate) + " keys/s";
      if (input_total_bytes_ != 0) {
        line += eta(static_cast<double>(s.bytes), static_cast<double>(input_total_bytes_));
      }
      if (s.spilling_while_reading) line += " (spilling)";
      break;
    }
    case stage::spilling: line += "spilling hashes to partition files"; break;
    case stage::solving:
      line += "solving layer " + std::to_string(s.layer);
      if (s.total != 0) {
        line += ": " + std::to_string(s.done) + " of " + std::to_string(s.total) + " shards" +
                eta(static_cast<double>(s.done), static_cast<double>(s.total));
      }
      break;
    case stage::writing:
      line += "writing";
      if (s.total != 0) {
        line += ": " + format_bytes(static_cast<double>(s.done)) + " of " +
                format_bytes(static_cast<double>(s.total));
      }
      break;
    case stage::finished: line += "finishing"; break;
  }
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  line_shown_ = true;
}

void progress_display::report_finished_stage(const snapshot& last) {
  const double elapsed = seconds_since(stage_start_);
  const double rate = elapsed > 0 ? 1.0 / elapsed : 0;
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.3f s", elapsed);
  std::string line;
  switch (last.current) {
    case stage::reading:
      line = "read " + std::to_string(last.keys) + " keys (" +
             format_bytes(static_cast<double>(last.bytes)) + ") in " + seconds + ", " +
             format_bytes(static_cast<double>(last.bytes) * rate) + "/s, " +
             format_count(static_cast<double>(last.keys) * rate) + " keys/s";
      break;
    case stage::spilling:
      line = std::string("spilled hashes to partition files in ") + seconds;
      break;
    case stage::solving:
      line = "solved layer " + std::to_string(last.layer);
      if (last.total != 0) line += " (" + std::to_string(last.total) + " shards)";
      line += std::string(" in ") + seconds;
      break;
    case stage::writing: line = std::string("wrote the filter file in ") + seconds; break;
    case stage::finished: return;
  }
  std::fprintf(stderr, "ribbon %s: %s\n", command_.c_str(), line.c_str());
}

}  // namespace ribbon::cli
