/// @file filter_ref.hpp
/// A trivially copyable, non-owning view of a filter, usable on the host and in device code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ribbon/config.hpp"
#include "ribbon/detail/bits.hpp"
#include "ribbon/detail/records.hpp"
#include "ribbon/detail/rows.hpp"
#include "ribbon/hash.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"

namespace ribbon {

struct filter_ref;

namespace detail {

/// How a layer decides that a key starting at a position is bumped.
enum class bump_rule : std::uint32_t {
  none,          ///< a plain layer: never
  shard_heads,   ///< a standard layer: the first w starts of shards k > 0
  two_bit,       ///< a bumped layer with 2-bit codes: shard heads, then the bucket's code
  one_plus_bit,  ///< a bumped layer with 1+-bit codes: shard heads, then the bucket's code
  any,           ///< (template argument only) whichever `rule` the layer has
};

/// What a query needs of one layer that does not depend on the key, worked out once when the
/// filter is opened (query_plan), so that a query does no more than the key's own work.
struct layer_plan {
  layer_geometry geometry;
  std::uint64_t salt = 0;
  const void* solution = nullptr;
  const std::uint64_t* thresholds = nullptr;
  bump_rule rule = bump_rule::none;
  std::uint32_t bucket_bits = 0;  ///< log2 B
  std::uint64_t shard_mask = ~std::uint64_t{0};
  std::uint64_t head_width = 0;  ///< w for sharded layers: their heads are bumped
  std::uint32_t cut[4] = {};     ///< filter_params::threshold(code)
  code_region_layout regions;    ///< 1+-bit codes

  layer_plan() = default;
  RIBBON_HD layer_plan(const filter_params& p, const layer_ref& layer)
      : geometry(layer.geometry), salt(layer.salt), solution(layer.solution) {
    if (!geometry.sharded()) return;
    rule = bump_rule::shard_heads;
    shard_mask = geometry.shard_size() - 1;
    head_width = p.width;
    if (!geometry.bumping()) return;
    thresholds = layer.thresholds;
    rule = geometry.codes == threshold_encoding::two_bit ? bump_rule::two_bit
                                                         : bump_rule::one_plus_bit;
    bucket_bits = static_cast<std::uint32_t>(count_trailing_zeros(p.bucket_size));
    for (unsigned code = 0; code < 4; ++code) cut[code] = p.threshold(code);
    regions = geometry.code_regions(p.bucket_size);
  }

  /// Decides this layer's 1+-bit buckets from `codes`, the same codes written as 2-bit codes
  /// (code_region_layout::decode_to_two_bit()), which must outlive the plan.
  void use_two_bit_codes(const std::uint64_t* codes) {
    rule = bump_rule::two_bit;
    thresholds = codes;
  }

