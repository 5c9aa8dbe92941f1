// Batched membership of the default filter (w = 64, r = 8, an unsalted sharded layer 0) on CPUs
// with AVX-512: the pipeline of query_kernels.hpp with the key-independent arithmetic done 8 keys
// to a vector. Same answers as contains_range(); about a third of its instructions a key.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RIBBON_X86_BATCHED_AVX512 1

#include <immintrin.h>

#include <cstdint>

#include "ribbon/filter.hpp"

/// What the vector code below needs: AVX-512 with 64-bit products (DQ) and popcounts.
#define RIBBON_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512dq,avx512vl,avx512vpopcntdq,avx2,bmi2")))

// GCC 12 takes the undefined pass-through operand of AVX-512 intrinsics for an uninitialized
// variable (its bug 105593, fixed in GCC 13).
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace ribbon::detail::kernels::avx512 {

constexpr unsigned lanes = 8;             ///< 64-bit lanes of a vector
constexpr std::uint64_t block_keys = 32;  ///< keys of a pipeline stage: two vectors

/// The high 64 bits of the 128-bit products a * b, lane by lane (fastrange64), from the four
/// 32 x 32-bit products of their halves.
RIBBON_TARGET_AVX512 inline __m512i mul_high(__m512i a, __m512i b) {
  const __m512i low_half = _mm512_set1_epi64(0xFFFFFFFF);
  const __m512i a_high = _mm512_srli_epi64(a, 32);
  const __m512i b_high = _mm512_srli_epi64(b, 32);
  const __m512i low_low = _mm512_mul_epu32(a, b);
  const __m512i low_high = _mm512_mul_epu32(a, b_high);
  const __m512i high_low = _mm512_mul_epu32(a_high, b);
  const __m512i high_high = _mm512_mul_epu32(a_high, b_high);
  // Bits 32-95 of the product: their sum fits in 34 bits, and its carry goes to the high word.
  const __m512i middle = _mm512_add_epi64(
      _mm512_add_epi64(_mm512_srli_epi64(low_low, 32), _mm512_and_si512(low_high, low_half)),
      _mm512_and_si512(high_low, low_half));
  return _mm512_add_epi64(
      _mm512_add_epi64(high_high, _mm512_srli_epi64(low_high, 32)),
      _mm512_add_epi64(_mm512_srli_epi64(high_low, 32), _mm512_srli_epi64(middle, 32)));
}

/// The 8 parities of a row (avx512_rows_w64_r8) from its block's first word and the row's
/// coefficients already shifted into this block (`low`) and the next (`high`).
RIBBON_TARGET_AVX512 RIBBON_FORCE_INLINE std::uint32_t row_parities(const std::uint64_t* block,
                                                                    std::uint64_t low,
                                                                    std::uint64_t high) {
  const __m512i here =
      _mm512_and_si512(_mm512_loadu_si512(block), _mm512_set1_epi64(static_cast<long long>(low)));
  const __m512i next = _mm512_and_si512(_mm512_loadu_si512(block + 8),
                                        _mm512_set1_epi64(static_cast<long long>(high)));
  const __m512i counts = _mm512_popcnt_epi64(_mm512_xor_si512(here, next));
  return _mm512_test_epi64_mask(counts, _mm512_set1_epi64(1));
}

/// A block of keys in the pipeline. After hashing: their layer-0 hashes and starts. After
/// locating: the hash in the layer that holds each key, its row's block there and the row's
/// offset into it, and `absent`, the keys every layer bumps (their rows point anywhere valid).
/// Before answering, `start` and `shift` are reused for the row's shifted coefficients.
struct alignas(64) lane_block {
  std::uint64_t hash[block_keys];
  std::uint64_t start[block_keys];
  const std::uint64_t* row[block_keys];
  std::uint64_t shift[block_keys];
  std::uint32_t expected[block_keys];
  std::uint64_t absent = 0;
};

/// Layer 0's constants, broadcast to every lane once per range.
struct layer0_lanes {
  __m512i num_starts, bucket_mask, cuts, shard_mask, head_width, solution;
  __m128i bucket_bits;
  const std::uint64_t* thresholds;

  RIBBON_TARGET_AVX512 explicit layer0_lanes(const layer_plan& l)
      : num_starts(_mm512_set1_epi64(static_cast<long long>(l.geometry.num_starts))),
        bucket_mask(_mm512_set1_epi64((1LL << l.bucket_bits) - 1)),
        cuts(_mm512_setr_epi64(l.cut[0], l.cut[1], l.cut[2], l.cut[3], 0, 0, 0, 0)),
        shard_mask(_mm512_set1_epi64(static_cast<long long>(l.shard_mask))),
        head_width(_mm512_set1_epi64(static_cast<long long>(l.head_width))),
        solution(_mm512_set1_epi64(reinterpret_cast<long long>(l.solution))),
        bucket_bits(_mm_cvtsi32_si128(static_cast<int>(l.bucket_bits))),
        thresholds(l.thresholds) {}
};

/// Keys [begin, end) of a w = 64, r = 8 filter (fixed_bits 8) whose layer 0 is unsalted with
/// rule `Rule` (shard_heads or two_bit). The stages of pipelined_range(), each over a block of
/// 16 keys: hash (scalar: KeyHash is any callable) and prefetch the threshold words; decide the
/// bump 8 keys at a time, walk the few bumped keys to their layers and prefetch the rows; then
/// compute the rows' coefficients and fingerprints 8 at a time and check each row.
template <bump_rule Rule, class KeyHash, class Out>
RIBBON_TARGET_AVX512 void contains_range(const query_plan& q, std::uint64_t begin,
                                         std::uint64_t end, const KeyHash& key_hash, Out* out) {
  static_assert(Rule == bump_rule::shard_heads || Rule == bump_rule::two_bit);
  static_assert(block_keys % lanes == 0 && block_keys <= 64);
  const layer0_lanes first(q.layers[0]);
  const std::uint64_t count = end - begin;
  const std::uint64_t num_blocks = (count + block_keys - 1) / block_keys;
  lane_block blocks[3];

  const auto keys_in = [&](std::uint64_t b) {
    return std::min(block_keys, count - b * block_keys);
  };
  const auto hash_block = [&](std::uint64_t b) RIBBON_TARGET_AVX512 {
    lane_block& k = blocks[b % 3];
    const std::uint64_t n = keys_in(b);
    const std::uint64_t base = begin + b * block_keys;
    for (std::uint64_t j = 0; j < n; ++j) k.hash[j] = key_hash(base + j);
    for (std::uint64_t j = n; j < block_keys; ++j) k.hash[j] = 0;  // lanes past the end
    for (unsigned v = 0; v < block_keys; v += lanes) {
      const __m512i start = mul_high(_mm512_load_si512(k.hash + v), first.num_starts);
      _mm512_store_si512(k.start + v, start);
    }
    if constexpr (Rule == bump_rule::two_bit) {
      for (std::uint64_t j = 0; j < n; ++j) {
        __builtin_prefetch(first.thresholds + (k.start[j] >> q.layers[0].bucket_bits) / 32);
      }
    }
  };
  const auto locate_block = [&](std::uint64_t b) RIBBON_TARGET_AVX512 {
    lane_block& k = blocks[b % 3];
    const std::uint64_t n = keys_in(b);
    std::uint64_t bumped = 0;
    for (unsigned v = 0; v < block_keys; v += lanes) {
      const __m512i start = _mm512_load_si512(k.start + v);
      // layer_plan::bumps(): a shard's head, or an offset below its bucket's cut.
      __mmask8 bumps =
          _mm512_cmpgt_epu64_mask(start, first.shard_mask) &
          _mm512_cmplt_epu64_mask(_mm512_and_si512(start, first.shard_mask), first.head_width);
      if constexpr (Rule == bump_rule::two_bit) {
        const __m512i bucket = _mm512_srl_epi64(start, first.bucket_bits);
        const __m512i words =
            _mm512_i64gather_epi64(_mm512_srli_epi64(bucket, 5), first.thresholds, 8);
        const __m512i code = _mm512_and_si512(
            _mm512_srlv_epi64(
                words, _mm512_slli_epi64(_mm512_and_si512(bucket, _mm512_set1_epi64(31)), 1)),
            _mm512_set1_epi64(3));
        bumps |= _mm512_cmplt_epu64_mask(_mm512_and_si512(start, first.bucket_mask),
                                         _mm512_permutexvar_epi64(code, first.cuts));
      }
      // A row's block: r = 8 words of 8 bytes at word (start / 64) * 8, byte start & ~63.
      const __m512i row =
          _mm512_add_epi64(first.solution, _mm512_andnot_si512(_mm512_set1_epi64(63), start));
      _mm512_store_si512(k.row + v, row);
      _mm512_store_si512(k.shift + v, _mm512_and_si512(start, _mm512_set1_epi64(63)));
      bumped |= std::uint64_t{bumps} << v;
    }
    k.absent = 0;
    if (n < 64) bumped &= (std::uint64_t{1} << n) - 1;
    for (; bumped != 0; bumped &= bumped - 1) {  // about 6 % of keys: the scalar walk
      const unsigned j = static_cast<unsigned>(__builtin_ctzll(bumped));
      const std::uint32_t layer = q.find_layer_from(1, k.hash[j], k.start[j]);
      if (layer == q.num_layers) {
        k.absent |= std::uint64_t{1} << j;
        continue;
      }
      k.row[j] =
          static_cast<const std::uint64_t*>(q.layers[layer].solution) + (k.start[j] / 64) * 8;
      k.shift[j] = k.start[j] % 64;
    }
    // A row reads its 64-byte block and the next: two cache lines (sections are 64-byte aligned).
    for (std::uint64_t j = 0; j < n; ++j) {
      __builtin_prefetch(k.row[j]);
      __builtin_prefetch(k.row[j] + 8);
    }
  };
  const auto answer_block = [&](std::uint64_t b) RIBBON_TARGET_AVX512 {
    lane_block& k = blocks[b % 3];
    const std::uint64_t n = keys_in(b);
    const std::uint64_t base = begin + b * block_keys;
    for (unsigned v = 0; v < block_keys; v += lanes) {
      const __m512i hash = _mm512_load_si512(k.hash + v);
      const __m512i shift = _mm512_load_si512(k.shift + v);
      const __m512i coeff = _mm512_or_si512(
          _mm512_mullo_epi64(hash,
                             _mm512_set1_epi64(static_cast<long long>(coefficient_multiplier))),
          _mm512_set1_epi64(1));
      // fingerprint(hash, 8) & rhs_mask; 256 for absent keys, which no row's 8 bits equal.
      __m512i expected = _mm512_and_si512(
          _mm512_srli_epi64(_mm512_mullo_epi64(hash, _mm512_set1_epi64(static_cast<long long>(
                                                         fingerprint_multiplier))),
                            56),
          _mm512_set1_epi64(q.rhs_mask));
      expected = _mm512_mask_mov_epi64(expected, static_cast<__mmask8>(k.absent >> v),
                                       _mm512_set1_epi64(256));
      _mm256_store_si256(reinterpret_cast<__m256i*>(k.expected + v),
                         _mm512_cvtepi64_epi32(expected));
      // block_result()'s columns in this block and the next.
      _mm512_store_si512(k.start + v, _mm512_sllv_epi64(coeff, shift));
      _mm512_store_si512(k.shift + v,
                         _mm512_srlv_epi64(_mm512_srli_epi64(coeff, 1),
                                           _mm512_sub_epi64(_mm512_set1_epi64(63), shift)));
    }
    for (std::uint64_t j = 0; j < n; ++j) {
      out[base + j] = row_parities(k.row[j], k.start[j], k.shift[j]) == k.expected[j];
    }
  };

  for (std::uint64_t b = 0; b < num_blocks + 2; ++b) {
    if (b < num_blocks) hash_block(b);
    if (b >= 1 && b <= num_blocks) locate_block(b - 1);
    if (b >= 2) answer_block(b - 2);
  }
}

}  // namespace ribbon::detail::kernels::avx512

#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif
