// Batched CPU queries: a software pipeline that hashes keys and prefetches their rows ahead.
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

#include "ribbon/filter.hpp"

namespace ribbon {
namespace {

/// How many keys ahead of its answer a key's rows are prefetched: enough cache misses in
/// flight to keep the memory busy (about 100 ns of latency over a few ns of work per key).
/// Its bucket's threshold word is prefetched twice as far ahead, since deciding the layer
/// needs it before the rows can be prefetched. A power of two (ring index by mask).
constexpr std::uint64_t prefetch_distance = 32;

/// The r-bit result of a row, one parity at a time (any CPU).
template <unsigned Width>
struct portable_rows {
  std::uint32_t operator()(const void* solution, std::uint32_t result_bits, std::uint64_t start,
                           detail::word_t<Width> coeff) const {
    return detail::row_result<Width>(solution, result_bits, start, coeff);
  }
};

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RIBBON_X86_ROW_CHECKS 1
/// w=64, r=8, the default: a row reads 16 words, two 512-bit registers, and VPOPCNTQ gives
/// its 8 parities at once (about 6 instructions instead of about 60). Same result as
/// portable_rows. Not inlined: the caller is portable code that calls this only where the CPU
/// has AVX-512 VPOPCNTDQ (see bench/RESULTS.md).
struct avx512_rows_w64_r8 {
  __attribute__((target("avx512f,avx512vpopcntdq"), noinline)) std::uint32_t operator()(
      const void* solution, std::uint32_t, std::uint64_t start, std::uint64_t coeff) const {
    const auto* block = static_cast<const std::uint64_t*>(solution) + (start / 64) * 8;
    const unsigned shift = static_cast<unsigned>(start % 64);
    const std::uint64_t low = coeff << shift;
    const std::uint64_t high = (coeff >> 1) >> (63 - shift);
    const __m512i here =
        _mm512_and_si512(_mm512_loadu_si512(block), _mm512_set1_epi64(static_cast<long long>(low)));
    const __m512i next = _mm512_and_si512(_mm512_loadu_si512(block + 8),
                                          _mm512_set1_epi64(static_cast<long long>(high)));
    const __m512i counts = _mm512_popcnt_epi64(_mm512_xor_si512(here, next));
    return _mm512_test_epi64_mask(counts, _mm512_set1_epi64(1));
  }
};

/// The same for CPUs with AVX2 but no AVX-512 (AMD Zen 2/3, older Intel): the row's 8 words
/// in two 256-bit registers, each 64-bit lane folded to its parity by shifts and xors (AVX2
/// has no vector popcount), the 8 parities gathered by a movemask. About 30 instructions.
struct avx2_rows_w64_r8 {
  __attribute__((target("avx2,bmi2"))) std::uint32_t operator()(const void* solution, std::uint32_t,
                                                                std::uint64_t start,
                                                                std::uint64_t coeff) const {
    const auto* block = static_cast<const std::uint64_t*>(solution) + (start / 64) * 8;
    const unsigned shift = static_cast<unsigned>(start % 64);
    const __m256i low = _mm256_set1_epi64x(static_cast<long long>(coeff << shift));
    const __m256i high = _mm256_set1_epi64x(static_cast<long long>((coeff >> 1) >> (63 - shift)));
    // The row's words 0-3 and 4-7 (a lambda would lose the target attribute).
    const auto* here = reinterpret_cast<const __m256i*>(block);
    const auto* next = reinterpret_cast<const __m256i*>(block + 8);
    const __m256i words0to3 = _mm256_xor_si256(_mm256_and_si256(_mm256_loadu_si256(here), low),
                                               _mm256_and_si256(_mm256_loadu_si256(next), high));
    const __m256i words4to7 =
        _mm256_xor_si256(_mm256_and_si256(_mm256_loadu_si256(here + 1), low),
                         _mm256_and_si256(_mm256_loadu_si256(next + 1), high));
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
};

bool cpu_has_avx512_popcount() {
  static const bool yes =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq");
  return yes;
}

bool cpu_has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2");
  return yes;
}
#endif

std::atomic<detail::row_check> chosen_row_check{detail::row_check::fastest};

/// A key on its way through the query pipeline: its hash and start, first in layer 0, then
/// in the layer that holds it (num_layers: none, every layer bumps it).
struct pending_key {
  std::uint64_t hash;
  std::uint64_t start;
  std::uint32_t layer;
};

/// detail::is_bumped() for one layer, with the layer's constants worked out once per batch
/// rather than per key (it is most of a query's instructions otherwise). Same answers.
class bump_test {
 public:
  bump_test(const filter_params& p, const layer_ref& layer) {
    const layer_geometry& g = layer.geometry;
    if (!g.sharded()) return;  // a plain layer bumps nothing
    shard_mask_ = g.shard_size() - 1;
    head_width_ = p.width;
    if (!g.bumping()) return;
    thresholds_ = layer.thresholds;
    two_bit_ = g.codes == threshold_encoding::two_bit;
    bucket_bits_ = detail::count_trailing_zeros(p.bucket_size);
    bucket_mask_ = p.bucket_size - 1;
    for (unsigned code = 0; code < 4; ++code) cut_[code] = p.threshold(code);
    regions_ = g.code_regions(p.bucket_size);
  }

