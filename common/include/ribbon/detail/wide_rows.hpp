/// @file wide_rows.hpp
/// A query's row result from 16-byte loads of the interleaved solution, for filters whose
/// blocks all hold Bits words (r known at compile time): the GPU query kernels' core, written
/// for host and device so that host tests check it against filter_ref key for key.
#pragma once

#include <cstdint>
#include <cstring>

#include "ribbon/config.hpp"
#include "ribbon/detail/bits.hpp"
#include "ribbon/detail/records.hpp"
#include "ribbon/detail/rows.hpp"
#include "ribbon/filter_ref.hpp"
#include "ribbon/hash.hpp"
#include "ribbon/layer.hpp"

namespace ribbon::detail {

/// Coefficient words in one 16-byte load (4, 2 or 1 for w = 32, 64, 128).
template <unsigned Width>
inline constexpr unsigned words_per_load = 16 / sizeof(word_t<Width>);

/// 16-byte loads that cover a block of Bits words: also the lanes of a tile per key, each
/// lane loading one 16-byte piece of the row's block and the same piece of the next block.
template <unsigned Width, unsigned Bits>
inline constexpr unsigned loads_per_block = Bits / words_per_load<Width>;

/// The words of one 16-byte load.
template <unsigned Width>
struct alignas(16) wide_load {
  word_t<Width> words[words_per_load<Width>];
};

/// Loads 16 bytes at `at` (16-byte aligned: blocks of 8 or 16 words of w >= 32 bits in a
/// 64-byte aligned section). On the device one LDG.128 through the read-only data cache.
template <unsigned Width>
RIBBON_HD RIBBON_FORCE_INLINE wide_load<Width> load16(const word_t<Width>* at) {
  wide_load<Width> piece;
#if defined(__CUDA_ARCH__)
  const ulonglong2 bytes = __ldg(reinterpret_cast<const ulonglong2*>(at));
  memcpy(&piece, &bytes, sizeof(piece));
#else
  std::memcpy(&piece, at, sizeof(piece));
#endif
  return piece;
}

/// A key's row in layer 0 of a filter whose blocks all hold Bits words and whose layer 0 has
/// no salt (the common filter): where it starts, whether layer 0 bumps it, and its r-bit
/// result computed from 16-byte loads, whole (a thread per key) or in pieces (a tile per key).
template <unsigned Width, unsigned Bits>
struct layer0_row {
  static_assert(Bits % words_per_load<Width> == 0, "a block must be whole 16-byte loads");
  using word = word_t<Width>;

  std::uint64_t hash;  ///< the key hash, which is layer 0's hash (no salt)
  std::uint64_t start;
  bool bumped;
  const word* block;  ///< first word of the block the row starts in
  word low, high;     ///< the row's columns in that block and in the next one

  /// `first`: layer 0's plan, made once per thread rather than once per key.
  RIBBON_HD RIBBON_FORCE_INLINE layer0_row(const layer_plan& first, std::uint64_t key_hash)
      : hash(key_hash),
        start(fastrange64(key_hash, first.geometry.num_starts)),
        bumped(first.bumps(start)),
        block(static_cast<const word*>(first.solution) + (start / Width) * Bits) {
    const word coeff = coefficients<Width>(key_hash);
    const unsigned shift = static_cast<unsigned>(start % Width);
    low = coeff << shift;
    high = (coeff >> 1) >> (Width - 1 - shift);  // coeff >> (Width - shift), also for shift 0
  }

  /// Result bits [piece * k, piece * k + k) (k = words_per_load): the parities of 16-byte
  /// load `piece` of the row's block and of the next block. Zero elsewhere, so the pieces
  /// combine by OR.
  RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t piece_result(unsigned piece) const {
    constexpr unsigned k = words_per_load<Width>;
    const wide_load<Width> here = load16<Width>(block + piece * k);
    const wide_load<Width> next = load16<Width>(block + Bits + piece * k);
    std::uint32_t result = 0;
    for (unsigned j = 0; j < k; ++j) {
      result |= parity((here.words[j] & low) ^ (next.words[j] & high)) << (piece * k + j);
    }
    return result;
  }

  /// The whole r-bit result: every piece, the loads independent of each other.
  RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t result() const {
    std::uint32_t result = 0;
    for (unsigned piece = 0; piece < loads_per_block<Width, Bits>; ++piece) {
      result |= piece_result(piece);
    }
    return result;
  }

  /// Does a layer-0 result match the key's right side (its fingerprint; 0 if homogeneous)?
  RIBBON_HD RIBBON_FORCE_INLINE bool matches(const filter_params& p, std::uint32_t result) const {
    return result == record_rhs(p, Bits, hash);
  }

  /// Membership of a key that layer 0 bumps: the later layers, by the general path.
  RIBBON_HD RIBBON_FORCE_INLINE bool contains_after_layer0(const filter_ref& f) const {
    const ref_plan q(f);
    std::uint64_t layer_hash = hash, layer_start = 0;
    const std::uint32_t layer = q.find_layer_from(1, layer_hash, layer_start);
    return q.member<Width, 0>(layer, layer_start, layer_hash);
  }

  /// Retrieval: the value of a key that layer 0 bumps, from the later layers.
  RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t lookup_after_layer0(const filter_ref& f) const {
    const ref_plan q(f);
    std::uint64_t layer_hash = hash, layer_start = 0;
    const std::uint32_t layer = q.find_layer_from(1, layer_hash, layer_start);
    return q.value<Width, 0>(layer, layer_start, layer_hash);
  }
};

/// Can a filter be queried through layer0_row<Width, bits>? r = `bits`, blocks of r words
/// everywhere (no fractional bits) and no salt on layer 0 (not a retried standard layer).
RIBBON_HD inline bool has_layer0_rows(const filter_ref& f, std::uint32_t bits) {
  return f.num_layers > 0 && f.params.result_bits == bits && f.params.extra_bit_fraction == 0 &&
         f.layers[0].salt == 0;
}

}  // namespace ribbon::detail
