// Hashing: XXH64 against libxxhash, the integer key hash, the layer remix and fastrange64.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "ribbon/hash.hpp"
#include "ribbon/layer.hpp"
#include "test_util.hpp"

namespace {

using ribbon_test::rng;

/// Multiplicative inverse of an odd number modulo 2^64 (Newton's iteration).
constexpr std::uint64_t inverse_odd(std::uint64_t a) {
  std::uint64_t x = a;  // correct to 3 bits
  for (int i = 0; i < 5; ++i) x *= 2 - a * x;
  return x;
}

/// The inverse of MurmurHash3's fmix64, written independently of the library.
std::uint64_t unmix64(std::uint64_t x) {
  x ^= x >> 33;  // x ^= x >> k is its own inverse for k >= 32
  x *= inverse_odd(0xC4CEB9FE1A85EC53ULL);
  x ^= x >> 33;
  x *= inverse_odd(0xFF51AFD7ED558CCDULL);
  x ^= x >> 33;
  return x;
}

/// Reference fmix64 (MurmurHash3).
std::uint64_t reference_fmix64(std::uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

/// Sorts `values` and returns how many adjacent pairs are equal.
std::uint64_t count_collisions(std::vector<std::uint64_t> values) {
  std::sort(values.begin(), values.end());
  std::uint64_t collisions = 0;
  for (std::size_t i = 1; i < values.size(); ++i) collisions += values[i] == values[i - 1];
  return collisions;
}

const std::uint64_t kSeeds[] = {0,
                                1,
                                42,
                                0x9E3779B97F4A7C15ULL,
                                0xFFFFFFFFFFFFFFFFULL,
                                0x8000000000000000ULL,
                                0x0123456789ABCDEFULL};

TEST(HashBytes, MatchesLibxxhashForEveryLengthSeedAndAlignment) {
  // 300 bytes plus room for an offset of up to 15, in a 64-byte aligned buffer.
  ribbon_test::aligned_buffer buffer(320);
  rng random(7);
  for (std::size_t i = 0; i < buffer.size(); ++i) {
    buffer.data()[i] = static_cast<unsigned char>(random.next());
  }
  std::uint64_t checked = 0;
  for (std::uint64_t seed : kSeeds) {
    for (std::size_t offset = 0; offset < 16; ++offset) {
      const unsigned char* data = buffer.data() + offset;
      for (std::size_t length = 0; length <= 300; ++length) {
        const std::uint64_t expected = XXH64(data, length, seed);
        const std::uint64_t actual = ribbon::hash_bytes(data, length, seed);
        ASSERT_EQ(actual, expected)
            << "length " << length << " seed " << seed << " offset " << offset;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, std::size(kSeeds) * 16 * 301);
}

TEST(HashBytes, MatchesLibxxhashOnSpecialContents) {
  // All-zero and all-0xFF inputs (carries in the multiplications), and long inputs.
  std::vector<unsigned char> zeros(4096, 0), ones(4096, 0xFF);
  for (std::uint64_t seed : kSeeds) {
    for (std::size_t length : {0u, 1u, 3u, 4u, 7u, 8u, 31u, 32u, 33u, 63u, 64u, 1000u, 4096u}) {
      ASSERT_EQ(ribbon::hash_bytes(zeros.data(), length, seed), XXH64(zeros.data(), length, seed))
          << length;
      ASSERT_EQ(ribbon::hash_bytes(ones.data(), length, seed), XXH64(ones.data(), length, seed))
          << length;
    }
  }
  // Published XXH64 test vector: XXH64("", 0) = 0xEF46DB3751D8E999.
  EXPECT_EQ(ribbon::hash_bytes("", 0, 0), 0xEF46DB3751D8E999ULL);
}

TEST(Xxh64Stream, EqualsLibxxhashOverAnySplitIntoPieces) {
  // Sections are checksummed one shard range at a time: the pieces' sizes are arbitrary.
  std::vector<unsigned char> data(2000);
  rng random(11);
  for (auto& byte : data) byte = static_cast<unsigned char>(random.next());
  for (std::uint64_t seed : kSeeds) {
    for (std::size_t length : {0u, 5u, 31u, 32u, 33u, 64u, 100u, 1999u, 2000u}) {
      for (int trial = 0; trial < 20; ++trial) {
        ribbon::detail::xxh64_stream stream(seed);
        std::size_t fed = 0;
        while (fed < length) {
          const std::size_t piece =
              std::min<std::size_t>(length - fed, random.next() % (trial < 10 ? 8 : 80));
          stream.update(data.data() + fed, piece);
          fed += piece;
        }
        ASSERT_EQ(stream.digest(), XXH64(data.data(), length, seed))
            << "length " << length << " trial " << trial;
      }
    }
  }
}

TEST(HashBytes, DependsOnEveryBitOfTheInput) {
  // Flipping any bit of a 300-byte input changes the hash.
  std::vector<unsigned char> data(300);
  rng random(11);
  for (auto& b : data) b = static_cast<unsigned char>(random.next());
  const std::uint64_t base = ribbon::hash_bytes(data.data(), data.size(), 5);
  for (std::size_t i = 0; i < data.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      data[i] ^= static_cast<unsigned char>(1u << bit);
      ASSERT_NE(ribbon::hash_bytes(data.data(), data.size(), 5), base) << i << ":" << bit;
      data[i] ^= static_cast<unsigned char>(1u << bit);
    }
  }
}

TEST(Mix64, IsFmix64AndABijection) {
  EXPECT_EQ(ribbon::mix64(0), 0u);
  rng random(3);
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t x = i < 1000 ? static_cast<std::uint64_t>(i) : random.next();
    ASSERT_EQ(ribbon::mix64(x), reference_fmix64(x)) << x;
    ASSERT_EQ(unmix64(ribbon::mix64(x)), x) << x;
    ASSERT_EQ(ribbon::mix64(unmix64(x)), x) << x;
  }
  static_assert(ribbon::mix64(1) != ribbon::mix64(2), "mix64 is constexpr");
}

TEST(HashU64, IsInvertibleForEverySeed) {
  // hash_u64(k) = mix64((k + s) * golden): invert it to prove injectivity, not only sample.
  constexpr std::uint64_t golden = 0x9E3779B97F4A7C15ULL;
  rng random(5);
  for (std::uint64_t seed : kSeeds) {
    const std::uint64_t mixed = ribbon::seed_mix(seed);
    for (int i = 0; i < 20000; ++i) {
      const std::uint64_t key = random.next();
      const std::uint64_t h = ribbon::hash_u64(key, mixed);
      ASSERT_EQ(unmix64(h) * inverse_odd(golden) - mixed, key);
    }
  }
}

TEST(HashU64, NoCollisionsOnRandomAndSequentialKeys) {
  const std::uint64_t n = ribbon_test::scaled(1000000, 200000);
  for (std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{12345}}) {
    const std::uint64_t mixed = ribbon::seed_mix(seed);
    std::vector<std::uint64_t> keys = ribbon_test::keys_range(1, 0, n);
    std::vector<std::uint64_t> hashes(n);
    for (std::uint64_t i = 0; i < n; ++i) hashes[i] = ribbon::hash_u64(keys[i], mixed);
    ASSERT_EQ(count_collisions(keys), 0u);  // the sample is distinct
    EXPECT_EQ(count_collisions(hashes), 0u) << "random keys, seed " << seed;

    // Sequential keys, and keys that differ in one high bit only.
    for (std::uint64_t i = 0; i < n; ++i) hashes[i] = ribbon::hash_u64(i, mixed);
    EXPECT_EQ(count_collisions(hashes), 0u) << "sequential keys, seed " << seed;
    for (std::uint64_t i = 0; i < n; ++i) hashes[i] = ribbon::hash_u64(i << 40, mixed);
    EXPECT_EQ(count_collisions(hashes), 0u) << "strided keys, seed " << seed;
  }
}

TEST(HashU64, SeedsChangeTheHashes) {
  const std::uint64_t a = ribbon::seed_mix(1), b = ribbon::seed_mix(2);
  EXPECT_NE(a, b);
  EXPECT_EQ(a & 1, 1u);  // seed_mix is odd
  int equal = 0;
  for (std::uint64_t k = 0; k < 10000; ++k)
    equal += ribbon::hash_u64(k, a) == ribbon::hash_u64(k, b);
  EXPECT_EQ(equal, 0);
}

TEST(HashU64, BitsAreBalanced) {
  // Each output bit of the hash of sequential keys is set about half of the time.
  const std::uint64_t n = 1 << 16;
  const std::uint64_t mixed = ribbon::seed_mix(0);
  std::uint64_t counts[64] = {};
  for (std::uint64_t k = 0; k < n; ++k) {
    const std::uint64_t h = ribbon::hash_u64(k, mixed);
    for (int b = 0; b < 64; ++b) counts[b] += (h >> b) & 1;
  }
  // 5 sigma of a binomial(2^16, 1/2) is 640.
  for (int b = 0; b < 64; ++b) {
    EXPECT_NEAR(static_cast<double>(counts[b]), n / 2.0, 640.0) << "bit " << b;
  }
}

TEST(Remix, DistinctInputsGiveDistinctOutputs) {
  const std::uint64_t n = ribbon_test::scaled(1000000, 200000);
  for (std::uint64_t salt : {std::uint64_t{0}, std::uint64_t{1}, ribbon::layer_salt(7, 1, 0)}) {
    std::vector<std::uint64_t> out(n);
    for (std::uint64_t i = 0; i < n; ++i) out[i] = ribbon::remix(i, salt);
    EXPECT_EQ(count_collisions(out), 0u) << "sequential, salt " << salt;
    rng random(salt + 17);
    std::vector<std::uint64_t> in(n);
    for (std::uint64_t i = 0; i < n; ++i) in[i] = random.next();
    ASSERT_EQ(count_collisions(in), 0u);
    for (std::uint64_t i = 0; i < n; ++i) out[i] = ribbon::remix(in[i], salt);
    EXPECT_EQ(count_collisions(out), 0u) << "random, salt " << salt;
  }
}

TEST(Remix, IsInvertibleAndSaltDependent) {
  rng random(23);
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t h = random.next(), salt = random.next();
    ASSERT_EQ(unmix64(ribbon::remix(h, salt)) ^ salt, h);
    ASSERT_NE(ribbon::remix(h, salt), ribbon::remix(h, salt ^ 1));
  }
}

