// Batched queries of the default shape (w = 64, r = 8, an unsalted sharded layer 0: every
// filter and retrieval structure ribbon writes at that shape) with the pipeline's key-independent
// arithmetic done several keys to a vector ("lanes"): 8 keys with AVX-512, 4 with AVX2. Same
// answers as contains_range() and lookup_range() of query_kernels.hpp; a third (AVX-512) to two
// thirds (AVX2) of their instructions a key.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RIBBON_X86_LANES 1

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "ribbon/filter.hpp"
#include "stage_schedule.hpp"

/// AVX-512 with 64-bit products (DQ) and popcounts (VPOPCNTDQ).
#define RIBBON_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512dq,avx512vl,avx512vpopcntdq,avx2,bmi2")))
#define RIBBON_TARGET_AVX2 __attribute__((target("avx2,bmi2")))

// GCC 12 takes the undefined pass-through operand of AVX-512 intrinsics for an uninitialized
// variable (its bug 105593, fixed in GCC 13).
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace ribbon::detail::kernels {

/// The 8 parities of a w = 64, r = 8 row from its block's first word and the row's coefficients
/// shifted into this block (`low`) and the next (`high`): block_result() in a few instructions.
/// (Not always_inline: inlined by the flatten of callers compiled for the same instructions.)
/// AVX-512: the row's 16 words in two registers, VPOPCNTQ gives their 8 parities at once.
RIBBON_TARGET_AVX512 inline std::uint32_t row_parities_avx512(const std::uint64_t* block,
                                                              std::uint64_t low,
                                                              std::uint64_t high) {
  const __m512i here =
      _mm512_and_si512(_mm512_loadu_si512(block), _mm512_set1_epi64(static_cast<long long>(low)));
  const __m512i next = _mm512_and_si512(_mm512_loadu_si512(block + 8),
                                        _mm512_set1_epi64(static_cast<long long>(high)));
  const __m512i counts = _mm512_popcnt_epi64(_mm512_xor_si512(here, next));
  return _mm512_test_epi64_mask(counts, _mm512_set1_epi64(1));
}

/// The same with AVX2 (AMD Zen 2/3, older Intel): the row's 8 words in two 256-bit registers,
/// each 64-bit lane folded to its parity by shifts and xors (AVX2 has no vector popcount), the 8
/// parities gathered by a movemask. About 25 instructions.
RIBBON_TARGET_AVX2 inline std::uint32_t row_parities_avx2(const std::uint64_t* block,
                                                          std::uint64_t low, std::uint64_t high) {
  const __m256i low_mask = _mm256_set1_epi64x(static_cast<long long>(low));
  const __m256i high_mask = _mm256_set1_epi64x(static_cast<long long>(high));
  const auto* here = reinterpret_cast<const __m256i*>(block);
  const auto* next = reinterpret_cast<const __m256i*>(block + 8);
  const __m256i words0to3 = _mm256_xor_si256(_mm256_and_si256(_mm256_loadu_si256(here), low_mask),
                                             _mm256_and_si256(_mm256_loadu_si256(next), high_mask));
  const __m256i words4to7 =
      _mm256_xor_si256(_mm256_and_si256(_mm256_loadu_si256(here + 1), low_mask),
                       _mm256_and_si256(_mm256_loadu_si256(next + 1), high_mask));
  // Fold each 64-bit word to 32 bits (same parity): words 0-3 into the even 32-bit lanes,
  // words 4-7 into the odd ones, so one register carries all 8.
  __m256i x =
      _mm256_blend_epi32(_mm256_xor_si256(words0to3, _mm256_srli_epi64(words0to3, 32)),
                         _mm256_xor_si256(words4to7, _mm256_slli_epi64(words4to7, 32)), 0xAA);
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 8));
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 4));
  // 0x6996 holds the parity of each 4-bit value at that bit position.
  const __m256i parities =
      _mm256_srlv_epi32(_mm256_set1_epi32(0x6996), _mm256_and_si256(x, _mm256_set1_epi32(15)));
  const auto lanes = static_cast<std::uint32_t>(
      _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32(parities, 31))));
  // Lane 2j holds word j, lane 2j + 1 word j + 4.
  return _pext_u32(lanes, 0x55) | (_pext_u32(lanes, 0xAA) << 4);
}

