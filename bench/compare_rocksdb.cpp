// Small filters side by side with RocksDB's Standard128Ribbon, in one process, alternating.
//
//   ribbon_compare_rocksdb KEYS_PER_FILTER [ROUNDS [TOTAL_KEYS]]
//
// Built only when CMake is given RIBBON_ROCKSDB_DIR, a RocksDB checkout outside this
// repository (bench/CMakeLists.txt): this file includes its util/ribbon_impl.h and compiles its
// util/ribbon_config.cc; no RocksDB code is in this repository.
//
// RocksDB's side follows its filter policy (table/block_based/filter_policy.cc,
// Standard128RibbonBitsBuilder) for a 1/256 false-positive rate: w = 128, keys hashed to 64
// bits with XXH3 (RocksDB's GetSliceHash64 is its own copy of XXH3), the slots for a 1-in-20
// first-try failure chance (BandingConfigHelper1TS<kOneIn20>) rounded up, the bytes from
// GetBytesForOneInFpRate (its fractional columns, with the first hash's low 32 bits as the
// rounding entropy) plus its 5 bytes of metadata, seeds tried from the first hash's low byte.
// ribbon's side: ribbon::filter::build of the same u64 keys, w = 64, r = 8, one thread, its
// file size (frame included). Both build TOTAL_KEYS / KEYS_PER_FILTER filters one after the
// other, the time including the hashing; a round runs ribbon then RocksDB, the next RocksDB
// then ribbon. Queries: 10^6 non-members, one at a time, against the first filter.
// Prints one JSON line per round and one with the medians.
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "port/port.h"  // before RocksDB's util/ headers, as its own sources include it
#include "ribbon/filter.hpp"
#include "util/ribbon_config.h"
#include "util/ribbon_impl.h"

namespace {

struct rocksdb_settings {
  static constexpr bool kIsFilter = true;
  static constexpr bool kHomogeneous = false;
  static constexpr bool kFirstCoeffAlwaysOne = true;
  static constexpr bool kUseSmash = false;
  using CoeffRow = ROCKSDB_NAMESPACE::Unsigned128;
  using Hash = std::uint64_t;
  using Seed = std::uint32_t;
  using Index = std::uint32_t;
  using ResultRow = std::uint32_t;
  static constexpr bool kAllowZeroStarts = false;
};
namespace rr = ROCKSDB_NAMESPACE::ribbon;
using rocksdb_ts = rr::StandardRehasherAdapter<rocksdb_settings>;
using rocksdb_solution = rr::SerializableInterleavedSolution<rocksdb_ts>;
using rocksdb_banding = rr::StandardBanding<rocksdb_ts>;
using rocksdb_config = rr::BandingConfigHelper1TS<rr::kOneIn20, rocksdb_ts>;
constexpr double one_in_fp_rate = 256.0;
constexpr std::size_t rocksdb_metadata_bytes = 5;

/// One RocksDB filter: its bytes (solution and metadata) and its reader's state, set up once
/// as Standard128RibbonBitsReader does.
struct rocksdb_filter {
  std::unique_ptr<char[]> bytes;
  std::size_t size = 0;
  std::unique_ptr<rocksdb_solution> solution;
  rr::StandardHasher<rocksdb_ts> hasher;

