/// @file filter.hpp
/// The owning filter type: build with oneTBB, save, load (mmap), query.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ribbon/detail/planned_queries.hpp"
#include "ribbon/error.hpp"
#include "ribbon/filter_ref.hpp"
#include "ribbon/format.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/options.hpp"
#include "ribbon/params.hpp"
#include "ribbon/summary.hpp"

namespace ribbon {

/// Wall-clock times of the build's stages (seconds) and layer counts.
struct build_stats {
  std::uint64_t input_keys = 0;     ///< keys given, repeats included
  std::uint64_t distinct_keys = 0;  ///< distinct key hashes: the filter's key count
  double hash_seconds = 0;          ///< layer 0: hash every key, count keys per shard
  double partition_seconds = 0;     ///< layer 0: hash again, scatter hashes by shard
  double distinct_seconds = 0;      ///< layer 0: per shard sort, drop repeated hashes
  double solve_seconds = 0;         ///< layer 0: per shard eliminate, back-substitute
  double gather_seconds = 0;        ///< layer 0: collect bumped hashes
  double later_layers_seconds = 0;  ///< layers 1.. (all stages)
  double total_seconds = 0;
  /// Thread-seconds (summed over threads) inside the solve stage, all layers.
  double sort_thread_seconds = 0;
  double eliminate_thread_seconds = 0;
  double back_substitute_thread_seconds = 0;
  std::uint32_t plain_layer_attempts = 0;  ///< tries of the final plain layer (1 = no retry)
  std::uint32_t standard_attempts = 0;     ///< tries of a standard layer 0 (1 = no retry)
};

/// How to open a filter file.
struct load_options {
  bool verify_checksums = true;  ///< check every section's checksum (reads the whole file)
  bool use_mmap = true;          ///< map the file instead of reading it into memory
};

/// Checks that filter::save() and bulk_builder::finish() can write `path`, before any work,
/// the way they write it: a symbolic link is followed (its target is replaced, through a
/// temporary file in the target's directory); a directory, device, FIFO or socket there is
/// refused; the path must be shorter than PATH_MAX; a temporary file must be creatable.
/// Temporary files of dead builds in that directory (killed before they could remove them)
/// are removed; a live build's never are (each holds a lock on its own). Throws
/// ribbon::error naming the path and the cause.
void check_output_path(const std::string& path);

/// A static Ribbon filter: the set membership of a fixed set of keys, with no false negatives
/// and a false-positive rate of about 2^-r. Built in bulk (oneTBB), saved to and loaded from
/// one file format (mmap, zero copies), queried one key at a time or in batches.
///
/// The same type holds a retrieval structure (a static function, built with values): lookup()
/// returns the r-bit value stored for a key of the set, and an arbitrary r-bit value for any
/// other key (it cannot tell them apart). contains() is for filters, lookup() for retrieval
/// (checked; a mismatch throws ribbon::error).
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

  /// Builds from `count` integer keys. A repeated key is stored once: the filter of a
  /// multiset is the filter of its set (key_count() counts distinct keys). Throws
  /// ribbon::error on bad options.
  static filter build(const std::uint64_t* keys, std::uint64_t count,
                      const build_options& options = {}, build_stats* stats = nullptr);
  /// Builds from `count` byte-string keys.
  static filter build(const std::string_view* keys, std::uint64_t count,
                      const build_options& options = {}, build_stats* stats = nullptr);
  /// Builds from `count` byte-string keys laid out as Arrow lays out string and binary arrays
  /// (Offset = std::int32_t) or large_string and large_binary ones (std::int64_t): key i is
  /// the bytes [offsets[i], offsets[i + 1]) of `data`, read in place (no view per key). The
  /// same filter as build() from views of the same keys. The offsets must not decrease (not
  /// checked).
  template <class Offset>
  static filter build_offsets(const Offset* offsets, const unsigned char* data, std::uint64_t count,
                              const build_options& options = {}, build_stats* stats = nullptr);
  /// Builds from key hashes directly (already hashed with `params.seed`); for tools and tests.
  static filter build_from_hashes(const std::uint64_t* hashes, std::uint64_t count, key_kind keys,
                                  const build_options& options = {}, build_stats* stats = nullptr);

