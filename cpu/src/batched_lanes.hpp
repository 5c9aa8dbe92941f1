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

#include "ribbon/filter_ref.hpp"
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

// The lanes are GCC/Clang vector types of 64-bit words: the steps of the pipeline (lane_steps)
// are written once with their operators (+, *, >>, &, ==), which compile to the vector
// instructions of the function they are inlined into, and call the instruction set's own
// functions (avx512_lanes, avx2_lanes) where the two differ: 32-bit products, comparisons to a
// bit mask, gathers, permutes, parities. Vectors pass by reference between these functions:
// passed by value across a target() boundary, they would change the calling convention.
typedef std::uint64_t u64x8 __attribute__((vector_size(64)));
typedef std::uint64_t u64x4 __attribute__((vector_size(32)));

/// 8 keys to a vector with AVX-512.
struct avx512_lanes {
  static constexpr unsigned width = 8;
  using vec = u64x8;

  /// The 64-bit products of the lanes' low 32-bit halves.
  RIBBON_TARGET_AVX512 static void mul_even(const vec& a, const vec& b, vec& product) {
    product = vec(_mm512_mul_epu32(__m512i(a), __m512i(b)));
  }

  /// Bit i set where lane i of `a` is above lane i of `b` (signed: every value compared is
  /// below 2^63).
  RIBBON_TARGET_AVX512 static std::uint32_t greater(const vec& a, const vec& b) {
    return _mm512_cmpgt_epi64_mask(__m512i(a), __m512i(b));
  }

  /// words[i] = base[index[i]].
  RIBBON_TARGET_AVX512 static void gather(const std::uint64_t* base, const vec& index, vec& words) {
    words = vec(_mm512_i64gather_epi64(__m512i(index), base, 8));
  }

  /// picked[i] = table[index[i]], for indexes below 4 and table values below 2^32.
  RIBBON_TARGET_AVX512 static void pick(const vec& table, const vec& index, vec& picked) {
    picked = vec(_mm512_permutexvar_epi64(__m512i(index), __m512i(table)));
  }

  RIBBON_TARGET_AVX512 static std::uint32_t parities(const std::uint64_t* block, std::uint64_t low,
                                                     std::uint64_t high) {
    return row_parities_avx512(block, low, high);
  }
};

/// 4 keys to a vector with AVX2, which has no unsigned comparisons, no 64-bit lane permute and
/// no mask registers.
struct avx2_lanes {
  static constexpr unsigned width = 4;
  using vec = u64x4;

  RIBBON_TARGET_AVX2 static void mul_even(const vec& a, const vec& b, vec& product) {
    product = vec(_mm256_mul_epu32(__m256i(a), __m256i(b)));
  }

  RIBBON_TARGET_AVX2 static std::uint32_t greater(const vec& a, const vec& b) {
    const __m256i above = _mm256_cmpgt_epi64(__m256i(a), __m256i(b));
    return static_cast<std::uint32_t>(_mm256_movemask_pd(_mm256_castsi256_pd(above)));
  }

  RIBBON_TARGET_AVX2 static void gather(const std::uint64_t* base, const vec& index, vec& words) {
    words =
        vec(_mm256_i64gather_epi64(reinterpret_cast<const long long*>(base), __m256i(index), 8));
  }

  /// The low 32-bit half of table[index[i]] sits in 32-bit lane 2 * index[i].
  RIBBON_TARGET_AVX2 static void pick(const vec& table, const vec& index, vec& picked) {
    picked = vec(_mm256_permutevar8x32_epi32(__m256i(table), __m256i(index << 1))) & 0xFFFFFFFF;
  }

  RIBBON_TARGET_AVX2 static std::uint32_t parities(const std::uint64_t* block, std::uint64_t low,
                                                   std::uint64_t high) {
    return row_parities_avx2(block, low, high);
  }
};

/// The steps of the lanes pipeline, `Lanes::width` keys to a vector, for either instruction set.
/// Not compiled for one: inlined into lanes_query_range_avx512/_avx2, which are.
template <class Lanes>
struct lane_steps {
  using vec = typename Lanes::vec;

  static void load(const void* from, vec& v) { __builtin_memcpy(&v, from, sizeof(vec)); }
  static void store(const vec& v, void* to) { __builtin_memcpy(to, &v, sizeof(vec)); }

