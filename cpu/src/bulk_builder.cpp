// The bulk builder: keys stream in; hashes stay in memory while they fit, else they are
// spilled to partition files by their top bits and each layer is built one shard range at a
// time (see bulk_builder.hpp and README "Out-of-core builds").
#include "ribbon/bulk_builder.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "layered_builder.hpp"
#include "output_file.hpp"
#include "ribbon/detail/xxhash64.hpp"
#include "temp_files.hpp"

namespace ribbon {

namespace {

[[noreturn]] void fail_io(const std::string& what, const std::string& path) {
  throw error("cannot " + what + " " + path + ": " + std::strerror(errno));
}

/// A temporary file of 64-bit hashes (or raw bytes), appended through a buffer and read back
/// with pread. Removed when destroyed, and by the signal handler if the process is killed.
class spill_file {
 public:
  spill_file(const std::string& path, std::uint64_t buffer_bytes)
      : path_(path), registration_(path, false) {
    fd_ = ::open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd_ < 0) fail_io("create", path);
    buffer_.reserve(std::max<std::uint64_t>(buffer_bytes / 8, 64));
  }
  ~spill_file() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  spill_file(const spill_file&) = delete;
  spill_file& operator=(const spill_file&) = delete;

  void push(std::uint64_t hash) {
    buffer_.push_back(hash);
    if (buffer_.size() == buffer_.capacity()) flush();
  }
  void append(const std::uint64_t* hashes, std::uint64_t count) {
    for (std::uint64_t i = 0; i < count; ++i) push(hashes[i]);
  }
  /// Appends bytes directly (no buffering).
  void write_bytes(const void* data, std::uint64_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    while (bytes > 0) {
      const ssize_t n =
          ::pwrite(fd_, p, std::min<std::uint64_t>(bytes, 1u << 30), static_cast<off_t>(size_));
      if (n < 0) {
        if (errno == EINTR) continue;
        fail_io("write", path_);
      }
      p += n;
      bytes -= static_cast<std::uint64_t>(n);
      size_ += static_cast<std::uint64_t>(n);
    }
  }
  void flush() {
    write_bytes(buffer_.data(), buffer_.size() * 8);
    buffer_.clear();
  }
  /// Flushes and frees the buffer (no more appends expected; they would still work).
  void release_buffer() {
    flush();
    buffer_ = {};
  }
  /// Bytes written so far (after flush()).
  std::uint64_t size() const { return size_; }
  std::uint64_t hashes() const { return size_ / 8 + buffer_.size(); }

  /// Reads `bytes` at `offset` (which must exist).
  void read(void* data, std::uint64_t bytes, std::uint64_t offset) const {
    auto* p = static_cast<unsigned char*>(data);
    while (bytes > 0) {
      const ssize_t n =
          ::pread(fd_, p, std::min<std::uint64_t>(bytes, 1u << 30), static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (n == 0) errno = EIO;  // the file is ours: a short read means it was damaged
        fail_io("read", path_);
      }
      p += n;
      bytes -= static_cast<std::uint64_t>(n);
      offset += static_cast<std::uint64_t>(n);
    }
  }

  /// Calls f(const uint64_t* hashes, count) for the file's hashes, in pieces the size of
  /// `buffer`.
  template <class F>
  void for_each_piece(std::vector<std::uint64_t>& buffer, F&& f) const {
    const std::uint64_t total = size_ / 8;
    for (std::uint64_t done = 0; done < total;) {
      const std::uint64_t count = std::min<std::uint64_t>(buffer.size(), total - done);
      read(buffer.data(), count * 8, done * 8);
      f(static_cast<const std::uint64_t*>(buffer.data()), count);
      done += count;
    }
  }

 private:
  std::string path_;
  detail::temp_path registration_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::vector<std::uint64_t> buffer_;
};

/// A private directory under tmp_dir for one build's spill files, locked while it lives so
/// that no other build reclaims it (temp_files.hpp).
class spill_directory {
 public:
  explicit spill_directory(const std::string& parent)
      : parent_(detail::temp_parent(parent)),
        parent_fd_(detail::open_directory(parent_)),
        directory_(checked(parent_fd_, parent_), parent_, detail::temp_kind::spill_directory),
        path_(directory_.path()) {}
  // The directory is removed by directory_, after its files (members of the owner).
  spill_directory(const spill_directory&) = delete;
  spill_directory& operator=(const spill_directory&) = delete;

  /// A new file named after its kind and a serial number.
  std::unique_ptr<spill_file> create(const std::string& kind, std::uint64_t buffer_bytes) {
    return std::make_unique<spill_file>(path_ + "/" + kind + "-" + std::to_string(files_++),
                                        buffer_bytes);
  }

 private:
  static int checked(const detail::unique_fd& fd, const std::string& parent) {
    if (fd.get() < 0) {
      throw error("cannot create a temporary directory in " + parent + ": " + std::strerror(errno));
    }
    return fd.get();
  }
  std::string parent_;
  detail::unique_fd parent_fd_;
  detail::locked_temp directory_;
  std::string path_;
  std::uint64_t files_ = 0;
};

/// A number from a cgroup file, or 0 ("max", missing, unreadable).
std::uint64_t read_limit_file(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text.empty() || text[0] < '0' || text[0] > '9') return 0;
  return std::strtoull(text.c_str(), nullptr, 10);
}