  /// Builds a filter set: one filter answering "may group g hold key k?" for the `count`
  /// pairs (groups[i], keys[i]), groups named by 64-bit integers or byte strings (Group:
  /// std::uint64_t or std::string_view), keys of either kind (Key likewise). A repeated pair
  /// is stored once; group_count() counts the distinct groups. It is a filter over the pairs'
  /// hashes (pair_hash()), written as format version 6 (docs/format.md). Throws
  /// ribbon::error on bad options (retrieval variants have no sets).
  template <class Group, class Key>
  static filter build_set(const Group* groups, const Key* keys, std::uint64_t count,
                          const build_options& options = {}, build_stats* stats = nullptr);

  /// Builds a retrieval structure mapping keys[i] to values[i] (each below 2^r). A key given
  /// twice with the same value is fine; with two values it is an error
  /// (conflicting_values_error). options.variant bumped or standard picks the retrieval form.
  static filter build(const std::uint64_t* keys, const std::uint32_t* values, std::uint64_t count,
                      const build_options& options = {}, build_stats* stats = nullptr);
  static filter build(const std::string_view* keys, const std::uint32_t* values,
                      std::uint64_t count, const build_options& options = {},
                      build_stats* stats = nullptr);
  static filter build_from_hashes(const std::uint64_t* hashes, const std::uint32_t* values,
                                  std::uint64_t count, key_kind keys,
                                  const build_options& options = {}, build_stats* stats = nullptr);
  /// A retrieval structure from keys laid out as build_offsets() takes them.
  template <class Offset>
  static filter build_offsets(const Offset* offsets, const unsigned char* data,
                              const std::uint32_t* values, std::uint64_t count,
                              const build_options& options = {}, build_stats* stats = nullptr);

  /// Opens a filter file. Throws ribbon::error for a missing, unreadable, truncated, corrupt
  /// or unknown file, naming the file and the cause.
  static filter load(const std::string& path, const load_options& options = {});
  /// Adopts a file image held in memory (validated like a file).
  static filter from_bytes(const unsigned char* data, std::uint64_t size,
                           const load_options& options = {});
  /// Adopts the layers a builder made, in place: their sections stay in the host memory that
  /// `sections` keeps alive. Nothing is copied or checksummed (save() and serialize() compute
  /// the checksums as they write); the layers are trusted. For builders (the GPU builder's
  /// downloaded sections).
  static filter adopt(const filter_params& params, std::uint64_t key_count,
                      std::vector<format::layer_image> layers,
                      std::shared_ptr<const void> sections);

  /// Writes the filter atomically (temporary file, then rename), as check_output_path()
  /// describes. `automatic` keeps a loaded file's layout and writes a built filter compact
  /// when it is small (format::layout_choice).
  void save(const std::string& path,
            format::layout_choice layout = format::layout_choice::automatic) const;
  /// The file bytes (laid out as by save()).
  std::vector<unsigned char> serialize(
      format::layout_choice layout = format::layout_choice::automatic) const;
  /// What save() writes with `layout`: the parameters, layers and the layout resolved.
  format::filter_image image(format::layout_choice layout = format::layout_choice::automatic) const;

  /// Membership of one integer key: true for every key of the set. Filters, and retrieval
  /// structures with check bits (a key whose check bits match).
  bool contains(std::uint64_t key) const {
    check_query(key_kind::u64, false);
    return contains_hash(ref_.key_hash(key));
  }
  /// Membership of one byte-string key.
  bool contains(std::string_view key) const {
    check_query(key_kind::bytes, false);
    return contains_hash(ref_.key_hash(key.data(), key.size()));
  }
  /// Batched membership: out[i] = contains(keys[i]). Hashes ahead and prefetches; runs in
  /// parallel for large batches.
  void contains(const std::uint64_t* keys, std::uint64_t count, bool* out) const;
  void contains(const std::string_view* keys, std::uint64_t count, bool* out) const;

  /// Filter sets (build_set()): may group `group` hold `key`? True for every pair of the
  /// set, and for about 2^-r of the others, whatever group they name: a group never given
  /// answers as an empty one would. The group's and the key's kinds must be the set's
  /// (checked; a mismatch, or a filter that is not a set, throws ribbon::error).
  bool contains_in(std::uint64_t group, std::uint64_t key) const {
    return contains_pair(group, key);
  }
  bool contains_in(std::uint64_t group, std::string_view key) const {
    return contains_pair(group, key);
  }
  bool contains_in(std::string_view group, std::uint64_t key) const {
    return contains_pair(group, key);
  }
  bool contains_in(std::string_view group, std::string_view key) const {
    return contains_pair(group, key);
  }
  /// Batched: out[i] = contains_in(groups[i], keys[i]) (Group, Key: std::uint64_t or
  /// std::string_view). Hashes ahead and prefetches; in parallel for large batches.
  template <class Group, class Key>
  void contains_in(const Group* groups, const Key* keys, std::uint64_t count, bool* out) const;
  /// Batched in one group: out[i] = contains_in(group, keys[i]) (Key: std::uint64_t or
  /// std::string_view).
  template <class Key>
  void contains_in(std::uint64_t group, const Key* keys, std::uint64_t count, bool* out) const {
    contains_in_group(group, keys, count, out);
  }
  template <class Key>
  void contains_in(std::string_view group, const Key* keys, std::uint64_t count, bool* out) const {
    contains_in_group(group, keys, count, out);
  }