TEST(Fastrange64, InRangeAtTheExtremes) {
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  for (std::uint64_t range :
       {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{3}, std::uint64_t{1000},
        std::uint64_t{1} << 32, (std::uint64_t{1} << 63) + 7, max}) {
    EXPECT_EQ(ribbon::fastrange64(0, range), 0u);
    EXPECT_EQ(ribbon::fastrange64(max, range), range - 1) << range;
  }
  EXPECT_EQ(ribbon::fastrange64(std::uint64_t{1} << 63, 10), 5u);
  EXPECT_EQ(ribbon::fastrange64(12345, 0), 0u);  // an empty range maps to 0
}

TEST(Fastrange64, MonotoneAndInRangeOnSortedHashes) {
  rng random(29);
  const std::uint64_t n = ribbon_test::scaled(200000, 50000);
  std::vector<std::uint64_t> hashes(n);
  for (auto& h : hashes) h = random.next();
  std::sort(hashes.begin(), hashes.end());
  for (std::uint64_t range :
       {std::uint64_t{1}, std::uint64_t{7}, std::uint64_t{128}, std::uint64_t{1000003},
        std::uint64_t{1} << 40, std::uint64_t{0xFFFFFFFFFFFFULL} * 3}) {
    std::uint64_t previous = 0;
    std::vector<std::uint64_t> hits(std::min<std::uint64_t>(range, 128), 0);
    for (std::uint64_t h : hashes) {
      const std::uint64_t s = ribbon::fastrange64(h, range);
      ASSERT_LT(s, range);
      ASSERT_GE(s, previous) << "not monotone at hash " << h << " range " << range;
      previous = s;
      if (range <= 128) ++hits[s];
    }
    if (range <= 128) {
      // Uniform: every position is hit about n / range times (well within 6 sigma).
      const double expected = static_cast<double>(n) / static_cast<double>(range);
      for (std::uint64_t s = 0; s < range; ++s) {
        EXPECT_NEAR(static_cast<double>(hits[s]), expected, 6 * std::sqrt(expected) + 1)
            << "range " << range << " position " << s;
      }
    }
  }
}

}  // namespace