/// In-memory hashes are kept in chunks of this many (no reallocation copies).
constexpr std::uint64_t chunk_shift = 20;
constexpr std::uint64_t chunk_hashes = std::uint64_t{1} << chunk_shift;

/// Partition files of a layer: at most this many (one buffer each).
constexpr std::uint32_t max_partition_bits = 10;

/// Bytes per key of the in-memory build: the key hashes, the layer's partitioned copy and
/// the solution (r bits per slot, slots about equal to keys) plus a byte of slack.
std::uint64_t in_memory_bytes_per_key(const filter_params& p) {
  return 8 + 8 + detail::divide_round_up(p.result_bits, 8) + 1;
}

/// Bytes of one thread's shard-solver workspace (layered_builder.hpp): working arrays of
/// `interleaved_shards` shards (a coefficient word and a result per column), their undo
/// lists, and the sort scratch (a shard's keys: about S, twice for skewed shards).
std::uint64_t solver_workspace_bytes(const filter_params& p) {
  const std::uint64_t columns = p.shard_size + p.width;
  const std::uint64_t result_bytes = p.solver_bits() <= 8 ? 1 : p.solver_bits() <= 16 ? 2 : 4;
  const std::uint64_t undo = 2 * 4 * detail::undo_capacity(p.bucket_size, p.width);
  return detail::interleaved_shards * (columns * (p.width / 8 + result_bytes) + undo) +
         2 * p.shard_size * 8;
}

/// The smallest I/O buffer (partition-file reads, bumped keys, the file write) and the
/// smallest write buffer of a partition file.
constexpr std::uint64_t min_io_buffer_bytes = 64 << 10;
constexpr std::uint64_t min_partition_buffer_bytes = 4 << 10;

/// How a bulk build shares its memory limit among its consumers (README "Memory"). What it
/// does not count (code, libraries, thread stacks, small allocations) is the documented
/// constant above the limit.
struct memory_plan {
  std::uint64_t floor = 0;            ///< the smallest limit this build can honour
  std::uint32_t solver_threads = 1;   ///< threads whose solver workspaces fit
  std::uint64_t workspace_bytes = 0;  ///< all of their workspaces
  std::uint64_t io_buffer_bytes = 0;  ///< each of the three I/O buffers
  std::uint64_t partition_bytes = 0;  ///< the write buffers of all partition files together
  /// For key hashes, partitioned copies, carried keys and sections: max(limit, floor) less
  /// the above.
  std::uint64_t budget = 0;
  /// The same from the caller's limit (0 below the floor): past it the hashes spill.
  std::uint64_t spill_budget = 0;
};

/// Keys of the smallest shard-range pass (two shards' keys; a shard holds about S keys) and
/// the bytes of the carried keys of one boundary shard (a vector that may have doubled).
std::uint64_t min_pass_keys(const filter_params& p) {
  return 2 * p.shard_size + (p.shard_size >> 2);
}
std::uint64_t carry_bytes(const filter_params& p) {
  return 2 * 8 * (p.shard_size + (p.shard_size >> 3));
}

memory_plan plan_memory(const filter_params& p, std::uint64_t limit, std::uint32_t threads) {
  memory_plan plan;
  const std::uint64_t per_thread = solver_workspace_bytes(p);
  // One thread and the smallest pass, with the I/O buffers (3/64 of the limit) and the
  // partition files' buffers (1/8) on top.
  const std::uint64_t least = per_thread + 3 * min_io_buffer_bytes +
                              min_pass_keys(p) * in_memory_bytes_per_key(p) + carry_bytes(p);
  plan.floor = least * 64 / 53 + 1;
  const std::uint64_t working = std::max(limit, plan.floor);
  const std::uint64_t wanted =
      threads != 0 ? threads : static_cast<std::uint64_t>(tbb::this_task_arena::max_concurrency());
  // Workspaces get at most a third of the limit (at least one thread's): above that, fewer
  // threads solve.
  plan.solver_threads =
      static_cast<std::uint32_t>(std::clamp<std::uint64_t>(working / 3 / per_thread, 1, wanted));
  plan.workspace_bytes = plan.solver_threads * per_thread;
  plan.io_buffer_bytes = std::clamp<std::uint64_t>(working / 64, min_io_buffer_bytes, 4 << 20);
  plan.partition_bytes = working / 8;
  const std::uint64_t fixed =
      plan.workspace_bytes + 3 * plan.io_buffer_bytes + plan.partition_bytes + carry_bytes(p);
  plan.budget = working - fixed;
  plan.spill_budget = limit > fixed ? limit - fixed : 0;
  return plan;
}

std::string too_many_for_in_memory_variant(std::uint64_t keys) {
  return "the standard and homogeneous variants build in memory only (their layer 0 is "
         "retried whole), and " +
         std::to_string(keys) +
         " keys exceed the memory limit: raise it, or use the bumped variant";
}

