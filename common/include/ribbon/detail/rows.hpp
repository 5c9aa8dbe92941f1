/// @file rows.hpp
/// How a layer hash becomes an equation: start position, coefficient row and fingerprint.
#pragma once

#include <cstdint>

#include "ribbon/config.hpp"
#include "ribbon/detail/bits.hpp"
#include "ribbon/hash.hpp"

namespace ribbon::detail {

template <unsigned Width>
struct coefficient_word;
template <>
struct coefficient_word<32> {
  using type = std::uint32_t;
};
template <>
struct coefficient_word<64> {
  using type = std::uint64_t;
};
template <>
struct coefficient_word<128> {
  using type = uint128_t;
};

/// The coefficient word of a ribbon of width `Width` (one bit per column of the band).
template <unsigned Width>
using word_t = typename coefficient_word<Width>::type;

inline constexpr std::uint64_t coefficient_multiplier = 0x9E3779B97F4A7C15ULL;
inline constexpr std::uint64_t coefficient_multiplier_high = 0xD6E8FEB86659FD93ULL;
inline constexpr std::uint64_t fingerprint_multiplier = 0xC2B2AE3D27D4EB4FULL;

/// Coefficient row relative to the start column. Bit 0 is forced to 1 so the pivot search of
/// an insertion begins at the start. The low bits of h*odd depend only on the low bits of h,
/// which are independent of the start (taken from the high bits).
template <unsigned Width>
RIBBON_HD RIBBON_FORCE_INLINE word_t<Width> coefficients(std::uint64_t hash) {
  const std::uint64_t low = hash * coefficient_multiplier;
  if constexpr (Width == 32) {
    return static_cast<std::uint32_t>(low) | 1u;
  } else if constexpr (Width == 64) {
    return low | 1u;
  } else {
    const std::uint64_t high = rotate_left(hash, 32) * coefficient_multiplier_high;
    return ((static_cast<uint128_t>(high) << 64) | low) | 1u;
  }
}

/// The r-bit fingerprint (1 <= r <= 32): the high bits of another product, independent of
/// the coefficient bits in practice.
RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t fingerprint(std::uint64_t hash,
                                                        std::uint32_t result_bits) {
  return static_cast<std::uint32_t>((hash * fingerprint_multiplier) >> (64 - result_bits));
}

}  // namespace ribbon::detail
