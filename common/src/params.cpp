#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "ribbon/error.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"

namespace ribbon {

namespace {

/// Default shard size: large enough that the w-slot shard heads cost little space (about
/// 0.02 points of overhead per halving at w=64, r=8) and that the 1+-bit codes' exception
/// lists (threshold_codes.hpp) need little room for their spread; small enough that the
/// working arrays of the shards one thread interleaves stay within the build's memory
/// budget (bench/RESULTS.md: with 8 such shards, 2^17 cost about 1 byte/key more peak RSS
/// than 2^16; with today's 3, about 0.4).
constexpr std::uint64_t default_shard_size(std::uint32_t) {
  return std::uint64_t{1} << 17;
}

/// Default threshold encoding: 1+-bit codes (the smaller file), except at w = 32, where about
/// one failing bucket in six bumps all its keys (code 3), more than the 1+-bit header holds,
/// so 2-bit codes are smaller there (bench/RESULTS.md).
constexpr threshold_encoding default_threshold_codes(std::uint32_t width) {
  return width == 32 ? threshold_encoding::two_bit : threshold_encoding::one_plus_bit;
}

}  // namespace

filter_params make_params(std::uint32_t width, std::uint32_t result_bits, std::uint64_t shard_size,
                          std::uint64_t seed, key_kind keys) {
  filter_params p;
  p.width = width;
  p.result_bits = result_bits;
  p.seed = seed;
  p.keys = keys;
  if (!valid_width(width)) return p;  // check_params() reports it
  p.bucket_size = detail::default_bucket_size(width);
  p.shard_size = shard_size != 0 ? shard_size : default_shard_size(width);
  p.threshold_codes = default_threshold_codes(width);
  // BuRR's 2-bit threshold cut points, given as v = B-1-offset cut points "lower" and
  // "upper"; a bucket bumps offsets below B-1-upper (light) or B-1-lower (heavy).
  const double eps = detail::default_overload(width);
  const double b = p.bucket_size;
  const double lower = width >= 64 ? (0.78 + 1.30 * eps) * b : (0.70 + eps / 2) * b;
  const double upper = width >= 64 ? (0.91 + 0.75 * eps) * b : (0.87 + eps / 2) * b;
  p.threshold_light = p.bucket_size - 1 - static_cast<std::uint32_t>(upper);
  p.threshold_heavy = p.bucket_size - 1 - static_cast<std::uint32_t>(lower);
  return p;
}

const char* check_params(const filter_params& p) {
  if (!valid_width(p.width)) return "ribbon width must be 32, 64 or 128";
  if (p.result_bits < 1 || p.result_bits > 32) return "result bits must be between 1 and 32";
  if (!detail::is_power_of_two(p.bucket_size) || p.bucket_size < p.width ||
      p.bucket_size > (1u << 16)) {
    return "bucket size must be a power of two between the width and 65536";
  }
  if (!(0 < p.threshold_light && p.threshold_light <= p.threshold_heavy &&
        p.threshold_heavy <= p.bucket_size)) {
    return "bucket thresholds must satisfy 0 < light <= heavy <= bucket size";
  }
  if (!detail::is_power_of_two(p.shard_size) || p.shard_size < 32ull * p.bucket_size ||
      p.shard_size > (std::uint64_t{1} << 31)) {
    return "shard size must be a power of two between 32 buckets and 2^31";
  }
  if (p.keys != key_kind::u64 && p.keys != key_kind::bytes) return "unknown key kind";
  if (p.groups != group_kind::none && p.groups != group_kind::u64 &&
      p.groups != group_kind::bytes) {
    return "unknown group kind";
  }
  if (p.is_set() && is_retrieval(p.variant)) {
    return "a filter set is a filter (retrieval structures have no groups)";
  }
  if (p.threshold_codes != threshold_encoding::two_bit &&
      p.threshold_codes != threshold_encoding::one_plus_bit) {
    return "unknown threshold encoding";
  }
  if (!valid_variant(p.variant)) return "unknown variant";
  if (p.extra_bit_fraction >= extra_bit_one) return "extra-bit fraction must be below 1";
  if (p.extra_bit_fraction != 0 && (is_retrieval(p.variant) || p.result_bits >= 32)) {
    return "fractional bits per key need a filter with fewer than 32 result bits";
  }
  if (p.check_bits != 0 && !is_retrieval(p.variant)) {
    return "check bits are for retrieval structures (a filter's r bits are all check bits)";
  }
  if (p.check_bits != 0 && p.check_bits >= p.result_bits) {
    return "check bits must leave at least one of the result bits for the value";
  }
  return nullptr;
}

layer_sizing default_sizing(std::uint32_t width) {
  layer_sizing s;
  s.overload = detail::default_overload(width);
  s.plain_slack = 1.0 / width;
  s.plain_max_keys = 2048;
  s.standard_slack = 0.05;  // builders replace it (standard_slack_for_success, or the user's)
  return s;
}

std::uint32_t result_bits_for_fpr(double fpr) {
  if (!(fpr > 0 && fpr < 1)) return 0;
  const double bits = std::ceil(-std::log2(fpr) - 1e-9);
  return bits < 1 ? 1 : bits > 32 ? 32 : static_cast<std::uint32_t>(bits);
}

fractional_bits fractional_bits_for_fpr(double fpr) {
  if (!(fpr > 0 && fpr < 1)) return {0, 0};
  const double bits = -std::log2(fpr);
  if (bits <= 1) return {1, 0};
  if (bits >= 32) return {32, 0};
  const auto r = static_cast<std::uint32_t>(std::floor(bits + 1e-12));
  // fpr = 2^-r (1 - f/2): f = 2 - fpr 2^(r+1), in [0, 1).
  const double f = 2.0 - fpr * std::ldexp(1.0, static_cast<int>(r) + 1);
  const auto q = static_cast<std::int64_t>(std::llround(f * extra_bit_one));
  if (q <= 0) return {r, 0};
  if (q >= extra_bit_one) return {r + 1, 0};
  return {r, static_cast<std::uint32_t>(q)};
}

double expected_fpr(const filter_params& p) {
  const double f = static_cast<double>(p.extra_bit_fraction) / extra_bit_one;
  return std::ldexp(1.0 - f / 2, -static_cast<int>(p.result_bits));
}

namespace {

/// Start positions of a layer that is retried on failure (plain, standard): (1 + slack) per
/// key, whole blocks. Retrying with new salts is enough almost always; from the fifth try on
/// the layer grows by `growth` per try, so that a build can never loop forever.
std::uint64_t retried_layer_starts(std::uint64_t keys, const filter_params& p, double slack,
                                   double growth, std::uint32_t attempt) {
  long double slots = static_cast<long double>(keys) * (1.0L + slack);
  for (std::uint32_t a = 4; a <= attempt; ++a) slots *= 1.0L + growth;
  const auto target = static_cast<std::uint64_t>(std::ceil(slots));
  return detail::round_up(target > 0 ? target : 1, p.width);
}

/// First-try failure rate of one full standard shard of 2^16 slots: ln p = a + b eps, the
/// maximum-likelihood fit to 26,000 shard builds (ribbon_standard_failure; bench/RESULTS.md,
/// "Standard Ribbon").
struct shard_failure_model {
  double a, b;
};

shard_failure_model standard_failure_model(std::uint32_t width) {
  switch (width) {
    case 32: return {4.15, -31.5};
    case 64: return {4.40, -89.5};
    default: return {2.45, -184.0};
  }
}

}  // namespace

double standard_slack_for_success(const filter_params& p, std::uint64_t keys, double success) {
  const shard_failure_model m = standard_failure_model(p.width);
  // Failures are local events, so the rate of a layer grows with its slots: a layer of
  // (1 + eps) keys slots fails at the first try with about (slots / 2^16) p_shard(eps).
  const double shards = std::max(1.0, static_cast<double>(keys) / 65536.0);
  const double allowed = -std::log(std::clamp(success, 1e-9, 1 - 1e-9)) / shards;
  const double eps = (std::log(allowed) - m.a) / m.b;
  return std::clamp(eps, 0.001, 0.5);
}

standard_layer_try standard_layer_attempt(std::uint64_t keys, const filter_params& p,
                                          const layer_sizing& sizing, std::uint32_t attempt) {
  if (attempt >= max_standard_attempts) {
    throw error("the standard Ribbon layer failed to build " +
                std::to_string(max_standard_attempts) + " times (" + std::to_string(keys) +
                " keys); give it more slack");
  }
  const std::uint64_t starts = retried_layer_starts(keys, p, sizing.standard_slack,
                                                    std::max(sizing.standard_slack, 0.01), attempt);
  return {attempt == 0 ? 0 : layer_salt(p.seed, 0, attempt),
          sharded_geometry(starts, layer_kind::standard, p)};
}

namespace detail {

void throw_conflicting_values(const filter_params& p, std::uint64_t key_hash) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(key_hash));
  const std::string which = p.keys == key_kind::u64
                                ? "key " + std::to_string(unhash_u64(key_hash, seed_mix(p.seed)))
                                : std::string("a byte-string key (key hash 0x") + hex + ")";
  throw conflicting_values_error(
      "duplicate key with different values: " + which + " is given twice with two values",
      key_hash);
}

}  // namespace detail

