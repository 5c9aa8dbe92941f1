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
#include <string>
#include <thread>
#include <vector>

#include "commands.hpp"
#include "gpu_backend.hpp"
#include "input.hpp"
#include "progress.hpp"
#include "ribbon/bulk_builder.hpp"
#include "ribbon/error.hpp"
#include "util.hpp"

namespace ribbon::cli {
namespace {

struct build_settings {
  std::vector<std::string> inputs;
  std::string format = "lines";
  std::string output;
  double fpr = 0;
  std::uint32_t bits = 8;
  std::uint32_t width = 64;
  std::uint32_t threads = 0;
  std::uint64_t seed = 0;
  std::uint64_t shard_size = 0;
  std::string backend = "auto";
  std::string memory_limit = "0";
  std::string tmp_dir;
  bool progress = false;
  bool quiet = false;
};

/// Fails early (before reading any input) if the output cannot be created: the library
/// writes a temporary file next to it and renames it, so that is what is tried here.
void check_output_writable(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    throw error("cannot write " + path + ": is a directory");
  }
  std::string probe = path + ".tmp-XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    throw error("cannot write " + path + ": " + std::strerror(errno));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

void print_summary(const build_settings& s, const bulk_result& result, double seconds,
                   std::uint64_t input_bytes, bool gpu) {
  const std::uint32_t r = result.params.result_bits;
  const double keys = static_cast<double>(result.key_count);
  const double rate = seconds > 0 ? 1.0 / seconds : 0;
  std::string line = "ribbon build: " + s.output + ": " + std::to_string(result.key_count) +
                     " keys, " + std::to_string(result.file_bytes) + " bytes";
  char text[160];
  if (result.key_count > 0) {
    const double bits_per_key = result.bits_per_key();
    std::snprintf(text, sizeof(text), ", %.3f bits/key (%.2f%% over r=%u)", bits_per_key,
                  100.0 * (bits_per_key / r - 1.0), r);
    line += text;
  }
  std::snprintf(text, sizeof(text), ", expected FPR 2^-%u = %.3g, %.2f s, ", r,
                std::ldexp(1.0, -static_cast<int>(r)), seconds);
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

int run_build(build_settings s) {
  const clock_type::time_point start = clock_type::now();
  const progress_mode mode = choose_progress_mode(s.progress, s.quiet);
  const bool gpu = use_gpu(s.backend);
  const input_format format = parse_input_format(s.format);
  const std::uint64_t memory_limit = parse_size(s.memory_limit, "--memory-limit");
  if (s.inputs.empty()) {
    if (::isatty(STDIN_FILENO)) throw error("no input: give -i FILE or pipe keys into stdin");
    s.inputs.push_back("-");
  }
  check_output_writable(s.output);
  remove_temp_files_on_signals();

  // The library keeps an eighth of the memory limit for what it does not count, the read
  // buffers among them: keep the chunks in flight (data and hashes) within it.
  const std::uint64_t cores = std::max(1u, std::thread::hardware_concurrency());
  const std::uint64_t chunks_in_flight =
      2 * (s.threads != 0 ? std::min<std::uint64_t>(s.threads, cores) : cores) + 2;
  const std::size_t max_chunk_bytes =
      memory_limit == 0 ? 0
                        : static_cast<std::size_t>(std::max<std::uint64_t>(
                              memory_limit / 8 / (3 * chunks_in_flight), std::uint64_t{64} << 10));
  input_reader reader(s.inputs, format, max_chunk_bytes);
  build_progress progress;
  bulk_options options;
  options.build.width = s.width;
  options.build.result_bits = s.bits;
  options.build.target_fpr = s.fpr;
  options.build.threads = s.threads;
  options.build.seed = s.seed;
  options.build.shard_size = s.shard_size;
  options.memory_limit = memory_limit;
  options.tmp_dir = s.tmp_dir;
  options.expected_keys = reader.estimated_keys();
  options.progress = &progress;
  if (gpu) configure_gpu_build(options);
  // If reading fails, finish() is never called and the builder's destructor removes its
  // temporary files: nothing is written.
  bulk_builder builder(key_kind_of(format), options);

  progress_display display(mode, "build", &reader.counters(), reader.total_bytes(), &progress);
  reader.run(
      s.threads, parse_output::hashes, builder.params().seed, [](input_chunk&) {},
      [&](input_chunk& c) { builder.add_hashes(c.values.data(), c.values.size()); });
  const bulk_result result = builder.finish(s.output);
  display.stop(true);
  if (mode != progress_mode::quiet) {
    print_summary(s, result, seconds_since(start),
                  reader.counters().bytes.load(std::memory_order_relaxed), gpu);
  }
  return 0;
}

}  // namespace

std::function<int()> add_build_command(CLI::App& app) {
  auto s = std::make_shared<build_settings>();
  CLI::App* cmd = app.add_subcommand("build", "Build a filter file from keys in files or stdin");
  cmd->add_option("-i,--input", s->inputs,
                  "input file, '-' for stdin; repeat for several (read in order as one set). "
                  "Default: stdin");
  cmd->add_option("--format", s->format,
                  "lines: one key per line (bytes; a trailing \\r is dropped; empty lines are "
                  "keys); u64: little-endian 8-byte integers; hex64: one hex integer per line")
      ->check(CLI::IsMember({"lines", "u64", "hex64"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", s->output, "filter file to write (replaced atomically)")
      ->required();
  CLI::Option* fpr = cmd->add_option("--fpr", s->fpr,
                                     "target false-positive rate: r is the smallest with "
                                     "2^-r <= P")
                         ->check(CLI::Range(1e-12, 0.99));
  CLI::Option* bits =
      cmd->add_option("-r,--bits", s->bits, "result bits r: false-positive rate 2^-r (default 8)")
          ->check(CLI::Range(1, 32));
  fpr->excludes(bits);
  cmd->add_option("-w,--width", s->width, "ribbon width: 32, 64 or 128")
      ->check(CLI::IsMember({32, 64, 128}))
      ->capture_default_str();
  cmd->add_option("-t,--threads", s->threads, "threads (default 0: all cores)")
      ->check(CLI::Range(0, 1 << 16));
  cmd->add_option("--seed", s->seed, "hash seed (the file is a function of keys and seed)")
      ->capture_default_str();
  cmd->add_option("--shard-size", s->shard_size,
                  "start positions per shard, a power of two (default 0: 65536); recorded in "
                  "the file. Smaller shards: more parallelism, a little more space");
  cmd->add_option("--backend", s->backend,
                  "cpu, gpu or auto (the GPU where this build has CUDA and a device is present). "
                  "On the GPU, inputs larger than device memory are built out of core, one "
                  "shard range at a time")
      ->check(CLI::IsMember({"cpu", "gpu", "auto"}))
      ->capture_default_str();
  cmd->add_option("--memory-limit", s->memory_limit,
                  "memory the build may use, e.g. 512M, 8G (1024-based); beyond it key hashes "
                  "are spilled to --tmp-dir. Default 0: half the machine's (or cgroup's) memory")
      ->capture_default_str();
  cmd->add_option("--tmp-dir", s->tmp_dir, "directory for spill files (default $TMPDIR or /tmp)");
  CLI::Option* progress =
      cmd->add_flag("--progress", s->progress, "live progress line on stderr even if not a tty");
  CLI::Option* quiet = cmd->add_flag("-q,--quiet", s->quiet, "print nothing but errors");
  progress->excludes(quiet);
  return [s] { return run_build(*s); };
}

}  // namespace ribbon::cli