  bool may_match(std::uint64_t key) const {
    return solution->FilterQuery(XXH3_64bits(&key, sizeof(key)), hasher);
  }
};

/// Builds as Standard128RibbonBitsBuilder::Finish does (no Bloom fall-back: the sizes here
/// have at least 1024 slots; a build whose 256 seeds all fail exits).
rocksdb_filter build_rocksdb(const std::uint64_t* keys, std::uint64_t count,
                             std::vector<std::uint64_t>& hashes, rocksdb_banding& banding) {
  hashes.resize(count);
  for (std::uint64_t i = 0; i < count; ++i) hashes[i] = XXH3_64bits(&keys[i], sizeof(keys[i]));
  const auto entries = static_cast<std::uint32_t>(count);
  const std::uint32_t slots =
      rocksdb_solution::RoundUpNumSlots(rocksdb_config::GetNumSlots(entries));
  const auto rounding = static_cast<std::uint32_t>(hashes.front() >> 32);
  const auto first_seed = static_cast<std::uint32_t>(hashes.front()) & 255;
  const std::size_t solution_bytes =
      rocksdb_solution::GetBytesForOneInFpRate(slots, one_in_fp_rate, rounding);
  if (!banding.ResetAndFindSeedToSolve(slots, hashes.begin(), hashes.end(), first_seed, 255)) {
    std::fprintf(stderr, "RocksDB's ribbon failed 256 seeds\n");
    std::exit(1);
  }
  rocksdb_filter f;
  f.size = solution_bytes + rocksdb_metadata_bytes;
  f.bytes = std::make_unique<char[]>(f.size);
  f.solution = std::make_unique<rocksdb_solution>(f.bytes.get(), solution_bytes);
  f.solution->BackSubstFrom(banding);
  f.hasher.SetOrdinalSeed(banding.GetOrdinalSeed());
  return f;
}

std::vector<std::uint64_t> random_keys(std::uint64_t count, std::uint64_t seed) {
  std::vector<std::uint64_t> keys(count);
  std::uint64_t state = seed;
  for (auto& k : keys) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    k = z ^ (z >> 31);
  }
  return keys;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// One side's figures in one round.
struct figures {
  double build_ns_per_key = 0;
  double query_ns_per_key = 0;
  double bits_per_key = 0;
  double fpr = 0;
};

template <class Filter, class Build, class Bytes, class Query>
figures measure(const std::vector<std::uint64_t>& keys, std::uint64_t per_filter,
                const std::vector<std::uint64_t>& probes, Build build, Bytes file_bytes,
                Query query) {
  std::vector<Filter> filters;
  const std::uint64_t groups = keys.size() / per_filter;
  filters.reserve(groups);
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t g = 0; g < groups; ++g) filters.push_back(build(&keys[g * per_filter]));
  figures out;
  out.build_ns_per_key = seconds_since(start) * 1e9 / static_cast<double>(keys.size());
  std::uint64_t bytes = 0;
  for (const Filter& f : filters) bytes += file_bytes(f);
  out.bits_per_key = 8.0 * static_cast<double>(bytes) / static_cast<double>(keys.size());
  std::uint64_t positives = 0;
  const auto query_start = std::chrono::steady_clock::now();
  for (const std::uint64_t k : probes) positives += query(filters.front(), k) ? 1 : 0;
  out.query_ns_per_key = seconds_since(query_start) * 1e9 / static_cast<double>(probes.size());
  out.fpr = static_cast<double>(positives) / static_cast<double>(probes.size());
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

void print(const char* what, int round, const figures& r, const figures& k) {
  std::printf(
      "{\"%s\": %d, \"ribbon\": {\"build_ns\": %.1f, \"query_ns\": %.1f, \"bits_per_key\": %.4f, "
      "\"fpr\": %.5f}, \"rocksdb\": {\"build_ns\": %.1f, \"query_ns\": %.1f, \"bits_per_key\": "
      "%.4f, \"fpr\": %.5f}}\n",
      what, round, r.build_ns_per_key, r.query_ns_per_key, r.bits_per_key, r.fpr,
      k.build_ns_per_key, k.query_ns_per_key, k.bits_per_key, k.fpr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s KEYS_PER_FILTER [ROUNDS [TOTAL_KEYS]]\n", argv[0]);
    return 2;
  }
  const std::uint64_t per_filter = std::strtoull(argv[1], nullptr, 10);
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::uint64_t total = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 4'000'000;
  if (per_filter < 1000 || per_filter > total || rounds < 1) {
    std::fprintf(stderr, "KEYS_PER_FILTER in [1000, TOTAL_KEYS], ROUNDS >= 1\n");
    return 2;
  }
  const std::vector<std::uint64_t> keys = random_keys(total / per_filter * per_filter, 1);
  const std::vector<std::uint64_t> probes = random_keys(1'000'000, 2);  // other keys

  ribbon::build_options options;
  options.result_bits = 8;
  options.width = 64;
  options.threads = 1;
  options.seed = 7;
  auto build_ribbon = [&](const std::uint64_t* first) {
    return ribbon::filter::build(first, per_filter, options);
  };
  // The file as ribbon writes it (the frame included), computed after the timed builds.
  auto ribbon_bytes = [](const ribbon::filter& f) { return f.serialize().size(); };
  auto query_ribbon = [](const ribbon::filter& f, std::uint64_t k) { return f.contains(k); };
  std::vector<std::uint64_t> hashes;
  rocksdb_banding banding;
  auto build_rocks = [&](const std::uint64_t* first) {
    return build_rocksdb(first, per_filter, hashes, banding);
  };
  auto rocks_bytes = [](const rocksdb_filter& f) { return f.size; };
  auto query_rocks = [](const rocksdb_filter& f, std::uint64_t k) { return f.may_match(k); };

  std::vector<figures> ribbon_rounds, rocksdb_rounds;
  for (int round = 0; round < rounds; ++round) {
    figures r, k;
    if (round % 2 == 0) {
      r = measure<ribbon::filter>(keys, per_filter, probes, build_ribbon, ribbon_bytes,
                                  query_ribbon);
      k = measure<rocksdb_filter>(keys, per_filter, probes, build_rocks, rocks_bytes, query_rocks);
    } else {
      k = measure<rocksdb_filter>(keys, per_filter, probes, build_rocks, rocks_bytes, query_rocks);
      r = measure<ribbon::filter>(keys, per_filter, probes, build_ribbon, ribbon_bytes,
                                  query_ribbon);
    }
    ribbon_rounds.push_back(r);
    rocksdb_rounds.push_back(k);
    print("round", round, r, k);
  }
  auto medians = [](const std::vector<figures>& v) {
    auto of = [&](double figures::*field) {
      std::vector<double> x;
      for (const figures& f : v) x.push_back(f.*field);
      return median(x);
    };
    return figures{of(&figures::build_ns_per_key), of(&figures::query_ns_per_key),
                   of(&figures::bits_per_key), of(&figures::fpr)};
  };
  print("median_of_rounds", rounds, medians(ribbon_rounds), medians(rocksdb_rounds));
  return 0;
}