/// Stages of at most 64 keys (masks of a block's keys are 64-bit words): 32 keys take about
/// 300 ns a stage, the distance at which the pipeline prefetches.
constexpr std::uint64_t lane_block_keys = 32;

/// A block of keys in the lanes pipeline. After hashing: their layer-0 hashes and starts. After
/// locating: the hash in the layer that holds each key, its row's block there and the row's
/// offset into it, and `absent`, the keys every layer bumps (their rows point anywhere valid).
/// Before answering: each row's coefficients in its block and the next, and the result it must
/// have.
struct alignas(64) lane_block {
  std::uint64_t hash[lane_block_keys];
  std::uint64_t start[lane_block_keys];
  const std::uint64_t* row[lane_block_keys];
  std::uint64_t shift[lane_block_keys];
  std::uint64_t low[lane_block_keys];
  std::uint64_t high[lane_block_keys];
  std::uint64_t expected[lane_block_keys];
  std::uint64_t absent = 0;
};

/// 8 keys to a vector with AVX-512.
struct avx512_lanes {
  static constexpr unsigned width = 8;

  /// The high 64 bits of the 128-bit products a * b, lane by lane (fastrange64), from the four
  /// 32 x 32-bit products of their halves.
  RIBBON_TARGET_AVX512 static __m512i mul_high(__m512i a, __m512i b) {
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

  /// Layer 0's constants in every lane, made once per range.
  struct layer0 {
    __m512i num_starts, bucket_mask, cuts, shard_mask, head_width, solution;
    __m128i bucket_bits;
    const std::uint64_t* thresholds;

    RIBBON_TARGET_AVX512 explicit layer0(const layer_plan& l)
        : num_starts(_mm512_set1_epi64(static_cast<long long>(l.geometry.num_starts))),
          bucket_mask(_mm512_set1_epi64((1LL << l.bucket_bits) - 1)),
          cuts(_mm512_setr_epi64(l.cut[0], l.cut[1], l.cut[2], l.cut[3], 0, 0, 0, 0)),
          shard_mask(_mm512_set1_epi64(static_cast<long long>(l.shard_mask))),
          head_width(_mm512_set1_epi64(static_cast<long long>(l.head_width))),
          solution(_mm512_set1_epi64(reinterpret_cast<long long>(l.solution))),
          bucket_bits(_mm_cvtsi32_si128(static_cast<int>(l.bucket_bits))),
          thresholds(l.thresholds) {}
  };

  /// The layer-0 starts of the keys whose hashes are at `hash`.
  RIBBON_TARGET_AVX512 static void starts(const layer0& l, const std::uint64_t* hash,
                                          std::uint64_t* start) {
    _mm512_store_si512(start, mul_high(_mm512_load_si512(hash), l.num_starts));
  }

  /// layer_plan::bumps<Rule>() of the keys starting at `start`, as a bit mask; their rows'
  /// blocks and offsets in layer 0 in `row` and `shift`.
  template <bump_rule Rule>
  RIBBON_TARGET_AVX512 static std::uint32_t locate(const layer0& l, const std::uint64_t* start,
                                                   const std::uint64_t** row,
                                                   std::uint64_t* shift) {
    const __m512i s = _mm512_load_si512(start);
    __mmask8 bumps = _mm512_cmpgt_epu64_mask(s, l.shard_mask) &
                     _mm512_cmplt_epu64_mask(_mm512_and_si512(s, l.shard_mask), l.head_width);
    if constexpr (Rule == bump_rule::two_bit) {
      const __m512i bucket = _mm512_srl_epi64(s, l.bucket_bits);
      const __m512i words = _mm512_i64gather_epi64(_mm512_srli_epi64(bucket, 5), l.thresholds, 8);
      const __m512i code = _mm512_and_si512(
          _mm512_srlv_epi64(words,
                            _mm512_slli_epi64(_mm512_and_si512(bucket, _mm512_set1_epi64(31)), 1)),
          _mm512_set1_epi64(3));
      bumps |= _mm512_cmplt_epu64_mask(_mm512_and_si512(s, l.bucket_mask),
                                       _mm512_permutexvar_epi64(code, l.cuts));
    }
    // A block holds r = 8 words: it starts at byte (start / 64) * 64 = start & ~63.
    _mm512_store_si512(row,
                       _mm512_add_epi64(l.solution, _mm512_andnot_si512(_mm512_set1_epi64(63), s)));
    _mm512_store_si512(shift, _mm512_and_si512(s, _mm512_set1_epi64(63)));
    return bumps;
  }

  /// The coefficients of the rows of the keys whose layer hashes are at `hash`, shifted to
  /// their offsets `shift` (in `low` and `high`, as block_result() splits them), and each row's
  /// expected result: fingerprint(hash, 8) & rhs_mask. Keys whose bit in `absent` is set
  /// expect 256 (no row's 8 bits: not members) and get no coefficients (their lookups read 0).
  RIBBON_TARGET_AVX512 static void prepare_rows(const std::uint64_t* hash,
                                                const std::uint64_t* shift, std::uint32_t absent,
                                                std::uint32_t rhs_mask, std::uint64_t* low,
                                                std::uint64_t* high, std::uint64_t* expected) {
    const __m512i h = _mm512_load_si512(hash);
    const __m512i s = _mm512_load_si512(shift);
    const __m512i coeff = _mm512_or_si512(
        _mm512_mullo_epi64(h, _mm512_set1_epi64(static_cast<long long>(coefficient_multiplier))),
        _mm512_set1_epi64(1));
    const __m512i fingerprint = _mm512_srli_epi64(
        _mm512_mullo_epi64(h, _mm512_set1_epi64(static_cast<long long>(fingerprint_multiplier))),
        56);
    _mm512_store_si512(
        expected, _mm512_mask_mov_epi64(_mm512_and_si512(fingerprint, _mm512_set1_epi64(rhs_mask)),
                                        static_cast<__mmask8>(absent), _mm512_set1_epi64(256)));
    const auto present = static_cast<__mmask8>(~absent);
    _mm512_store_si512(low, _mm512_maskz_sllv_epi64(present, coeff, s));
    _mm512_store_si512(high, _mm512_maskz_srlv_epi64(present, _mm512_srli_epi64(coeff, 1),
                                                     _mm512_sub_epi64(_mm512_set1_epi64(63), s)));
  }

  RIBBON_TARGET_AVX512 static std::uint32_t parities(const std::uint64_t* block, std::uint64_t low,
                                                     std::uint64_t high) {
    return row_parities_avx512(block, low, high);
  }
};

/// 4 keys to a vector with AVX2. AVX2 has no unsigned or 64-bit-product instructions: the
/// comparisons are signed (starts, offsets and cuts are below 2^63), and the products come from
/// 32 x 32-bit ones.
struct avx2_lanes {
  static constexpr unsigned width = 4;