void on_fatal_signal(int sig) {
  detail::remove_temp_paths();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

/// One out-of-core bumped layer: the keys come from partition files (by top hash bits); each
/// file's shards are solved in ranges that fit the budget. Shards are monotone in the hash,
/// so a file's keys fall in shards [first, limit], limit being the shard of the next file's
/// first possible hash; the keys of shard `limit` are carried to the next file. Each range
/// drops its repeated keys before it is solved (repeats share a shard). A `provisional` layer
/// 0 is sized for the input count n: at the first repeat it stops, reads the files again from
/// the start, counting the distinct keys and writing them to new partition files (by the same
/// top bits), and the caller builds the layer for that count from those.
template <unsigned Width, class Result>
class out_of_core_layer {
 public:
  using files = std::vector<std::unique_ptr<spill_file>>;

  out_of_core_layer(spill_directory& directory, const memory_plan& plan,
                    detail::layered_builder<Width, Result>& builder,
                    shard_range_solver* range_solver, const filter_params& p, std::uint32_t l,
                    std::uint64_t n, bool provisional)
      : directory_(directory),
        plan_(plan),
        builder_(builder),
        range_solver_(range_solver),
        p_(p),
        l_(l),
        provisional_(provisional) {
    layer_.input_keys = n;
    layer_.salt = bumped_layer_salt(p_.seed, l);
    layer_.geometry = bumped_layer_geometry(n, p_, builder.sizing());
    const layer_geometry& g = layer_.geometry;
    thresholds_.file = directory.create("thresholds", 0);
    solution_.file = directory.create("solution", 0);
    bumped_file_ = directory.create("bumped", plan.io_buffer_bytes);
    // Keys per pass: the budget at the pass's bytes per key (loaded, partitioned, its share
    // of the sections); the floor leaves room for two shards' keys.
    const double sections_per_key = static_cast<double>(g.solution_bytes(p_.width, p_.result_bits) +
                                                        g.threshold_words(p_.bucket_size) * 8) /
                                    static_cast<double>(n);
    pass_keys_ = std::max(
        static_cast<std::uint64_t>(static_cast<double>(plan.budget) / (16.0 + sections_per_key)),
        min_pass_keys(p_));
    // With ranges in flight elsewhere while the next is read, the passes share the budget.
    if (range_solver_) {
      pass_keys_ = std::max<std::uint64_t>(
          pass_keys_ / (std::max(range_solver_->ranges_in_flight(), 1u) + 1), min_pass_keys(p_));
    }
    read_buffer_.resize(std::min<std::uint64_t>(pass_keys_, plan.io_buffer_bytes / 8));
  }

  /// Solves the layer over `parts` (2^bits files); returns its image (both sections stay in
  /// their spill files).
  format::layer_image run(const files& parts, std::uint32_t bits) {
    bits_ = bits;
    solve_files(parts);
    if (counting_only()) {  // a repeat: count and write the distinct keys, from the start
      for (auto& part : parts) part->release_buffer();
      const std::uint64_t buffer = std::clamp<std::uint64_t>(plan_.partition_bytes / parts.size(),
                                                             min_partition_buffer_bytes, 4 << 20);
      for (std::size_t k = 0; k < parts.size(); ++k) {
        distinct_parts_.push_back(directory_.create("distinct", buffer));
      }
      distinct_ = 0;
      solve_files(parts);
      for (auto& part : distinct_parts_) part->release_buffer();
      return layer_;  // to be built from take_distinct_parts() for distinct_keys()
    }
    bumped_file_->flush();
    layer_.bumped_keys = bumped_file_->hashes();
    layer_.thresholds = nullptr;
    layer_.solution = nullptr;
    layer_.threshold_checksum = thresholds_.checksum.digest();
    layer_.solution_checksum = solution_.checksum.digest();
    const layer_geometry& g = layer_.geometry;
    if (thresholds_.file->size() != g.threshold_words(p_.bucket_size) * 8 ||
        solution_.file->size() != g.solution_bytes(p_.width, p_.result_bits)) {
      throw error("internal error: an out-of-core section has the wrong size");
    }
    return layer_;
  }

  std::unique_ptr<spill_file> take_threshold_file() { return std::move(thresholds_.file); }
  std::unique_ptr<spill_file> take_solution_file() { return std::move(solution_.file); }
  std::unique_ptr<spill_file> take_bumped_file() { return std::move(bumped_file_); }
  /// After counting_only(): the distinct keys, in partition files by the same top bits.
  files take_distinct_parts() { return std::move(distinct_parts_); }
  /// Bytes written to the solution and bumped-key files; shard ranges solved.
  std::uint64_t spilled_bytes() const { return spilled_bytes_; }
  std::uint64_t ranges() const { return ranges_; }
  /// Distinct keys of the layer, and whether it must be built again for that count.
  std::uint64_t distinct_keys() const { return distinct_; }
  bool counting_only() const { return provisional_ && repeats_; }

 private:
  std::uint64_t shard_of(std::uint64_t hash) const { return layer_.geometry.shard_of(hash); }

  /// A repeat was found, and the files are not yet being read for the distinct keys.
  bool stopped() const { return counting_only() && distinct_parts_.empty(); }

  /// Solves (or, once stopped, skips; or counts and writes the distinct keys of) every shard
  /// range of the files, in order.
  void solve_files(const files& parts) {
    const layer_geometry& g = layer_.geometry;
    builder_.start_layer(l_, g.num_shards());
    std::vector<std::uint64_t> carry;
    std::uint64_t next_shard = 0;
    for (std::size_t k = 0; k < parts.size() && !stopped(); ++k) {
      const std::uint64_t limit =
          k + 1 < parts.size() ? shard_of(std::uint64_t{k + 1} << (64 - bits_)) : g.num_shards();
      parts[k]->flush();
      std::vector<std::uint64_t> next_carry;
      solve_span(*parts[k], carry, next_shard, limit, k + 1 < parts.size() ? &next_carry : nullptr);
      carry.swap(next_carry);
      next_shard = limit;
    }
    finish_pending_ranges();
    if (!carry.empty() && !stopped()) {
      throw error("internal error: keys left over after the last shard");
    }
  }

  /// A shard range's windows of the layer's two sections (shards own whole threshold words
  /// and solution blocks), in buffers of their own.
  struct range_windows {
    aligned_bytes thresholds, solution;
    std::uint64_t threshold_bytes = 0, solution_bytes = 0;
    range_windows(const layer_geometry& g, const filter_params& p, std::uint64_t lo,
                  std::uint64_t hi)
        : threshold_bytes((g.shard_first_threshold_word(hi, p.bucket_size) -
                           g.shard_first_threshold_word(lo, p.bucket_size)) *
                          8),
          solution_bytes(g.shard_range_solution_bytes(lo, hi, Width, p.result_bits)) {
      thresholds = allocate_aligned(threshold_bytes);
      solution = allocate_aligned(solution_bytes);
    }
    std::uint64_t* threshold_words() { return reinterpret_cast<std::uint64_t*>(thresholds.get()); }
  };

  /// A section appended range by range to a spill file, with its running checksum.
  struct spilled_section {
    std::unique_ptr<spill_file> file;
    detail::xxh64_stream checksum;
    void append(const unsigned char* data, std::uint64_t bytes) {
      file->write_bytes(data, bytes);
      checksum.update(data, bytes);
    }
  };

  /// Appends a solved range's outputs, in shard order: its section windows and its bumped
  /// keys.
  void write_range(const range_windows& windows, const std::uint64_t* bumped,
                   std::uint64_t bumped_count) {
    thresholds_.append(windows.thresholds.get(), windows.threshold_bytes);
    solution_.append(windows.solution.get(), windows.solution_bytes);
    bumped_file_->append(bumped, bumped_count);
    spilled_bytes_ += windows.threshold_bytes + windows.solution_bytes + bumped_count * 8;
    ++ranges_;
  }

  /// Solves shards [lo, hi) from the keys of `file` and `carry` in those shards. With
  /// `next_carry`, keys in shards >= hi go there. When the span's keys exceed a pass, the
  /// read goes on counting keys per shard only, and the span is cut where the counts say
  /// (one more read per piece); a single shard is always solved, however many keys it has.
  void solve_span(const spill_file& file, const std::vector<std::uint64_t>& carry, std::uint64_t lo,
                  std::uint64_t hi, std::vector<std::uint64_t>* next_carry) {
    std::vector<std::uint64_t> keys;
    std::vector<std::uint64_t> shard_counts(hi - lo);
    bool overflow = false;
    auto take = [&](const std::uint64_t* hashes, std::uint64_t count) {
      for (std::uint64_t i = 0; i < count; ++i) {
        const std::uint64_t shard = shard_of(hashes[i]);
        if (shard >= hi) {
          if (next_carry) next_carry->push_back(hashes[i]);
        } else if (shard >= lo) {
          ++shard_counts[shard - lo];
          if (!overflow) keys.push_back(hashes[i]);
        }
      }
      if (!overflow && keys.size() > pass_keys_ && hi - lo > 1) {
        overflow = true;
        keys = {};
      }
    };
    // Room for all of them, or for a pass and the piece that shows it is too much: the
    // vector never grows past the budget by doubling.
    keys.reserve(std::min<std::uint64_t>(file.hashes() + carry.size(),
                                         pass_keys_ + read_buffer_.size() + carry.size()));
    take(carry.data(), carry.size());
    file.for_each_piece(read_buffer_, take);
    if (!overflow) {
      if (lo < hi) solve_range(keys, lo, hi);
      return;
    }
    // Skewed keys or a low estimate: solve the span in pieces that fit a pass. The carry
    // for the next file is complete already.
    for (std::uint64_t first = lo; first < hi;) {
      std::uint64_t end = first + 1, in_piece = shard_counts[first - lo];
      while (end < hi && in_piece + shard_counts[end - lo] <= pass_keys_) {
        in_piece += shard_counts[end - lo];
        ++end;
      }
      solve_span(file, carry, first, end, nullptr);
      first = end;
    }
  }

  /// Counts a range's distinct keys (n of them with repeats).
  void count_distinct(std::uint64_t distinct, std::uint64_t n) {
    distinct_ += distinct;
    if (distinct != n) repeats_ = true;
  }

  void solve_range(std::vector<std::uint64_t>& keys, std::uint64_t lo, std::uint64_t hi) {
    if (stopped()) return;
    if (range_solver_ && !counting_only()) return solve_range_elsewhere(keys, lo, hi);
    const std::uint64_t n = keys.size();
    std::optional<range_windows> windows;  // made only when the range is solved
    auto make_windows = [&] {
      windows.emplace(layer_.geometry, p_, lo, hi);
      return detail::section_windows{windows->threshold_words(), windows->solution.get()};
    };
    auto proceed = [&](const std::uint64_t* distinct_keys, std::uint64_t distinct) {
      count_distinct(distinct, n);
      if (stopped()) return false;
      if (!counting_only()) return true;
      for (std::uint64_t i = 0; i < distinct; ++i) {
        distinct_parts_[distinct_keys[i] >> (64 - bits_)]->push(distinct_keys[i]);
      }
      return false;
    };
    builder_.solve_shard_range(layer_.geometry, lo, hi, keys, make_windows, proceed);
    if (windows) write_range(*windows, keys.data(), keys.size());
  }

  /// The range on the caller's solver (e.g. the GPU), in a background thread: while it
  /// solves, this thread reads the next partition file. Up to the solver's
  /// ranges_in_flight() ranges run at once (on a GPU their copies and kernels overlap); their
  /// outputs are written in order.
  void solve_range_elsewhere(std::vector<std::uint64_t>& keys, std::uint64_t lo, std::uint64_t hi) {
    while (pending_.size() >= std::max(range_solver_->ranges_in_flight(), 1u)) {
      finish_oldest_range();
    }
    auto range = std::make_unique<pending_range>(layer_.geometry, p_, lo, hi);
    range->keys = std::move(keys);
    range->input_keys = range->keys.size();
    pending_range* r = range.get();
    r->done = std::async(std::launch::async, [this, lo, hi, r] {
      r->distinct_keys =
          range_solver_->solve(p_, layer_.geometry, lo, hi, r->keys, r->windows.threshold_words(),
                               r->windows.solution.get());
    });
    pending_.push_back(std::move(range));
  }

  /// Waits for the oldest range in flight and writes its outputs.
  void finish_oldest_range() {
    pending_range& r = *pending_.front();
    r.done.get();  // rethrows the solver's exception
    builder_.count_solved_shards(r.shards);
    count_distinct(r.distinct_keys, r.input_keys);
    if (!counting_only()) write_range(r.windows, r.keys.data(), r.keys.size());
    pending_.pop_front();
  }

  /// Waits for every range in flight, in order.
  void finish_pending_ranges() {
    while (!pending_.empty()) finish_oldest_range();
  }

  /// A range being solved elsewhere.
  struct pending_range {
    pending_range(const layer_geometry& g, const filter_params& p, std::uint64_t lo,
                  std::uint64_t hi)
        : windows(g, p, lo, hi), shards(hi - lo) {}
    std::vector<std::uint64_t> keys;  // its keys, then its bumped keys
    range_windows windows;
    std::uint64_t shards;
    std::uint64_t input_keys = 0, distinct_keys = 0;
    std::future<void> done;  // last: joins the solving thread before the buffers go
  };

  spill_directory& directory_;
  const memory_plan& plan_;
  detail::layered_builder<Width, Result>& builder_;
  shard_range_solver* range_solver_;
  filter_params p_;
  std::uint32_t l_;
  bool provisional_;
  bool repeats_ = false;
  std::uint64_t distinct_ = 0;
  std::uint32_t bits_ = 0;
  files distinct_parts_;  // the distinct keys, once counting_only()
  format::layer_image layer_;
  spilled_section thresholds_, solution_;
  std::unique_ptr<spill_file> bumped_file_;
  std::uint64_t pass_keys_ = 0;
  std::uint64_t spilled_bytes_ = 0, ranges_ = 0;
  std::vector<std::uint64_t> read_buffer_;
  // The last member: destroyed (their threads joined) first.
  std::deque<std::unique_ptr<pending_range>> pending_;
};

}  // namespace