  /// Is the key starting at `start` bumped out of this layer? `Rule`: the layer's rule, or any.
  /// The one definition of the bump decision: every query path and the GPU kernels come here.
  template <bump_rule Rule = bump_rule::any>
  RIBBON_HD RIBBON_FORCE_INLINE bool bumps(std::uint64_t start) const {
    if constexpr (Rule == bump_rule::any) {
      switch (rule) {
        case bump_rule::none: return false;
        case bump_rule::shard_heads: return bumps<bump_rule::shard_heads>(start);
        case bump_rule::two_bit: return bumps<bump_rule::two_bit>(start);
        default: return bumps<bump_rule::one_plus_bit>(start);
      }
    } else if constexpr (Rule == bump_rule::none) {
      return false;
    } else {
      const bool shard_head = start > shard_mask && (start & shard_mask) < head_width;
      if constexpr (Rule == bump_rule::shard_heads) return shard_head;
      const std::uint64_t bucket = start >> bucket_bits;
      const auto offset =
          static_cast<std::uint32_t>(start & ((std::uint64_t{1} << bucket_bits) - 1));
      if constexpr (Rule == bump_rule::two_bit) {
        const unsigned code =
            static_cast<unsigned>(thresholds[bucket / 32] >> (2 * (bucket % 32))) & 3u;
        return shard_head || offset < cut[code];
      }
      return shard_head || regions.bumps(thresholds, bucket, offset, cut[1], cut[2]);
    }
  }
};

/// Is a key whose layer hash starts at `start` bumped out of layer `layer`? (The general path;
/// planned queries keep their layers' plans.)
RIBBON_HD RIBBON_FORCE_INLINE bool is_bumped(const filter_params& p, const layer_ref& layer,
                                             std::uint64_t start) {
  return layer_plan(p, layer).bumps(start);
}

/// The `bits`-bit result of a row whose band begins `shift` columns into `block` (a block's
/// first word) and may reach into the next block, whose first word is block[bits].
template <unsigned Width>
RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t block_result(const word_t<Width>* block,
                                                         std::uint32_t bits, unsigned shift,
                                                         word_t<Width> coeff) {
  using word = word_t<Width>;
  // The row's columns in this block and in the next: (coeff >> 1) >> (Width - 1 - shift) is
  // coeff >> (Width - shift), also for shift = 0.
  const word low = coeff << shift;
  const word high = (coeff >> 1) >> (Width - 1 - shift);
  std::uint32_t result = 0;
  for (std::uint32_t j = 0; j < bits; ++j) {
    result |= parity((block[j] & low) ^ (block[j + bits] & high)) << j;
  }
  return result;
}

/// The r-bit result of the row (start, coeff) against an interleaved solution whose blocks
/// all hold r = `result_bits` words.
template <unsigned Width>
RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t row_result(const void* solution,
                                                       std::uint32_t result_bits,
                                                       std::uint64_t start, word_t<Width> coeff) {
  const auto* block = static_cast<const word_t<Width>*>(solution) + (start / Width) * result_bits;
  const auto shift = static_cast<unsigned>(start % Width);
  // The common r = 8 and 16 with the loop unrolled: scalar queries then execute fewer
  // instructions, so more of them overlap their cache misses.
  switch (result_bits) {
    case 8: return block_result<Width>(block, 8, shift, coeff);
    case 16: return block_result<Width>(block, 16, shift, coeff);
    default: return block_result<Width>(block, result_bits, shift, coeff);
  }
}

/// The result of a key's row in `layer` (where it is not bumped) and, in `bits`, how many
/// bits it has: r, or r + 1 in the upper blocks of a layer with fractional bits. A row that
/// starts in the last r-word block reads only r words of the next block.
template <unsigned Width>
RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t layer_result(const filter_params& p,
                                                         const layer_ref& layer,
                                                         std::uint64_t start, std::uint64_t hash,
                                                         std::uint32_t& bits) {
  const std::uint64_t block = start / Width;
  bits = layer.geometry.block_bits(block, p.result_bits);
  const auto* words = static_cast<const word_t<Width>*>(layer.solution) +
                      layer.geometry.block_word(block, p.result_bits);
  return block_result<Width>(words, bits, static_cast<unsigned>(start % Width),
                             coefficients<Width>(hash));
}

/// Layer 0's hash of a key hash: the key hash itself, or its remix where layer 0 has a salt
/// (a standard layer retried with a new seed).
RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t layer0_hash(const layer_ref& layer0,
                                                        std::uint64_t key_hash) {
  return layer_remixes(0, layer0.salt) ? remix(key_hash, layer0.salt) : key_hash;
}

/// Walks the layers from `first`, where the key's layer hash is `hash`, to the first layer
/// that does not bump it. Returns that layer (num_layers if every layer bumps the key), with
/// its start and layer hash in `start` and `hash`.
RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t find_layer(const layer_ref* layers,
                                                       std::uint32_t num_layers,
                                                       std::uint32_t first, const filter_params& p,
                                                       std::uint64_t& hash, std::uint64_t& start) {
  for (std::uint32_t l = first; l < num_layers; ++l) {
    const layer_ref& layer = layers[l];
    if (l > first) hash = remix(hash, layer.salt);
    start = fastrange64(hash, layer.geometry.num_starts);
    if (!is_bumped(p, layer, start)) return l;
  }
  return num_layers;
}

/// Membership in the layer that does not bump the key (find_layer), where its layer hash is
/// `hash` and its start `start`.
template <unsigned Width>
RIBBON_HD RIBBON_FORCE_INLINE bool contains_in_layer(const filter_params& p, const layer_ref& layer,
                                                     std::uint64_t start, std::uint64_t hash) {
  if (p.extra_bit_fraction == 0) {  // every block holds r words: the shorter path
    return row_result<Width>(layer.solution, p.result_bits, start, coefficients<Width>(hash)) ==
           record_rhs(p, p.result_bits, hash);
  }
  std::uint32_t bits = 0;
  const std::uint32_t result = layer_result<Width>(p, layer, start, hash, bits);
  return result == record_rhs(p, bits, hash);
}

/// Membership from layer `first`, where the key's layer hash is `hash`.
template <unsigned Width>
RIBBON_HD RIBBON_FORCE_INLINE bool contains_from_layer(const filter_params& p,
                                                       const layer_ref* layers,
                                                       std::uint32_t num_layers,
                                                       std::uint32_t first, std::uint64_t hash) {
  std::uint64_t start = 0;
  const std::uint32_t l = find_layer(layers, num_layers, first, p, hash, start);
  if (l == num_layers) return false;  // bumped out of every layer: no key of the set goes there
  return contains_in_layer<Width>(p, layers[l], start, hash);
}

/// Does the filter (possibly) contain the key whose key hash is `hash`?
template <unsigned Width>
RIBBON_HD RIBBON_FORCE_INLINE bool contains_hash(const filter_params& p, const layer_ref* layers,
                                                 std::uint32_t num_layers, std::uint64_t hash) {
  if (num_layers == 0) return false;
  return contains_from_layer<Width>(p, layers, num_layers, 0, layer0_hash(layers[0], hash));
}

/// Retrieval from layer `first`, where the key's layer hash is `hash`: the value stored for
/// the key (arbitrary for keys that were not in the set).
template <unsigned Width>
RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t lookup_from_layer(const filter_params& p,
                                                              const layer_ref* layers,
                                                              std::uint32_t num_layers,
                                                              std::uint32_t first,
                                                              std::uint64_t hash) {
  std::uint64_t start = 0;
  const std::uint32_t l = find_layer(layers, num_layers, first, p, hash, start);
  if (l == num_layers) return 0;
  std::uint32_t bits = 0;
  return layer_result<Width>(p, layers[l], start, hash, bits);
}

/// The value a retrieval structure stores for the key whose key hash is `hash`.
template <unsigned Width>
RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t lookup_hash(const filter_params& p,
                                                        const layer_ref* layers,
                                                        std::uint32_t num_layers,
                                                        std::uint64_t hash) {
  if (num_layers == 0) return 0;
  return lookup_from_layer<Width>(p, layers, num_layers, 0, layer0_hash(layers[0], hash));
}

/// The r-bit result of a row (row_result), as the batched and planned queries call it; the
/// CPU adds SIMD forms of the same function (cpu/src/query.cpp).
template <unsigned Width>
struct portable_rows {
  RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t operator()(const void* solution,
                                                         std::uint32_t result_bits,
                                                         std::uint64_t start,
                                                         word_t<Width> coeff) const {
    return row_result<Width>(solution, result_bits, start, coeff);
  }
};

/// A filter's queries with everything that does not depend on the key resolved once: the
/// layers' constants (layer_plan), r, and what a key's result is compared with.
struct query_plan {
  std::uint32_t num_layers = 0;
  std::uint32_t width = 0;
  std::uint32_t result_bits = 0;
  /// r where every block of every layer holds r words and the right side is the
  /// fingerprint (no fractional bits, not homogeneous): rows of r words known at compile time
  /// for the common r = 8 and 16. 0 otherwise.
  std::uint32_t fixed_bits = 0;
  /// Masks the fingerprint: 0 in a homogeneous filter (its rows are solved for 0), all ones
  /// otherwise (record_rhs()).
  std::uint32_t rhs_mask = 0;
  layer_plan layers[max_layers];

