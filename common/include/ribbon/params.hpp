/// @file params.hpp
/// Filter parameters: what a query needs to know (recorded in every file) and the build
/// knobs derived from them.
#pragma once

#include <cstdint>

#include "ribbon/config.hpp"
#include "ribbon/detail/bits.hpp"
#include "ribbon/hash.hpp"

namespace ribbon {

/// The largest number of layers a filter may have (bumped layers plus the final plain one).
inline constexpr std::uint32_t max_layers = 16;

/// Parameters shared by every builder and reader. Everything a query needs is here or in the
/// per-layer geometry; all of it is stored in the file header.
struct filter_params {
  std::uint32_t width = 64;           ///< ribbon width w: 32, 64 or 128 coefficient bits
  std::uint32_t result_bits = 8;      ///< r: fingerprint bits; false-positive rate 2^-r
  std::uint32_t bucket_size = 0;      ///< B: slots per bumping bucket (power of two)
  std::uint32_t threshold_light = 0;  ///< bucket code 1 bumps keys whose offset is below this
  std::uint32_t threshold_heavy = 0;  ///< bucket code 2 bumps keys whose offset is below this
  std::uint32_t reserved = 0;
  std::uint64_t shard_size = 0;   ///< S: start positions per shard (power of two)
  std::uint64_t seed = 0;         ///< hash seed
  key_kind keys = key_kind::u64;  ///< how keys are hashed

  /// Offsets below `threshold(code)` in a bucket with that code are bumped.
  RIBBON_HD std::uint32_t threshold(unsigned code) const {
    return code == 0 ? 0u : code == 1 ? threshold_light : code == 2 ? threshold_heavy : bucket_size;
  }
};

/// Build-time sizing knobs; none of these is needed to query a filter.
struct layer_sizing {
  double overload = 0;               ///< eps of a bumped layer (negative: overloaded)
  double plain_slack = 0;            ///< eps of the final plain layer (positive)
  std::uint64_t plain_max_keys = 0;  ///< a layer with at most this many keys is built plain
};

namespace detail {

/// BuRR's bucket size: 2^floor(log2(w^2 / (4 ceil(log2 w)))): 32 for w=32, 128 for w=64,
/// 512 for w=128.
RIBBON_HD constexpr std::uint32_t default_bucket_size(std::uint32_t width) {
  const std::uint64_t log_w = static_cast<std::uint64_t>(floor_log2(width));  // w is 2^k
  return std::uint32_t{1} << floor_log2(std::uint64_t{width} * width / (4 * log_w));
}

/// eps of a bumped layer: -4/w for w >= 64, -3/w for w = 32 (BuRR's published values).
constexpr double default_overload(std::uint32_t width) {
  return width >= 64 ? -4.0 / width : -3.0 / width;
}

}  // namespace detail

/// Is `width` one of the supported ribbon widths?
RIBBON_HD constexpr bool valid_width(std::uint32_t width) {
  return width == 32 || width == 64 || width == 128;
}

/// Parameters for width w and r result bits with the default thresholds and shard size.
/// `shard_size` 0 picks the default. Throws nothing; call validate_params() on the result.
filter_params make_params(std::uint32_t width, std::uint32_t result_bits,
                          std::uint64_t shard_size = 0, std::uint64_t seed = 0,
                          key_kind keys = key_kind::u64);

/// Returns nullptr if `p` is usable, else a message saying what is wrong with it.
const char* check_params(const filter_params& p);

/// The default sizing knobs for a width.
layer_sizing default_sizing(std::uint32_t width);

/// Result bits for a target false-positive rate: the smallest r with 2^-r <= fpr (1..32).
std::uint32_t result_bits_for_fpr(double fpr);

}  // namespace ribbon
