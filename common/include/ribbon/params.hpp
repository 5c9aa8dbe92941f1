/// @file params.hpp
/// Filter parameters: what a query needs to know (recorded in every file) and the build
/// knobs derived from them.
#pragma once

#include <cstdint>
#include <string_view>

#include "ribbon/config.hpp"
#include "ribbon/detail/bits.hpp"
#include "ribbon/detail/rows.hpp"
#include "ribbon/detail/threshold_codes.hpp"
#include "ribbon/hash.hpp"

namespace ribbon {

/// The largest number of layers a filter may have (bumped layers plus the final plain one).
inline constexpr std::uint32_t max_layers = 16;

/// What a file stores. Filters answer membership (no false negatives, about 2^-r false
/// positives); retrieval structures (static functions) return the r-bit value stored for a key.
enum class filter_variant : std::uint32_t {
  bumped = 0,              ///< BuRR-style bumped, layered filter (the default; smallest)
  standard = 1,            ///< standard Ribbon: no bumping, slack eps > 0, retried on failure
  homogeneous = 2,         ///< homogeneous Ribbon: all right sides 0, never fails
  bumped_retrieval = 3,    ///< static function, bumped and layered
  standard_retrieval = 4,  ///< static function, standard Ribbon with retries
};

/// Is this a retrieval structure (a static function) rather than a filter?
RIBBON_HD constexpr bool is_retrieval(filter_variant v) {
  return v == filter_variant::bumped_retrieval || v == filter_variant::standard_retrieval;
}
/// Does layer 0 bump keys by bucket thresholds (rather than being a standard Ribbon layer)?
RIBBON_HD constexpr bool uses_bumping(filter_variant v) {
  return v == filter_variant::bumped || v == filter_variant::bumped_retrieval;
}
/// Is `v` a known variant?
RIBBON_HD constexpr bool valid_variant(filter_variant v) {
  return static_cast<std::uint32_t>(v) <=
         static_cast<std::uint32_t>(filter_variant::standard_retrieval);
}

/// Every variant, in the order of their values.
inline constexpr filter_variant all_variants[] = {
    filter_variant::bumped, filter_variant::standard, filter_variant::homogeneous,
    filter_variant::bumped_retrieval, filter_variant::standard_retrieval};

/// The variant's name as options and `ribbon info` spell it: "bumped", "standard",
/// "homogeneous", "retrieval" (bumped retrieval) or "standard-retrieval"; "unknown" for a value
/// that is not a variant.
inline const char* variant_name(filter_variant variant) {
  constexpr const char* names[] = {"bumped", "standard", "homogeneous", "retrieval",
                                   "standard-retrieval"};
  return valid_variant(variant) ? names[static_cast<std::uint32_t>(variant)] : "unknown";
}

/// Reads a variant by its name (`ribbon build --variant`, Python's variant=) into `out`;
/// false, `out` untouched, for any other name.
inline bool variant_from_name(std::string_view name, filter_variant* out) {
  for (const filter_variant variant : all_variants) {
    if (name == variant_name(variant)) {
      *out = variant;
      return true;
    }
  }
  return false;
}

/// The unit of filter_params::extra_bit_fraction.
inline constexpr std::uint32_t extra_bit_one = 1u << 16;

/// Parameters shared by every builder and reader. Everything a query needs is here or in the
/// per-layer geometry; all of it is stored in the file header.
struct filter_params {
  std::uint32_t width = 64;           ///< ribbon width w: 32, 64 or 128 coefficient bits
  std::uint32_t result_bits = 8;      ///< r: fingerprint bits; false-positive rate 2^-r
  std::uint32_t bucket_size = 0;      ///< B: slots per bumping bucket (power of two)
  std::uint32_t threshold_light = 0;  ///< bucket code 1 bumps keys whose offset is below this
  std::uint32_t threshold_heavy = 0;  ///< bucket code 2 bumps keys whose offset is below this
  filter_variant variant = filter_variant::bumped;
  std::uint64_t shard_size = 0;   ///< S: start positions per shard (power of two)
  std::uint64_t seed = 0;         ///< hash seed
  key_kind keys = key_kind::u64;  ///< how keys are hashed
  /// Fractional bits per key: about this fraction (in units of 2^-16) of each layer's blocks,
  /// the last ones, hold r + 1 result bits instead of r (filters only; 0: none).
  std::uint32_t extra_bit_fraction = 0;
  /// How bumped layers store their bucket thresholds (threshold_codes.hpp).
  threshold_encoding threshold_codes = threshold_encoding::one_plus_bit;
  /// Retrieval only: the top `check_bits` of each key's r result bits hold a fingerprint of
  /// its key hash (check_of()), the low r - check_bits its value, so that a lookup tells a
  /// non-member apart except with probability 2^-check_bits (format version 4). 0: none.
  std::uint32_t check_bits = 0;
  /// Filter sets only: how groups are named; a set stores pair_hash(group hash, key hash)
  /// for each (group, key) (format version 6). none for every other file.
  group_kind groups = group_kind::none;