  /// Prefetches what deciding `start`'s bump reads: the word of its bucket's 2-bit code, or
  /// its bucket's bit and its shard's header (1+-bit; the list, rarely read, is not).
  void prefetch(std::uint64_t start) const {
    const std::uint64_t bucket = start >> bucket_bits_;
    if (two_bit_) {
      __builtin_prefetch(thresholds_ + bucket / 32);
      return;
    }
    __builtin_prefetch(regions_.region_of(thresholds_, bucket));
    __builtin_prefetch(regions_.bit_word_of(thresholds_, bucket));
  }
  bool has_thresholds() const { return thresholds_ != nullptr; }

  RIBBON_FORCE_INLINE bool operator()(std::uint64_t start) const {
    const bool shard_head = start > shard_mask_ && (start & shard_mask_) < head_width_;
    if (thresholds_ == nullptr) return shard_head;
    const std::uint64_t bucket = start >> bucket_bits_;
    const auto offset = static_cast<std::uint32_t>(start & bucket_mask_);
    if (two_bit_) {
      const unsigned code =
          static_cast<unsigned>(thresholds_[bucket / 32] >> (2 * (bucket % 32))) & 3u;
      return shard_head || offset < cut_[code];
    }
    return shard_head || regions_.bumps(thresholds_, bucket, offset, cut_[1], cut_[2]);
  }