std::uint64_t default_memory_limit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  std::uint64_t memory = pages > 0 && page_size > 0 ? static_cast<std::uint64_t>(pages) *
                                                          static_cast<std::uint64_t>(page_size)
                                                    : std::uint64_t{4} << 30;
  for (const char* cgroup :
       {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    const std::uint64_t limit = read_limit_file(cgroup);
    if (limit != 0 && limit < memory) memory = limit;
  }
  return memory / 2;
}

void remove_temp_files_on_signals() {
  struct sigaction action {};
  action.sa_handler = on_fatal_signal;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::sigaction(sig, &action, nullptr);
}

struct bulk_builder::impl {
  filter_params params;
  bulk_options options;
  memory_plan plan;
  std::uint64_t count = 0;
  bool finished = false;

  // In memory: hashes in chunks.
  std::vector<aligned_array<std::uint64_t>> chunks;

  // Spilled: partition files of layer 0 by the top `partition_bits` bits of the hash. The
  // directory is declared first so that it is removed after its files.
  std::unique_ptr<spill_directory> directory;
  std::vector<std::unique_ptr<spill_file>> partitions;
  std::uint32_t partition_bits = 0;
  std::uint64_t spilled_bytes = 0;
  std::uint64_t shard_ranges = 0;

  bool spilled() const { return directory != nullptr; }

