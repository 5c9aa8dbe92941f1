/// @file layer.hpp
/// Geometry of one layer: start positions, shards, buckets, interleaved solution blocks.
#pragma once

#include <cstdint>

#include "ribbon/config.hpp"
#include "ribbon/detail/bits.hpp"
#include "ribbon/detail/threshold_codes.hpp"
#include "ribbon/hash.hpp"
#include "ribbon/params.hpp"

namespace ribbon {

/// Kind of a layer. Bumped layers are overloaded and pass some keys on; the last layer is
/// plain (no bumping, built with slack and retried on failure). A standard layer is layer 0
/// of the standard and homogeneous variants: sharded like a bumped layer, with slack and no
/// thresholds; only its shard-head keys go on (to a plain layer), and it is retried whole.
enum class layer_kind : std::uint32_t { bumped = 0, plain = 1, standard = 2 };

/// Geometry of one layer. A row starts at s in [0, num_starts) and spans columns
/// [s, s + w); the layer has num_starts + w columns, that is num_starts / w + 1 blocks.
///
/// Bumped layers are cut into shards of 2^shard_bits start positions. Keys starting in the
/// first w positions of shard k > 0 are bumped by rule, so shard k owns exactly the columns
/// [kS + w, (k+1)S + w) (shard 0 also owns [0, w)) and shards are solved independently.
/// A plain layer is one shard.
struct layer_geometry {
  std::uint64_t num_starts = 0;
  std::uint32_t shard_bits = 63;
  layer_kind kind = layer_kind::plain;
  /// Blocks from this one on hold r + 1 result words, those before it r (fractional bits
  /// per key); num_blocks() when every block holds r.
  std::uint64_t upper_start_block = ~std::uint64_t{0};
  /// How the bucket thresholds are stored (threshold_codes.hpp): one_plus_bit in every file
  /// written now, two_bit in files of format versions 1 and 2.
  threshold_encoding codes = threshold_encoding::one_plus_bit;