  /// Batched membership of byte-string keys laid out as Arrow lays out string and binary
  /// arrays (Offset = std::int32_t) or large_string and large_binary ones (std::int64_t): key
  /// i is the bytes [offsets[i], offsets[i + 1]) of `data`, read in place (no view per key).
  /// The offsets must not decrease (not checked).
  template <class Offset>
  void contains_offsets(const Offset* offsets, const unsigned char* data, std::uint64_t count,
                        bool* out) const;
  /// Batched retrieval of keys laid out as contains_offsets() takes them.
  template <class Offset>
  void lookup_offsets(const Offset* offsets, const unsigned char* data, std::uint64_t count,
                      std::uint32_t* out, bool* found = nullptr) const;

  /// Retrieval: the value stored for a key (arbitrary for keys not in the set; its value bits
  /// only, where the structure has check bits).
  std::uint32_t lookup(std::uint64_t key) const {
    check_query(key_kind::u64, true);
    return ref_.params.value_of(queries_.lookup(queries_.plan, ref_.key_hash(key)));
  }
  std::uint32_t lookup(std::string_view key) const {
    check_query(key_kind::bytes, true);
    return ref_.params.value_of(
        queries_.lookup(queries_.plan, ref_.key_hash(key.data(), key.size())));
  }
  /// Retrieval with check bits: the key's value, or nothing where its check bits do not
  /// match (a non-member, except with probability 2^-check_bits). Without check bits every
  /// key gets a value, as from lookup().
  std::optional<std::uint32_t> find(std::uint64_t key) const {
    check_query(key_kind::u64, true);
    return found_value(ref_.key_hash(key));
  }
  std::optional<std::uint32_t> find(std::string_view key) const {
    check_query(key_kind::bytes, true);
    return found_value(ref_.key_hash(key.data(), key.size()));
  }
  /// Batched retrieval: out[i] = lookup(keys[i]) and, where `found` is given, found[i] =
  /// find(keys[i]).has_value(); in parallel for large batches.
  void lookup(const std::uint64_t* keys, std::uint64_t count, std::uint32_t* out,
              bool* found = nullptr) const;
  void lookup(const std::string_view* keys, std::uint64_t count, std::uint32_t* out,
              bool* found = nullptr) const;

  /// What the file stores.
  filter_variant variant() const { return ref_.params.variant; }
  /// The format version of the file it was loaded from or will be saved as.
  std::uint32_t format_version() const {
    return format_version_ != 0 ? format_version_ : format::version_of(image());
  }
  /// How its bucket thresholds are stored (1+-bit; 2-bit in files of format versions 1, 2).
  threshold_encoding threshold_codes() const {
    return ref_.num_layers > 0 ? ref_.layers[0].geometry.codes : threshold_encoding::one_plus_bit;
  }
  bool is_retrieval() const { return ribbon::is_retrieval(ref_.params.variant); }
  /// Is this a filter set (queried with contains_in())?
  bool is_set() const { return ref_.params.is_set(); }
  /// A filter set's distinct groups that hold keys (0 for any other file).
  std::uint64_t group_count() const { return group_count_; }
  /// Does this set know the names of its groups (format version 7's names section)?
  bool has_group_names() const { return names_ != nullptr; }
  /// The names of every group the set's builder was given, sorted (those without keys too).
  /// Throws ribbon::error for a set without names (version 6) and for any other filter.
  const group_names& groups() const;
  /// Replaces the names the set will be saved with (e.g. to list groups that have no keys):
  /// of the set's group kind, and at least group_count() of them (checked). A builder gives a
  /// set the names of its groups unless build_options::group_names is false.
  void set_group_names(group_names names);
  /// Removes them: the set is saved as format version 6, as by the release before version 7.
  void clear_group_names() {
    names_.reset();
    format_version_ = 0;
  }

