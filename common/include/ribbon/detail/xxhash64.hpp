/// @file xxhash64.hpp
/// XXH64 (Yann Collet's 64-bit xxHash), written for host and device from the public
/// specification. Tests check it against libxxhash byte for byte.
#pragma once

#include <algorithm>
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

/// The four lanes of XXH64's bulk loop.
struct xxh64_lanes {
  std::uint64_t v[4];
  RIBBON_HD explicit xxh64_lanes(std::uint64_t seed)
      : v{seed + xxh_prime1 + xxh_prime2, seed + xxh_prime2, seed, seed - xxh_prime1} {}
  RIBBON_HD RIBBON_FORCE_INLINE void consume(const unsigned char* stripe) {
    v[0] = xxh64_round(v[0], load_le64(stripe));
    v[1] = xxh64_round(v[1], load_le64(stripe + 8));
    v[2] = xxh64_round(v[2], load_le64(stripe + 16));
    v[3] = xxh64_round(v[3], load_le64(stripe + 24));
  }
  RIBBON_HD std::uint64_t merged() const {
    std::uint64_t h =
        rotate_left(v[0], 1) + rotate_left(v[1], 7) + rotate_left(v[2], 12) + rotate_left(v[3], 18);
    for (int i = 0; i < 4; ++i) h = xxh64_merge(h, v[i]);
    return h;
  }
};

/// XXH64's end: the last (length mod 32) bytes and the avalanche. `h` already has the length.
RIBBON_HD inline std::uint64_t xxh64_finish(std::uint64_t h, const unsigned char* p,
                                            const unsigned char* end) {
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

/// XXH64 of `length` bytes at `data` with `seed`; equals libxxhash's XXH64().
RIBBON_HD inline std::uint64_t xxh64(const void* data, std::size_t length, std::uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  const unsigned char* const end = p + length;
  std::uint64_t h = seed + xxh_prime5;
  if (length >= 32) {
    xxh64_lanes lanes(seed);
    for (const unsigned char* const last_stripe = end - 32; p <= last_stripe; p += 32) {
      lanes.consume(p);
    }
    h = lanes.merged();
  }
  return xxh64_finish(h + static_cast<std::uint64_t>(length), p, end);
}

/// XXH64 over data given in pieces (a section written one shard range at a time): the same
/// value as xxh64() over the concatenation.
class xxh64_stream {
 public:
  explicit xxh64_stream(std::uint64_t seed = 0) : lanes_(seed), seed_(seed) {}

  void update(const void* data, std::size_t length) {
    const auto* p = static_cast<const unsigned char*>(data);
    const unsigned char* const end = p + length;
    total_ += length;
    if (buffered_ > 0) {  // complete the stripe begun by an earlier piece
      const std::size_t take = std::min<std::size_t>(32 - buffered_, length);
      std::memcpy(buffer_ + buffered_, p, take);
      buffered_ += take;
      p += take;
      if (buffered_ < 32) return;
      lanes_.consume(buffer_);
      buffered_ = 0;
    }
    for (; end - p >= 32; p += 32) lanes_.consume(p);
    buffered_ = static_cast<std::size_t>(end - p);
    std::memcpy(buffer_, p, buffered_);
  }

  std::uint64_t digest() const {
    const std::uint64_t h = total_ >= 32 ? lanes_.merged() : seed_ + xxh_prime5;
    return xxh64_finish(h + total_, buffer_, buffer_ + buffered_);
  }

 private:
  xxh64_lanes lanes_;
  std::uint64_t seed_;
  std::uint64_t total_ = 0;
  unsigned char buffer_[32] = {};
  std::size_t buffered_ = 0;
};

}  // namespace ribbon::detail
