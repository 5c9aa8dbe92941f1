// ribbon_gen_keys: writes reproducible key files for the end-to-end measurements
// (bench/RESULTS.md): key i of a seed is the same in every format, so a sample of the keys
// of a big build can be regenerated with --first/--stride and queried.
//
//   ribbon_gen_keys COUNT FORMAT [SEED] [FIRST] [STRIDE] > FILE
//     FORMAT: u64 (8-byte little-endian), hex64 (one hex number per line),
//             lines (one text key per line, "k" + 19-digit decimal: 21 bytes a line)
//     keys FIRST, FIRST + STRIDE, ... (COUNT of them); SEED default 1
#include <unistd.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ribbon/detail/splitmix.hpp"

namespace {

using ribbon::detail::splitmix;

bool write_all(const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(1, data, size);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s COUNT u64|hex64|lines [SEED] [FIRST] [STRIDE] > FILE\n",
                 argv[0]);
    return 2;
  }
  const std::uint64_t count = std::strtoull(argv[1], nullptr, 10);
  const std::string format = argv[2];
  const std::uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1;
  const std::uint64_t first = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 0;
  const std::uint64_t stride = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 1;
  if (format != "u64" && format != "hex64" && format != "lines") {
    std::fprintf(stderr, "unknown format %s\n", format.c_str());
    return 2;
  }
  const std::uint64_t salt = splitmix(seed * 0xD1B54A32D192ED03ULL);
  std::vector<char> buffer;
  buffer.reserve(1 << 22);
  for (std::uint64_t j = 0; j < count; ++j) {
    const std::uint64_t key = splitmix((first + j * stride) ^ salt);
    char text[32];
    if (format == "u64") {
      std::memcpy(text, &key, 8);
      buffer.insert(buffer.end(), text, text + 8);
    } else {
      const int n = format == "hex64"
                        ? std::snprintf(text, sizeof(text), "%016" PRIx64 "\n", key)
                        : std::snprintf(text, sizeof(text), "k%019" PRIu64 "\n",
                                        static_cast<std::uint64_t>(key % 10000000000000000000ULL));
      buffer.insert(buffer.end(), text, text + n);
    }
    if (buffer.size() >= (1 << 22) - 32) {
      if (!write_all(buffer.data(), buffer.size())) return 1;
      buffer.clear();
    }
  }
  return write_all(buffer.data(), buffer.size()) ? 0 : 1;
}
