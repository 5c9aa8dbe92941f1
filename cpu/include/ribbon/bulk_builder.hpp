/// @file bulk_builder.hpp
/// Builds a filter file (or, with values, a retrieval file) from a stream of keys of any size,
/// in bounded memory.
///
/// Keys (or their hashes) are added in chunks as they are read. While the hashes fit in the
/// memory limit they stay in memory and finish() runs the in-memory builder. Past the limit
/// they are spilled to partition files (by the top bits of the hash, so by shard range) in a
/// private temporary directory, and finish() builds each layer one shard range at a time.
/// Either way the file is byte-identical to filter::build() over the same keys (and values)
/// and options.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ribbon/build_progress.hpp"
#include "ribbon/filter.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/shard_range_solver.hpp"

namespace ribbon {

/// Visits a build's key hashes, chunk by chunk: visit(hashes, count).
using hash_visitor = std::function<void(const std::uint64_t*, std::uint64_t)>;

/// Another builder for inputs that fit in memory (e.g. the GPU builder): given the key count,
/// a function that passes every hash to a visitor, the key kind and the build options, it
/// returns the filter. It must write the same bytes as the CPU builder.
using in_memory_builder = std::function<filter(
    std::uint64_t count, const std::function<void(const hash_visitor&)>& hashes, key_kind keys,
    const build_options& options)>;

/// Options of a bulk build.
struct bulk_options {
  build_options build;  ///< width, r or target FPR, seed, threads, shard size
  /// Bytes the build may use; 0: default_memory_limit(). It bounds the peak resident memory
  /// of the process less bulk_memory_reserve: the buffers, solver workspaces (fewer solving
  /// threads when they would not fit) and sections are sized from it, whatever the key count.
  /// Where an input needs more (a standard variant's keys beyond it, a shard range that
  /// cannot be cut to fit), the build throws memory_limit_error as soon as that is known. A
  /// limit below memory_floor() spills as it says but works at the floor, as best it can.
  /// See docs/cli.md, "Memory".
  std::uint64_t memory_limit = 0;
  /// For callers that keep part of their own limit (the `ribbon` tool keeps an eighth of
  /// --memory-limit for its reader): maps such a limit to the memory_limit it gives this
  /// builder, so that memory_limit_error names the caller's limit. Empty: the same.
  std::function<std::uint64_t(std::uint64_t)> limit_of_caller;
  std::string tmp_dir;                 ///< where partition files go; empty: $TMPDIR or /tmp
  std::uint64_t expected_keys = 0;     ///< a hint (e.g. from file sizes) to size the partitions
  build_progress* progress = nullptr;  ///< optional; must outlive the builder
  /// Builds inputs that stay in memory (empty: the CPU builder).
  in_memory_builder in_memory;
  /// Solves the shard ranges of spilled inputs (empty: the CPU builder).
  std::shared_ptr<shard_range_solver> range_solver;
  /// A retrieval build: each key comes with a value (the add() overloads taking values),
  /// stored in build.result_bits bits (values must be below 2^result_bits) under
  /// build.check_bits check bits, as filter::build(keys, values, ...) does. Runs on the CPU
  /// (in_memory and range_solver must be empty). A key added twice with one value counts
  /// once; with two values finish() throws conflicting_values_error and writes nothing.
  bool with_values = false;
  /// The file's layout: automatic (compact for small filters), or either one on request
  /// (standard: what readers of format versions 1 to 4 read).
  format::layout_choice layout = format::layout_choice::automatic;
  /// A filter set (filter::build_set) whose groups are of this kind: add_hashes() takes the
  /// pairs' hashes (set_hasher::pair), and set_group_count() the number of distinct groups
  /// before finish(). Filters only, on the CPU (in_memory must be empty).
  group_kind groups = group_kind::none;
  /// Application metadata written with the file as it is (format version 7); null: none.
  std::shared_ptr<const std::string> metadata;
};

/// Thrown by a bulk build whose memory limit is too small for its input (bulk_options::
/// memory_limit), as soon as that is known: what() says why and names needed_limit(), the
/// smallest limit that works (for the keys seen so far, where the rest is unknown), in whole
/// MiB of the caller's limit (bulk_options::limit_of_caller); 0 where none does.
class memory_limit_error : public error {
 public:
  memory_limit_error(const std::string& message, std::uint64_t needed_limit)
      : error(message), needed_limit_(needed_limit) {}
  std::uint64_t needed_limit() const { return needed_limit_; }