  void set_stage(build_progress::stage s, std::uint64_t total = 0) {
    if (!options.progress) return;
    options.progress->done.store(0, std::memory_order_relaxed);
    options.progress->total.store(total, std::memory_order_relaxed);
    options.progress->current.store(s, std::memory_order_relaxed);
  }

  /// Opens 2^bits partition files with buffers that share the plan's partition bytes.
  std::vector<std::unique_ptr<spill_file>> open_partitions(std::uint32_t bits) {
    const std::uint64_t files = std::uint64_t{1} << bits;
    const std::uint64_t buffer = std::clamp<std::uint64_t>(plan.partition_bytes / files,
                                                           min_partition_buffer_bytes, 4 << 20);
    std::vector<std::unique_ptr<spill_file>> out;
    for (std::uint64_t i = 0; i < files; ++i) out.push_back(directory->create("part", buffer));
    return out;
  }

  /// Partition files for an expected number of keys: enough that one file's keys fit a
  /// shard-range pass in the budget twice over, no more than have buffers of the smallest
  /// size (a file with too many keys is read once more per pass).
  std::uint32_t partition_bits_for(std::uint64_t expected) const {
    const std::uint64_t per_pass =
        std::max<std::uint64_t>(plan.budget / in_memory_bytes_per_key(params), 1);
    const std::uint64_t files =
        detail::divide_round_up(expected, std::max<std::uint64_t>(per_pass / 2, 1));
    const std::uint64_t most_files = plan.partition_bytes / min_partition_buffer_bytes;
    std::uint32_t bits = 1;
    while (bits < max_partition_bits && (std::uint64_t{1} << bits) < files &&
           (std::uint64_t{2} << bits) <= most_files) {
      ++bits;
    }
    return bits;
  }