 private:
  const std::uint64_t* thresholds_ = nullptr;
  bool two_bit_ = false;
  std::uint64_t shard_mask_ = ~std::uint64_t{0};
  std::uint64_t head_width_ = 0;
  std::uint64_t bucket_mask_ = 0;
  int bucket_bits_ = 0;
  std::uint32_t cut_[4] = {};
  detail::code_region_layout regions_;
};

/// Prefetches every cache line a row starting at `start` reads: its block and the next one,
/// `2 * bits` words (at most; upper blocks of fractional-bit layers hold r + 1 words).
template <unsigned Width>
RIBBON_FORCE_INLINE void prefetch_row(const filter_params& p, const layer_ref& layer,
                                      std::uint64_t start, std::uint32_t bits) {
  const std::uint64_t block = start / Width;
  const auto* first = reinterpret_cast<const char*>(
      static_cast<const detail::word_t<Width>*>(layer.solution) +
      (bits != 0 ? block * bits : layer.geometry.block_word(block, p.result_bits)));
  const std::uint32_t words = 2 * (bits != 0 ? bits : p.result_bits + 1);
  const std::uint64_t bytes = std::uint64_t{words} * (Width / 8);
  // The span may straddle one more line than bytes / 64 when it is not line-aligned.
  const auto misalignment = reinterpret_cast<std::uintptr_t>(first) % 64;
  for (std::uint64_t offset = 0; offset < misalignment + bytes; offset += 64) {
    __builtin_prefetch(first - misalignment + offset);
  }
}

/// Answers keys [begin, end) through a software pipeline: key i + 2D is hashed and its layer-0
/// threshold word prefetched; key i + D finds its layer (layer 0 for most keys) and its rows
/// there are prefetched; key i is answered by answer(index, pending_key) from cache.
/// Bits > 0: blocks of Bits words, known at compile time (no fractional bits).
template <unsigned Width, std::uint32_t Bits, class KeyHash, class Answer>
void pipelined_range(const filter_ref& f, std::uint64_t begin, std::uint64_t end,
                     const KeyHash& key_hash, const Answer& answer) {
  constexpr std::uint64_t ahead = prefetch_distance;
  constexpr std::uint64_t ring_size = 2 * ahead;
  const filter_params& p = f.params;
  const layer_ref& first = f.layers[0];
  const bump_test bumped_from_first(p, first);
  pending_key ring[ring_size];

  auto hash_ahead = [&](std::uint64_t i) {
    pending_key& k = ring[i % ring_size];
    k.hash = detail::layer0_hash(first, key_hash(i));
    k.start = fastrange64(k.hash, first.geometry.num_starts);
    if (bumped_from_first.has_thresholds()) {
      bumped_from_first.prefetch(k.start);
    }
  };
  auto locate_ahead = [&](std::uint64_t i) {
    pending_key& k = ring[i % ring_size];
    k.layer = 0;
    if (bumped_from_first(k.start)) {
      k.hash = remix(k.hash, f.layers[1].salt);  // find_layer takes the first layer's hash
      k.layer = detail::find_layer(f.layers, f.num_layers, 1, p, k.hash, k.start);
    }
    if (k.layer < f.num_layers) prefetch_row<Width>(p, f.layers[k.layer], k.start, Bits);
  };

  const std::uint64_t hashed_first = std::min(end, begin + ring_size);
  const std::uint64_t located_first = std::min(end, begin + ahead);
  for (std::uint64_t i = begin; i < hashed_first; ++i) hash_ahead(i);
  for (std::uint64_t i = begin; i < located_first; ++i) locate_ahead(i);
  for (std::uint64_t i = begin; i < end; ++i) {
    answer(i, ring[i % ring_size]);
    // Slot i is free now: key i + 2D takes it.
    if (i + ring_size < end) hash_ahead(i + ring_size);
    if (i + ahead < end) locate_ahead(i + ahead);
  }
}

/// Bits > 0: r known at compile time (the common sizes of filters whose blocks all hold r words,
/// with fingerprints), so the r-word loop unrolls. Bits == 0: any filter (fractional bits,
/// homogeneous).
template <unsigned Width, std::uint32_t Bits, class Rows = portable_rows<Width>, class KeyHash>
void contains_range(const filter_ref& f, std::uint64_t begin, std::uint64_t end,
                    const KeyHash& key_hash, bool* out, const Rows& rows = {}) {
  const filter_params& p = f.params;
  pipelined_range<Width, Bits>(f, begin, end, key_hash, [&](std::uint64_t i, const pending_key& k) {
    if (k.layer == f.num_layers) {
      out[i] = false;  // bumped out of every layer: no key of the set goes there
    } else if constexpr (Bits != 0) {
      out[i] = rows(f.layers[k.layer].solution, Bits, k.start,
                    detail::coefficients<Width>(k.hash)) == detail::fingerprint(k.hash, Bits);
    } else {
      out[i] = detail::contains_in_layer<Width>(p, f.layers[k.layer], k.start, k.hash);
    }
  });
}

#ifdef RIBBON_X86_ROW_CHECKS
/// contains_range() with the AVX2 row check, compiled for AVX2 as a whole so that the row check
/// inlines into the loop (a call per key costs about 10 instructions).
template <class KeyHash>
__attribute__((target("avx2,bmi2"), flatten)) void contains_range_avx2(const filter_ref& f,
                                                                       std::uint64_t begin,
                                                                       std::uint64_t end,
                                                                       const KeyHash& key_hash,
                                                                       bool* out) {
  contains_range<64, 8, avx2_rows_w64_r8>(f, begin, end, key_hash, out);
}
#endif

/// Batched retrieval over keys [begin, end).
template <unsigned Width, class KeyHash>
void lookup_range(const filter_ref& f, std::uint64_t begin, std::uint64_t end,
                  const KeyHash& key_hash, std::uint32_t* out) {
  pipelined_range<Width, 0>(f, begin, end, key_hash, [&](std::uint64_t i, const pending_key& k) {
    std::uint32_t bits = 0;
    out[i] = k.layer == f.num_layers
                 ? 0
                 : detail::layer_result<Width>(f.params, f.layers[k.layer], k.start, k.hash, bits);
  });
}

/// Runs run(begin, end) over [0, count), in parallel for large batches.
template <class Run>
void run_batch(std::uint64_t count, std::uint32_t threads, const Run& run) {
  constexpr std::uint64_t parallel_threshold = std::uint64_t{1} << 16;
  if (count < parallel_threshold || threads == 1) {
    run(0, count);
    return;
  }
  tbb::task_arena arena(threads == 0 ? tbb::task_arena::automatic : static_cast<int>(threads));
  arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, count, std::uint64_t{1} << 14),
                      [&](const tbb::blocked_range<std::uint64_t>& r) { run(r.begin(), r.end()); });
  });
}