  RIBBON_HD bool bumping() const { return kind == layer_kind::bumped; }
  /// Are the heads of shards k > 0 bumped by rule (bumped and standard layers)?
  RIBBON_HD bool sharded() const { return kind != layer_kind::plain; }
  /// Result bits of the keys starting in block `block`.
  RIBBON_HD std::uint32_t block_bits(std::uint64_t block, std::uint32_t result_bits) const {
    return result_bits + (block >= upper_start_block ? 1u : 0u);
  }
  /// Index of block `block`'s first word in the solution (blocks hold r or r + 1 words).
  RIBBON_HD std::uint64_t block_word(std::uint64_t block, std::uint32_t result_bits) const {
    return block * result_bits + (block > upper_start_block ? block - upper_start_block : 0);
  }
  RIBBON_HD std::uint64_t shard_size() const { return std::uint64_t{1} << shard_bits; }
  RIBBON_HD std::uint64_t num_shards() const {
    return detail::divide_round_up(num_starts, shard_size());
  }
  RIBBON_HD std::uint64_t shard_begin(std::uint64_t shard) const { return shard << shard_bits; }
  RIBBON_HD std::uint64_t shard_end(std::uint64_t shard) const {
    const std::uint64_t end = (shard + 1) << shard_bits;
    return (shard + 1 == num_shards()) ? num_starts : end;
  }
  RIBBON_HD std::uint64_t num_blocks(std::uint32_t width) const { return num_starts / width + 1; }
  RIBBON_HD std::uint64_t num_buckets(std::uint32_t bucket_size) const {
    // B is a power of two: a shift, not a division (queries work this out).
    return bumping() ? num_starts >> detail::count_trailing_zeros(bucket_size) : 0;
  }
  /// The shard whose start positions hold `hash`'s start (monotone in the hash).
  RIBBON_HD std::uint64_t shard_of(std::uint64_t hash) const {
    return fastrange64(hash, num_starts) >> shard_bits;
  }
  /// First solution block that shard `shard` owns (num_blocks() for shard num_shards()).
  RIBBON_HD std::uint64_t shard_first_block(std::uint64_t shard, std::uint32_t width) const {
    if (shard == 0) return 0;
    return shard >= num_shards() ? num_blocks(width) : shard_begin(shard) / width + 1;
  }
  /// Buckets of a full shard of a bumped layer (a power of two).
  RIBBON_HD std::uint64_t shard_buckets(std::uint32_t bucket_size) const {
    return shard_size() / bucket_size;
  }
  /// Buckets of shard `shard` of a bumped layer (the last one may hold fewer).
  RIBBON_HD std::uint64_t shard_buckets(std::uint64_t shard, std::uint32_t bucket_size) const {
    const std::uint64_t full = shard_buckets(bucket_size);
    const std::uint64_t left = num_buckets(bucket_size) - shard * full;
    return left < full ? left : full;
  }
  /// Bits of a bucket index within a shard (the exception lists' entries).
  RIBBON_HD unsigned code_index_bits(std::uint32_t bucket_size) const {
    return shard_bits - static_cast<unsigned>(detail::count_trailing_zeros(bucket_size));
  }
  /// Where the shards' regions of 1+-bit codes lie (bumped layers).
  RIBBON_HD detail::code_region_layout code_regions(std::uint32_t bucket_size) const {
    return {num_buckets(bucket_size), code_index_bits(bucket_size)};
  }
  /// First threshold word of shard `shard` (threshold_words() for shard num_shards()). Shards
  /// own whole words (with 2-bit codes, shards hold at least 32 buckets).
  RIBBON_HD std::uint64_t shard_first_threshold_word(std::uint64_t shard,
                                                     std::uint32_t bucket_size) const {
    if (shard >= num_shards()) return threshold_words(bucket_size);
    if (codes == threshold_encoding::two_bit) return shard_begin(shard) / bucket_size / 32;
    return code_regions(bucket_size).first_word(shard);
  }
  /// Bytes of the threshold words that shards [first, end) own (a contiguous run).
  RIBBON_HD std::uint64_t shard_range_threshold_bytes(std::uint64_t first, std::uint64_t end,
                                                      std::uint32_t bucket_size) const {
    return (shard_first_threshold_word(end, bucket_size) -
            shard_first_threshold_word(first, bucket_size)) *
           8;
  }
  /// Bytes of the solution blocks that shards [first, end) own (a contiguous run).
  RIBBON_HD std::uint64_t shard_range_solution_bytes(std::uint64_t first, std::uint64_t end,
                                                     std::uint32_t width,
                                                     std::uint32_t result_bits) const {
    return (block_word(shard_first_block(end, width), result_bits) -
            block_word(shard_first_block(first, width), result_bits)) *
           (width / 8);
  }
  /// 64-bit words of the threshold section (0 for layers without thresholds).
  RIBBON_HD std::uint64_t threshold_words(std::uint32_t bucket_size) const {
    const std::uint64_t buckets = num_buckets(bucket_size);
    if (codes == threshold_encoding::two_bit || buckets == 0) {
      return detail::divide_round_up(buckets, 32);
    }
    return code_regions(bucket_size).words();
  }
  /// The code (0 to 3, filter_params::threshold) of bucket `bucket` (a layer index) of a
  /// bumped layer whose threshold section is `thresholds`.
  RIBBON_HD unsigned bucket_code(const std::uint64_t* thresholds, std::uint64_t bucket,
                                 std::uint32_t bucket_size) const {
    if (codes == threshold_encoding::two_bit) {
      return static_cast<unsigned>(thresholds[bucket / 32] >> (2 * (bucket % 32))) & 3u;
    }
    return code_regions(bucket_size).code(thresholds, bucket);
  }
  /// Bytes of the interleaved solution: per block of w columns, r (or r + 1) words of w bits.
  RIBBON_HD std::uint64_t solution_bytes(std::uint32_t width, std::uint32_t result_bits) const {
    return block_word(num_blocks(width), result_bits) * (width / 8);
  }
};

/// A layer as a query sees it: geometry, hash salt and pointers to its sections.
struct layer_ref {
  layer_geometry geometry;
  std::uint64_t salt = 0;                     ///< remix salt (layer 0: 0 = no remix)
  const std::uint64_t* thresholds = nullptr;  ///< geometry.codes-encoded bucket thresholds
  const void* solution = nullptr;             ///< interleaved blocks of coefficient words
};

/// Sizing of a bumped layer holding `keys` keys: (1 + eps) slots per key, whole buckets.
std::uint64_t bumped_layer_starts(std::uint64_t keys, const filter_params& p,
                                  const layer_sizing& sizing);

/// Sizing of the plain layer for `keys` keys at retry `attempt`: about (1 + 1/w) columns per
/// key at the first try, a block (or 1/w of the layer) more at each retry.
std::uint64_t plain_layer_starts(std::uint64_t keys, const filter_params& p,
                                 const layer_sizing& sizing, std::uint32_t attempt);

/// Tries of the final plain layer before a build gives up (only adversarial keys get near it:
/// plain_layer_starts() grows the layer at every try).
inline constexpr std::uint32_t max_plain_attempts = 32;

/// Salt and geometry of one try of the final plain layer.
struct plain_layer_try {
  std::uint64_t salt;
  layer_geometry geometry;
};

/// Try `attempt` of plain layer `layer` for `keys` keys: a fresh salt and a block more each
/// time. Throws ribbon::error once max_plain_attempts tries have failed.
plain_layer_try plain_layer_attempt(std::uint32_t layer, std::uint64_t keys, const filter_params& p,
                                    const layer_sizing& sizing, std::uint32_t attempt);

/// Is layer `layer`, reached by `keys` keys, the final plain one? Layer 0 never is (bumped
/// or standard); after a standard layer 0 comes the plain one.
RIBBON_HD inline bool is_plain_layer(std::uint32_t layer, std::uint64_t keys,
                                     const filter_params& p, const layer_sizing& sizing) {
  return layer + 1 == max_layers ||
         (layer > 0 && (keys <= sizing.plain_max_keys || !uses_bumping(p.variant)));
}

/// Tries of a standard layer 0 before a build gives up; from the fifth on it grows.
inline constexpr std::uint32_t max_standard_attempts = 32;

/// Salt and geometry of one try of a standard (or homogeneous) layer 0.
struct standard_layer_try {
  std::uint64_t salt;  ///< 0 for the first try: layer 0 hashes are the key hashes
  layer_geometry geometry;
};

/// Try `attempt` of the standard layer 0 for `keys` keys: (1 + eps) slots per key, a fresh
/// salt per try, more slots from the fifth try on. Throws ribbon::error after
/// max_standard_attempts failed tries.
standard_layer_try standard_layer_attempt(std::uint64_t keys, const filter_params& p,
                                          const layer_sizing& sizing, std::uint32_t attempt);

/// Remix salt of layer `layer` at retry `attempt`.
RIBBON_HD inline std::uint64_t layer_salt(std::uint64_t seed, std::uint32_t layer,
                                          std::uint32_t attempt) {
  return mix64(seed + 0x632BE59BD9B4E019ULL * (layer + 1) +
               0x8CB92BA72F3D8DD7ULL * std::uint64_t{attempt});
}

/// Whether layer `layer` (with `salt`) hashes a key by remixing its hash of the layer
/// before, or, for layer 0, its key hash: every later layer does, and layer 0 where it has a
/// salt (a standard layer's retry); else layer 0 takes the key hash as it is. The one rule of
/// every builder and reader.
RIBBON_HD inline bool layer_remixes(std::uint32_t layer, std::uint64_t salt) {
  return layer > 0 || salt != 0;
}

/// Salt of bumped layer `layer`: layer 0 uses the key hash as it is (salt 0, no remix).
RIBBON_HD inline std::uint64_t bumped_layer_salt(std::uint64_t seed, std::uint32_t layer) {
  return layer == 0 ? 0 : layer_salt(seed, layer, 0);
}

/// A layer's geometry: its last blocks hold r + 1 bits as the parameters' fraction says.
RIBBON_HD inline layer_geometry make_geometry(std::uint64_t starts, std::uint32_t shard_bits,
                                              layer_kind kind, const filter_params& p) {
  layer_geometry g{starts, shard_bits, kind};
  g.codes = p.threshold_codes;
  const std::uint64_t blocks = g.num_blocks(p.width);
  const auto upper = static_cast<std::uint64_t>(
      (static_cast<detail::uint128_t>(blocks) * p.extra_bit_fraction) >> 16);
  g.upper_start_block = blocks - upper;
  return g;
}

/// Geometry of a sharded (bumped or standard) layer with `starts` start positions.
RIBBON_HD inline layer_geometry sharded_geometry(std::uint64_t starts, layer_kind kind,
                                                 const filter_params& p) {
  return make_geometry(starts, static_cast<std::uint32_t>(detail::floor_log2(p.shard_size)), kind,
                       p);
}

/// Geometry of a bumped layer with `starts` start positions.
RIBBON_HD inline layer_geometry bumped_geometry(std::uint64_t starts, const filter_params& p) {
  return sharded_geometry(starts, layer_kind::bumped, p);
}

/// Geometry of a plain layer with `starts` start positions (a single shard).
RIBBON_HD inline layer_geometry plain_geometry(std::uint64_t starts, const filter_params& p) {
  return make_geometry(starts, 63, layer_kind::plain, p);
}

/// Geometry of the bumped layer that `keys` keys reach.
inline layer_geometry bumped_layer_geometry(std::uint64_t keys, const filter_params& p,
                                            const layer_sizing& sizing) {
  return bumped_geometry(bumped_layer_starts(keys, p, sizing), p);
}

}  // namespace ribbon