  /// avx512_lanes::mul_high() in AVX2.
  RIBBON_TARGET_AVX2 static __m256i mul_high(__m256i a, __m256i b) {
    const __m256i low_half = _mm256_set1_epi64x(0xFFFFFFFF);
    const __m256i a_high = _mm256_srli_epi64(a, 32);
    const __m256i b_high = _mm256_srli_epi64(b, 32);
    const __m256i low_low = _mm256_mul_epu32(a, b);
    const __m256i low_high = _mm256_mul_epu32(a, b_high);
    const __m256i high_low = _mm256_mul_epu32(a_high, b);
    const __m256i high_high = _mm256_mul_epu32(a_high, b_high);
    const __m256i middle = _mm256_add_epi64(
        _mm256_add_epi64(_mm256_srli_epi64(low_low, 32), _mm256_and_si256(low_high, low_half)),
        _mm256_and_si256(high_low, low_half));
    return _mm256_add_epi64(
        _mm256_add_epi64(high_high, _mm256_srli_epi64(low_high, 32)),
        _mm256_add_epi64(_mm256_srli_epi64(high_low, 32), _mm256_srli_epi64(middle, 32)));
  }

  /// The low 64 bits of a * b: the low halves' product plus the cross products moved up.
  RIBBON_TARGET_AVX2 static __m256i mul_low(__m256i a, __m256i b) {
    const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)),
                                           _mm256_mul_epu32(_mm256_srli_epi64(a, 32), b));
    return _mm256_add_epi64(_mm256_mul_epu32(a, b), _mm256_slli_epi64(cross, 32));
  }

  struct layer0 {
    __m256i num_starts, bucket_mask, cuts, shard_mask, head_width, solution;
    __m128i bucket_bits;
    const std::uint64_t* thresholds;

    RIBBON_TARGET_AVX2 explicit layer0(const layer_plan& l)
        : num_starts(_mm256_set1_epi64x(static_cast<long long>(l.geometry.num_starts))),
          bucket_mask(_mm256_set1_epi64x((1LL << l.bucket_bits) - 1)),
          // cut[code] in 32-bit lane 2 * code, picked by _mm256_permutevar8x32_epi32.
          cuts(_mm256_setr_epi32(static_cast<int>(l.cut[0]), 0, static_cast<int>(l.cut[1]), 0,
                                 static_cast<int>(l.cut[2]), 0, static_cast<int>(l.cut[3]), 0)),
          shard_mask(_mm256_set1_epi64x(static_cast<long long>(l.shard_mask))),
          head_width(_mm256_set1_epi64x(static_cast<long long>(l.head_width))),
          solution(_mm256_set1_epi64x(reinterpret_cast<long long>(l.solution))),
          bucket_bits(_mm_cvtsi32_si128(static_cast<int>(l.bucket_bits))),
          thresholds(l.thresholds) {}
  };

  RIBBON_TARGET_AVX2 static void starts(const layer0& l, const std::uint64_t* hash,
                                        std::uint64_t* start) {
    _mm256_store_si256(
        reinterpret_cast<__m256i*>(start),
        mul_high(_mm256_load_si256(reinterpret_cast<const __m256i*>(hash)), l.num_starts));
  }

  template <bump_rule Rule>
  RIBBON_TARGET_AVX2 static std::uint32_t locate(const layer0& l, const std::uint64_t* start,
                                                 const std::uint64_t** row, std::uint64_t* shift) {
    const __m256i s = _mm256_load_si256(reinterpret_cast<const __m256i*>(start));
    __m256i bumps =
        _mm256_and_si256(_mm256_cmpgt_epi64(s, l.shard_mask),
                         _mm256_cmpgt_epi64(l.head_width, _mm256_and_si256(s, l.shard_mask)));
    if constexpr (Rule == bump_rule::two_bit) {
      const __m256i bucket = _mm256_srl_epi64(s, l.bucket_bits);
      const __m256i words = _mm256_i64gather_epi64(reinterpret_cast<const long long*>(l.thresholds),
                                                   _mm256_srli_epi64(bucket, 5), 8);
      const __m256i code = _mm256_and_si256(
          _mm256_srlv_epi64(words,
                            _mm256_slli_epi64(_mm256_and_si256(bucket, _mm256_set1_epi64x(31)), 1)),
          _mm256_set1_epi64x(3));
      const __m256i cut =
          _mm256_and_si256(_mm256_permutevar8x32_epi32(l.cuts, _mm256_slli_epi64(code, 1)),
                           _mm256_set1_epi64x(0xFFFFFFFF));
      bumps = _mm256_or_si256(bumps, _mm256_cmpgt_epi64(cut, _mm256_and_si256(s, l.bucket_mask)));
    }
    _mm256_store_si256(
        reinterpret_cast<__m256i*>(row),
        _mm256_add_epi64(l.solution, _mm256_andnot_si256(_mm256_set1_epi64x(63), s)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(shift),
                       _mm256_and_si256(s, _mm256_set1_epi64x(63)));
    return static_cast<std::uint32_t>(_mm256_movemask_pd(_mm256_castsi256_pd(bumps)));
  }

  RIBBON_TARGET_AVX2 static void prepare_rows(const std::uint64_t* hash, const std::uint64_t* shift,
                                              std::uint32_t absent, std::uint32_t rhs_mask,
                                              std::uint64_t* low, std::uint64_t* high,
                                              std::uint64_t* expected) {
    const __m256i h = _mm256_load_si256(reinterpret_cast<const __m256i*>(hash));
    const __m256i s = _mm256_load_si256(reinterpret_cast<const __m256i*>(shift));
    const __m256i coeff = _mm256_or_si256(
        mul_low(h, _mm256_set1_epi64x(static_cast<long long>(coefficient_multiplier))),
        _mm256_set1_epi64x(1));
    const __m256i fingerprint = _mm256_srli_epi64(
        mul_low(h, _mm256_set1_epi64x(static_cast<long long>(fingerprint_multiplier))), 56);
    const __m256i lane_bits = _mm256_setr_epi64x(1, 2, 4, 8);
    const __m256i is_absent =
        _mm256_cmpeq_epi64(_mm256_and_si256(_mm256_set1_epi64x(absent), lane_bits), lane_bits);
    _mm256_store_si256(
        reinterpret_cast<__m256i*>(expected),
        _mm256_blendv_epi8(_mm256_and_si256(fingerprint, _mm256_set1_epi64x(rhs_mask)),
                           _mm256_set1_epi64x(256), is_absent));
    _mm256_store_si256(reinterpret_cast<__m256i*>(low),
                       _mm256_andnot_si256(is_absent, _mm256_sllv_epi64(coeff, s)));
    _mm256_store_si256(
        reinterpret_cast<__m256i*>(high),
        _mm256_andnot_si256(is_absent,
                            _mm256_srlv_epi64(_mm256_srli_epi64(coeff, 1),
                                              _mm256_sub_epi64(_mm256_set1_epi64x(63), s))));
  }

  RIBBON_TARGET_AVX2 static std::uint32_t parities(const std::uint64_t* block, std::uint64_t low,
                                                   std::uint64_t high) {
    return row_parities_avx2(block, low, high);
  }
};

