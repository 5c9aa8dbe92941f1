// The batched query pipeline and the row checks of CPU queries, shared by the oneTBB batched
// queries (query.cpp), the scalar plans (filter.cpp) and the C ABI's batched calls (c_api.cpp),
// which need no oneTBB.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "batched_lanes.hpp"
#include "ribbon/detail/planned_queries.hpp"
#include "stage_schedule.hpp"

namespace ribbon::detail::kernels {

/// Keys per stage of the batched pipeline (pipelined_range). A block's threshold words are
/// prefetched one block of work before they are read, and its rows one block before theirs:
/// at a few ns a key, 16 keys cover about 100 ns of memory latency while keeping about 16
/// code and 32 row lines in flight, what the cache's miss buffers hold.
constexpr std::uint64_t stage_keys = 16;

using detail::bump_rule;
using detail::portable_rows;
using detail::query_plan;

#ifdef RIBBON_X86_LANES
/// w=64, r=8, the default: the row check of the scalar routines and the general pipeline, with
/// AVX-512 (about 6 instructions instead of about 60). Same result as portable_rows. Inlined
/// into callers compiled for AVX-512 as a whole (contains_range_avx512,
/// planned_contains_avx512), which run only where the CPU has it.
struct avx512_rows_w64_r8 {
  RIBBON_TARGET_AVX512 std::uint32_t operator()(const void* solution, std::uint32_t,
                                                std::uint64_t start, std::uint64_t coeff) const {
    const unsigned shift = static_cast<unsigned>(start % 64);
    return row_parities_avx512(static_cast<const std::uint64_t*>(solution) + (start / 64) * 8,
                               coeff << shift, (coeff >> 1) >> (63 - shift));
  }
};

/// The same with AVX2, for CPUs without AVX-512 (AMD Zen 2/3, older Intel).
struct avx2_rows_w64_r8 {
  RIBBON_TARGET_AVX2 std::uint32_t operator()(const void* solution, std::uint32_t,
                                              std::uint64_t start, std::uint64_t coeff) const {
    const unsigned shift = static_cast<unsigned>(start % 64);
    return row_parities_avx2(static_cast<const std::uint64_t*>(solution) + (start / 64) * 8,
                             coeff << shift, (coeff >> 1) >> (63 - shift));
  }
};

inline bool cpu_has_avx512_popcount() {
  static const bool yes = __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512vpopcntdq") &&
                          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  return yes;
}

inline bool cpu_has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2");
  return yes;
}
#endif

/// The row check set_row_check() chose (filter.cpp).
row_check chosen_row_check();

/// The w = 64, r = 8 row check that the scalar and batched queries use: the fastest this CPU
/// runs, unless set_row_check() asked for the portable one.
enum class rows_w64_r8 { portable, avx2, avx512 };
inline rows_w64_r8 rows_for_w64_r8() {
#ifdef RIBBON_X86_LANES
  const row_check chosen = chosen_row_check();
  if (chosen == row_check::portable) return rows_w64_r8::portable;
  if (chosen == row_check::fastest && cpu_has_avx512_popcount()) return rows_w64_r8::avx512;
  if (cpu_has_avx2()) return rows_w64_r8::avx2;
#endif
  return rows_w64_r8::portable;
}

/// A block of keys on their way through the query pipeline: their hashes and starts, first in
/// layer 0, then in the layer that holds them (num_layers: none, every layer bumps them).
struct key_block {
  std::uint64_t hash[stage_keys];
  std::uint64_t start[stage_keys];
  std::uint32_t layer[stage_keys];
};

/// Prefetches the word that decides `start`'s bump out of `layer`: its bucket's 2-bit code
/// (plans hold 1+-bit codes decoded into 2-bit ones). `Rule`: the layer's rule, or any.
template <bump_rule Rule>
RIBBON_FORCE_INLINE void prefetch_code(const detail::layer_plan& layer, std::uint64_t start) {
  const bump_rule rule = Rule == bump_rule::any ? layer.rule : Rule;
  if (rule == bump_rule::two_bit) {
    __builtin_prefetch(layer.thresholds + (start >> layer.bucket_bits) / 32);
  }
}

