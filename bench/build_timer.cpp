// The C++ side of bench/python_bench.py: times filter::build and batched contains over keys
// read from files, as that script times the Python package over the same keys, and reports the
// build's peak RSS beyond the keys.
//   ribbon_build_timer KEYS PROBES u64|lines|arrow THREADS REPEATS
// KEYS and PROBES: little-endian u64 files, or lines files: with `lines` the keys are
// string_views into the file's bytes, with `arrow` they are laid out as a pyarrow
// large_string array (64-bit offsets into the lines' bytes without the newlines; what the
// Python side queries) and built and queried in that layout (build_offsets,
// contains_offsets). Prints one JSON object (seconds of each repeat).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ribbon/filter.hpp"

namespace {

std::string read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<std::string_view> lines_of(const std::string& text) {
  std::vector<std::string_view> lines;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') {
      lines.emplace_back(text.data() + begin, i - begin);
      begin = i + 1;
    }
  }
  return lines;
}

/// Keys laid out as an Arrow large_string array.
struct arrow_keys {
  std::vector<std::int64_t> offsets{0};
  std::vector<unsigned char> data;
  std::size_t size() const { return offsets.size() - 1; }
};

arrow_keys arrow_of(const std::vector<std::string_view>& lines) {
  arrow_keys keys;
  for (std::string_view line : lines) {
    keys.data.insert(keys.data.end(), line.begin(), line.end());
    keys.offsets.push_back(static_cast<std::int64_t>(keys.data.size()));
  }
  return keys;
}

template <class Key>
ribbon::filter build_filter(const std::vector<Key>& keys, const ribbon::build_options& options) {
  return ribbon::filter::build(keys.data(), keys.size(), options);
}
ribbon::filter build_filter(const arrow_keys& keys, const ribbon::build_options& options) {
  return ribbon::filter::build_offsets(keys.offsets.data(), keys.data.data(), keys.size(), options);
}

template <class Key>
void query_filter(const ribbon::filter& f, const std::vector<Key>& keys, bool* out) {
  f.contains(keys.data(), keys.size(), out);
}
void query_filter(const ribbon::filter& f, const arrow_keys& keys, bool* out) {
  f.contains_offsets(keys.offsets.data(), keys.data.data(), keys.size(), out);
}

/// A field of /proc/self/status in kB (VmRSS, VmHWM).
long status_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::string(field).size() + 1);
  }
  return -1;
}

void reset_peak_rss() {
  std::ofstream("/proc/self/clear_refs") << "5";
}

template <class F>
double timed(const F& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Times `repeats` builds and batched queries of the keys; prints the JSON object.
template <class Keys>
void run(const Keys& keys, const Keys& probes, std::uint32_t threads, int repeats) {
  ribbon::build_options options;
  options.threads = threads;
  std::string build = "[", query = "[";
  const long rss_before = status_kb("VmRSS:");
  reset_peak_rss();
  long peak = 0;
  std::uint64_t positives = 0;
  for (int i = 0; i < repeats; ++i) {
    ribbon::filter f;
    build += (i ? ", " : "") + std::to_string(timed([&] { f = build_filter(keys, options); }));
    if (i == 0) peak = status_kb("VmHWM:");
    f.set_query_threads(threads);
    std::unique_ptr<bool[]> out(new bool[probes.size()]);
    query += (i ? ", " : "") + std::to_string(timed([&] { query_filter(f, probes, out.get()); }));
    positives = 0;
    for (std::size_t j = 0; j < probes.size(); ++j) positives += out[j];
  }
  std::printf(
      "{\"build_seconds\": %s], \"contains_seconds\": %s], \"rss_before_kb\": %ld, "
      "\"peak_rss_kb\": %ld, \"positives\": %llu}\n",
      build.c_str(), query.c_str(), rss_before, peak, static_cast<unsigned long long>(positives));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s KEYS PROBES u64|lines|arrow THREADS REPEATS\n", argv[0]);
    return 2;
  }
  const std::string format = argv[3];
  const auto threads = static_cast<std::uint32_t>(std::atoi(argv[4]));
  const int repeats = std::atoi(argv[5]);
  const std::string key_bytes = read_file(argv[1]), probe_bytes = read_file(argv[2]);
  if (format == "u64") {
    auto words = [](const std::string& bytes) {
      std::vector<std::uint64_t> v(bytes.size() / 8);
      std::memcpy(v.data(), bytes.data(), v.size() * 8);
      return v;
    };
    const std::vector<std::uint64_t> keys = words(key_bytes), probes = words(probe_bytes);
    run(keys, probes, threads, repeats);
  } else if (format == "arrow") {
    run(arrow_of(lines_of(key_bytes)), arrow_of(lines_of(probe_bytes)), threads, repeats);
  } else {
    run(lines_of(key_bytes), lines_of(probe_bytes), threads, repeats);
  }
  return 0;
}
