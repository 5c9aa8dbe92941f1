// What `ribbon build` was asked (its command line), shared by its build paths:
// build_command.cpp (filters, through the bulk builder), retrieval_build.cpp (--values,
// --value-file), groups_build.cpp (--groups --out-dir) and set_build.cpp (--groups -o).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "input.hpp"
#include "progress.hpp"
#include "ribbon/bulk_builder.hpp"
#include "ribbon/filter.hpp"
#include "util.hpp"

namespace ribbon::cli {

struct build_settings {
  std::vector<std::string> inputs;
  std::string format = "lines";
  std::string output;
  /// The flags that are the library's options (-r, --fpr, -w, -t, --seed, --shard-size,
  /// --slack, --success-probability, --check-bits), parsed into them; build_options_of() adds
  /// those spelled as names.
  build_options options;
  std::string threshold_codes = "auto";
  std::string layout = "auto";  ///< the file's layout: auto, standard or compact
  // The CPU until bench/RESULTS.md records a passing bench/gpu_check.sh on a GPU.
  std::string backend = "cpu";
  std::string memory_limit = "0";
  std::string tmp_dir;
  bool progress = false;
  bool quiet = false;
  std::string variant = "bumped";
  bool values = false;        ///< inputs are key<TAB>value lines
  std::string value_file;     ///< little-endian 8-byte values, one per key
  bool groups = false;        ///< inputs are (group, key) pairs: a set, or a filter per group
  std::string out_dir;        ///< --groups: the directory of the groups' files (else -o: a set)
  bool group_names = true;    ///< --groups -o: write the groups' names (format version 7)
  std::string metadata_file;  ///< --metadata: bytes stored with the file (format version 7)
  // Which options were given (set after parsing).
  bool bits_given = false;
  bool slack_given = false;
  bool success_probability_given = false;
};

/// The library's options for these settings (every build path): `options` with the variant
/// and threshold codes they name.
build_options build_options_of(const build_settings& s, filter_variant variant);

/// What the streamed builds (filters, filter sets) share: the memory limit split between the
/// reader's chunks in flight (an eighth) and the library, the reader of the inputs, and the
/// bulk builder's options (which point at `progress`: the object does not move).
struct streamed_build {
  std::uint64_t memory_limit;  ///< --memory-limit, or the default where it is 0
  std::uint64_t reader_bytes;
  input_reader reader;
  build_progress progress;
  bulk_options options;

  streamed_build(const build_settings& s, input_format format, input_records records,
                 filter_variant variant, std::uint64_t memory_limit_option);
  streamed_build(const streamed_build&) = delete;
  streamed_build& operator=(const streamed_build&) = delete;
};

/// A streamed build into s.output: the bulk builder of `keys` with streamed.options, given its
/// keys by `add`, with a progress display and the summary (unless --quiet), within
/// `memory_limit` (the option: 0 for the default); the exit status.
int run_streamed_build(const build_settings& s, streamed_build& streamed, key_kind keys, bool gpu,
                       std::uint64_t memory_limit, clock_type::time_point start, progress_mode mode,
                       const std::function<void(bulk_builder&)>& add);

/// The bytes of --metadata's file (null without --metadata); ribbon::error naming the file.
std::shared_ptr<const std::string> metadata_of(const build_settings& s);

/// Prints the one-line summary of a finished build (unless --quiet).
void print_summary(const build_settings& s, const bulk_result& result, double seconds,
                   std::uint64_t input_bytes, bool gpu);

/// A retrieval build (--values or --value-file) into s.output: the exit status. With a
/// --memory-limit (not 0) keys and values stream into the bulk builder (on the CPU).
int run_retrieval_build(const build_settings& s, input_format format, filter_variant variant,
                        bool gpu, std::uint64_t memory_limit, clock_type::time_point start,
                        progress_mode mode);

/// Notes on stderr where the build may use more memory than --memory-limit says.
void note_memory_limit(const bulk_builder& builder, const bulk_options& options, bool gpu,
                       std::uint64_t memory_limit, std::uint64_t reader_bytes);

/// A --groups build into s.output, one filter set (format version 7 with its groups' names,
/// 6 without): the exit status. In
/// memory, or out of core beyond `memory_limit` (not 0), as filter builds are.
int run_set_build(const build_settings& s, input_format format, filter_variant variant,
                  std::uint64_t memory_limit, clock_type::time_point start, progress_mode mode);

/// A --groups build into s.out_dir, a file per group, on the GPU if `gpu` (the same files):
/// the exit status.
int run_groups_build(const build_settings& s, input_format format, filter_variant variant, bool gpu,
                     clock_type::time_point start, progress_mode mode);

/// The file name of a group's filter in --out-dir: the group's bytes with all but ASCII
/// letters, digits, '_', '-' and (not first) '.' written %XX, then ".ribbon"; "%.ribbon" for
/// the empty group. Distinct groups get distinct names.
std::string group_file_name(std::string_view group);

}  // namespace ribbon::cli
