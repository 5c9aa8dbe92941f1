/// @file distributed.hpp
/// The steps of a distributed build (Spark, Dask, Ray, ...), each a function an engine calls
/// where it likes: plan a layer, hash keys, route hashes to shard ranges, solve a range into
/// a part file, finish the small last layers in one place, assemble the file.
///
/// A bumped layer's shards are independent, so its shard ranges can be solved on different
/// machines exactly as the out-of-core builder solves them one after another. The file is a
/// pure function of the distinct key hashes, the options and the seed: byte-identical to
/// filter::build() and `ribbon build` over the same distinct keys, whatever the partitioning,
/// the order of rows, the order in which ranges are solved, or task retries.
///
/// The driver's loop (docs/spark.md):
///   hash the keys as `ribbon build` does (hash_u64(key, seed_mix(seed)), hash_bytes(key, seed));
///   walk = ranged_layers_for(p, one_place_keys, rows);  // rows: key hashes, repeats included
///   while (step = walk.current()):
///     plan = plan_layer(p, step->index, step->keys, range_keys, task_slots);
///     the engine routes every layer-l hash (to_layer_hashes) to plan.range_of(hash) and runs
///     solve_range for each range (anywhere, any order, retried at will): it writes the
///     range's part file and returns the range's distinct and bumped hashes;
///     walk.solved(distinct, bumped): false if layer 0 met repeats (solve it again, replanned);
///   if (walk.rest()) finish_layers(p, walk.rest()->index, ...) builds the last layers in memory;
///   assemble() writes the file from the plans, the part files and the finished layers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ribbon/filter.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/layer_sequence.hpp"
#include "ribbon/params.hpp"

namespace ribbon::distributed {

/// The parameters `ribbon build` uses for these options and key kind. Throws ribbon::error
/// for invalid options and for variants other than the bumped filter (the distributed build
/// builds bumped filters only). `groups` other than none: a filter set (`ribbon build --groups
/// -o`), whose hashes are the pairs' (set_hasher::pair) and whose file names the group count
/// (assemble's and frame_file's `group_count`).
filter_params build_params(const build_options& options, key_kind keys,
                           group_kind groups = group_kind::none);

/// The parameters of `ribbon build --values` for these options: a bumped retrieval structure
/// storing options.result_bits value bits (and options.check_bits check bits) per key. Its
/// steps carry each hash's stored value beside it (the overloads below taking values).
filter_params retrieval_params(const build_options& options, key_kind keys);

/// Retrieval: turns the values of keys of hashes `key_hashes` (layer 0's hashes) into the
/// values the structure stores (filter_params::stored_value: the value under its key's check
/// bits), in place. Throws ribbon::error for a value of more than the value bits.
void to_stored_values(const filter_params& p, const std::uint64_t* key_hashes,
                      std::uint32_t* values, std::uint64_t n);

/// One distributed layer: its geometry and its cut into ranges of whole shards.
struct layer_plan {
  std::uint32_t layer = 0;
  std::uint64_t input_keys = 0;  ///< distinct keys that reach the layer
  std::uint64_t salt = 0;        ///< bumped_layer_salt(seed, layer)
  layer_geometry geometry;
  std::uint64_t shards_per_range = 1;