  /// For each of `count` keys, the groups that may hold it: the indices into groups() of the
  /// groups g for which contains_in(g, key) is true, ascending. Every group that holds the key
  /// is among them, and each other group with probability about 2^-r. Group hashes are
  /// computed once and every (group, key) probe goes through the batched query pipeline,
  /// keys in parallel for large batches. Key: std::uint64_t or std::string_view.
  struct group_matches {
    std::vector<std::uint64_t>
        offsets;  ///< count + 1: key i's groups are [offsets[i], offsets[i+1])
    std::vector<std::uint64_t> groups;  ///< indices into groups()
  };
  template <class Key>
  group_matches groups_of(const Key* keys, std::uint64_t count) const;

  /// Application metadata stored with the file (version 7), returned as it was given, or
  /// nothing where the file has none.
  std::optional<std::string_view> metadata() const {
    return metadata_ ? std::optional<std::string_view>(*metadata_) : std::nullopt;
  }
  /// Sets the metadata the filter will be saved with (the file becomes version 7).
  void set_metadata(std::string bytes) {
    metadata_ = std::make_shared<const std::string>(std::move(bytes));
    format_version_ = 0;
  }
  void clear_metadata() {
    metadata_.reset();
    format_version_ = 0;
  }

  /// The plan every query of this filter goes through (built when it was built or opened).
  const detail::planned_queries& queries() const { return queries_; }
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
  std::uint32_t query_threads() const { return query_threads_; }

 private:
  struct storage;
  /// A retrieval structure with check bits answers contains() too.
  void check_query(key_kind expected, bool retrieval) const {
    if (ref_.params.is_set()) throw_group_mismatch(group_kind::none);
    if (ref_.params.keys != expected) throw_kind_mismatch(expected);
    if (is_retrieval() != retrieval && !(is_retrieval() && ref_.params.check_bits != 0)) {
      throw_variant_mismatch(retrieval);
    }
  }
  /// Throws unless this is a filter set of groups and keys of these kinds.
  void check_set_query(group_kind groups, key_kind keys) const {
    if (ref_.params.groups != groups) throw_group_mismatch(groups);
    if (ref_.params.keys != keys) throw_kind_mismatch(keys);
  }
  /// How this set hashes its groups and keys.
  set_hasher set_hashes() const { return {ref_.params.seed, ref_.seed_mixed}; }
  template <class Group, class Key>
  bool contains_pair(const Group& group, const Key& key) const {
    check_set_query(group_kind_for<Group>, key_kind_for<Key>);
    return contains_hash(set_hashes().pair(group, key));
  }
  bool contains_hash(std::uint64_t hash) const {
    if (is_retrieval()) return ref_.params.check_passes(hash, queries_.lookup(queries_.plan, hash));
    return queries_.contains(queries_.plan, hash);
  }
  std::optional<std::uint32_t> found_value(std::uint64_t hash) const {
    const std::uint32_t stored = queries_.lookup(queries_.plan, hash);
    if (!ref_.params.check_passes(hash, stored)) return std::nullopt;
    return ref_.params.value_of(stored);
  }
  /// The batched queries of one group.
  template <class Group, class Key>
  void contains_in_group(const Group& group, const Key* keys, std::uint64_t count, bool* out) const;
  [[noreturn]] void throw_kind_mismatch(key_kind expected) const;
  /// `expected` none: a set queried as a filter; else a query naming groups of that kind.
  [[noreturn]] void throw_group_mismatch(group_kind expected) const;
  [[noreturn]] void throw_variant_mismatch(bool retrieval) const;
  void adopt_image(const unsigned char* data, std::uint64_t size, const load_options& options,
                   const std::string& source);

  std::unique_ptr<storage> storage_;
  std::vector<format::layer_image> layers_;
  filter_ref ref_{};
  detail::planned_queries queries_;  // of ref_: set wherever ref_ is
  std::uint32_t query_threads_ = 0;
  std::uint32_t format_version_ = 0;  // 0: built here or changed, the version it is saved as
  // A loaded file's layout, which `automatic` keeps when it is saved again.
  format::layout_choice loaded_layout_ = format::layout_choice::automatic;
  std::uint64_t group_count_ = 0;                // filter sets: distinct groups
  std::shared_ptr<const group_names> names_;     // filter sets: saved when not null
  std::shared_ptr<const std::string> metadata_;  // saved when not null

  friend struct builder_access;
};

/// What `f` holds, costs and promises: the figures of `ribbon info` (summary.hpp).
filter_summary summarize(const filter& f);

}  // namespace ribbon