  /// Is this a filter set (queried by group and key)?
  RIBBON_HD bool is_set() const { return groups != group_kind::none; }

  /// Result bits the solver carries: r, or r + 1 with fractional bits.
  RIBBON_HD std::uint32_t solver_bits() const { return result_bits + (extra_bit_fraction != 0); }

  /// Bits of a stored value: r less the check bits.
  RIBBON_HD std::uint32_t value_bits() const { return result_bits - check_bits; }
  /// The r result bits stored for a key with key hash `key_hash` and value `value` (below
  /// 2^value_bits()): the value under the key's check bits.
  RIBBON_HD std::uint32_t stored_value(std::uint64_t key_hash, std::uint32_t value) const;
  /// Does `stored` (a lookup's r bits) carry the check bits of the key with key hash
  /// `key_hash`? Always true without check bits.
  RIBBON_HD bool check_passes(std::uint64_t key_hash, std::uint32_t stored) const;
  /// The value bits of `stored`.
  RIBBON_HD std::uint32_t value_of(std::uint32_t stored) const {
    return value_bits() >= 32 ? stored : stored & ((std::uint32_t{1} << value_bits()) - 1);
  }

  /// Offsets below `threshold(code)` in a bucket with that code are bumped.
  RIBBON_HD std::uint32_t threshold(unsigned code) const {
    return code == 0 ? 0u : code == 1 ? threshold_light : code == 2 ? threshold_heavy : bucket_size;
  }
};

/// Check bits are the key hash's fingerprint (detail::fingerprint, as a filter's r bits are a
/// layer hash's), above the value bits.
RIBBON_HD inline std::uint32_t filter_params::stored_value(std::uint64_t key_hash,
                                                           std::uint32_t value) const {
  if (check_bits == 0) return value;
  return value | (detail::fingerprint(key_hash, check_bits) << value_bits());
}

RIBBON_HD inline bool filter_params::check_passes(std::uint64_t key_hash,
                                                  std::uint32_t stored) const {
  if (check_bits == 0) return true;
  return (stored >> value_bits()) == detail::fingerprint(key_hash, check_bits);
}

/// Build-time sizing knobs; none of these is needed to query a filter.
struct layer_sizing {
  double overload = 0;               ///< eps of a bumped layer (negative: overloaded)
  double plain_slack = 0;            ///< eps of the final plain layer (positive)
  std::uint64_t plain_max_keys = 0;  ///< a layer with at most this many keys is built plain
  double standard_slack = 0;         ///< eps of a standard or homogeneous layer 0
};

namespace detail {

/// BuRR's bucket size: 2^floor(log2(w^2 / (4 ceil(log2 w)))): 32 for w=32, 128 for w=64,
/// 512 for w=128.
RIBBON_HD constexpr std::uint32_t default_bucket_size(std::uint32_t width) {
  const std::uint64_t log_w = static_cast<std::uint64_t>(floor_log2(width));  // w is 2^k
  return std::uint32_t{1} << floor_log2(std::uint64_t{width} * width / (4 * log_w));
}

/// eps of a bumped layer: -5/64 for w = 64, -4/w for w = 128, -3/w for w = 32 (BuRR's
/// published values, but for w = 64, where -5/64 (with the cut points make_params derives
/// from it) leaves fewer empty slots than -4/64: 0.261 % against 0.277 % total overhead at
/// r = 8, 10^7 keys, for 1.8 % more instructions; bench/RESULTS.md, "Space overhead").
constexpr double default_overload(std::uint32_t width) {
  return width == 64 ? -5.0 / 64 : width >= 64 ? -4.0 / width : -3.0 / width;
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

/// Result bits and extra-bit fraction for a target false-positive rate, fractional: r with
/// 2^-(r+1) < fpr <= 2^-r and a fraction f of blocks holding r + 1 bits, so that the
/// expected rate 2^-r (1 - f/2) is fpr. {0, 0} for fpr outside (0, 1).
struct fractional_bits {
  std::uint32_t result_bits;
  std::uint32_t extra_bit_fraction;
};
fractional_bits fractional_bits_for_fpr(double fpr);

/// Expected false-positive rate of a filter with these parameters (2^-r, or the block-
/// weighted mix of 2^-r and 2^-(r+1)); homogeneous filters exceed it when overloaded.
double expected_fpr(const filter_params& p);

/// eps of a standard Ribbon layer 0 so that a build succeeds at its first try with about
/// probability `success` (from measured per-shard failure rates; see bench/RESULTS.md).
double standard_slack_for_success(const filter_params& p, std::uint64_t keys, double success);

namespace detail {
/// Throws conflicting_values_error for the key with key hash `key_hash` (a retrieval build
/// found it twice with different values); names an integer key.
[[noreturn]] void throw_conflicting_values(const filter_params& p, std::uint64_t key_hash);
}  // namespace detail

}  // namespace ribbon