  query_plan() = default;
  RIBBON_HD explicit query_plan(const filter_ref& f);

  /// Layer 0's hash of a key hash (layer0_hash()).
  RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t first_hash(std::uint64_t key_hash) const {
    return layer_remixes(0, layers[0].salt) ? remix(key_hash, layers[0].salt) : key_hash;
  }

  /// The first layer from `first` on that does not bump the key whose hash in layer
  /// `first - 1` is `hash` (num_layers: every layer bumps it), and the key's hash and start
  /// there. Not inlined: about 6 % of keys come here, and the query's hot path stays short.
  RIBBON_HD RIBBON_NOINLINE std::uint32_t find_layer_from(std::uint32_t first, std::uint64_t& hash,
                                                          std::uint64_t& start) const {
    for (std::uint32_t l = first; l < num_layers; ++l) {
      hash = remix(hash, layers[l].salt);
      start = fastrange64(hash, layers[l].geometry.num_starts);
      if (!layers[l].bumps(start)) return l;
    }
    return num_layers;
  }

  /// The layer that holds the key whose key hash is `hash` (num_layers: none), with its
  /// hash and start there. `Rule`: layer 0's rule (or any); layer 0 must be unsalted unless
  /// `Rule` is any.
  template <bump_rule Rule>
  RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t locate(std::uint64_t& hash,
                                                     std::uint64_t& start) const {
    const layer_plan& first = layers[0];
    if constexpr (Rule == bump_rule::any) hash = first_hash(hash);
    start = fastrange64(hash, first.geometry.num_starts);
    if (!first.bumps<Rule>(start)) return 0;
    return find_layer_from(1, hash, start);
  }