/// Prefetches every cache line a row starting at `start` in layer `layer` reads: its block and
/// the next one, `2 * bits` words (at most; upper blocks of fractional-bit layers hold r + 1
/// words). The span's lines from its first byte on, and the line of its last byte (one more
/// where the span is not line-aligned): with `bits` known at compile time, a few prefetches
/// and no loop.
template <unsigned Width>
RIBBON_FORCE_INLINE void prefetch_row(const query_plan& q, std::uint32_t layer, std::uint64_t start,
                                      std::uint32_t bits) {
  const std::uint64_t block = start / Width;
  const detail::layer_plan& l = q.layers[layer];
  const auto* first = reinterpret_cast<const char*>(
      static_cast<const detail::word_t<Width>*>(l.solution) +
      (bits != 0 ? block * bits : l.geometry.block_word(block, q.result_bits)));
  const std::uint32_t words = 2 * (bits != 0 ? bits : q.result_bits + 1);
  const std::uint64_t bytes = std::uint64_t{words} * (Width / 8);
  for (std::uint64_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(first + offset);
  __builtin_prefetch(first + bytes - 1);
}

/// Answers keys [begin, end) through a software pipeline over blocks of stage_keys keys: block
/// b + 2 is hashed and its layer-0 threshold words prefetched; block b + 1 finds its layers
/// (layer 0 for most keys) and its rows there are prefetched; block b is answered by
/// answer(index, hash, start, layer) from cache. Each stage is a short loop of its own, so the
/// compiler keeps its state in registers (one loop over a ring of keys spilled it).
/// Bits > 0: blocks of Bits words, known at compile time (no fractional bits). `Rule`: layer 0's
/// bump rule, or any (layer 0 must be unsalted unless `Rule` is any).
template <unsigned Width, std::uint32_t Bits, bump_rule Rule, class KeyHash, class Answer>
void pipelined_range(const query_plan& q, std::uint64_t begin, std::uint64_t end,
                     const KeyHash& key_hash, const Answer& answer) {
  const detail::layer_plan& first = q.layers[0];
  const std::uint64_t count = end - begin;
  const std::uint64_t num_blocks = (count + stage_keys - 1) / stage_keys;
  key_block blocks[3];

  const auto keys_in = [&](std::uint64_t b) {
    return std::min(stage_keys, count - b * stage_keys);
  };
  const auto hash_block = [&](std::uint64_t b) {
    key_block& k = blocks[b % 3];
    const std::uint64_t n = keys_in(b);
    const std::uint64_t base = begin + b * stage_keys;
    for (std::uint64_t j = 0; j < n; ++j) {
      const std::uint64_t hash = key_hash(base + j);
      k.hash[j] = Rule == bump_rule::any ? q.first_hash(hash) : hash;
    }
    for (std::uint64_t j = 0; j < n; ++j) {
      k.start[j] = fastrange64(k.hash[j], first.geometry.num_starts);
      prefetch_code<Rule>(first, k.start[j]);
    }
  };
  const auto locate_block = [&](std::uint64_t b) {
    key_block& k = blocks[b % 3];
    const std::uint64_t n = keys_in(b);
    for (std::uint64_t j = 0; j < n; ++j) {
      const std::uint32_t layer =
          first.bumps<Rule>(k.start[j]) ? q.find_layer_from(1, k.hash[j], k.start[j]) : 0;
      k.layer[j] = layer;
      if (layer < q.num_layers) prefetch_row<Width>(q, layer, k.start[j], Bits);
    }
  };
  const auto answer_block = [&](std::uint64_t b) {
    const key_block& k = blocks[b % 3];
    const std::uint64_t n = keys_in(b);
    const std::uint64_t base = begin + b * stage_keys;
    for (std::uint64_t j = 0; j < n; ++j) answer(base + j, k.hash[j], k.start[j], k.layer[j]);
  };

  run_three_stages(num_blocks, hash_block, locate_block, answer_block);
}

/// Bits > 0: r known at compile time (the common sizes of filters whose blocks all hold r words,
/// with fingerprints), so the r-word loop unrolls. Bits == 0: any filter (fractional bits,
/// homogeneous).
template <unsigned Width, std::uint32_t Bits, class Rows = portable_rows<Width>,
          bump_rule Rule = bump_rule::any, class KeyHash, class Out>
void contains_range(const query_plan& q, std::uint64_t begin, std::uint64_t end,
                    const KeyHash& key_hash, Out* out, const Rows& rows = {}) {
  pipelined_range<Width, Bits, Rule>(
      q, begin, end, key_hash,
      [&](std::uint64_t i, std::uint64_t hash, std::uint64_t start, std::uint32_t layer) {
        out[i] = q.member<Width, Bits, Rows>(layer, start, hash, rows);
      });
}

#ifdef RIBBON_X86_LANES
/// contains_range() with the AVX2 row check and layer 0's rule, compiled for AVX2 as a whole so
/// that the row check inlines into the loop (a call per key costs about 10 instructions).
template <bump_rule Rule, class KeyHash, class Out>
RIBBON_TARGET_AVX2 __attribute__((flatten)) void contains_range_avx2(const query_plan& q,
                                                                     std::uint64_t begin,
                                                                     std::uint64_t end,
                                                                     const KeyHash& key_hash,
                                                                     Out* out) {
  contains_range<64, 8, avx2_rows_w64_r8, Rule>(q, begin, end, key_hash, out);
}

/// The same with the AVX-512 row check.
template <bump_rule Rule, class KeyHash, class Out>
RIBBON_TARGET_AVX512 __attribute__((flatten)) void contains_range_avx512(const query_plan& q,
                                                                         std::uint64_t begin,
                                                                         std::uint64_t end,
                                                                         const KeyHash& key_hash,
                                                                         Out* out) {
  contains_range<64, 8, avx512_rows_w64_r8, Rule>(q, begin, end, key_hash, out);
}
#endif

/// Batched retrieval over keys [begin, end). Bits as for contains_range: r at compile time
/// (every block of r words), or 0 (any).
template <unsigned Width, std::uint32_t Bits, class KeyHash>
void lookup_range(const query_plan& q, std::uint64_t begin, std::uint64_t end,
                  const KeyHash& key_hash, std::uint32_t* out) {
  pipelined_range<Width, Bits, bump_rule::any>(
      q, begin, end, key_hash,
      [&](std::uint64_t i, std::uint64_t hash, std::uint64_t start, std::uint32_t layer) {
        out[i] = q.value<Width, Bits>(layer, start, hash);
      });
}

/// Calls f(std::integral_constant<unsigned, W>{}) for width `width` (32, 64 or 128).
template <class F>
void with_width(std::uint32_t width, const F& f) {
  switch (width) {
    case 32: return f(std::integral_constant<unsigned, 32>{});
    case 64: return f(std::integral_constant<unsigned, 64>{});
    default: return f(std::integral_constant<unsigned, 128>{});
  }
}

/// Calls f(std::integral_constant<bump_rule, R>{}) for layer 0's rule where a routine
/// specialised for it applies (an unsalted sharded layer 0: every filter written), else for
/// bump_rule::any. Plans have no 1+-bit rule left (plan() decodes those codes into 2-bit ones).
template <class F>
auto with_first_rule(const query_plan& q, const F& f) {
  const bump_rule rule =
      q.num_layers == 0 || q.layers[0].salt != 0 ? bump_rule::any : q.layers[0].rule;
  switch (rule) {
    case bump_rule::shard_heads:
      return f(std::integral_constant<bump_rule, bump_rule::shard_heads>{});
    case bump_rule::two_bit: return f(std::integral_constant<bump_rule, bump_rule::two_bit>{});
    default: return f(std::integral_constant<bump_rule, bump_rule::any>{});
  }
}

#ifdef RIBBON_X86_LANES
/// The lanes over keys [begin, end) of a w = 64, r = 8 plan without fractional bits, with the
/// instruction set of `rows` and layer 0's rule at compile time: membership, or retrieval with
/// `Lookup`. Returns false, having run nothing, where layer 0 has no rule of its own (a salted
/// layer): the caller's general path answers those.
template <bool Lookup, class KeyHash, class Out>
bool run_lanes(const query_plan& q, rows_w64_r8 rows, std::uint64_t begin, std::uint64_t end,
               const KeyHash& key_hash, Out* out) {
  return with_first_rule(q, [&](auto rule) {
    constexpr bump_rule first = decltype(rule)::value;
    if constexpr (first == bump_rule::any) {
      return false;
    } else {  // every filter and retrieval structure ribbon writes at this shape
      if (rows == rows_w64_r8::avx512) {
        lanes_query_range_avx512<first, Lookup>(q, begin, end, key_hash, out);
      } else {
        lanes_query_range_avx2<first, Lookup>(q, begin, end, key_hash, out);
      }
      return true;
    }
  });
}
#endif

/// Batched membership of keys [begin, end) through the plan, with the row check chosen once
/// per range. `Out`: bool, or std::uint8_t (the C ABI's 1 and 0).
template <class KeyHash, class Out>
void contains_keys(const query_plan& q, std::uint64_t begin, std::uint64_t end,
                   const KeyHash& key_hash, Out* out) {
  with_width(q.width, [&](auto width) {
    constexpr unsigned w = decltype(width)::value;
    switch (q.fixed_bits) {
      case 8:
#ifdef RIBBON_X86_LANES
        if (const rows_w64_r8 rows = rows_for_w64_r8(); w == 64 && rows != rows_w64_r8::portable) {
          if (run_lanes<false>(q, rows, begin, end, key_hash, out)) return;
          // A salted layer 0: the general pipeline with the SIMD row check.
          if (rows == rows_w64_r8::avx512) {
            return contains_range_avx512<bump_rule::any>(q, begin, end, key_hash, out);
          }
          return contains_range_avx2<bump_rule::any>(q, begin, end, key_hash, out);
        }
#endif
        return contains_range<w, 8>(q, begin, end, key_hash, out);
      case 16: return contains_range<w, 16>(q, begin, end, key_hash, out);
      default: return contains_range<w, 0>(q, begin, end, key_hash, out);
    }
  });
}

/// Batched retrieval of keys [begin, end) through the plan.
template <class KeyHash>
void lookup_keys(const query_plan& q, std::uint64_t begin, std::uint64_t end,
                 const KeyHash& key_hash, std::uint32_t* out) {
#ifdef RIBBON_X86_LANES
  if (const rows_w64_r8 rows = rows_for_w64_r8();
      q.width == 64 && q.fixed_bits == 8 && rows != rows_w64_r8::portable &&
      run_lanes<true>(q, rows, begin, end, key_hash, out)) {
    return;
  }
#endif
  with_width(q.width, [&](auto width) {
    constexpr unsigned w = decltype(width)::value;
    switch (q.fixed_bits) {  // r = 8 + 8 and 8 + 16: 8-bit values under 8 or 16 check bits
      case 8: return lookup_range<w, 8>(q, begin, end, key_hash, out);
      case 16: return lookup_range<w, 16>(q, begin, end, key_hash, out);
      case 24: return lookup_range<w, 24>(q, begin, end, key_hash, out);
      default: return lookup_range<w, 0>(q, begin, end, key_hash, out);
    }
  });
}

/// Retrieval of keys [begin, end): with check bits, each key's value bits in out and whether
/// its check bits matched in found (where given; true for every key without check bits).
/// `Found`: bool, or std::uint8_t (the C ABI's 1 and 0).
template <class KeyHash, class Found>
void lookup_checked_keys(const filter_params& p, const query_plan& q, std::uint64_t begin,
                         std::uint64_t end, const KeyHash& key_hash, std::uint32_t* out,
                         Found* found) {
  lookup_keys(q, begin, end, key_hash, out);
  if (p.check_bits == 0) {
    if (found) std::fill(found + begin, found + end, Found{1});
    return;
  }
  for (std::uint64_t i = begin; i < end; ++i) {
    const std::uint64_t hash = key_hash(i);
    if (found) found[i] = p.check_passes(hash, out[i]);
    out[i] = p.value_of(out[i]);
  }
}

/// Membership of keys [begin, end) in a filter, or in a retrieval structure with check bits
/// (its lookups checked, a stretch of keys at a time).
template <class KeyHash, class Out>
void membership_keys(const filter_params& p, const query_plan& q, std::uint64_t begin,
                     std::uint64_t end, const KeyHash& key_hash, Out* out) {
  if (!is_retrieval(p.variant)) return contains_keys(q, begin, end, key_hash, out);
  constexpr std::uint64_t stretch = 4096;
  std::uint32_t values[stretch];
  for (std::uint64_t first = begin; first < end; first += stretch) {
    const std::uint64_t last = std::min(end, first + stretch);
    auto shifted = [&](std::uint64_t i) { return key_hash(first + i); };
    lookup_checked_keys(p, q, 0, last - first, shifted, values, out + first);
  }
}

/// The scalar routines, one instantiation per width, layer-0 rule, r and row check: membership
/// and retrieval. Bits > 0: every block holds Bits words (no fractional bits); 0: any layer.
template <unsigned Width, bump_rule Rule, std::uint32_t Bits, class Rows>
struct planned_routines {
  static bool contains(const query_plan& q, std::uint64_t hash) {
    return q.contains<Width, Rule, Bits, Rows>(hash);
  }
  static std::uint32_t lookup(const query_plan& q, std::uint64_t hash) {
    return q.lookup<Width, Rule, Bits, Rows>(hash);
  }
};
#ifdef RIBBON_X86_LANES
/// w = 64, r = 8 compiled for AVX2 as a whole, so that the AVX2 row check inlines (the walk to
/// later layers stays a call: query_plan::find_layer_from is not inlined).
template <bump_rule Rule>
struct planned_routines_avx2 {
  RIBBON_TARGET_AVX2 __attribute__((flatten)) static bool contains(const query_plan& q,
                                                                   std::uint64_t hash) {
    return q.contains<64, Rule, 8, avx2_rows_w64_r8>(hash);
  }
  RIBBON_TARGET_AVX2 __attribute__((flatten)) static std::uint32_t lookup(const query_plan& q,
                                                                          std::uint64_t hash) {
    return q.lookup<64, Rule, 8, avx2_rows_w64_r8>(hash);
  }
};
/// The same with the AVX-512 row check.
template <bump_rule Rule>
struct planned_routines_avx512 {
  RIBBON_TARGET_AVX512 __attribute__((flatten)) static bool contains(const query_plan& q,
                                                                     std::uint64_t hash) {
    return q.contains<64, Rule, 8, avx512_rows_w64_r8>(hash);
  }
  RIBBON_TARGET_AVX512 __attribute__((flatten)) static std::uint32_t lookup(const query_plan& q,
                                                                            std::uint64_t hash) {
    return q.lookup<64, Rule, 8, avx512_rows_w64_r8>(hash);
  }
};
#endif

/// Sets `out`'s scalar routines to those of `Routines`.
template <class Routines>
void use_routines(planned_queries& out) {
  out.contains = &Routines::contains;
  out.lookup = &Routines::lookup;
}

/// The scalar routines of a filter of width `Width` whose layer 0 has rule `Rule`.
template <unsigned Width, bump_rule Rule>
void choose_routines(planned_queries& out) {
  switch (out.plan.fixed_bits) {
    case 8:
#ifdef RIBBON_X86_LANES
      if constexpr (Width == 64) {
        switch (rows_for_w64_r8()) {
          case rows_w64_r8::avx512: return use_routines<planned_routines_avx512<Rule>>(out);
          case rows_w64_r8::avx2: return use_routines<planned_routines_avx2<Rule>>(out);
          case rows_w64_r8::portable: break;
        }
      }
#endif
      return use_routines<planned_routines<Width, Rule, 8, portable_rows<Width>>>(out);
    case 16: return use_routines<planned_routines<Width, Rule, 16, portable_rows<Width>>>(out);
    default: return use_routines<planned_routines<Width, Rule, 0, portable_rows<Width>>>(out);
  }
}

/// Points the layers of `out.plan` that have 1+-bit codes at the same codes decoded into
/// 2-bit codes, which `out` then holds.
inline void decode_one_plus_bit_codes(planned_queries& out) {
  query_plan& q = out.plan;
  std::uint64_t words = 0;
  for (std::uint32_t l = 0; l < q.num_layers; ++l) {
    if (q.layers[l].rule == bump_rule::one_plus_bit) words += q.layers[l].regions.two_bit_words();
  }
  if (words == 0) return;
  std::shared_ptr<std::uint64_t[]> codes(new std::uint64_t[words]);
  std::uint64_t* next = codes.get();
  for (std::uint32_t l = 0; l < q.num_layers; ++l) {
    layer_plan& layer = q.layers[l];
    if (layer.rule != bump_rule::one_plus_bit) continue;
    layer.regions.decode_to_two_bit(layer.thresholds, next);
    layer.use_two_bit_codes(next);
    next += layer.regions.two_bit_words();
  }
  out.two_bit_codes = std::move(codes);
}

/// The plan of `f`: its constants and the scalar routines chosen for it and this CPU.
inline planned_queries plan(const filter_ref& f) {
  planned_queries out;
  out.plan = query_plan(f);
  decode_one_plus_bit_codes(out);
  with_width(f.params.width, [&](auto width) {
    constexpr unsigned w = decltype(width)::value;
    with_first_rule(out.plan, [&](auto rule) {
      constexpr bump_rule first = decltype(rule)::value;
      choose_routines<w, first>(out);
    });
  });
  return out;
}

}  // namespace ribbon::detail::kernels