  static void scatter(std::vector<std::unique_ptr<spill_file>>& files, std::uint32_t bits,
                      const std::uint64_t* hashes, std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) files[hashes[i] >> (64 - bits)]->push(hashes[i]);
  }

  /// Moves the in-memory hashes to partition files; later hashes go straight there.
  void spill() {
    set_stage(build_progress::spilling, count);
    directory = std::make_unique<spill_directory>(options.tmp_dir);
    // Without a hint (stdin), guess generously: more files cost only buffers, too few cost
    // extra reads of each file.
    partition_bits = partition_bits_for(options.expected_keys ? options.expected_keys : 8 * count);
    partitions = open_partitions(partition_bits);
    std::uint64_t left = count;
    for (auto& chunk : chunks) {
      const std::uint64_t n = std::min(left, chunk_hashes);
      scatter(partitions, partition_bits, chunk.get(), n);
      left -= n;
      chunk.reset();
      if (options.progress) options.progress->done.fetch_add(n, std::memory_order_relaxed);
    }
    chunks.clear();
    set_stage(build_progress::adding);
  }

  void add_hashes(const std::uint64_t* hashes, std::uint64_t n) {
    if (finished) throw error("bulk_builder: keys added after finish()");
    if (spilled()) {
      scatter(partitions, partition_bits, hashes, n);
    } else {
      for (std::uint64_t done = 0; done < n;) {
        const std::uint64_t fill = count & (chunk_hashes - 1);
        if (fill == 0) chunks.push_back(allocate_array<std::uint64_t>(chunk_hashes));
        const std::uint64_t take = std::min(n - done, chunk_hashes - fill);
        std::copy_n(hashes + done, take, chunks.back().get() + fill);
        done += take;
        count += take;
      }
      if (count * in_memory_bytes_per_key(params) > plan.spill_budget) spill();
      if (options.progress) options.progress->keys.store(count, std::memory_order_relaxed);
      return;
    }
    count += n;
    if (options.progress) options.progress->keys.store(count, std::memory_order_relaxed);
  }

  bulk_result finish_in_memory(const std::string& path) {
    bulk_result result;
    const auto* chunk_table = chunks.data();
    auto source = [chunk_table](std::uint64_t i) {
      return chunk_table[i >> chunk_shift][i & (chunk_hashes - 1)];
    };
    filter f;
    if (options.in_memory) {
      auto visit_hashes = [&](const hash_visitor& visit) {
        for (std::uint64_t done = 0; done < count; done += chunk_hashes) {
          visit(chunks[done >> chunk_shift].get(), std::min(chunk_hashes, count - done));
        }
      };
      set_stage(build_progress::solving);
      f = options.in_memory(count, visit_hashes, params.keys, options.build);
    } else {
      build_options build = options.build;
      build.threads = plan.solver_threads;  // the threads whose workspaces fit the limit
      f = detail::build_in_memory(params, build, count, source, &result.stats, options.progress);
    }
    result.key_count = f.key_count();
    chunks.clear();
    set_stage(build_progress::writing, f.size_bytes());
    f.save(path);
    result.layers = f.layers();
    result.file_bytes = f.size_bytes();
    return result;
  }

  template <unsigned Width, class Result>
  bulk_result finish_out_of_core(const std::string& path);

  bulk_result finish(const std::string& path) {
    if (finished) throw error("bulk_builder: finish() called twice");
    finished = true;
    const bool out_of_core = spilled();
    // Whatever happens, the spill files and their directory go now, not with the builder.
    struct spill_remover {
      impl& owner;
      ~spill_remover() {
        owner.partitions.clear();
        owner.directory.reset();
      }
    } remove_spill{*this};
    if (out_of_core && !uses_bumping(params.variant)) {
      throw error(too_many_for_in_memory_variant(count));
    }
    const auto start = detail::clock_type::now();
    bulk_result result = detail::run_with_threads(plan.solver_threads, [&] {
      if (!out_of_core) return finish_in_memory(path);
      return detail::dispatch_layout(params, [&](auto width_tag, auto result_tag) {
        return finish_out_of_core<decltype(width_tag)::value, decltype(result_tag)>(path);
      });
    });
    for (auto& layer : result.layers) {
      layer.thresholds = nullptr;
      layer.solution = nullptr;
    }
    result.params = params;
    result.input_keys = count;
    result.stats.input_keys = count;
    result.stats.distinct_keys = result.key_count;
    result.num_layers = static_cast<std::uint32_t>(result.layers.size());
    result.out_of_core = out_of_core;
    result.partitions = out_of_core ? 1u << partition_bits : 0;
    result.spilled_bytes = spilled_bytes;
    result.shard_ranges = shard_ranges;
    result.seconds = detail::seconds_since(start);
    set_stage(build_progress::finished);
    return result;
  }
};

