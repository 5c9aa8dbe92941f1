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

namespace detail {

/// Is a key whose layer hash starts at `start` bumped out of layer `layer`?
RIBBON_HD RIBBON_FORCE_INLINE bool is_bumped(const filter_params& p, const layer_ref& layer,
                                             std::uint64_t start) {
  if (!layer.geometry.sharded()) return false;
  const std::uint64_t in_shard = start & (layer.geometry.shard_size() - 1);
  if (start >= layer.geometry.shard_size() && in_shard < p.width) return true;  // shard head
  if (!layer.geometry.bumping()) return false;
  return layer.geometry.bumped_by_threshold(layer.thresholds, start, p);
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
  return layer0.salt != 0 ? remix(key_hash, layer0.salt) : key_hash;
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

  /// Membership by key hash: true for every key of the set, and for about 2^-r of the others.
  RIBBON_HD bool contains_hash(std::uint64_t hash) const {
    switch (params.width) {
      case 32: return detail::contains_hash<32>(params, layers, num_layers, hash);
      case 64: return detail::contains_hash<64>(params, layers, num_layers, hash);
      default: return detail::contains_hash<128>(params, layers, num_layers, hash);
    }
  }

  /// The value stored for a key hash (retrieval structures; arbitrary for other keys).
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

}  // namespace ribbon