  std::uint64_t num_ranges() const {
    return detail::divide_round_up(geometry.num_shards(), shards_per_range);
  }
  /// The range of a layer hash (shards are monotone in the hash, so ranges are too).
  std::uint64_t range_of(std::uint64_t layer_hash) const {
    return geometry.shard_of(layer_hash) / shards_per_range;
  }
  std::uint64_t first_shard(std::uint64_t range) const { return range * shards_per_range; }
  std::uint64_t end_shard(std::uint64_t range) const {
    return std::min(geometry.num_shards(), (range + 1) * shards_per_range);
  }
  /// Bytes of range `range`'s part file: its threshold words, then its solution blocks.
  std::uint64_t threshold_bytes(const filter_params& p, std::uint64_t range) const;
  std::uint64_t solution_bytes(const filter_params& p, std::uint64_t range) const;
  std::uint64_t part_bytes(const filter_params& p, std::uint64_t range) const {
    return threshold_bytes(p, range) + solution_bytes(p, range);
  }
};

/// One layer of a build, as the layer sequence (ribbon/layer_sequence.hpp) plans it.
using layer_step = ribbon::layer_step;
/// The walk through the layers of a build in ranges, shared with the out-of-core builder.
using ranged_layers = ribbon::ranged_layers;

/// The walk of a distributed build of `rows` key hashes (repeats included) that finishes
/// layers of at most `one_place_keys` keys in one place: layer 0 and the larger bumped layers
/// in shard ranges. The driver asks it for each layer and reports each one solved.
ranged_layers ranged_layers_for(const filter_params& p, std::uint64_t one_place_keys,
                                std::uint64_t rows);

/// Plans bumped layer `layer` for `keys` distinct keys in ranges of at most about
/// `range_keys` keys (whole shards, at least one). With `task_slots` (the range tasks that run
/// at once) above 1, the ranges are cut smaller where that fills the last wave of tasks: as
/// many waves, each range no larger, none idle for want of one (7 ranges on 2 slots become
/// 8). The file does not depend on the ranges. Throws ribbon::error if the layer is not one in
/// ranges (ranged_layers::current()).
layer_plan plan_layer(const filter_params& p, std::uint32_t layer, std::uint64_t keys,
                      std::uint64_t range_keys, std::uint64_t task_slots = 1);

/// Turns layer-(l-1) hashes (the bumped hashes a range returns) into layer-l hashes, in
/// place; layer 0's hashes are the key hashes themselves (nothing to do).
void to_layer_hashes(const layer_plan& plan, std::uint64_t* hashes, std::uint64_t n);

/// Routes layer hashes to their ranges: ranges[i] = plan.range_of(hashes[i]).
void route(const layer_plan& plan, const std::uint64_t* hashes, std::uint64_t n,
           std::uint64_t* ranges);

/// Groups hashes by range, in place (stable): on return the hashes of range r are at
/// [offsets[r], offsets[r + 1]); offsets gets plan.num_ranges() + 1 entries.
void group_by_range(const layer_plan& plan, std::uint64_t* hashes, std::uint64_t n,
                    std::vector<std::uint64_t>& offsets);
/// Retrieval: the same, each hash's value moved with it.
void group_by_range(const layer_plan& plan, std::uint64_t* hashes, std::uint32_t* values,
                    std::uint64_t n, std::vector<std::uint64_t>& offsets);

/// What solve_range() did.
struct range_outcome {
  std::uint64_t received_keys = 0;    ///< hashes given, repeats included
  std::uint64_t distinct_keys = 0;    ///< distinct hashes (what the layer's key count counts)
  bool solved = false;                ///< false: skipped (repeats found and skip_if_repeats)
  std::vector<std::uint64_t> bumped;  ///< the range's bumped layer hashes, in shard order
  std::vector<std::uint32_t> bumped_values;  ///< retrieval: their stored values
  std::vector<unsigned char> part;           ///< the part's bytes, when solve_range wrote no file
};

/// Solves range `range` of a layer over `hashes` (layer hashes of that range, in any order,
/// repeats allowed; a hash of another range is an error) and writes its part file to
/// `part_path` (a temporary name in the same directory, then a rename, so a retried or
/// speculative task leaves one complete part). Repeated hashes are dropped first. With
/// `skip_if_repeats`, a range that finds repeats returns their count and solves nothing: the
/// layer's key count was too high (the engine planned layer 0 before it knew the distinct
/// count) and the layer must be planned again. `threads`: worker threads (0: all). An empty
/// `part_path` writes no file: the part's bytes come back in range_outcome::part (for an
/// engine that stores parts itself, e.g. in an object store).
range_outcome solve_range(const filter_params& p, const layer_plan& plan, std::uint64_t range,
                          std::vector<std::uint64_t> hashes, const std::string& part_path,
                          bool skip_if_repeats = false, std::uint32_t threads = 0);
/// Retrieval (p from retrieval_params): the same over hashes and their stored values
/// (to_stored_values; a bumped range returns them in bumped_values). A hash given twice with
/// one value counts once; with two, conflicting_values_error names the key (integer keys) or
/// its key hash, whatever the order (conflicts are found in layer 0, whose hashes are the
/// keys').
range_outcome solve_range(const filter_params& p, const layer_plan& plan, std::uint64_t range,
                          std::vector<std::uint64_t> hashes, std::vector<std::uint32_t> values,
                          const std::string& part_path, bool skip_if_repeats = false,
                          std::uint32_t threads = 0);

/// The last layers of a build, built in memory by the in-memory builder.
class finished_layers {
 public:
  finished_layers();
  ~finished_layers();
  finished_layers(finished_layers&&) noexcept;
  finished_layers& operator=(finished_layers&&) noexcept;
  const std::vector<format::layer_image>& layers() const;