/// Keys [begin, end) of a w = 64, r = 8 filter (fixed_bits 8) whose layer 0 is unsalted with
/// rule `Rule` (shard_heads or two_bit), `Lanes::width` keys to a vector. The stages of
/// pipelined_range() over blocks of lane_block_keys keys: hash (scalar: KeyHash is any
/// callable) and prefetch the threshold words; decide the bumps a vector at a time, walk the
/// few bumped keys to their layers one by one, and prefetch the rows; then prepare the rows a
/// vector at a time and answer each: membership (`Lookup` false: out[i] is bool, or uint8_t)
/// or, in a retrieval structure, the value (`Lookup` true: out[i] is uint32_t, 0 where every
/// layer bumps the key, as lookup_range()). Called from lanes_query_range_avx512/_avx2, which
/// compile it, inlined, for their instruction sets.
template <class Lanes, bump_rule Rule, bool Lookup, class KeyHash, class Out>
void lanes_query_range(const query_plan& q, std::uint64_t begin, std::uint64_t end,
                       const KeyHash& key_hash, Out* out) {
  static_assert(Rule == bump_rule::shard_heads || Rule == bump_rule::two_bit);
  constexpr std::uint64_t block_keys = lane_block_keys;
  constexpr unsigned width = Lanes::width;
  static_assert(block_keys % width == 0 && block_keys <= 64);
  const typename Lanes::layer0 first(q.layers[0]);
  const std::uint64_t count = end - begin;
  const std::uint64_t num_blocks = (count + block_keys - 1) / block_keys;
  lane_block blocks[3];

  const auto keys_in = [&](std::uint64_t b) {
    return std::min(block_keys, count - b * block_keys);
  };
  const auto hash_block = [&](std::uint64_t b) {
    lane_block& k = blocks[b % 3];
    const std::uint64_t n = keys_in(b);
    const std::uint64_t base = begin + b * block_keys;
    for (std::uint64_t j = 0; j < n; ++j) k.hash[j] = key_hash(base + j);
    for (std::uint64_t j = n; j < block_keys; ++j) k.hash[j] = 0;  // lanes past the end
    for (unsigned v = 0; v < block_keys; v += width) Lanes::starts(first, k.hash + v, k.start + v);
    if constexpr (Rule == bump_rule::two_bit) {
      for (std::uint64_t j = 0; j < n; ++j) {
        __builtin_prefetch(first.thresholds + (k.start[j] >> q.layers[0].bucket_bits) / 32);
      }
    }
  };
  const auto locate_block = [&](std::uint64_t b) {
    lane_block& k = blocks[b % 3];
    const std::uint64_t n = keys_in(b);
    std::uint64_t bumped = 0;
    for (unsigned v = 0; v < block_keys; v += width) {
      bumped |=
          std::uint64_t{Lanes::template locate<Rule>(first, k.start + v, k.row + v, k.shift + v)}
          << v;
    }
    k.absent = 0;
    if (n < 64) bumped &= (std::uint64_t{1} << n) - 1;
    for (; bumped != 0; bumped &= bumped - 1) {  // about 6 % of keys: the scalar walk
      const auto j = static_cast<unsigned>(__builtin_ctzll(bumped));
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
  const auto answer_block = [&](std::uint64_t b) {
    lane_block& k = blocks[b % 3];
    const std::uint64_t n = keys_in(b);
    const std::uint64_t base = begin + b * block_keys;
    for (unsigned v = 0; v < block_keys; v += width) {
      Lanes::prepare_rows(k.hash + v, k.shift + v, static_cast<std::uint32_t>(k.absent >> v),
                          q.rhs_mask, k.low + v, k.high + v, k.expected + v);
    }
    for (std::uint64_t j = 0; j < n; ++j) {
      const std::uint32_t result = Lanes::parities(k.row[j], k.low[j], k.high[j]);
      if constexpr (Lookup) {
        out[base + j] = result;
      } else {
        out[base + j] = result == k.expected[j];
      }
    }
  };

  run_three_stages(num_blocks, hash_block, locate_block, answer_block);
}

/// lanes_query_range() with AVX-512, compiled for it as a whole (flatten inlines the lanes'
/// functions, which a caller compiled without AVX-512 could not inline).
template <bump_rule Rule, bool Lookup, class KeyHash, class Out>
RIBBON_TARGET_AVX512 __attribute__((flatten)) void lanes_query_range_avx512(const query_plan& q,
                                                                            std::uint64_t begin,
                                                                            std::uint64_t end,
                                                                            const KeyHash& key_hash,
                                                                            Out* out) {
  lanes_query_range<avx512_lanes, Rule, Lookup>(q, begin, end, key_hash, out);
}

/// The same with AVX2.
template <bump_rule Rule, bool Lookup, class KeyHash, class Out>
RIBBON_TARGET_AVX2 __attribute__((flatten)) void lanes_query_range_avx2(const query_plan& q,
                                                                        std::uint64_t begin,
                                                                        std::uint64_t end,
                                                                        const KeyHash& key_hash,
                                                                        Out* out) {
  lanes_query_range<avx2_lanes, Rule, Lookup>(q, begin, end, key_hash, out);
}

}  // namespace ribbon::detail::kernels

#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif
