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

/// Layer 0's hash of a key hash: the key hash itself, or its remix where layer 0 (a layer_ref
/// or layer_plan) has a salt (a standard layer retried with a new seed).
template <class Layer>
RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t layer0_hash(const Layer& layer0,
                                                        std::uint64_t key_hash) {
  return layer_remixes(0, layer0.salt) ? remix(key_hash, layer0.salt) : key_hash;
}

/// The one walk of every query through a filter's layers, and the answer where it ends, for
/// the two forms a filter is queried in. `Plan` is query_plan (the CPU's: every layer's
/// layer_plan worked out once, when the filter is opened) or ref_plan (a filter_ref's, as
/// device code has it: each visited layer's layer_plan made as the walk reaches it). A Plan
/// has num_layers, result_bits, layers[l] (a layer_plan or layer_ref: salt, geometry,
/// solution), plan_of(l) (layer l's layer_plan), find_layer_from() (walk_from(), inlined or
/// not), r_word_rows() (are all blocks known, here, to hold r words?) and right_side(hash,
/// bits) (what a member's row result equals: record_rhs()).
template <class Plan>
struct query_walk {
  /// Layer 0's hash of a key hash (layer0_hash()).
  RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t first_hash(std::uint64_t key_hash) const {
    return layer0_hash(plan().layers[0], key_hash);
  }

  /// The first layer from `first` on that does not bump the key whose hash in layer
  /// `first - 1` is `hash` (num_layers: every layer bumps it), and the key's hash and start
  /// there.
  RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t walk_from(std::uint32_t first, std::uint64_t& hash,
                                                        std::uint64_t& start) const {
    const Plan& q = plan();
    for (std::uint32_t l = first; l < q.num_layers; ++l) {
      hash = remix(hash, q.layers[l].salt);
      start = fastrange64(hash, q.layers[l].geometry.num_starts);
      if (!q.plan_of(l).bumps(start)) return l;
    }
    return q.num_layers;
  }

  /// The layer that holds the key whose key hash is `hash` (num_layers: none), with its
  /// hash and start there. `Rule`: layer 0's rule (or any); layer 0 must be unsalted unless
  /// `Rule` is any. The filter must have a layer.
  template <bump_rule Rule>
  RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t locate(std::uint64_t& hash,
                                                     std::uint64_t& start) const {
    const Plan& q = plan();
    if constexpr (Rule == bump_rule::any) hash = first_hash(hash);
    start = fastrange64(hash, q.layers[0].geometry.num_starts);
    if (!q.plan_of(0).template bumps<Rule>(start)) return 0;
    return q.find_layer_from(1, hash, start);
  }

  /// The result of the key (hash, start) in layer `layer`, and in `bits` its width (r, or
  /// r + 1 in upper blocks of a layer with fractional bits). `Bits` > 0: every block holds
  /// Bits words (known at compile time), read by `rows`; 0: any layer.
  template <unsigned Width, std::uint32_t Bits, class Rows = portable_rows<Width>>
  RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t result(std::uint32_t layer, std::uint64_t start,
                                                     std::uint64_t hash, std::uint32_t& bits,
                                                     const Rows& rows = {}) const {
    const Plan& q = plan();
    const auto& l = q.layers[layer];
    if constexpr (Bits != 0) {
      bits = Bits;
      return rows(l.solution, Bits, start, coefficients<Width>(hash));
    } else {
      if (q.r_word_rows()) {  // every block holds r words: the shorter path
        bits = q.result_bits;
        return row_result<Width>(l.solution, q.result_bits, start, coefficients<Width>(hash));
      }
      const std::uint64_t block = start / Width;
      bits = l.geometry.block_bits(block, q.result_bits);
      const auto* words = static_cast<const word_t<Width>*>(l.solution) +
                          l.geometry.block_word(block, q.result_bits);
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
    return r == plan().right_side(hash, bits);
  }

  /// The membership answer of the key (hash, start) that the walk found in `layer`:
  /// num_layers (bumped out of every layer, where no key of the set goes) is not a member.
  template <unsigned Width, std::uint32_t Bits, class Rows = portable_rows<Width>>
  RIBBON_HD RIBBON_FORCE_INLINE bool member(std::uint32_t layer, std::uint64_t start,
                                            std::uint64_t hash, const Rows& rows = {}) const {
    return layer != plan().num_layers && matches<Width, Bits, Rows>(layer, start, hash, rows);
  }

  /// The retrieval answer of the key (hash, start) that the walk found in `layer`: its
  /// result, 0 where every layer bumps it.
  template <unsigned Width, std::uint32_t Bits, class Rows = portable_rows<Width>>
  RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t value(std::uint32_t layer, std::uint64_t start,
                                                    std::uint64_t hash,
                                                    const Rows& rows = {}) const {
    std::uint32_t bits = 0;
    return layer == plan().num_layers ? 0
                                      : result<Width, Bits, Rows>(layer, start, hash, bits, rows);
  }

  /// Membership of the key whose key hash is `hash`: the filter_ref::contains_hash() answer.
  template <unsigned Width, bump_rule Rule, std::uint32_t Bits, class Rows = portable_rows<Width>>
  RIBBON_HD RIBBON_FORCE_INLINE bool contains(std::uint64_t hash) const {
    std::uint64_t start = 0;
    const std::uint32_t layer = locate<Rule>(hash, start);
    return member<Width, Bits, Rows>(layer, start, hash);
  }

  /// The value stored for the key whose key hash is `hash`: filter_ref::lookup_hash(). `Bits`
  /// and `Rows` as result()'s.
  template <unsigned Width, bump_rule Rule, std::uint32_t Bits = 0,
            class Rows = portable_rows<Width>>
  RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t lookup(std::uint64_t hash) const {
    std::uint64_t start = 0;
    const std::uint32_t layer = locate<Rule>(hash, start);
    return value<Width, Bits, Rows>(layer, start, hash);
  }

 private:
  RIBBON_HD RIBBON_FORCE_INLINE const Plan& plan() const { return static_cast<const Plan&>(*this); }
};

/// A filter's queries with everything that does not depend on the key resolved once: the
/// layers' constants (layer_plan), r, and what a key's result is compared with.
struct query_plan : query_walk<query_plan> {
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

