/// @file filter_ref.hpp
/// A trivially copyable, non-owning view of a filter, usable on the host and in device code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ribbon/config.hpp"
#include "ribbon/detail/bits.hpp"
#include "ribbon/detail/rows.hpp"
#include "ribbon/hash.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"

namespace ribbon {

namespace detail {

/// Is a key whose layer hash starts at `start` bumped out of layer `layer`?
RIBBON_HD RIBBON_FORCE_INLINE bool is_bumped(const filter_params& p, const layer_ref& layer,
                                             std::uint64_t start) {
  if (!layer.geometry.bumping()) return false;
  const std::uint64_t in_shard = start & (layer.geometry.shard_size() - 1);
  if (start >= layer.geometry.shard_size() && in_shard < p.width) return true;  // shard head
  // B is a power of two: shift and mask rather than divide (a division per query is slow).
  const int bucket_bits = count_trailing_zeros(p.bucket_size);
  const std::uint64_t bucket = start >> bucket_bits;
  const unsigned code =
      static_cast<unsigned>(layer.thresholds[bucket / 32] >> (2 * (bucket % 32))) & 3u;
  return (start & (p.bucket_size - 1)) < p.threshold(code);
}

/// The r-bit result of the row (start, coeff) against the interleaved solution.
template <unsigned Width>
RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t row_result(const void* solution,
                                                       std::uint32_t result_bits,
                                                       std::uint64_t start, word_t<Width> coeff) {
  using word = word_t<Width>;
  const word* block = static_cast<const word*>(solution) + (start / Width) * result_bits;
  const unsigned shift = static_cast<unsigned>(start % Width);
  // The row's columns in this block and in the next: (coeff >> 1) >> (Width - 1 - shift) is
  // coeff >> (Width - shift), also for shift = 0.
  const word low = coeff << shift;
  const word high = (coeff >> 1) >> (Width - 1 - shift);
  std::uint32_t result = 0;
  for (std::uint32_t j = 0; j < result_bits; ++j) {
    result |= parity((block[j] & low) ^ (block[j + result_bits] & high)) << j;
  }
  return result;
}

/// Walks the layers from `first`, where the key's layer hash is `hash`, to the first layer
/// that does not bump it, and checks the key's equation there.
template <unsigned Width>
RIBBON_HD RIBBON_FORCE_INLINE bool contains_from_layer(const filter_params& p,
                                                       const layer_ref* layers,
                                                       std::uint32_t num_layers,
                                                       std::uint32_t first, std::uint64_t hash) {
  for (std::uint32_t l = first; l < num_layers; ++l) {
    const layer_ref& layer = layers[l];
    if (l > first) hash = remix(hash, layer.salt);
    const std::uint64_t start = fastrange64(hash, layer.geometry.num_starts);
    if (is_bumped(p, layer, start)) continue;
    return row_result<Width>(layer.solution, p.result_bits, start, coefficients<Width>(hash)) ==
           fingerprint(hash, p.result_bits);
  }
  return false;  // bumped out of every layer: no key of the set goes there
}

/// Does the filter (possibly) contain the key whose key hash is `hash`?
template <unsigned Width>
RIBBON_HD RIBBON_FORCE_INLINE bool contains_hash(const filter_params& p, const layer_ref* layers,
                                                 std::uint32_t num_layers, std::uint64_t hash) {
  return contains_from_layer<Width>(p, layers, num_layers, 0, hash);
}

}  // namespace detail

/// Non-owning view of a filter: parameters and per-layer pointers. Trivially copyable; pass it
/// by value to a kernel. The memory it points to must outlive it.
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

  /// Membership of an integer key. The filter must have been built from integer keys.
  RIBBON_HD bool contains(std::uint64_t key) const { return contains_hash(key_hash(key)); }

  /// Membership of a byte-string key. The filter must have been built from byte strings.
  RIBBON_HD bool contains(const void* data, std::size_t length) const {
    return contains_hash(key_hash(data, length));
  }
};

}  // namespace ribbon
