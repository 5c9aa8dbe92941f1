// Builds a filter through the installed package, checks it, saves it, reloads it, checks again.
// Exits non-zero on any failure. Usage: ribbon_consumer [filter-file-path]; a path given is
// kept (the C reader test, reader.c, reads it), the default one is removed.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "ribbon/error.hpp"
#include "ribbon/filter.hpp"

namespace {

/// Counts the keys that contains() (scalar, then batched) does not report; must be 0.
std::uint64_t missing(const ribbon::filter& f, const std::vector<std::uint64_t>& keys) {
  std::uint64_t count = 0;
  for (std::uint64_t k : keys) count += f.contains(k) ? 0 : 1;
  const std::unique_ptr<bool[]> flags(new bool[keys.size()]);  // the batched path too
  f.contains(keys.data(), keys.size(), flags.get());
  for (std::size_t i = 0; i < keys.size(); ++i) count += flags[i] ? 0 : 1;
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path =
      argc > 1 ? argv[1] : "/tmp/ribbon-consumer-" + std::to_string(getpid()) + ".rbn";
  try {
    std::vector<std::uint64_t> keys(5000);
    for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = 0x9E3779B97F4A7C15ULL * (i + 1);

    const ribbon::filter built = ribbon::filter::build(keys.data(), keys.size());
    if (const std::uint64_t m = missing(built, keys)) {
      std::fprintf(stderr, "FAIL: %llu keys not found in the built filter\n",
                   static_cast<unsigned long long>(m));
      return 1;
    }

    built.save(path);
    const ribbon::filter loaded = ribbon::filter::load(path);
    if (argc <= 1) std::remove(path.c_str());
    if (loaded.key_count() != keys.size() || loaded.serialize() != built.serialize()) {
      std::fprintf(stderr, "FAIL: the reloaded filter differs from the saved one\n");
      return 1;
    }
    if (const std::uint64_t m = missing(loaded, keys)) {
      std::fprintf(stderr, "FAIL: %llu keys not found in the reloaded filter\n",
                   static_cast<unsigned long long>(m));
      return 1;
    }
    std::printf("ok: %zu keys, %.2f bits/key, %u layers, saved to and reloaded from %s\n",
                keys.size(), loaded.bits_per_key(), loaded.num_layers(), path.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::remove(path.c_str());
    std::fprintf(stderr, "FAIL: %s\n", e.what());
    return 1;
  }
}
