// `ribbon bench`: end-to-end benchmark on random 64-bit keys held in memory.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "commands.hpp"
#include "gpu_backend.hpp"
#include "ribbon/detail/splitmix.hpp"
#include "ribbon/error.hpp"
#include "ribbon/filter.hpp"
#include "util.hpp"

namespace ribbon::cli {
namespace {

using detail::splitmix64;

/// A value from /proc/self/status in bytes ("VmRSS", "VmHWM"), or 0 where unavailable.
std::uint64_t proc_status_bytes(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::size_t length = std::strlen(field);
  while (std::getline(status, line)) {
    if (line.compare(0, length, field) == 0 && line.size() > length && line[length] == ':') {
      return std::stoull(line.substr(length + 1)) * 1024;
    }
  }
  return 0;
}

/// Resets the peak-RSS high-water mark (Linux: "5" to clear_refs); false where unsupported.
bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

build_options with_seed(std::uint64_t seed) {
  build_options options;
  options.seed = seed;
  return options;
}

struct bench_settings {
  std::uint64_t keys = 10'000'000;
  std::uint64_t copies = 1;     // each key given this many times (the filter stores it once)
  std::uint64_t negatives = 0;  // 0: as many as keys
  /// The flags that are the library's options (-w, -r, --fpr, --slack, -t, --seed, ...);
  /// options_of() adds the variant and threshold codes, spelled as names.
  build_options options = with_seed(1);
  std::string variant = "bumped";
  std::string threshold_codes = "auto";
  std::string backend = "cpu";
  bool json = false;
};

/// The keys of a run: members have bit 63 clear and non-members have it set, so the two
/// sets are disjoint; retrieval stores a pseudo-random r-bit value per member.
struct bench_data {
  std::vector<std::uint64_t> keys, negatives;
  std::vector<std::uint32_t> values;  ///< retrieval only
};

bench_data make_data(const bench_settings& s, bool retrieval) {
  bench_data d;
  d.keys.resize(s.keys);
  d.negatives.resize(s.negatives != 0 ? s.negatives : std::max<std::uint64_t>(s.keys, 1'000'000));
  std::uint64_t state = s.options.seed * 0x2545F4914F6CDD1DULL;
  for (auto& k : d.keys) k = splitmix64(state) & ~(std::uint64_t{1} << 63);
  for (auto& k : d.negatives) k = splitmix64(state) | (std::uint64_t{1} << 63);
  if (retrieval) {
    d.values.resize(s.keys);
    for (auto& v : d.values)
      v = static_cast<std::uint32_t>(splitmix64(state) >> (64 - s.options.result_bits));
  }
  return d;
}

build_options options_of(const bench_settings& s, std::uint32_t threads) {
  build_options options = s.options;
  options.threads = threads;
  options.threshold_codes = threshold_codes_of(s.threshold_codes);
  options.variant = parse_variant(s.variant);
  return options;
}

/// What a run measured.
struct bench_result {
  std::uint32_t threads = 0;
  build_stats stats;
  double build_seconds = 0;
  double peak_rss_per_key = -1;  ///< -1 where the peak cannot be reset
  double positive_seconds = 0, negative_seconds = 0;
  double batch_seconds = 0, batch_one_thread_seconds = 0;
  double batch_positive_one_thread_seconds = 0;  ///< the keys of the set, one thread
  std::uint64_t false_negatives = 0;  ///< retrieval: members with a wrong value (or not found)
  std::uint64_t false_positives = 0;  ///< retrieval with check bits: non-members found
};

/// Builds the filter, timing it and measuring the peak memory it took. The input is the keys
/// `copies` times over, as files concatenated (the filter stores each key once).
filter timed_build(const bench_data& d, std::uint64_t copies, const build_options& options,
                   bench_result& r) {
  const std::uint64_t n = d.keys.size();
  std::vector<std::uint64_t> repeated;
  for (std::uint64_t c = 0; c < copies && copies > 1; ++c) {
    repeated.insert(repeated.end(), d.keys.begin(), d.keys.end());
  }
  const std::vector<std::uint64_t>& input = copies > 1 ? repeated : d.keys;
  const bool peak_reset = reset_peak_rss();
  const std::uint64_t rss_before = proc_status_bytes("VmRSS");
  const auto start = clock_type::now();
  filter f = is_retrieval(options.variant)
                 ? filter::build(d.keys.data(), d.values.data(), n, options, &r.stats)
                 : filter::build(input.data(), input.size(), options, &r.stats);
  r.build_seconds = seconds_since(start);
  const std::uint64_t peak = proc_status_bytes("VmHWM");
  if (peak_reset && n > 0) {
    r.peak_rss_per_key =
        static_cast<double>(peak > rss_before ? peak - rss_before : 0) / static_cast<double>(n);
  }
  return f;
}

/// Scalar queries: one key at a time, every member and every non-member. Retrieval: a "false
/// negative" is a member whose lookup is not its value (or, with check bits, not found);
/// non-members' values are arbitrary, so only their time is measured, and with check bits
/// (find) how many are found. Returns the sum of the non-members' values (retrieval; those
/// found, with check bits), which the batched lookups must match.
std::uint64_t time_scalar_queries(const filter& f, const bench_data& d, bench_result& r) {
  const bool retrieval = f.is_retrieval();
  const bool checked = f.params().check_bits != 0;
  std::uint64_t checksum = 0;  // keeps the non-member lookups from being optimised away
  auto t = clock_type::now();
  if (checked) {
    for (std::size_t i = 0; i < d.keys.size(); ++i) {
      r.false_negatives += f.find(d.keys[i]) != d.values[i];
    }
  } else if (retrieval) {
    for (std::size_t i = 0; i < d.keys.size(); ++i) {
      r.false_negatives += f.lookup(d.keys[i]) != d.values[i];
    }
  } else {
    for (std::uint64_t k : d.keys) r.false_negatives += !f.contains(k);
  }
  r.positive_seconds = seconds_since(t);
  t = clock_type::now();
  if (checked) {
    for (std::uint64_t k : d.negatives) {
      const std::optional<std::uint32_t> value = f.find(k);
      r.false_positives += value.has_value();
      checksum += value.value_or(0);
    }
  } else if (retrieval) {
    for (std::uint64_t k : d.negatives) checksum += f.lookup(k);
  } else {
    for (std::uint64_t k : d.negatives) r.false_positives += f.contains(k);
  }
  r.negative_seconds = seconds_since(t);
  return checksum;
}

/// Batched queries over the keys of the set on one thread; every answer checked.
void time_batched_positives(const filter& f, const bench_data& d, bench_result& r) {
  const std::uint64_t n = d.keys.size();
  std::unique_ptr<bool[]> out(new bool[n]);
  std::vector<std::uint32_t> looked_up(f.is_retrieval() ? n : 0);
  const bool checked = f.params().check_bits != 0;
  const auto t = clock_type::now();
  if (f.is_retrieval()) {
    f.lookup(d.keys.data(), n, looked_up.data(), checked ? out.get() : nullptr);
  } else {
    f.contains(d.keys.data(), n, out.get());
  }
  r.batch_positive_one_thread_seconds = seconds_since(t);
  const bool every_flag = std::all_of(out.get(), out.get() + n, [](bool b) { return b; });
  const bool all_found =
      f.is_retrieval() ? looked_up == d.values && (!checked || every_flag) : every_flag;
  if (!all_found) throw error("batched queries missed a key of the set");
}

/// Batched queries over the non-members, on all threads and on one; checked against the
/// scalar answers.
void time_batched_queries(filter& f, const bench_data& d, std::uint64_t scalar_checksum,
                          bench_result& r) {
  const bool retrieval = f.is_retrieval();
  const std::uint64_t m = d.negatives.size();
  std::unique_ptr<bool[]> out(new bool[m]);
  std::vector<std::uint32_t> looked_up(retrieval ? m : 0);
  const bool checked = f.params().check_bits != 0;
  auto batch = [&] {
    if (retrieval) {
      f.lookup(d.negatives.data(), m, looked_up.data(), checked ? out.get() : nullptr);
    } else {
      f.contains(d.negatives.data(), m, out.get());
    }
  };
  f.set_query_threads(r.threads);
  auto t = clock_type::now();
  batch();
  r.batch_seconds = seconds_since(t);
  if (retrieval) {
    std::uint64_t batch_checksum = 0, found = 0;
    for (std::uint64_t i = 0; i < m; ++i) {
      const bool counts = !checked || out[i];
      batch_checksum += counts ? looked_up[i] : 0;
      found += checked && out[i];
    }
    if (batch_checksum != scalar_checksum || found != r.false_positives) {
      throw error("batched and scalar lookups disagree");
    }
  } else {
    const auto batch_positives =
        static_cast<std::uint64_t>(std::count(out.get(), out.get() + m, true));
    if (batch_positives != r.false_positives) {
      throw error("batched and scalar queries disagree: " + std::to_string(batch_positives) +
                  " vs " + std::to_string(r.false_positives) + " positives");
    }
  }
  f.set_query_threads(1);
  t = clock_type::now();
  batch();
  r.batch_one_thread_seconds = seconds_since(t);
  time_batched_positives(f, d, r);
}

/// What both reports print: the members and non-members queried, the space figures (filters
/// against -log2 of the expected FPR, r or r + f with fractional bits, the
/// information-theoretic space; retrieval against r, per distinct key) and the factors that
/// turn seconds into ns per input key and per non-member.
struct report_figures {
  std::uint64_t keys, negatives;
  double fpr_expected, ideal_bits, overhead_pct;
  double per_key, per_negative;
};

report_figures figures_of(const filter& f, const bench_data& d, const bench_result& r) {
  const filter_summary summary = summarize(f);
  report_figures x;
  x.keys = d.keys.size();
  x.negatives = d.negatives.size();
  // Retrieval: the rate at which non-members pass the check bits (none without them).
  const std::uint32_t check_bits = f.params().check_bits;
  x.fpr_expected = !summary.retrieval ? summary.expected_fpr
                   : check_bits != 0  ? std::ldexp(1.0, -static_cast<int>(check_bits))
                                      : 0;
  x.ideal_bits = summary.ideal_bits_per_key;
  x.overhead_pct = summary.overhead_pct;
  x.per_key = r.stats.input_keys > 0 ? 1e9 / static_cast<double>(r.stats.input_keys) : 0;
  x.per_negative = 1e9 / static_cast<double>(d.negatives.size());
  return x;
}

void print_json(const bench_settings& s, const filter& f, const bench_result& r,
                const report_figures& x) {
  const build_stats& st = r.stats;
  std::printf(
      "{\"variant\": \"%s\", \"keys\": %llu, \"input_keys\": %llu, "
      "\"distinct_keys\": %llu, \"negatives\": %llu, \"width\": %u, "
      "\"bits\": %u, \"extra_bit_fraction\": %.5f, \"ideal_bits\": %.5f, \"threads\": %u, "
      "\"backend\": \"%s\", \"seed\": %llu, \"shard_size\": %llu, \"layers\": %u, "
      "\"build_ns_per_key\": %.3f, "
      "\"stage_ns_per_key\": {\"hash\": %.3f, \"partition\": %.3f, \"solve\": %.3f, "
      "\"gather\": %.3f, \"later_layers\": %.3f}, "
      "\"solve_thread_ns_per_key\": {\"sort\": %.3f, \"eliminate\": %.3f, "
      "\"back_substitute\": %.3f}, "
      "\"plain_layer_attempts\": %u, \"standard_attempts\": %u, \"filter_bytes\": %llu, "
      "\"bits_per_key\": %.5f, \"overhead_pct\": %.4f, "
      "\"fpr_expected\": %.8f, \"fpr_measured\": %.8f, \"false_positives\": %llu, "
      "\"false_negatives\": %llu, "
      "\"query_ns_per_key\": {\"scalar_positive\": %.3f, \"scalar_negative\": %.3f, "
      "\"batched_negative\": %.3f, \"batched_negative_per_thread\": %.3f, "
      "\"batched_negative_one_thread\": %.3f, \"batched_positive_one_thread\": %.3f}, "
      "\"peak_rss_bytes_per_key\": %.3f}\n",
      variant_name(f.variant()), static_cast<unsigned long long>(x.keys),
      static_cast<unsigned long long>(st.input_keys),
      static_cast<unsigned long long>(st.distinct_keys),
      static_cast<unsigned long long>(x.negatives), s.options.width, f.params().result_bits,
      f.params().extra_bit_fraction / 65536.0, x.ideal_bits, r.threads, "cpu",
      static_cast<unsigned long long>(s.options.seed),
      static_cast<unsigned long long>(f.params().shard_size), f.num_layers(),
      r.build_seconds * x.per_key, st.hash_seconds * x.per_key, st.partition_seconds * x.per_key,
      st.solve_seconds * x.per_key, st.gather_seconds * x.per_key,
      st.later_layers_seconds * x.per_key, st.sort_thread_seconds * x.per_key,
      st.eliminate_thread_seconds * x.per_key, st.back_substitute_thread_seconds * x.per_key,
      st.plain_layer_attempts, st.standard_attempts,
      static_cast<unsigned long long>(f.size_bytes()), f.bits_per_key(), x.overhead_pct,
      x.fpr_expected, static_cast<double>(r.false_positives) / static_cast<double>(x.negatives),
      static_cast<unsigned long long>(r.false_positives),
      static_cast<unsigned long long>(r.false_negatives), r.positive_seconds * x.per_key,
      r.negative_seconds * x.per_negative, r.batch_seconds * x.per_negative,
      r.batch_seconds * x.per_negative * r.threads, r.batch_one_thread_seconds * x.per_negative,
      r.batch_positive_one_thread_seconds * 1e9 / static_cast<double>(x.keys), r.peak_rss_per_key);
}

void print_text(const bench_settings& s, const filter& f, const bench_result& r,
                const report_figures& x) {
  const build_stats& st = r.stats;
  std::printf(
      "ribbon bench: %s, %llu input keys, %llu distinct, w=%u, r=%u%s, %u threads, "
      "backend %s\n",
      variant_name(f.variant()), static_cast<unsigned long long>(st.input_keys),
      static_cast<unsigned long long>(st.distinct_keys), s.options.width, f.params().result_bits,
      f.params().extra_bit_fraction != 0 ? " (+1 in some blocks)" : "", r.threads, "cpu");
  std::printf(
      "  build        %8.2f ns/key  (%.3f s; hash %.2f, partition %.2f, solve %.2f, "
      "gather %.2f, later layers %.2f ns/key)\n",
      r.build_seconds * x.per_key, r.build_seconds, st.hash_seconds * x.per_key,
      st.partition_seconds * x.per_key, st.solve_seconds * x.per_key, st.gather_seconds * x.per_key,
      st.later_layers_seconds * x.per_key);
  std::printf(
      "  space        %8.4f bits/key, overhead %.4f%% over %.4f bits, %u layers, %llu bytes, "
      "%u tries\n",
      f.bits_per_key(), x.overhead_pct, x.ideal_bits, f.num_layers(),
      static_cast<unsigned long long>(f.size_bytes()), std::max(st.standard_attempts, 1u));
  if (f.is_retrieval()) {
    std::printf("  accuracy     %llu of %llu members with a wrong value",
                static_cast<unsigned long long>(r.false_negatives),
                static_cast<unsigned long long>(x.keys));
    if (f.params().check_bits != 0) {
      std::printf(", %u check bits: %.7f of %llu non-members found (expected %.7f)",
                  f.params().check_bits,
                  static_cast<double>(r.false_positives) / static_cast<double>(x.negatives),
                  static_cast<unsigned long long>(x.negatives), x.fpr_expected);
    }
    std::printf("\n");
  } else {
    std::printf(
        "  accuracy     FPR %.6f measured on %llu non-members (expected %.6f), "
        "%llu false negatives\n",
        static_cast<double>(r.false_positives) / static_cast<double>(x.negatives),
        static_cast<unsigned long long>(x.negatives), x.fpr_expected,
        static_cast<unsigned long long>(r.false_negatives));
  }
  std::printf(
      "  queries      scalar positive %.2f ns, scalar negative %.2f ns, batched "
      "negative %.2f ns/key (%u threads), %.2f ns/key (1 thread), batched positive %.2f ns/key "
      "(1 thread)\n",
      r.positive_seconds * x.per_key, r.negative_seconds * x.per_negative,
      r.batch_seconds * x.per_negative, r.threads, r.batch_one_thread_seconds * x.per_negative,
      r.batch_positive_one_thread_seconds * 1e9 / static_cast<double>(x.keys));
  std::printf("  memory       peak RSS %.2f bytes/key beyond the input keys\n", r.peak_rss_per_key);
}

int run_bench(const bench_settings& s) {
  const bool gpu = use_gpu(s.backend);
  bench_result r;
  r.threads = s.options.threads != 0 ? s.options.threads
                                     : std::max(1u, std::thread::hardware_concurrency());
  const build_options options = options_of(s, r.threads);
  const bool retrieval = is_retrieval(options.variant);
  if (gpu && retrieval) {
    throw error("bench --backend gpu covers the filter variants, not retrieval");
  }
  const bench_data d = make_data(s, retrieval);
  if (gpu) return run_gpu_bench(d.keys, d.negatives, options, s.json);

  filter f = timed_build(d, s.copies, options, r);
  const std::uint64_t checksum = time_scalar_queries(f, d, r);
  time_batched_queries(f, d, checksum, r);
  const report_figures x = figures_of(f, d, r);
  if (s.json) {
    print_json(s, f, r, x);
  } else {
    print_text(s, f, r, x);
  }
  return r.false_negatives == 0 ? 0 : 1;
}

}  // namespace

std::function<int()> add_bench_command(CLI::App& app) {
  auto settings = std::make_shared<bench_settings>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Build a filter of random 64-bit keys in memory, query it, and report speed, "
      "space, accuracy and memory");
  cmd->add_option("-n,--keys", settings->keys, "number of keys (default 10^7)")
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1} << 40));
  cmd->add_option("--copies", settings->copies,
                  "build from each key this many times (bumped and standard filters; the "
                  "filter stores it once)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20));
  cmd->add_option("--negatives", settings->negatives,
                  "non-member keys to query (default max(keys, 10^6))")
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1} << 40));
  cmd->add_option("-w,--width", settings->options.width, "ribbon width: 32, 64 or 128")
      ->check(CLI::IsMember({32, 64, 128}));
  cmd->add_option("-r,--bits", settings->options.result_bits, "result bits r (FPR 2^-r), 1..32")
      ->check(CLI::Range(1, 32));
  cmd->add_option("--fpr", settings->options.target_fpr, "target false-positive rate (chooses r)")
      ->check(CLI::Range(1e-10, 0.75));
  cmd->add_option("--variant", settings->variant,
                  "bumped (default), standard, homogeneous, retrieval (bumped, random r-bit "
                  "values) or standard-retrieval")
      ->check(CLI::IsMember(variant_names()));
  cmd->add_option("--slack", settings->options.slack,
                  "standard/homogeneous: layer-0 eps (default: from --success-probability; "
                  "homogeneous 0.01)");
  cmd->add_option("--success-probability", settings->options.success_probability,
                  "standard: probability that the first try succeeds (default 0.95)");
  cmd->add_option("-t,--threads", settings->options.threads, "threads (default: all cores)")
      ->transform(thread_option());
  cmd->add_option("--seed", settings->options.seed, "seed for keys and hashing")
      ->transform(seed_option());
  cmd->add_option("--shard-size", settings->options.shard_size, "slots per shard (power of two)")
      ->transform(shard_size_option());
  add_threshold_codes_option(cmd, settings->threshold_codes);
  cmd->add_option("--backend", settings->backend,
                  "cpu (default, until a GPU run is recorded in bench/RESULTS.md), gpu (builds "
                  "from device-resident keys; GPU batched queries, a tile and a thread per key) "
                  "or auto (the GPU where present)")
      ->check(CLI::IsMember(backend_names()));
  cmd->add_option("--check-bits", settings->options.check_bits,
                  "retrieval: check bits above each r-bit value (r + C <= 32); queries use "
                  "find(), the non-members found are reported")
      ->check(CLI::Range(1, 31));
  cmd->add_flag("--json", settings->json, "print one JSON object");
  return [settings] { return run_bench(*settings); };
}

}  // namespace ribbon::cli