 private:
  std::uint64_t needed_limit_;
};

/// What finish() built.
struct bulk_result {
  filter_params params;
  std::uint64_t input_keys = 0;   ///< keys added, repeats included
  std::uint64_t key_count = 0;    ///< distinct key hashes: the file's key count
  std::uint64_t group_count = 0;  ///< filter sets: distinct groups (set_group_count())
  std::uint64_t file_bytes = 0;
  std::uint32_t num_layers = 0;
  std::vector<format::layer_image> layers;  ///< geometry and key counts (no section pointers)
  bool out_of_core = false;                 ///< hashes were spilled to partition files
  std::uint32_t partitions = 0;             ///< partition files of layer 0 (0 in memory)
  std::uint64_t spilled_bytes = 0;          ///< bytes written to partition and spill files
  std::uint64_t shard_ranges = 0;           ///< shard ranges solved out of core (all layers)
  double seconds = 0;                       ///< finish() wall time
  build_stats stats;                        ///< stage times of the in-memory layers
  /// Bits per distinct key.
  double bits_per_key() const {
    return key_count ? 8.0 * static_cast<double>(file_bytes) / static_cast<double>(key_count) : 0.0;
  }
};

/// Counts a filter set's distinct groups by their hashes (set_hasher::group), for
/// bulk_builder::set_group_count() and filter::build_set(). A group repeated in a run (the
/// usual order of grouped inputs) costs one comparison; groups interleaved at random (an
/// unsorted input) a probe of a small open-addressing table, which stays in the L1 cache for
/// a few thousand groups. Counters of parts of an input merge.
class group_counter {
 public:
  /// Whether this group hash is new to this counter.
  bool add(std::uint64_t group_hash) {
    if (any_ && group_hash == last_) return false;
    last_ = group_hash;
    any_ = true;
    return insert(group_hash);
  }
  void merge(const group_counter& other) {
    if (other.has_zero_) insert(0);
    for (const std::uint64_t h : other.slots_) {
      if (h) insert(h);
    }
  }
  std::uint64_t count() const { return count_; }

 private:
  // Group hashes are uniform: their top bits index the table; 0 marks an empty slot, so the
  // hash 0 is counted apart.
  bool insert(std::uint64_t h) {
    if (h == 0) {
      const bool fresh = !has_zero_;
      has_zero_ = true;
      count_ += fresh;
      return fresh;
    }
    if (2 * (count_ + 1) > slots_.size()) grow();
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = static_cast<std::size_t>(h >> shift_);; i = (i + 1) & mask) {
      if (slots_[i] == h) return false;
      if (slots_[i] == 0) {
        slots_[i] = h;
        ++count_;
        return true;
      }
    }
  }
  void grow() {
    std::vector<std::uint64_t> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : 2 * old.size(), 0);
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(slots_.size()));
    count_ = has_zero_;
    for (const std::uint64_t h : old) {
      if (h) insert(h);
    }
  }

  std::vector<std::uint64_t> slots_;
  unsigned shift_ = 64;
  std::uint64_t count_ = 0;
  bool has_zero_ = false;
  std::uint64_t last_ = 0;
  bool any_ = false;
};

/// What the memory limit does not count: code, libraries, thread stacks, small allocations.
/// Peak resident memory stays below max(limit, floor) plus this.
inline constexpr std::uint64_t bulk_memory_reserve = std::uint64_t{16} << 20;

/// A safe share of this machine's memory: half of the physical memory, or of the cgroup's
/// memory limit where that is lower.
std::uint64_t default_memory_limit();

/// Installs SIGINT, SIGTERM, SIGHUP and SIGPIPE handlers that remove every temporary file of
/// live bulk builders (and of writers in progress), then die of the same signal. For tools.
void remove_temp_files_on_signals();

/// Streaming builder of one filter file. Not thread-safe: one thread adds (the caller may
/// hash in parallel and add in order or not: the file does not depend on the order).
class bulk_builder {
 public:
  /// Throws ribbon::error on invalid options or an unusable tmp_dir.
  bulk_builder(key_kind keys, const bulk_options& options);
  ~bulk_builder();  ///< removes the temporary directory and everything in it
  bulk_builder(const bulk_builder&) = delete;
  bulk_builder& operator=(const bulk_builder&) = delete;

  /// The parameters the file will have (the seed hashes the keys).
  const filter_params& params() const;

  /// Adds key hashes: hash_u64(key, seed_mix(params().seed)) for integer keys,
  /// hash_bytes(data, size, params().seed) for byte strings.
  void add_hashes(const std::uint64_t* hashes, std::uint64_t count);
  /// Adds keys (hashes them here, in parallel for large chunks).
  void add(const std::uint64_t* keys, std::uint64_t count);
  void add(const std::string_view* keys, std::uint64_t count);

  /// With bulk_options::with_values: keys (or their hashes) with their values. Throws
  /// ribbon::error for a value of more than build.result_bits bits (naming its index among
  /// all values added).
  void add_hashes(const std::uint64_t* hashes, const std::uint32_t* values, std::uint64_t count);
  void add(const std::uint64_t* keys, const std::uint32_t* values, std::uint64_t count);
  void add(const std::string_view* keys, const std::uint32_t* values, std::uint64_t count);

  std::uint64_t key_count() const;
  /// Filter sets (bulk_options::groups): the distinct groups of the pairs added, which the
  /// file records.
  void set_group_count(std::uint64_t groups);
  /// Filter sets: the names of every group given (those without keys too), which the file
  /// records (format version 7); without them it is version 6.
  void set_group_names(group_names names);
  /// Application metadata written with the file (format version 7), replacing
  /// bulk_options::metadata: for metadata that depends on the keys added (counts seen while
  /// they streamed past), so that the file is written once, with it.
  void set_metadata(std::string bytes);

  /// The smallest memory limit this build can honour (one solving thread, the smallest
  /// pass and buffers); it depends on the width, r and the shard size.
  std::uint64_t memory_floor() const;

  /// Builds and writes the file atomically (temporary file in the same directory, renamed
  /// over `path`; an existing file stays intact if anything fails). Call once.
  bulk_result finish(const std::string& path);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace ribbon