 private:
  template <class Record>
  friend finished_layers finish_records(const filter_params&, std::uint32_t, const Record*,
                                        std::uint64_t, std::uint32_t);
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Builds layers `first_layer`, ... from the `n` bumped hashes of layer first_layer - 1
/// (layer-(first_layer - 1) hashes, in any order), on `threads` threads (0: all).
finished_layers finish_layers(const filter_params& p, std::uint32_t first_layer,
                              const std::uint64_t* bumped_hashes, std::uint64_t n,
                              std::uint32_t threads = 0);
/// Retrieval: the same from the bumped hashes and their stored values.
finished_layers finish_layers(const filter_params& p, std::uint32_t first_layer,
                              const std::uint64_t* bumped_hashes,
                              const std::uint32_t* bumped_values, std::uint64_t n,
                              std::uint32_t threads = 0);

/// A distributed layer as assemble() needs it: its plan, its bumped count (the sum of its
/// ranges') and its part files in range order.
struct solved_layer {
  layer_plan plan;
  std::uint64_t bumped_keys = 0;
  std::vector<std::string> parts;
};

/// XXH64 of a distributed layer's two sections (its parts' windows in range order).
struct section_checksums {
  std::uint64_t thresholds = 0;
  std::uint64_t solution = 0;
};

/// Writes the file: header, the distributed layers (their sections concatenated from the part
/// files, whose sizes are checked), then the finished layers; to a temporary file renamed
/// over `path`: the steps below (frame_file, checksum_sections, write_file) run in one place.
/// `key_count` is layer 0's input_keys (or 0 for an empty build); `group_count` a filter set's
/// distinct groups (0 for a filter), `names` the names of its groups (null: none, format version 6)
/// and `metadata` the application's bytes (null: none).
void assemble(const std::string& path, const filter_params& p, std::uint64_t key_count,
              const std::vector<solved_layer>& layers, const finished_layers* rest,
              std::uint64_t group_count = 0, std::shared_ptr<const group_names> names = nullptr,
              std::shared_ptr<const std::string> metadata = nullptr);

/// The directory of a distributed build's parts (and of its file while assembled) beside a
/// local output: `.NAME.ribbon-parts-XXXXXX`, created and locked for the life of this object
/// by the builders' temporary-file protocol (cpu/src/temp_files.hpp): a later build removes
/// it only once its lock is free (its driver dead) and if it holds only a build's files, or
/// is empty and older than a minute (between creating and locking it). Creating one first
/// removes the dead builds' parts directories of the same output. Removed with its files
/// when destroyed (or by remove()). `before_locking(path)`: see detail::locked_temp (tests).
class parts_directory {
 public:
  explicit parts_directory(const std::string& output,
                           const std::function<void(const std::string&)>& before_locking = nullptr);
  ~parts_directory();
  parts_directory(const parts_directory&) = delete;
  parts_directory& operator=(const parts_directory&) = delete;
  const std::string& path() const;
  /// Removes its files and itself, and drops the lock (again: nothing).
  void remove() noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// The name prefix of the parts directories of builds of `output`: ".NAME.ribbon-parts-".
std::string parts_prefix(const std::string& output);

/// Bytes [offset, offset + bytes) of part file `part` (of part_bytes bytes), which go to the
/// file at file_offset: a part's thresholds or its solution blocks.
struct part_window {
  std::string part;
  std::uint64_t part_bytes = 0;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
  std::uint64_t file_offset = 0;
};

/// Where the assembly reads the part files: local_part_files, or an engine's own storage (an
/// object store).
class part_files {
 public:
  virtual ~part_files() = default;
  /// Passes window w's bytes to sink, in pieces of at most buffer.size() bytes. Throws
  /// ribbon::error if the part is not w.part_bytes long (another build's, damaged or cut
  /// short) or cannot be read.
  virtual void read(const part_window& w, std::vector<unsigned char>& buffer,
                    const format::byte_sink& sink) = 0;
};

/// Part files on a local (or mounted, shared) file system.
class local_part_files final : public part_files {
 public:
  void read(const part_window& w, std::vector<unsigned char>& buffer,
            const format::byte_sink& sink) override;
};

/// Where the assembly writes the file: bytes at their offsets. A writer of a stream (an
/// object store's upload) takes them in file order only (write_file()).
class file_writer {
 public:
  virtual ~file_writer() = default;
  virtual void write(std::uint64_t offset, const void* data, std::size_t size) = 0;
};

/// A local file written in place at any offsets: several writers (the tasks of one assembly,
/// on one machine or on a shared file system) fill their windows of it at once.
class local_file_writer final : public file_writer {
 public:
  /// Creates `path` (a new file, 0666 under the umask, replacing none) with all its `bytes`
  /// allocated: a full disk fails here, not as a short write later. Throws ribbon::error.
  static void create(const std::string& path, std::uint64_t bytes);
  /// Opens `path` (made by create()) for writing. Throws ribbon::error.
  explicit local_file_writer(const std::string& path);
  ~local_file_writer() override;
  local_file_writer(const local_file_writer&) = delete;
  local_file_writer& operator=(const local_file_writer&) = delete;
  void write(std::uint64_t offset, const void* data, std::size_t size) override;
  /// Flushes the file to disk (fsync). Throws ribbon::error.
  void sync();

