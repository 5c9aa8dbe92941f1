// Times the GPU builder's pipeline on Thrust's TBB backend (no GPU needed): builds from n
// random integer keys in host memory and saves the file, and prints the stage times.
//   ribbon_tbb_pipeline_timer [N [REPEATS [FILE]]]   (defaults: 10^7 keys, 3 repeats)
// A host measurement of the pipeline's logic and host-side work (copies, file image,
// checksums), not of a GPU.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ribbon/cuda/builder.hpp"
#include "ribbon/hash.hpp"

int main(int argc, char** argv) {
  const std::uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  const std::string file = argc > 3 ? argv[3] : "/tmp/ribbon_tbb_pipeline_timer.rbn";
  std::vector<std::uint64_t> keys(n);
  for (std::uint64_t i = 0; i < n; ++i) keys[i] = ribbon::mix64(i + 1);
  for (int r = 0; r < repeats; ++r) {
    ribbon::cuda::device_build_stats s;
    const auto start = std::chrono::steady_clock::now();
    const ribbon::filter f =
        ribbon::cuda::build(keys.data(), n, {}, ribbon::cuda::memory::host, &s);
    const auto built = std::chrono::steady_clock::now();
    f.save(file);
    const auto saved = std::chrono::steady_clock::now();
    const double build = std::chrono::duration<double>(built - start).count();
    const double save = std::chrono::duration<double>(saved - built).count();
    std::printf(
        "n=%llu build %.3f s (upload %.3f hash %.3f sort %.3f solve %.3f compact %.3f "
        "download %.3f) save %.3f s, build+save %.3f s\n",
        static_cast<unsigned long long>(n), build, s.upload_seconds, s.hash_seconds, s.sort_seconds,
        s.solve_seconds, s.compact_seconds, s.download_seconds, save, build + save);
  }
  return 0;
}