template <unsigned Width, class Result>
bulk_result bulk_builder::impl::finish_out_of_core(const std::string& path) {
  bulk_result result;
  const auto build_start = detail::clock_type::now();
  detail::layered_builder<Width, Result> builder(params, options.build, result.stats,
                                                 options.progress);
  std::vector<format::layer_image> layers;
  std::vector<aligned_bytes> buffers;
  // Out-of-core layers' sections, by layer and section (layers built in memory have none).
  std::vector<std::array<std::unique_ptr<spill_file>, 2>> section_files;

  std::vector<std::unique_ptr<spill_file>> parts = std::move(partitions);
  std::uint32_t bits = partition_bits;
  std::uint64_t remaining = count, distinct = count;
  for (std::uint32_t l = 0; remaining > 0; ++l) {
    const auto layer_start = detail::clock_type::now();
    for (auto& part : parts) part->flush();
    for (auto& part : parts) spilled_bytes += part->size();
    // Layer 0 is first built for the input count; at a repeated key it stops, writes the
    // distinct keys to new partition files and is built from those for their count.
    auto layer_builder = std::make_unique<out_of_core_layer<Width, Result>>(
        *directory, plan, builder, options.range_solver.get(), params, l, remaining, l == 0);
    format::layer_image image = layer_builder->run(parts, bits);
    if (layer_builder->counting_only()) {
      remaining = layer_builder->distinct_keys();
      spilled_bytes += layer_builder->spilled_bytes();
      parts = layer_builder->take_distinct_parts();
      for (auto& part : parts) spilled_bytes += part->size();
      layer_builder = std::make_unique<out_of_core_layer<Width, Result>>(
          *directory, plan, builder, options.range_solver.get(), params, l, remaining, false);
      image = layer_builder->run(parts, bits);
    }
    if (l == 0) distinct = remaining;
    layers.push_back(image);
    spilled_bytes += layer_builder->spilled_bytes();
    shard_ranges += layer_builder->ranges();
    parts.clear();
    section_files.push_back(
        {layer_builder->take_threshold_file(), layer_builder->take_solution_file()});
    std::unique_ptr<spill_file> bumped = layer_builder->take_bumped_file();
    remaining = layers.back().bumped_keys;
    if (l == 0) result.stats.solve_seconds = detail::seconds_since(layer_start);
    if (l > 0) result.stats.later_layers_seconds += detail::seconds_since(layer_start);
    if (remaining == 0) break;

    const bool fits = remaining * in_memory_bytes_per_key(params) <= plan.budget;
    if (fits || is_plain_layer(l + 1, remaining, params, builder.sizing())) {
      auto previous = allocate_array<std::uint64_t>(remaining);
      bumped->read(previous.get(), remaining * 8, 0);
      bumped.reset();
      const auto rest_start = detail::clock_type::now();
      builder.build_rest(l + 1, std::move(previous), remaining, layers, buffers);
      result.stats.later_layers_seconds += detail::seconds_since(rest_start);
      break;
    }
    // Still too big: partition the bumped keys by their next-layer hash, on disk.
    const std::uint64_t salt = bumped_layer_salt(params.seed, l + 1);
    bits = partition_bits_for(remaining);
    parts = open_partitions(bits);
    std::vector<std::uint64_t> buffer(plan.io_buffer_bytes / 8);
    bumped->for_each_piece(buffer, [&](const std::uint64_t* hashes, std::uint64_t n) {
      std::uint64_t* next = buffer.data();  // remixed in place: the piece is read
      for (std::uint64_t i = 0; i < n; ++i) next[i] = remix(hashes[i], salt);
      scatter(parts, bits, next, n);
    });
  }
  result.stats.total_seconds = detail::seconds_since(build_start);

  builder.size_for(count, distinct);
  const format::filter_image image{params, distinct, layers};
  const std::uint64_t file_bytes = format::image_bytes(image);
  set_stage(build_progress::writing, file_bytes);
  std::vector<unsigned char> buffer(plan.io_buffer_bytes);
  detail::write_file_atomically(
      path, image, [&](std::size_t l, format::section which, const format::byte_sink& sink) {
        const spill_file& file = *section_files.at(l).at(static_cast<std::size_t>(which));
        for (std::uint64_t done = 0; done < file.size();) {
          const std::uint64_t n = std::min<std::uint64_t>(buffer.size(), file.size() - done);
          file.read(buffer.data(), n, done);
          sink(buffer.data(), n);
          done += n;
          if (options.progress) options.progress->done.store(done, std::memory_order_relaxed);
        }
      });
  result.layers = layers;
  result.file_bytes = file_bytes;
  result.key_count = distinct;
  return result;
}

