/// @file splitmix.hpp
/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
/// 2014): the generator of the benchmarks' and the `ribbon bench` command's keys, one
/// definition so that every tool draws the same keys from the same seed.
#pragma once

#include <cstdint>

namespace ribbon::detail {

/// The generator's output for state `x` (before the state's step): a bijection of 64-bit
/// words, so distinct inputs give distinct keys.
constexpr std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

/// The next number of the sequence whose state is `state` (advanced).
inline std::uint64_t splitmix64(std::uint64_t& state) {
  const std::uint64_t out = splitmix(state);
  state += 0x9E3779B97F4A7C15ULL;
  return out;
}

}  // namespace ribbon::detail