  /// Layer l's plan, as stored.
  RIBBON_HD RIBBON_FORCE_INLINE const layer_plan& plan_of(std::uint32_t l) const {
    return layers[l];
  }
  /// No: filters whose blocks all hold r words have routines with Bits = r (fixed_bits), or
  /// else (homogeneous, r other than 8 and 16) take the general path, with no test per query.
  RIBBON_HD static constexpr bool r_word_rows() { return false; }
  RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t right_side(std::uint64_t hash,
                                                         std::uint32_t bits) const {
    return fingerprint(hash, bits) & rhs_mask;
  }

  /// walk_from(). Not inlined: about 6 % of keys come here, and the query's hot path stays
  /// short.
  RIBBON_HD RIBBON_NOINLINE std::uint32_t find_layer_from(std::uint32_t first, std::uint64_t& hash,
                                                          std::uint64_t& start) const {
    return walk_from(first, hash, start);
  }
};

/// A filter_ref's layers as the walk sees them where nothing is kept per filter (device code,
/// filter_ref's own queries): each visited layer's plan made from its layer_ref on the fly.
struct ref_plan : query_walk<ref_plan> {
  // Only what every query reads; the rest is read where it is used, as the compiler would not
  // defer loads made here (4 instructions a query).
  const filter_params& params;
  const layer_ref* layers;
  std::uint32_t num_layers;
  std::uint32_t result_bits;

  RIBBON_HD explicit ref_plan(const filter_ref& f);

  /// Layer l's plan, made now.
  RIBBON_HD RIBBON_FORCE_INLINE layer_plan plan_of(std::uint32_t l) const {
    return layer_plan(params, layers[l]);
  }
  /// Where there are no fractional bits.
  RIBBON_HD RIBBON_FORCE_INLINE bool r_word_rows() const { return params.extra_bit_fraction == 0; }
  RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t right_side(std::uint64_t hash,
                                                         std::uint32_t bits) const {
    return record_rhs(params, bits, hash);
  }

  /// walk_from(), inlined.
  RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t find_layer_from(std::uint32_t first,
                                                              std::uint64_t& hash,
                                                              std::uint64_t& start) const {
    return walk_from(first, hash, start);
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
    if (num_layers == 0) return false;
    const detail::ref_plan q(*this);
    switch (params.width) {
      case 32: return q.contains<32, detail::bump_rule::any, 0>(hash);
      case 64: return q.contains<64, detail::bump_rule::any, 0>(hash);
      default: return q.contains<128, detail::bump_rule::any, 0>(hash);
    }
  }

  /// The r bits stored for a key hash (retrieval structures; arbitrary for other keys): the
  /// value under its check bits (params.value_of() keeps the value).
  RIBBON_HD std::uint32_t lookup_hash(std::uint64_t hash) const {
    if (num_layers == 0) return 0;
    const detail::ref_plan q(*this);
    switch (params.width) {
      case 32: return q.lookup<32, detail::bump_rule::any>(hash);
      case 64: return q.lookup<64, detail::bump_rule::any>(hash);
      default: return q.lookup<128, detail::bump_rule::any>(hash);
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

RIBBON_HD inline ref_plan::ref_plan(const filter_ref& f)
    : params(f.params),
      layers(f.layers),
      num_layers(f.num_layers),
      result_bits(f.params.result_bits) {}
}  // namespace detail

}  // namespace ribbon