/// Calls f(std::integral_constant<unsigned, W>{}) for the filter's width.
template <class F>
void with_width(const filter_ref& ref, const F& f) {
  switch (ref.params.width) {
    case 32: return f(std::integral_constant<unsigned, 32>{});
    case 64: return f(std::integral_constant<unsigned, 64>{});
    default: return f(std::integral_constant<unsigned, 128>{});
  }
}

template <class KeyHash>
void contains_batch(const filter_ref& f, std::uint64_t count, const KeyHash& key_hash, bool* out,
                    std::uint32_t threads) {
  if (f.num_layers == 0) {
    std::fill(out, out + count, false);
    return;
  }
  // Compile-time r only for the common case (see contains_range).
  const bool common =
      f.params.extra_bit_fraction == 0 && f.params.variant != filter_variant::homogeneous;
  const std::uint32_t bits = common ? f.params.result_bits : 0;
  run_batch(count, threads, [&](std::uint64_t begin, std::uint64_t end) {
    with_width(f, [&](auto width) {
      constexpr unsigned w = decltype(width)::value;
      switch (bits) {
        case 8:
#ifdef RIBBON_X86_ROW_CHECKS
          if (chosen_row_check.load(std::memory_order_relaxed) == detail::row_check::portable) {
            return contains_range<w, 8>(f, begin, end, key_hash, out);
          }
          if (w == 64 && cpu_has_avx512_popcount()) {
            return contains_range<64, 8, avx512_rows_w64_r8>(f, begin, end, key_hash, out);
          }
          if (w == 64 && cpu_has_avx2()) {
            return contains_range_avx2(f, begin, end, key_hash, out);
          }
#endif
          return contains_range<w, 8>(f, begin, end, key_hash, out);
        case 16: return contains_range<w, 16>(f, begin, end, key_hash, out);
        default: return contains_range<w, 0>(f, begin, end, key_hash, out);
      }
    });
  });
}

template <class KeyHash>
void lookup_batch(const filter_ref& f, std::uint64_t count, const KeyHash& key_hash,
                  std::uint32_t* out, std::uint32_t threads) {
  if (f.num_layers == 0) {
    std::fill(out, out + count, 0u);
    return;
  }
  run_batch(count, threads, [&](std::uint64_t begin, std::uint64_t end) {
    with_width(
        f, [&](auto width) { lookup_range<decltype(width)::value>(f, begin, end, key_hash, out); });
  });
}

}  // namespace

void detail::set_row_check(row_check which) {
  chosen_row_check.store(which);
}

void filter::contains(const std::uint64_t* keys, std::uint64_t count, bool* out) const {
  check_query(key_kind::u64, false);
  const filter_ref& f = ref_;
  contains_batch(
      f, count, [keys, &f](std::uint64_t i) { return f.key_hash(keys[i]); }, out, query_threads_);
}

void filter::contains(const std::string_view* keys, std::uint64_t count, bool* out) const {
  check_query(key_kind::bytes, false);
  const filter_ref& f = ref_;
  contains_batch(
      f, count, [keys, &f](std::uint64_t i) { return f.key_hash(keys[i].data(), keys[i].size()); },
      out, query_threads_);
}

void filter::lookup(const std::uint64_t* keys, std::uint64_t count, std::uint32_t* out) const {
  check_query(key_kind::u64, true);
  const filter_ref& f = ref_;
  lookup_batch(
      f, count, [keys, &f](std::uint64_t i) { return f.key_hash(keys[i]); }, out, query_threads_);
}

void filter::lookup(const std::string_view* keys, std::uint64_t count, std::uint32_t* out) const {
  check_query(key_kind::bytes, true);
  const filter_ref& f = ref_;
  lookup_batch(
      f, count, [keys, &f](std::uint64_t i) { return f.key_hash(keys[i].data(), keys[i].size()); },
      out, query_threads_);
}

}  // namespace ribbon
