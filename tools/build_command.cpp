// `ribbon build`: keys from files or stdin to one filter file, in bounded memory.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "build_settings.hpp"
#include "commands.hpp"
#include "gpu_backend.hpp"
#include "input.hpp"
#include "progress.hpp"
#include "ribbon/bulk_builder.hpp"
#include "ribbon/error.hpp"
#include "ribbon/filter.hpp"
#include "ribbon/options.hpp"
#include "util.hpp"

namespace ribbon::cli {
namespace {

/// Whether `input` ('-': stdin) is the file `output` names.
bool is_same_file(const std::string& input, const struct stat& output) {
  struct stat st;
  const int status = input == "-" ? ::fstat(STDIN_FILENO, &st) : ::stat(input.c_str(), &st);
  return status == 0 && st.st_dev == output.st_dev && st.st_ino == output.st_ino;
}

/// Fails before reading any input if the output is one of the inputs (it would be replaced
/// while it is read) or cannot be written (the library's checks: kind of file, path length,
/// a temporary file next to it).
void check_output(const build_settings& s) {
  struct stat output;
  if (::stat(s.output.c_str(), &output) == 0) {  // follows links, as the writer does
    std::vector<std::string> read = s.inputs;
    if (!s.value_file.empty()) read.push_back(s.value_file);
    for (const std::string& input : read) {
      if (is_same_file(input, output)) {
        throw error("-o " + s.output + " is the input " + (input == "-" ? "<stdin>" : input) +
                    ": give another output path (the input would be replaced)");
      }
    }
  }
  check_output_path(s.output);
}

/// The --variant to build, checked against the other options: with values, bumped and standard
/// become their retrieval variants.
filter_variant checked_variant(const build_settings& s, input_format format) {
  filter_variant variant = parse_variant(s.variant);
  const bool with_values = s.values || !s.value_file.empty();
  if (with_values) {
    if (variant == filter_variant::homogeneous) {
      throw error(
          "--variant homogeneous stores no values: use --variant bumped (retrieval) or "
          "standard (standard-retrieval) with --values or --value-file");
    }
    if (s.options.target_fpr != 0) {
      throw error(
          "--fpr is for filters: a build with values stores --bits bits per value "
          "(default: as many as the largest value needs)");
    }
    if (s.values && format == input_format::u64) {
      throw error(
          "--values reads key<TAB>value text lines (--format lines or hex64): give the "
          "values of --format u64 keys with --value-file FILE");
    }
    if (variant == filter_variant::bumped) variant = filter_variant::bumped_retrieval;
    if (variant == filter_variant::standard) variant = filter_variant::standard_retrieval;
  } else if (s.options.check_bits != 0) {
    throw error(
        "--check-bits is for builds with values (--values or --value-file): a filter's "
        "--bits already are its check");
  } else if (is_retrieval(variant)) {
    throw error("--variant " + s.variant +
                " stores a value per key: give --values (key<TAB>value lines) or --value-file "
                "FILE");
  }
  if (s.slack_given && uses_bumping(variant)) {
    throw error("--slack is for --variant standard, standard-retrieval or homogeneous");
  }
  if (s.success_probability_given && variant != filter_variant::standard &&
      variant != filter_variant::standard_retrieval) {
    throw error("--success-probability is for --variant standard or standard-retrieval");
  }
  return variant;
}

}  // namespace

/// Notes on stderr where the build may use more memory than --memory-limit says.
void note_memory_limit(const bulk_builder& builder, const bulk_options& options, bool gpu,
                       std::uint64_t memory_limit, std::uint64_t reader_bytes) {
  if (gpu && memory_limit != 0) {
    std::fprintf(stderr,
                 "ribbon build: note: --memory-limit does not count the GPU backend's host and "
                 "device buffers\n");
  }
  if (builder.memory_floor() > options.memory_limit) {
    const filter_params& p = builder.params();
    std::fprintf(stderr, "%s\n",
                 ("ribbon build: note: --memory-limit is below the " +
                  format_bytes(static_cast<double>(builder.memory_floor() + reader_bytes)) +
                  " this build needs at least (-w " + std::to_string(p.width) + ", -r " +
                  std::to_string(p.result_bits) + ", shard size " + std::to_string(p.shard_size) +
                  "): it spills, and may use up to that")
                     .c_str());
  }
}

streamed_build::streamed_build(const build_settings& s, input_format format, input_records records,
                               filter_variant variant, std::uint64_t memory_limit_option)
    : memory_limit(memory_limit_option != 0 ? memory_limit_option : default_memory_limit()),
      reader_bytes(memory_limit / 8),
      reader(s.inputs, format, records,
             input_reader::chunk_bytes_within(reader_bytes, s.options.threads, format)) {
  options.build = build_options_of(s, variant);
  options.layout = file_layout_of(s.layout);
  options.memory_limit = memory_limit - reader_bytes;
  // The reader keeps an eighth: a limit the builder names is one of --memory-limit.
  options.limit_of_caller = [](std::uint64_t limit) { return limit - limit / 8; };
  options.tmp_dir = s.tmp_dir;
  options.expected_keys = reader.estimated_keys();
  options.progress = &progress;
  options.metadata = metadata_of(s);
}

int run_streamed_build(const build_settings& s, streamed_build& streamed, key_kind keys, bool gpu,
                       std::uint64_t memory_limit, clock_type::time_point start, progress_mode mode,
                       const std::function<void(bulk_builder&)>& add) {
  // If reading fails, finish() is never called and the builder's destructor removes its
  // temporary files: nothing is written.
  bulk_builder builder(keys, streamed.options);
  if (mode != progress_mode::quiet) {
    note_memory_limit(builder, streamed.options, gpu, memory_limit, streamed.reader_bytes);
  }
  input_reader& reader = streamed.reader;
  progress_display display(mode, "build", &reader.counters(), reader.total_bytes(),
                           &streamed.progress);
  add(builder);
  const bulk_result result = builder.finish(s.output);
  display.stop(true);
  if (mode != progress_mode::quiet) {
    print_summary(s, result, seconds_since(start),
                  reader.counters().bytes.load(std::memory_order_relaxed), gpu);
  }
  return 0;
}

std::shared_ptr<const std::string> metadata_of(const build_settings& s) {
  if (s.metadata_file.empty()) return nullptr;
  std::FILE* file = std::fopen(s.metadata_file.c_str(), "rb");
  if (!file)
    throw error("--metadata: cannot open " + s.metadata_file + ": " + std::strerror(errno));
  std::string bytes;
  char buffer[1 << 16];
  std::size_t got;
  while ((got = std::fread(buffer, 1, sizeof(buffer), file)) > 0) bytes.append(buffer, got);
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) throw error("--metadata: cannot read " + s.metadata_file);
  return std::make_shared<const std::string>(std::move(bytes));
}