std::uint64_t bumped_layer_starts(std::uint64_t keys, const filter_params& p,
                                  const layer_sizing& sizing) {
  const auto target = static_cast<std::uint64_t>(
      std::ceil(static_cast<long double>(keys) * (1.0L + sizing.overload)));
  return detail::round_up(target > 0 ? target : 1, p.bucket_size);
}

std::uint64_t plain_layer_starts(std::uint64_t keys, const filter_params& p,
                                 const layer_sizing& sizing, std::uint32_t attempt) {
  // A plain layer is one standard Ribbon system of a few thousand keys at most (bumped
  // variants), and its columns are its start positions plus a block of tail. It succeeds or
  // fails by whole blocks: with about (1 + 1/w) n columns its first try succeeds about half
  // the time, with a block more almost always (bench/RESULTS.md, "The final plain layer"). A
  // try is cheap next to the layers before it, so it starts tight and each failed try adds a
  // block, or 1/w of the layer when that is more (large plain layers: the standard
  // variants' shard heads).
  const long double growth = 1.0L + 1.0L / p.width;
  const long double first = static_cast<long double>(keys) * (1.0L + sizing.plain_slack);
  auto blocks_for = [&](long double columns) {
    return std::max<std::uint64_t>(2, static_cast<std::uint64_t>(std::ceil(columns / p.width)));
  };
  const std::uint64_t blocks =
      std::max(blocks_for(first) + attempt, blocks_for(first * std::pow(growth, attempt)));
  return (blocks - 1) * p.width;
}

plain_layer_try plain_layer_attempt(std::uint32_t layer, std::uint64_t keys, const filter_params& p,
                                    const layer_sizing& sizing, std::uint32_t attempt) {
  if (attempt >= max_plain_attempts) {
    throw error("the final plain layer failed to build " + std::to_string(max_plain_attempts) +
                " times (" + std::to_string(keys) + " keys)");
  }
  return {layer_salt(p.seed, layer, attempt),
          plain_geometry(plain_layer_starts(keys, p, sizing, attempt), p)};
}

}  // namespace ribbon
