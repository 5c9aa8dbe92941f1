/// @file filter.hpp
/// The owning filter type: build with oneTBB, save, load (mmap), query.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ribbon/error.hpp"
#include "ribbon/filter_ref.hpp"
#include "ribbon/format.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"

namespace ribbon {

/// What to build.
struct build_options {
  std::uint32_t width = 64;       ///< ribbon width: 32, 64 or 128
  std::uint32_t result_bits = 8;  ///< r, 1..32: false-positive rate 2^-r
  double target_fpr = 0;          ///< if > 0, r is the smallest with 2^-r <= target_fpr
  std::uint64_t shard_size = 0;   ///< start positions per shard (power of two); 0: default
  std::uint64_t seed = 0;         ///< hash seed; the file is a function of keys, params, seed
  std::uint32_t threads = 0;      ///< worker threads; 0: all hardware threads
};

/// Wall-clock times of the build's stages (seconds) and layer counts.
struct build_stats {
  double hash_seconds = 0;          ///< layer 0: hash every key, count keys per shard
  double partition_seconds = 0;     ///< layer 0: hash again, scatter hashes by shard
  double solve_seconds = 0;         ///< layer 0: per shard sort, eliminate, back-substitute
  double gather_seconds = 0;        ///< layer 0: collect bumped hashes
  double later_layers_seconds = 0;  ///< layers 1.. (all stages)
  double total_seconds = 0;
  /// Thread-seconds (summed over threads) inside the solve stage, all layers.
  double sort_thread_seconds = 0;
  double eliminate_thread_seconds = 0;
  double back_substitute_thread_seconds = 0;
  std::uint32_t plain_layer_attempts = 0;  ///< tries of the final plain layer (1 = no retry)
};

namespace detail {
/// The parameters of a build with these options (r from the target FPR where one is given),
/// shared by every builder. Throws ribbon::error for invalid options (what check_params()
/// finds, or a target FPR outside (0, 1)).
filter_params params_from(const build_options& options, key_kind keys);
}  // namespace detail

/// How to open a filter file.
struct load_options {
  bool verify_checksums = true;  ///< check every section's checksum (reads the whole file)
  bool use_mmap = true;          ///< map the file instead of reading it into memory
};

/// A static Ribbon filter: the set membership of a fixed set of keys, with no false negatives
/// and a false-positive rate of about 2^-r. Built in bulk (oneTBB), saved to and loaded from
/// one file format (mmap, zero copies), queried one key at a time or in batches.
///
/// A filter is built from either 64-bit integer keys or byte-string keys and must be queried
/// with the same kind (checked; a mismatch throws ribbon::error).
class filter {
 public:
  filter();
  ~filter();
  filter(filter&&) noexcept;
  filter& operator=(filter&&) noexcept;
  filter(const filter&) = delete;
  filter& operator=(const filter&) = delete;

  /// Builds from `count` integer keys. Duplicates are allowed. Throws ribbon::error on bad
  /// options.
  static filter build(const std::uint64_t* keys, std::uint64_t count,
                      const build_options& options = {}, build_stats* stats = nullptr);
  /// Builds from `count` byte-string keys.
  static filter build(const std::string_view* keys, std::uint64_t count,
                      const build_options& options = {}, build_stats* stats = nullptr);
  /// Builds from key hashes directly (already hashed with `params.seed`); for tools and tests.
  static filter build_from_hashes(const std::uint64_t* hashes, std::uint64_t count, key_kind keys,
                                  const build_options& options = {}, build_stats* stats = nullptr);

  /// Opens a filter file. Throws ribbon::error for a missing, unreadable, truncated, corrupt
  /// or unknown file, naming the file and the cause.
  static filter load(const std::string& path, const load_options& options = {});
  /// Adopts a file image held in memory (validated like a file).
  static filter from_bytes(const unsigned char* data, std::uint64_t size,
                           const load_options& options = {});

  /// Writes the filter atomically (temporary file, then rename).
  void save(const std::string& path) const;
  /// The file bytes.
  std::vector<unsigned char> serialize() const;

  /// Membership of one integer key: true for every key of the set.
  bool contains(std::uint64_t key) const {
    check_kind(key_kind::u64);
    return ref_.contains(key);
  }
  /// Membership of one byte-string key.
  bool contains(std::string_view key) const {
    check_kind(key_kind::bytes);
    return ref_.contains(key.data(), key.size());
  }
  /// Batched membership: out[i] = contains(keys[i]). Hashes ahead and prefetches; runs in
  /// parallel for large batches.
  void contains(const std::uint64_t* keys, std::uint64_t count, bool* out) const;
  void contains(const std::string_view* keys, std::uint64_t count, bool* out) const;

  /// The view used by queries (and usable in device code after copying the image).
  const filter_ref& ref() const { return ref_; }
  const filter_params& params() const { return ref_.params; }
  std::uint64_t key_count() const { return ref_.key_count; }
  std::uint32_t num_layers() const { return ref_.num_layers; }
  /// Per-layer geometry and key counts.
  const std::vector<format::layer_image>& layers() const { return layers_; }
  /// Size of the file image in bytes.
  std::uint64_t size_bytes() const;
  /// Bits per key of the file image (all sections, header included).
  double bits_per_key() const;

  /// Threads used by batched queries (0: all hardware threads).
  void set_query_threads(std::uint32_t threads) { query_threads_ = threads; }

 private:
  struct storage;
  void check_kind(key_kind expected) const {
    if (ref_.params.keys != expected) throw_kind_mismatch(expected);
  }
  [[noreturn]] void throw_kind_mismatch(key_kind expected) const;
  void adopt_image(const unsigned char* data, std::uint64_t size, const load_options& options,
                   const std::string& source);
  format::filter_image image() const;

  std::unique_ptr<storage> storage_;
  std::vector<format::layer_image> layers_;
  filter_ref ref_{};
  std::uint32_t query_threads_ = 0;

  friend struct builder_access;
};

}  // namespace ribbon
