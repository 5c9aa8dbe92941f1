// A C++ program using only the installed `reader` component: maps the file ribbon_consumer
// wrote (5000 integer keys 0x9E3779B97F4A7C15 * (i + 1)) with ribbon::mapped_file and queries
// it through filter_ref; checks that oneTBB was not loaded with it. Exits non-zero on any
// failure. Usage: ribbon_cpp_reader FILE
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "ribbon/error.hpp"
#include "ribbon/mapped_file.hpp"

namespace {

/// Whether a shared library whose path contains `name` is mapped into this process.
bool library_loaded(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find(name) != std::string::npos) return true;
  }
  return false;
}

int check(const char* path) {
  const ribbon::mapped_file file = ribbon::mapped_file::open(path);
  const ribbon::filter_ref& f = file.ref();
  int failures = 0;
  std::uint64_t missing = 0;
  for (std::uint64_t i = 0; i < 5000; ++i)
    missing += f.contains(0x9E3779B97F4A7C15ULL * (i + 1)) ? 0 : 1;
  std::uint64_t false_positives = 0;
  for (std::uint64_t k = 1; k <= 100000; ++k) false_positives += f.contains(k) ? 1 : 0;
  // r = 8: about 390 of 100000 non-members are positive.
  failures += missing != 0;
  failures += false_positives > 1000;
  failures += f.key_count != 5000 || file.params().keys != ribbon::key_kind::u64;
  failures += file.image().header.format_version != 5;  // a small filter: compact
  try {
    (void)ribbon::mapped_file::open("/nonexistent/x.ribbon");
    failures++;
  } catch (const ribbon::error& e) {
    failures +=
        std::string(e.what()).find("cannot open /nonexistent/x.ribbon") == std::string::npos;
  }
  if (library_loaded("libtbb")) {
    std::fprintf(stderr, "FAIL: oneTBB is loaded into a reader-only program\n");
    failures++;
  }
  if (failures != 0) {
    std::fprintf(stderr, "FAIL: %d checks failed (%llu keys missing)\n", failures,
                 static_cast<unsigned long long>(missing));
    return 1;
  }
  std::printf("ok: C++ reader, 5000 keys positive, %llu of 100000 non-members positive\n",
              static_cast<unsigned long long>(false_positives));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  try {
    return check(argv[1]);
  } catch (const ribbon::error& e) {
    std::fprintf(stderr, "FAIL: %s\n", e.what());
    return 1;
  }
}