  /// The result of the key (hash, start) in layer `layer`, and in `bits` its width (r, or
  /// r + 1 in upper blocks of a layer with fractional bits). `Bits` > 0: every block holds
  /// Bits words (known at compile time); 0: any layer.
  template <unsigned Width, std::uint32_t Bits, class Rows = portable_rows<Width>>
  RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t result(std::uint32_t layer, std::uint64_t start,
                                                     std::uint64_t hash, std::uint32_t& bits,
                                                     const Rows& rows = {}) const {
    const layer_plan& l = layers[layer];
    if constexpr (Bits != 0) {
      bits = Bits;
      return rows(l.solution, Bits, start, coefficients<Width>(hash));
    } else {
      const std::uint64_t block = start / Width;
      bits = l.geometry.block_bits(block, result_bits);
      const auto* words =
          static_cast<const word_t<Width>*>(l.solution) + l.geometry.block_word(block, result_bits);
      return block_result<Width>(words, bits, static_cast<unsigned>(start % Width),
                                 coefficients<Width>(hash));
    }
  }

  /// Is the key (hash, start) of layer `layer` a member? (Its result equals its right side.)
  template <unsigned Width, std::uint32_t Bits, class Rows = portable_rows<Width>>
  RIBBON_HD RIBBON_FORCE_INLINE bool matches(std::uint32_t layer, std::uint64_t start,
                                             std::uint64_t hash, const Rows& rows = {}) const {
    std::uint32_t bits = 0;
    const std::uint32_t r = result<Width, Bits, Rows>(layer, start, hash, bits, rows);
    return r == (fingerprint(hash, bits) & rhs_mask);
  }