  /// The high 64 bits of the 128-bit products a * b, lane by lane (fastrange64), from the four
  /// 32 x 32-bit products of their halves (the low 64 bits are `a * b`).
  static void mul_high(const vec& a, const vec& b, vec& high) {
    const vec a_high = a >> 32, b_high = b >> 32;
    vec low_low, low_high, high_low, high_high;
    Lanes::mul_even(a, b, low_low);
    Lanes::mul_even(a, b_high, low_high);
    Lanes::mul_even(a_high, b, high_low);
    Lanes::mul_even(a_high, b_high, high_high);
    // Bits 32-95 of the product: their sum fits in 34 bits, and its carry goes to the high word.
    const vec middle = (low_low >> 32) + (low_high & 0xFFFFFFFF) + (high_low & 0xFFFFFFFF);
    high = high_high + (low_high >> 32) + (high_low >> 32) + (middle >> 32);
  }

  /// Layer 0's constants in every lane, made once per range.
  struct layer0 {
    vec num_starts, bucket_mask, cuts, shard_mask, head_width, solution;
    std::uint32_t bucket_bits;
    const std::uint64_t* thresholds;

    explicit layer0(const layer_plan& l)
        : num_starts(vec{} + l.geometry.num_starts),
          bucket_mask(vec{} + ((std::uint64_t{1} << l.bucket_bits) - 1)),
          cuts(vec{}),
          shard_mask(vec{} + l.shard_mask),
          head_width(vec{} + l.head_width),
          solution(vec{} + reinterpret_cast<std::uint64_t>(l.solution)),
          bucket_bits(l.bucket_bits),
          thresholds(l.thresholds) {
      for (unsigned code = 0; code < 4; ++code) cuts[code] = l.cut[code];
    }
  };

  /// The layer-0 starts of the keys whose hashes are at `hash`.
  static void starts(const layer0& l, const std::uint64_t* hash, std::uint64_t* start) {
    vec h, s;
    load(hash, h);
    mul_high(h, l.num_starts, s);
    store(s, start);
  }

  /// layer_plan::bumps<Rule>() of the keys starting at `start`, as a bit mask; their rows'
  /// blocks and offsets in layer 0 in `row` and `shift`.
  template <bump_rule Rule>
  static std::uint32_t locate(const layer0& l, const std::uint64_t* start,
                              const std::uint64_t** row, std::uint64_t* shift) {
    vec s;
    load(start, s);
    std::uint32_t bumps =
        Lanes::greater(s, l.shard_mask) & Lanes::greater(l.head_width, s & l.shard_mask);
    if constexpr (Rule == bump_rule::two_bit) {
      const vec bucket = s >> l.bucket_bits;
      vec words, cut;
      Lanes::gather(l.thresholds, bucket >> 5, words);
      Lanes::pick(l.cuts, (words >> ((bucket & 31) << 1)) & 3, cut);
      bumps |= Lanes::greater(cut, s & l.bucket_mask);
    }
    // A block holds r = 8 words: it starts at byte (start / 64) * 64 = start & ~63.
    store(l.solution + (s & ~std::uint64_t{63}), row);
    store(s & 63, shift);
    return bumps;
  }

  /// The coefficients of the rows of the keys whose layer hashes are at `hash`, shifted to
  /// their offsets `shift` (in `low` and `high`, as block_result() splits them), and each row's
  /// expected result: fingerprint(hash, 8) & rhs_mask. Keys whose bit in `absent` is set
  /// expect 256 (no row's 8 bits: not members) and get no coefficients (their lookups read 0).
  static void prepare_rows(const std::uint64_t* hash, const std::uint64_t* shift,
                           std::uint32_t absent, std::uint32_t rhs_mask, std::uint64_t* low,
                           std::uint64_t* high, std::uint64_t* expected) {
    vec h, s, lane_bit;
    load(hash, h);
    load(shift, s);
    for (unsigned i = 0; i < Lanes::width; ++i) lane_bit[i] = std::uint64_t{1} << i;
    const vec present = vec((absent & lane_bit) == 0);  // all ones or zero
    const vec coeff = (h * coefficient_multiplier) | 1;
    const vec fingerprint = (h * fingerprint_multiplier) >> 56;
    store((fingerprint & rhs_mask & present) | (256 & ~present), expected);
    store((coeff << s) & present, low);
    store(((coeff >> 1) >> (63 - s)) & present, high);
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
  using steps = lane_steps<Lanes>;
  const typename steps::layer0 first(q.layers[0]);
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
    for (unsigned v = 0; v < block_keys; v += width) steps::starts(first, k.hash + v, k.start + v);
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
          std::uint64_t{steps::template locate<Rule>(first, k.start + v, k.row + v, k.shift + v)}
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
      steps::prepare_rows(k.hash + v, k.shift + v, static_cast<std::uint32_t>(k.absent >> v),
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