bulk_builder::bulk_builder(key_kind keys, const bulk_options& options)
    : impl_(std::make_unique<impl>()) {
  impl_->options = options;
  impl_->params = detail::params_from(options.build, keys);
  detail::prepare_temp_parent(options.tmp_dir);
  const std::uint64_t limit = options.memory_limit ? options.memory_limit : default_memory_limit();
  impl_->plan = plan_memory(impl_->params, limit, options.build.threads);
  if (!uses_bumping(impl_->params.variant) &&
      options.expected_keys * in_memory_bytes_per_key(impl_->params) > impl_->plan.spill_budget) {
    throw error(too_many_for_in_memory_variant(options.expected_keys));
  }
#if defined(__GLIBC__)
  // Freed buffers must go back to the system for the limit to bound the resident size. By
  // default glibc raises its mmap threshold to the largest buffer freed so far (up to 32 MiB),
  // and buffers below it come from heaps that keep their freed memory: fix it.
  ::mallopt(M_MMAP_THRESHOLD, 256 << 10);
#endif
}

std::uint64_t bulk_builder::memory_floor() const {
  return impl_->plan.floor;
}

bulk_builder::~bulk_builder() = default;

const filter_params& bulk_builder::params() const {
  return impl_->params;
}

std::uint64_t bulk_builder::key_count() const {
  return impl_->count;
}

void bulk_builder::add_hashes(const std::uint64_t* hashes, std::uint64_t count) {
  impl_->add_hashes(hashes, count);
}

namespace {

/// Hashes keys in parallel pieces and passes the hashes on, `batch` hashes at a time.
template <class Hash>
void add_hashed(bulk_builder& builder, std::uint64_t count, std::uint64_t batch, const Hash& hash) {
  constexpr std::uint64_t piece = 1 << 13;
  std::vector<std::uint64_t> hashes(std::min(count, batch));
  for (std::uint64_t done = 0; done < count;) {
    const std::uint64_t n = std::min<std::uint64_t>(hashes.size(), count - done);
    tbb::parallel_for(std::uint64_t{0}, detail::divide_round_up(n, piece), [&](std::uint64_t b) {
      const std::uint64_t end = std::min(n, (b + 1) * piece);
      for (std::uint64_t i = b * piece; i < end; ++i) hashes[i] = hash(done + i);
    });
    builder.add_hashes(hashes.data(), n);
    done += n;
  }
}

}  // namespace

void bulk_builder::add(const std::uint64_t* keys, std::uint64_t count) {
  if (impl_->params.keys != key_kind::u64)
    throw error("bulk_builder: integer keys added to a byte-string build");
  const std::uint64_t mixed = seed_mix(impl_->params.seed);
  add_hashed(*this, count, impl_->plan.io_buffer_bytes / 8,
             [keys, mixed](std::uint64_t i) { return hash_u64(keys[i], mixed); });
}

void bulk_builder::add(const std::string_view* keys, std::uint64_t count) {
  if (impl_->params.keys != key_kind::bytes)
    throw error("bulk_builder: byte-string keys added to an integer build");
  const std::uint64_t seed = impl_->params.seed;
  add_hashed(*this, count, impl_->plan.io_buffer_bytes / 8, [keys, seed](std::uint64_t i) {
    return hash_bytes(keys[i].data(), keys[i].size(), seed);
  });
}

bulk_result bulk_builder::finish(const std::string& path) {
  return impl_->finish(path);
}

}  // namespace ribbon