  /// Membership of the key whose key hash is `hash`: the filter_ref::contains_hash() answer.
  template <unsigned Width, bump_rule Rule, std::uint32_t Bits, class Rows = portable_rows<Width>>
  RIBBON_HD RIBBON_FORCE_INLINE bool contains(std::uint64_t hash) const {
    std::uint64_t start = 0;
    const std::uint32_t layer = locate<Rule>(hash, start);
    return layer != num_layers && matches<Width, Bits, Rows>(layer, start, hash);
  }

  /// The value stored for the key whose key hash is `hash`: filter_ref::lookup_hash(). `Bits`
  /// and `Rows` as result()'s.
  template <unsigned Width, bump_rule Rule, std::uint32_t Bits = 0,
            class Rows = portable_rows<Width>>
  RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t lookup(std::uint64_t hash) const {
    std::uint64_t start = 0;
    const std::uint32_t layer = locate<Rule>(hash, start);
    std::uint32_t bits = 0;
    return layer == num_layers ? 0 : result<Width, Bits, Rows>(layer, start, hash, bits);
  }
};

}  // namespace detail

/// Non-owning view of a filter (or retrieval structure): parameters and per-layer pointers.
/// Trivially copyable; pass it by value to a kernel. The memory it points to must outlive it.
struct filter_ref {
  filter_params params;
  std::uint64_t seed_mixed = 0;  ///< seed_mix(params.seed), precomputed
  std::uint64_t key_count = 0;
  std::uint32_t num_layers = 0;
  std::uint32_t reserved = 0;
  layer_ref layers[max_layers];

  /// Key hash of an integer key (filters built from u64 keys).
  RIBBON_HD std::uint64_t key_hash(std::uint64_t key) const { return hash_u64(key, seed_mixed); }
  /// Key hash of a byte-string key (filters built from byte strings).
  RIBBON_HD std::uint64_t key_hash(const void* data, std::size_t length) const {
    return hash_bytes(data, length, params.seed);
  }

  /// Membership by key hash: true for every key of the set, and for about 2^-r of the others
  /// (retrieval structures: their check bits, 2^-check_bits; always true without them).
  RIBBON_HD bool contains_hash(std::uint64_t hash) const {
    if (is_retrieval(params.variant)) return params.check_passes(hash, lookup_hash(hash));
    switch (params.width) {
      case 32: return detail::contains_hash<32>(params, layers, num_layers, hash);
      case 64: return detail::contains_hash<64>(params, layers, num_layers, hash);
      default: return detail::contains_hash<128>(params, layers, num_layers, hash);
    }
  }

  /// The r bits stored for a key hash (retrieval structures; arbitrary for other keys): the
  /// value under its check bits (params.value_of() keeps the value).
  RIBBON_HD std::uint32_t lookup_hash(std::uint64_t hash) const {
    switch (params.width) {
      case 32: return detail::lookup_hash<32>(params, layers, num_layers, hash);
      case 64: return detail::lookup_hash<64>(params, layers, num_layers, hash);
      default: return detail::lookup_hash<128>(params, layers, num_layers, hash);
    }
  }

  /// Membership of an integer key. The filter must have been built from integer keys.
  RIBBON_HD bool contains(std::uint64_t key) const { return contains_hash(key_hash(key)); }

  /// Membership of a byte-string key. The filter must have been built from byte strings.
  RIBBON_HD bool contains(const void* data, std::size_t length) const {
    return contains_hash(key_hash(data, length));
  }
};

namespace detail {
RIBBON_HD inline query_plan::query_plan(const filter_ref& f)
    : num_layers(f.num_layers),
      width(f.params.width),
      result_bits(f.params.result_bits),
      fixed_bits(f.params.extra_bit_fraction == 0 && f.params.variant != filter_variant::homogeneous
                     ? f.params.result_bits
                     : 0),
      rhs_mask(f.params.variant == filter_variant::homogeneous ? 0u : ~0u) {
  for (std::uint32_t l = 0; l < f.num_layers; ++l) layers[l] = layer_plan(f.params, f.layers[l]);
}
}  // namespace detail

}  // namespace ribbon