 private:
  std::string path_;
  int fd_ = -1;
};

/// The file around its distributed layers' sections, for engines that place those sections
/// themselves (range tasks writing their windows at their offsets, or one writer streaming
/// them): the bytes of the header, the descriptors (with the checksums in `layers`), the
/// zero padding and the finished layers, and where each distributed section goes.
struct file_frame {
  struct piece {
    std::uint64_t offset = 0;
    std::vector<unsigned char> bytes;
  };
  struct hole {
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;
    std::uint32_t layer = 0;
    format::section which = format::section::thresholds;
    /// The parts' windows that make the section, in range order (empty when the layers
    /// given to frame_file() named no parts).
    std::vector<part_window> windows;
  };
  std::uint64_t file_bytes = 0;
  std::vector<piece> pieces;  ///< in file order; with the holes, they tile the file
  std::vector<hole> holes;    ///< the distributed layers' sections, in file order
};

/// The frame of the file that assemble() would write, `checksums[l]` being layer l's
/// (`layers[l].parts` are not read: they name the holes' windows when given for every range).
file_frame frame_file(const filter_params& p, std::uint64_t key_count,
                      const std::vector<solved_layer>& layers,
                      const std::vector<section_checksums>& checksums, const finished_layers* rest,
                      std::uint64_t group_count = 0,
                      std::shared_ptr<const group_names> names = nullptr,
                      std::shared_ptr<const std::string> metadata = nullptr);

/// The assembly's steps over a frame, which an engine may run in different places: the
/// sections' checksums (one pass over the parts, in order: XXH64 cannot be combined from
/// pieces), then the sections written at their offsets (a writer per part, at once, on a
/// file that takes positioned writes) and the pieces; or the whole file in order (a stream).

/// Layer l's section checksums, reading each section's windows in order.
std::vector<section_checksums> checksum_sections(const file_frame& frame, part_files& parts);

/// The holes' windows grouped by part (the file's order within each part, parts in file
/// order): the work of one writer each.
std::vector<std::vector<part_window>> windows_by_part(const file_frame& frame);

/// Copies windows of parts to their offsets in the file.
void copy_windows(const std::vector<part_window>& windows, part_files& parts, file_writer& out);

/// Writes the frame's pieces (header, descriptors, padding, finished layers) at their offsets.
void write_pieces(const file_frame& frame, file_writer& out);

/// Writes the whole file in file order: the pieces and the sections' windows.
void write_file(const file_frame& frame, part_files& parts, file_writer& out);

}  // namespace ribbon::distributed
