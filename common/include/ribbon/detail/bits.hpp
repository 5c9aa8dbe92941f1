/// @file bits.hpp
/// Bit operations on the coefficient words of every ribbon width (32, 64 and 128 bits).
#pragma once

#include <cstdint>

#include "ribbon/config.hpp"

namespace ribbon::detail {

__extension__ typedef unsigned __int128 uint128_t;

RIBBON_HD RIBBON_FORCE_INLINE int count_trailing_zeros(std::uint32_t x) {
#if defined(__CUDA_ARCH__)
  return __ffs(static_cast<int>(x)) - 1;
#else
  return __builtin_ctz(x);
#endif
}

RIBBON_HD RIBBON_FORCE_INLINE int count_trailing_zeros(std::uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __ffsll(static_cast<long long>(x)) - 1;
#else
  return __builtin_ctzll(x);
#endif
}

RIBBON_HD RIBBON_FORCE_INLINE int count_trailing_zeros(uint128_t x) {
  auto low = static_cast<std::uint64_t>(x);
  return low != 0 ? count_trailing_zeros(low)
                  : 64 + count_trailing_zeros(static_cast<std::uint64_t>(x >> 64));
}

RIBBON_HD RIBBON_FORCE_INLINE unsigned parity(std::uint64_t x) {
#if defined(__CUDA_ARCH__)
  return static_cast<unsigned>(__popcll(x)) & 1u;
#else
  return static_cast<unsigned>(__builtin_parityll(x));
#endif
}

RIBBON_HD RIBBON_FORCE_INLINE unsigned parity(std::uint32_t x) {
#if defined(__CUDA_ARCH__)
  return static_cast<unsigned>(__popc(x)) & 1u;
#else
  return static_cast<unsigned>(__builtin_parity(x));
#endif
}

RIBBON_HD RIBBON_FORCE_INLINE unsigned parity(uint128_t x) {
  return parity(static_cast<std::uint64_t>(x) ^ static_cast<std::uint64_t>(x >> 64));
}

/// High 64 bits of the 128-bit product a*b.
RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t mul_high(std::uint64_t a, std::uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#else
  return static_cast<std::uint64_t>((static_cast<uint128_t>(a) * b) >> 64);
#endif
}

/// floor(log2(x)) for x > 0.
RIBBON_HD constexpr int floor_log2(std::uint64_t x) {
  int result = -1;
  while (x != 0) {
    x >>= 1;
    ++result;
  }
  return result;
}

RIBBON_HD constexpr bool is_power_of_two(std::uint64_t x) {
  return x != 0 && (x & (x - 1)) == 0;
}

RIBBON_HD constexpr std::uint64_t round_up(std::uint64_t x, std::uint64_t multiple) {
  return (x + multiple - 1) / multiple * multiple;
}

RIBBON_HD constexpr std::uint64_t divide_round_up(std::uint64_t x, std::uint64_t divisor) {
  return (x + divisor - 1) / divisor;
}

}  // namespace ribbon::detail