namespace {

/// A filter build (no values) with the bulk builder, within `memory_limit` (0: the default).
int run_bulk_build(const build_settings& s, input_format format, filter_variant variant, bool gpu,
                   std::uint64_t memory_limit, clock_type::time_point start, progress_mode mode) {
  streamed_build streamed(s, format, input_records::keys, variant, memory_limit);
  if (gpu) configure_gpu_build(streamed.options);
  return run_streamed_build(
      s, streamed, key_kind_of(format), gpu, memory_limit, start, mode, [&](bulk_builder& builder) {
        streamed.reader.run(
            s.options.threads, parse_output::hashes, builder.params().seed, [](input_chunk&) {},
            [&](input_chunk& c) { builder.add_hashes(c.values.data(), c.values.size()); });
      });
}

/// What --groups builds take: -o (a filter set) or --out-dir (a file per group, on the CPU or
/// the GPU), no values; a memory limit only for a set (the files per group are built in
/// memory).
void check_groups_options(const build_settings& s, bool with_values, bool gpu,
                          std::uint64_t memory_limit) {
  if (s.output.empty() == s.out_dir.empty()) {
    throw error(
        "--groups needs -o FILE (one filter set answering (group, key)) or --out-dir DIR (a "
        "filter file per group), not both");
  }
  if (with_values) throw error("--groups builds filters: --values and --value-file are not for it");
  if (!s.out_dir.empty() && !s.metadata_file.empty())
    throw error("--metadata is for one file (-o), not for --groups --out-dir");
  if (gpu && s.out_dir.empty()) {
    throw error("--groups -o: a filter set builds on the CPU; leave out --backend gpu");
  }
  if (memory_limit != 0 && !s.out_dir.empty()) {
    throw error(
        "--memory-limit: --groups --out-dir builds run in memory and cannot honour a limit; "
        "leave it out (a filter set, -o, can)");
  }
  if (!s.group_names && file_layout_of(s.layout) == format::layout_choice::compact) {
    throw error(
        "--layout compact with --no-group-names: a compact set is format version 7, and "
        "--no-group-names is for readers of version 6 (standard layout only)");
  }
}

int run_build(build_settings s) {
  const clock_type::time_point start = clock_type::now();
  const progress_mode mode = choose_progress_mode(s.progress, s.quiet);
  const bool gpu = use_gpu(s.backend);
  const input_format format = parse_input_format(s.format);
  const std::uint64_t memory_limit = parse_size(s.memory_limit, "--memory-limit");
  const filter_variant variant = checked_variant(s, format);
  const bool with_values = s.values || !s.value_file.empty();
  if (s.inputs.empty()) {
    if (::isatty(STDIN_FILENO)) throw error("no input: give -i FILE or pipe keys into stdin");
    s.inputs.push_back("-");
  }
  if (with_values && memory_limit != 0 && gpu) {
    throw error(
        "--memory-limit with values: streamed builds with values run on the CPU; leave out "
        "--backend gpu (or --memory-limit, to build in memory on the GPU)");
  }
  if (s.groups) {
    check_groups_options(s, with_values, gpu, memory_limit);
    remove_temp_files_on_signals();
    if (s.out_dir.empty()) {
      check_output(s);
      return run_set_build(s, format, variant, memory_limit, start, mode);
    }
    return run_groups_build(s, format, variant, gpu, start, mode);
  }
  if (!s.out_dir.empty()) throw error("--out-dir is for --groups builds (a file per group)");
  if (s.output.empty()) throw error("-o,--output is required: the filter file to write");
  check_output(s);
  remove_temp_files_on_signals();
  if (with_values) return run_retrieval_build(s, format, variant, gpu, memory_limit, start, mode);
  return run_bulk_build(s, format, variant, gpu, memory_limit, start, mode);
}

/// -i, --format and -o.
void add_input_output_options(CLI::App* cmd, build_settings& s) {
  cmd->add_option("-i,--input", s.inputs,
                  "input file, '-' for stdin; repeat for several (read in order as one set). "
                  "Default: stdin");
  cmd->add_option("--format", s.format,
                  "lines: one key per line (bytes; a trailing \\r is dropped; empty lines are "
                  "keys); u64: little-endian 8-byte integers; hex64: one hex integer per line")
      ->check(CLI::IsMember({"lines", "u64", "hex64"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", s.output,
                  "filter file to write (replaced atomically); required but with --groups "
                  "--out-dir");
  cmd->add_flag("--groups", s.groups,
                "the input holds (group, key) pairs, group<TAB>key lines (key as --format lines "
                "or hex64; split at the first tab) or, with --format u64, pairs of 8-byte "
                "integers (group, key): with -o one filter set answering (group, key) (`ribbon "
                "query --group`), with --out-dir one filter file per group");
  cmd->add_flag("!--no-group-names", s.group_names,
                "--groups -o: leave the groups' names out of the set (format version 6, for "
                "readers of the release before version 7; `ribbon query --groups-of` then "
                "cannot answer)");
  cmd->add_option("--metadata", s.metadata_file,
                  "a file whose bytes (e.g. JSON) are stored with the filter as they are and "
                  "returned by every reader (`ribbon info` shows their size); the file is "
                  "format version 7");
  cmd->add_option("--out-dir", s.out_dir,
                  "--groups: directory of the groups' files, GROUP.ribbon (bytes other than "
                  "letters, digits, _ - . written %XX; created if missing; files replaced "
                  "atomically)");
}

/// The options whose presence run_build needs to know (they have defaults).
struct given_options {
  CLI::Option* bits = nullptr;
  CLI::Option* slack = nullptr;
  CLI::Option* success_probability = nullptr;
};

/// What the file stores: --fpr or -r, --variant, its --slack or --success-probability, and
/// --values or --value-file for a retrieval structure.
given_options add_filter_kind_options(CLI::App* cmd, build_settings& s) {
  given_options given;
  CLI::Option* fpr =
      cmd->add_option("--fpr", s.options.target_fpr,
                      "target false-positive rate P: fractional bits per key (r and r + 1 bits "
                      "in a mix of blocks, 2^-(r+1) < P <= 2^-r), about log2(1/P) bits per key")
          ->check(CLI::Range(1e-12, 0.99));
  given.bits = cmd->add_option("-r,--bits", s.options.result_bits,
                               "result bits r: false-positive rate 2^-r (default 8); with "
                               "values, the bits of each value (default: as many as the "
                               "largest value needs)")
                   ->check(CLI::Range(1, 32));
  fpr->excludes(given.bits);
  cmd->add_option("--variant", s.variant,
                  "bumped (smallest), standard (no bumping, retried on failure), homogeneous "
                  "(never fails, a little higher FPR), retrieval or standard-retrieval (a "
                  "value per key: needs --values or --value-file, which imply them)")
      ->check(CLI::IsMember(variant_names()))
      ->capture_default_str();
  given.slack =
      cmd->add_option("--slack", s.options.slack,
                      "standard and homogeneous variants: eps, layer 0 has (1 + eps) n slots "
                      "(standard: (0, 4], default from --success-probability; homogeneous: "
                      "(-0.5, 4], default 0.01)");
  given.success_probability = cmd->add_option(
      "--success-probability", s.options.success_probability,
      "standard variants: probability that the first try succeeds, sets the slack (default "
      "0.95)");
  given.slack->excludes(given.success_probability);
  CLI::Option* values = cmd->add_flag(
      "--values", s.values,
      "build a retrieval structure (static function): each line is key<TAB>value (split at "
      "the last tab; value decimal or 0x hex, below 2^32); keys as --format lines or hex64");
  CLI::Option* value_file =
      cmd->add_option("--value-file", s.value_file,
                      "build a retrieval structure: little-endian 8-byte values (below 2^32), "
                      "one per key in input order (any --format)");
  values->excludes(value_file);
  fpr->excludes(values);
  fpr->excludes(value_file);
  cmd->add_option("--check-bits", s.options.check_bits,
                  "with values: C fingerprint bits stored above each value (--bits + C <= 32), "
                  "so that a lookup tells a key not in the set apart except with probability "
                  "2^-C (`ribbon query --values` prints only keys found; format version 4, or 5 "
                  "for small structures)")
      ->check(CLI::Range(1, 31));
  return given;
}

/// How the file is laid out and hashed, and the threads that build it: -w, -t, --seed,
/// --shard-size, --threshold-codes.
void add_layout_options(CLI::App* cmd, build_settings& s) {
  cmd->add_option("-w,--width", s.options.width, "ribbon width: 32, 64 or 128")
      ->check(CLI::IsMember({32, 64, 128}))
      ->capture_default_str();
  cmd->add_option("-t,--threads", s.options.threads,
                  "threads (default 0: all cores; at most 8 per core)")
      ->transform(thread_option());
  cmd->add_option("--seed", s.options.seed,
                  "hash seed, 0 to 2^64 - 1 (the file is a function of keys and seed)")
      ->transform(seed_option())
      ->capture_default_str();
  cmd->add_option("--shard-size", s.options.shard_size,
                  "start positions per shard, a power of two (default 0: 131072); recorded in "
                  "the file. Smaller shards: more parallelism, a little more space")
      ->transform(shard_size_option());
  add_threshold_codes_option(cmd, s.threshold_codes);
  cmd->add_option("--layout", s.layout,
                  "the file's frame: compact (format version 5: 56 bytes and 24 a layer, for "
                  "small filters), standard (128 bytes and 128 a layer, versions 1-4, which "
                  "older readers read) or auto (compact when the sections take at most 1 MiB)")
      ->check(CLI::IsMember({"auto", "standard", "compact"}))
      ->capture_default_str();
}

/// Where the build runs and what it may use: --backend, --memory-limit, --tmp-dir.
void add_resource_options(CLI::App* cmd, build_settings& s) {
  cmd->add_option("--backend", s.backend,
                  "cpu, gpu or auto (the GPU where this build has CUDA and a device is present). "
                  "The default is cpu: the GPU builder writes the same bytes but is not yet "
                  "measured on a GPU. On the GPU, inputs larger than device memory are built "
                  "out of core, one shard range at a time")
      ->check(CLI::IsMember(backend_names()))
      ->capture_default_str();
  cmd->add_option("--memory-limit", s.memory_limit,
                  "memory the build may use, e.g. 512M, 8G (1024-based); beyond it key hashes "
                  "are spilled to --tmp-dir. Default 0: half the machine's (or cgroup's) memory")
      ->capture_default_str();
  cmd->add_option("--tmp-dir", s.tmp_dir, "directory for spill files (default $TMPDIR or /tmp)");
}

/// --progress and -q.
void add_display_options(CLI::App* cmd, build_settings& s) {
  CLI::Option* progress =
      cmd->add_flag("--progress", s.progress, "live progress line on stderr even if not a tty");
  CLI::Option* quiet = cmd->add_flag("-q,--quiet", s.quiet, "print nothing but errors");
  progress->excludes(quiet);
}

}  // namespace

/// The library's options for these settings (every build path).
build_options build_options_of(const build_settings& s, filter_variant variant) {
  build_options options = s.options;
  options.variant = variant;
  options.threshold_codes = threshold_codes_of(s.threshold_codes);
  return options;
}

void print_summary(const build_settings& s, const bulk_result& result, double seconds,
                   std::uint64_t input_bytes, bool gpu) {
  const filter_params& p = result.params;
  const std::uint32_t r = p.result_bits;
  const bool retrieval = is_retrieval(p.variant);
  const bool fractional = !retrieval && p.extra_bit_fraction != 0;
  const double fpr = expected_fpr(p);
  const double keys = static_cast<double>(result.input_keys);
  const double rate = seconds > 0 ? 1.0 / seconds : 0;
  // Repeated keys are stored once: bits/key and the overhead are per distinct key.
  std::string line = "ribbon build: " + s.output + ": ";
  if (p.is_set()) {
    line += "a filter set of " + std::to_string(result.group_count) + " groups, " +
            std::to_string(result.input_keys) + " pairs (" + std::to_string(result.key_count) +
            " distinct), ";
  } else {
    line += std::to_string(result.input_keys) + " keys (" + std::to_string(result.key_count) +
            " distinct), ";
  }
  line += std::to_string(result.file_bytes) + " bytes";
  char text[160];
  if (result.key_count > 0) {
    const double bits_per_key = result.bits_per_key();
    if (fractional) {
      // r and r + 1 bits in a mix of blocks: the overhead over the information-theoretic
      // minimum for the expected rate.
      const double minimum = -std::log2(fpr);
      std::snprintf(text, sizeof(text), ", %.3f bits/key (%.2f%% over log2(1/FPR) = %.3f)",
                    bits_per_key, 100.0 * (bits_per_key / minimum - 1.0), minimum);
    } else {
      std::snprintf(text, sizeof(text), ", %.3f bits/key (%.2f%% over r=%u)", bits_per_key,
                    100.0 * (bits_per_key / r - 1.0), r);
    }
    line += text;
  }
  if (retrieval) {
    line += std::string(", ") + variant_name(p.variant) + ", " + std::to_string(p.value_bits()) +
            "-bit values";
    if (p.check_bits != 0) line += " + " + std::to_string(p.check_bits) + " check bits";
  } else if (fractional) {
    std::snprintf(text, sizeof(text), ", expected FPR %.3g (r=%u and r=%u blocks)", fpr, r, r + 1);
    line += text;
  } else {
    std::snprintf(text, sizeof(text), ", expected FPR 2^-%u = %.3g", r, fpr);
    line += text;
  }
  if (!retrieval && p.variant != filter_variant::bumped) {
    line += std::string(", ") + variant_name(p.variant);
  }
  const std::uint32_t tries = result.stats.standard_attempts;
  if (!uses_bumping(p.variant) && p.variant != filter_variant::homogeneous && tries != 0) {
    line += ", " + std::to_string(tries) + (tries == 1 ? " try" : " tries");
  }
  std::snprintf(text, sizeof(text), ", %.2f s, ", seconds);
  line += text;
  line += format_count(keys * rate) + " keys/s, " +
          format_bytes(static_cast<double>(input_bytes) * rate) + "/s input, ";
  if (gpu) line += "on the GPU, ";
  if (result.out_of_core) {
    line += "out of core: " + std::to_string(result.partitions) + " partitions, " +
            std::to_string(result.spilled_bytes) + " bytes spilled";
  } else {
    line += "in memory";
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

std::function<int()> add_build_command(CLI::App& app) {
  auto s = std::make_shared<build_settings>();
  CLI::App* cmd = app.add_subcommand("build", "Build a filter file from keys in files or stdin");
  // In this order: --help lists the options as they are added.
  add_input_output_options(cmd, *s);
  const given_options given = add_filter_kind_options(cmd, *s);
  add_layout_options(cmd, *s);
  add_resource_options(cmd, *s);
  add_display_options(cmd, *s);
  return [s, given] {
    s->bits_given = given.bits->count() > 0;
    s->slack_given = given.slack->count() > 0;
    s->success_probability_given = given.success_probability->count() > 0;
    return run_build(*s);
  };
}

}  // namespace ribbon::cli
