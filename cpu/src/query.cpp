// Batched CPU queries: hash a group of keys ahead, prefetch their layer-0 blocks, then check.
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "ribbon/filter.hpp"

namespace ribbon {
namespace {

/// Keys hashed and prefetched ahead of their check: enough to overlap the memory latency of
/// a group with the work on the previous one.
constexpr std::uint64_t prefetch_group = 16;

/// The r-bit result of a row, one parity at a time (any CPU).
template <unsigned Width>
struct portable_rows {
  std::uint32_t operator()(const void* solution, std::uint32_t result_bits, std::uint64_t start,
                           detail::word_t<Width> coeff) const {
    return detail::row_result<Width>(solution, result_bits, start, coeff);
  }
};

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RIBBON_AVX512_QUERIES 1
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

bool cpu_has_avx512_popcount() {
  static const bool yes =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq");
  return yes;
}
#endif

/// Answers keys [begin, end) in groups: hash a group and prefetch the layer-0 blocks its
/// keys read, then answer each with answer(index, layer-0 hash, layer-0 start). Bits > 0:
/// the common case, known at compile time: blocks of Bits words and a layer 0 without salt.
template <unsigned Width, std::uint32_t Bits, class KeyHash, class Answer>
void prefetched_range(const filter_ref& f, std::uint64_t begin, std::uint64_t end,
                      const KeyHash& key_hash, const Answer& answer) {
  const layer_ref& first = f.layers[0];
  const auto* solution = static_cast<const detail::word_t<Width>*>(first.solution);
  std::uint64_t hashes[prefetch_group];
  std::uint64_t starts[prefetch_group];
  for (std::uint64_t base = begin; base < end; base += prefetch_group) {
    const std::uint64_t m = std::min(prefetch_group, end - base);
    for (std::uint64_t i = 0; i < m; ++i) {
      const std::uint64_t h =
          Bits != 0 ? key_hash(base + i) : detail::layer0_hash(first, key_hash(base + i));
      const std::uint64_t s = fastrange64(h, first.geometry.num_starts);
      hashes[i] = h;
      starts[i] = s;
      // A query reads two adjacent blocks; prefetch their first cache lines.
      const std::uint64_t block = s / Width;
      if constexpr (Bits != 0) {
        __builtin_prefetch(solution + block * Bits);
        __builtin_prefetch(solution + (block + 1) * Bits);
      } else {
        const auto* words = solution + first.geometry.block_word(block, f.params.result_bits);
        __builtin_prefetch(words);
        __builtin_prefetch(words + first.geometry.block_bits(block, f.params.result_bits));
      }
    }
    for (std::uint64_t i = 0; i < m; ++i) answer(base + i, hashes[i], starts[i]);
  }
}

/// Bits > 0: r known at compile time (the common sizes of filters whose blocks all hold r words,
/// with fingerprints and no layer-0 salt), so the r-word loop unrolls. Bits == 0: any filter
/// (fractional bits, homogeneous, a retried standard layer).
template <unsigned Width, std::uint32_t Bits, class Rows = portable_rows<Width>, class KeyHash>
void contains_range(const filter_ref& f, std::uint64_t begin, std::uint64_t end,
                    const KeyHash& key_hash, bool* out, const Rows& rows = {}) {
  const filter_params& p = f.params;
  const layer_ref& first = f.layers[0];
  prefetched_range<Width, Bits>(
      f, begin, end, key_hash, [&](std::uint64_t i, std::uint64_t h, std::uint64_t s) {
        bool found;
        if (detail::is_bumped(p, first, s)) {
          found = f.num_layers > 1 && detail::contains_from_layer<Width>(
                                          p, f.layers, f.num_layers, 1, remix(h, f.layers[1].salt));
        } else if constexpr (Bits != 0) {
          found = rows(first.solution, Bits, s, detail::coefficients<Width>(h)) ==
                  detail::fingerprint(h, Bits);
        } else {
          found = detail::contains_from_layer<Width>(p, f.layers, f.num_layers, 0, h);
        }
        out[i] = found;
      });
}

/// Batched retrieval over keys [begin, end).
template <unsigned Width, class KeyHash>
void lookup_range(const filter_ref& f, std::uint64_t begin, std::uint64_t end,
                  const KeyHash& key_hash, std::uint32_t* out) {
  prefetched_range<Width, 0>(
      f, begin, end, key_hash, [&](std::uint64_t i, std::uint64_t h, std::uint64_t) {
        out[i] = detail::lookup_from_layer<Width>(f.params, f.layers, f.num_layers, 0, h);
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
  const bool common = f.params.extra_bit_fraction == 0 &&
                      f.params.variant != filter_variant::homogeneous && f.layers[0].salt == 0;
  const std::uint32_t bits = common ? f.params.result_bits : 0;
  run_batch(count, threads, [&](std::uint64_t begin, std::uint64_t end) {
    with_width(f, [&](auto width) {
      constexpr unsigned w = decltype(width)::value;
      switch (bits) {
        case 8:
#ifdef RIBBON_AVX512_QUERIES
          if (w == 64 && cpu_has_avx512_popcount()) {
            return contains_range<64, 8, avx512_rows_w64_r8>(f, begin, end, key_hash, out);
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
