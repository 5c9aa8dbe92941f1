/// @file xxhash64.hpp
/// XXH64 (Yann Collet's 64-bit xxHash), written for host and device from the public
/// specification. Tests check it against libxxhash byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ribbon/config.hpp"

namespace ribbon::detail {

inline constexpr std::uint64_t xxh_prime1 = 0x9E3779B185EBCA87ULL;
inline constexpr std::uint64_t xxh_prime2 = 0xC2B2AE3D27D4EB4FULL;
inline constexpr std::uint64_t xxh_prime3 = 0x165667B19E3779F9ULL;
inline constexpr std::uint64_t xxh_prime4 = 0x85EBCA77C2B2AE63ULL;
inline constexpr std::uint64_t xxh_prime5 = 0x27D4EB2F165667C5ULL;

RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t rotate_left(std::uint64_t x, int bits) {
  return (x << bits) | (x >> (64 - bits));
}

RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t load_le64(const unsigned char* p) {
  std::uint64_t value;
  memcpy(&value, p, sizeof(value));
  return value;
}

RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t load_le32(const unsigned char* p) {
  std::uint32_t value;
  memcpy(&value, p, sizeof(value));
  return value;
}

RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t xxh64_round(std::uint64_t acc, std::uint64_t input) {
  acc += input * xxh_prime2;
  acc = rotate_left(acc, 31);
  return acc * xxh_prime1;
}

RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t xxh64_merge(std::uint64_t acc, std::uint64_t lane) {
  acc ^= xxh64_round(0, lane);
  return acc * xxh_prime1 + xxh_prime4;
}

/// XXH64 of `length` bytes at `data` with `seed`; equals libxxhash's XXH64().
RIBBON_HD inline std::uint64_t xxh64(const void* data, std::size_t length, std::uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  const unsigned char* const end = p + length;
  std::uint64_t h;
  if (length >= 32) {
    std::uint64_t v1 = seed + xxh_prime1 + xxh_prime2;
    std::uint64_t v2 = seed + xxh_prime2;
    std::uint64_t v3 = seed;
    std::uint64_t v4 = seed - xxh_prime1;
    const unsigned char* const last_stripe = end - 32;
    do {
      v1 = xxh64_round(v1, load_le64(p));
      v2 = xxh64_round(v2, load_le64(p + 8));
      v3 = xxh64_round(v3, load_le64(p + 16));
      v4 = xxh64_round(v4, load_le64(p + 24));
      p += 32;
    } while (p <= last_stripe);
    h = rotate_left(v1, 1) + rotate_left(v2, 7) + rotate_left(v3, 12) + rotate_left(v4, 18);
    h = xxh64_merge(h, v1);
    h = xxh64_merge(h, v2);
    h = xxh64_merge(h, v3);
    h = xxh64_merge(h, v4);
  } else {
    h = seed + xxh_prime5;
  }
  h += static_cast<std::uint64_t>(length);
  while (end - p >= 8) {
    h ^= xxh64_round(0, load_le64(p));
    h = rotate_left(h, 27) * xxh_prime1 + xxh_prime4;
    p += 8;
  }
  if (end - p >= 4) {
    h ^= static_cast<std::uint64_t>(load_le32(p)) * xxh_prime1;
    h = rotate_left(h, 23) * xxh_prime2 + xxh_prime3;
    p += 4;
  }
  while (p < end) {
    h ^= static_cast<std::uint64_t>(*p) * xxh_prime5;
    h = rotate_left(h, 11) * xxh_prime1;
    ++p;
  }
  h ^= h >> 33;
  h *= xxh_prime2;
  h ^= h >> 29;
  h *= xxh_prime3;
  h ^= h >> 32;
  return h;
}

}  // namespace ribbon::detail
