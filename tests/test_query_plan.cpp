// The query plan (filter_ref.hpp query_plan, chosen routines in cpu/src/query_kernels.hpp):
// scalar and batched answers through the plan against the unplanned filter_ref path (the
// oracle), for every variant, width, threshold encoding and fractional setting; batched
// answers at every length 0..200 at odd offsets; Arrow-layout byte-string batches; the files
// of older format versions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "query_kernels.hpp"
#include "ribbon/detail/planned_queries.hpp"
#include "ribbon/error.hpp"
#include "ribbon/filter.hpp"
#include "ribbon/params.hpp"
#include "test_util.hpp"

namespace {

using ribbon::filter_variant;

/// Small shards (several per filter, so shard heads and every layer are exercised).
std::uint64_t small_shard(unsigned width) {
  return std::max<std::uint64_t>(4096,
                                 32 * std::uint64_t{ribbon::detail::default_bucket_size(width)});
}
using ribbon::threshold_encoding;

struct shape {
  filter_variant variant;
  unsigned width;
  threshold_encoding codes;
  double target_fpr;       // > 0: fractional bits (filters only)
  std::uint32_t bits = 8;  // r: values of r bits (retrieval), or fingerprints
};

/// A value of `bits` bits for a key (retrieval shapes).
std::uint32_t value_of(std::uint64_t key, std::uint32_t bits) {
  return static_cast<std::uint32_t>(bits >= 32 ? key : key & ((std::uint64_t{1} << bits) - 1));
}

std::string describe(const shape& s) {
  return "variant " + std::to_string(static_cast<unsigned>(s.variant)) +
         " w=" + std::to_string(s.width) + " codes " + ribbon::threshold_encoding_name(s.codes) +
         " fpr " + std::to_string(s.target_fpr) + " r=" + std::to_string(s.bits);
}

/// Every shape the plan chooses a routine for; 2-bit codes only where the builder takes them.
std::vector<shape> all_shapes() {
  std::vector<shape> out;
  for (filter_variant v :
       {filter_variant::bumped, filter_variant::standard, filter_variant::homogeneous,
        filter_variant::bumped_retrieval, filter_variant::standard_retrieval}) {
    for (unsigned w : {32u, 64u, 128u}) {
      for (threshold_encoding c : {threshold_encoding::one_plus_bit, threshold_encoding::two_bit}) {
        out.push_back({v, w, c, 0});
        if (!ribbon::is_retrieval(v)) out.push_back({v, w, c, 0.01});
        // Retrieval at other r: the batched lookups' rows of r words at compile time (16,
        // 24: values under check bits) or at run time (13, 32).
        if (ribbon::is_retrieval(v) && c == threshold_encoding::one_plus_bit) {
          for (std::uint32_t bits : {13u, 16u, 24u, 32u}) out.push_back({v, w, c, 0, bits});
        }
      }
    }
  }
  return out;
}

/// Builds the shape from `keys` (values: the keys' low r bits) with small shards, so that
/// several shards and layers are exercised; nullopt-like empty filter when the builder
/// refuses the combination (an error, reported).
bool build(const shape& s, const std::vector<std::uint64_t>& keys, ribbon::filter* out) {
  ribbon::build_options o;
  o.width = s.width;
  o.result_bits = s.bits;
  o.target_fpr = s.target_fpr;
  o.threshold_codes = s.codes;
  o.shard_size = small_shard(s.width);
  o.variant = s.variant == filter_variant::bumped_retrieval     ? filter_variant::bumped
              : s.variant == filter_variant::standard_retrieval ? filter_variant::standard
                                                                : s.variant;
  try {
    if (ribbon::is_retrieval(s.variant)) {
      std::vector<std::uint32_t> values(keys.size());
      for (std::size_t i = 0; i < keys.size(); ++i) values[i] = value_of(keys[i], s.bits);
      *out = ribbon::filter::build(keys.data(), values.data(), keys.size(), o);
    } else {
      *out = ribbon::filter::build(keys.data(), keys.size(), o);
    }
  } catch (const ribbon::error& e) {
    std::cout << describe(s) << ": not built (" << e.what() << ")\n";
    return false;
  }
  return true;
}

/// The unplanned answer (filter_ref) of an integer key, as a number: membership or value.
std::uint32_t oracle(const ribbon::filter& f, std::uint64_t key) {
  const std::uint64_t hash = f.ref().key_hash(key);
  return f.is_retrieval() ? f.ref().lookup_hash(hash) : f.ref().contains_hash(hash);
}

std::uint32_t planned(const ribbon::filter& f, std::uint64_t key) {
  return f.is_retrieval() ? f.lookup(key) : f.contains(key);
}

/// Batched answers of keys [offset, offset + length) of `probes`, as numbers.
std::vector<std::uint32_t> batched(const ribbon::filter& f, const std::uint64_t* keys,
                                   std::size_t length) {
  std::vector<std::uint32_t> out(length);
  if (f.is_retrieval()) {
    f.lookup(keys, length, out.data());
  } else {
    std::unique_ptr<bool[]> in(new bool[length + 1]);
    f.contains(keys, length, in.get());
    for (std::size_t i = 0; i < length; ++i) out[i] = in[i];
  }
  return out;
}

/// Members and non-members alternating in runs of 3, so that keys bumped to every layer and
/// layer-0 keys follow each other through the batched pipeline.
std::vector<std::uint64_t> probes_of(const std::vector<std::uint64_t>& members) {
  const std::vector<std::uint64_t> others = ribbon_test::keys_range(21, 1u << 20, 2000);
  std::vector<std::uint64_t> probes;
  for (std::size_t i = 0; i < others.size(); ++i) {
    probes.push_back(i % 6 < 3 ? members[(i * 37) % members.size()] : others[i]);
  }
  return probes;
}

TEST(QueryPlan, ScalarEqualsUnplannedPathForEveryShape) {
  const std::vector<std::uint64_t> members = ribbon_test::keys_range(21, 0, 20000);
  int built = 0;
  for (const shape& s : all_shapes()) {
    ribbon::filter f;
    if (!build(s, members, &f)) continue;
    ++built;
    for (std::uint64_t k : members) {
      ASSERT_EQ(planned(f, k), oracle(f, k)) << describe(s) << " member " << k;
      // Independent of both paths: members are found, with their values.
      const std::uint32_t expected = f.is_retrieval() ? value_of(k, s.bits) : 1;
      ASSERT_EQ(planned(f, k), expected) << describe(s) << " member " << k;
    }
    for (std::uint64_t k : probes_of(members)) {
      ASSERT_EQ(planned(f, k), oracle(f, k)) << describe(s) << " probe " << k;
    }
  }
  EXPECT_GE(built, 60);  // 5 variants x 3 widths x codes x fractional, retrieval at 4 more r
}

TEST(QueryPlan, BatchedEqualsScalarAtEveryLengthForEveryShape) {
  const std::vector<std::uint64_t> members = ribbon_test::keys_range(21, 0, 20000);
  const std::vector<std::uint64_t> probes = probes_of(members);
  for (const shape& s : all_shapes()) {
    ribbon::filter f;
    if (!build(s, members, &f)) continue;
    std::vector<std::uint32_t> scalar(probes.size());
    for (std::size_t i = 0; i < probes.size(); ++i) scalar[i] = planned(f, probes[i]);
    for (const auto row_check :
         {ribbon::detail::row_check::fastest, ribbon::detail::row_check::avx2,
          ribbon::detail::row_check::portable}) {
      ribbon::detail::set_row_check(row_check);
      for (std::size_t offset : {1, 3, 7}) {
        for (std::size_t length = 0; length <= 200; ++length) {
          const std::vector<std::uint32_t> out = batched(f, probes.data() + offset, length);
          for (std::size_t i = 0; i < length; ++i) {
            ASSERT_EQ(out[i], scalar[offset + i])
                << describe(s) << " offset " << offset << " length " << length << " key " << i;
          }
        }
      }
    }
    ribbon::detail::set_row_check(ribbon::detail::row_check::fastest);
  }
}

#ifdef RIBBON_X86_LANES
using ribbon::detail::kernels::avx2_lanes;
using ribbon::detail::kernels::avx512_lanes;
using ribbon::detail::kernels::lane_steps;

/// The lanes' 64 x 64-bit products of 8 words at `a` by `b`: high and low words.
template <class Lanes>
void lane_products(const std::uint64_t* a, std::uint64_t b, std::uint64_t* high,
                   std::uint64_t* low) {
  using steps = lane_steps<Lanes>;
  for (unsigned first = 0; first < 8; first += Lanes::width) {
    typename Lanes::vec x, product;
    steps::load(a + first, x);
    steps::mul_high(x, typename Lanes::vec{} + b, product);
    steps::store(product, high + first);
    steps::store(x * b, low + first);
  }
}
RIBBON_TARGET_AVX512 __attribute__((flatten)) void products_avx512(const std::uint64_t* a,
                                                                   std::uint64_t b,
                                                                   std::uint64_t* high,
                                                                   std::uint64_t* low) {
  lane_products<avx512_lanes>(a, b, high, low);
}
RIBBON_TARGET_AVX2 __attribute__((flatten)) void products_avx2(const std::uint64_t* a,
                                                               std::uint64_t b, std::uint64_t* high,
                                                               std::uint64_t* low) {
  lane_products<avx2_lanes>(a, b, high, low);
}
#endif

/// The batched lanes' 64 x 64-bit products (their starts, coefficients and fingerprints) equal
/// the scalar ones, at the carries between the 32-bit halves too.
TEST(QueryPlan, VectorProductsEqualScalarOnes) {
#ifdef RIBBON_X86_LANES
  if (!ribbon::detail::kernels::cpu_has_avx2()) GTEST_SKIP() << "no AVX2 here";
  const bool avx512 = ribbon::detail::kernels::cpu_has_avx512_popcount();
  std::vector<std::uint64_t> values = {
      0,          1,     0xFFFFFFFF, 0x100000000,           0x1FFFFFFFF,
      1ULL << 63, ~0ULL, ~0ULL - 1,  0xFFFFFFFF00000000ULL, 0x80000000FFFFFFFFULL};
  for (std::uint64_t i = 0; i < 2000; ++i) values.push_back(ribbon_test::splitmix(i));
  values.resize(values.size() / 8 * 8);
  std::uint64_t high[8], low[8], high512[8], low512[8];
  for (std::uint64_t b : values) {
    for (std::size_t i = 0; i < values.size(); i += 8) {
      products_avx2(values.data() + i, b, high, low);
      if (avx512) products_avx512(values.data() + i, b, high512, low512);
      for (std::size_t lane = 0; lane < 8; ++lane) {
        const std::uint64_t a = values[i + lane];
        ASSERT_EQ(high[lane], ribbon::fastrange64(a, b)) << a << " * " << b;
        ASSERT_EQ(low[lane], a * b) << a << " * " << b;
        if (avx512) {
          ASSERT_EQ(high512[lane], ribbon::fastrange64(a, b)) << a << " * " << b;
          ASSERT_EQ(low512[lane], a * b) << a << " * " << b;
        }
      }
    }
  }
#else
  GTEST_SKIP() << "not an x86-64 build";
#endif
}

#ifdef RIBBON_X86_LANES
/// avx512_lanes' operations lane by lane, as Intel documents their instructions: the 8-lane
/// steps of lane_steps and lanes_query_range run on any x86-64 host (this one may have no
/// AVX-512).
struct emulated_avx512_lanes {
  static constexpr unsigned width = 8;
  using vec = ribbon::detail::kernels::u64x8;

  static void mul_even(const vec& a, const vec& b, vec& product) {
    for (unsigned i = 0; i < width; ++i) product[i] = (a[i] & 0xFFFFFFFF) * (b[i] & 0xFFFFFFFF);
  }
  static std::uint32_t greater(const vec& a, const vec& b) {
    std::uint32_t bits = 0;
    for (unsigned i = 0; i < width; ++i) {
      bits |= std::uint32_t{static_cast<std::int64_t>(a[i]) > static_cast<std::int64_t>(b[i])} << i;
    }
    return bits;
  }
  static void gather(const std::uint64_t* base, const vec& index, vec& words) {
    for (unsigned i = 0; i < width; ++i) words[i] = base[index[i]];
  }
  static void pick(const vec& table, const vec& index, vec& picked) {
    for (unsigned i = 0; i < width; ++i) picked[i] = table[index[i] % 8];
  }
  static std::uint32_t parities(const std::uint64_t* block, std::uint64_t low, std::uint64_t high) {
    std::uint32_t bits = 0;
    for (unsigned j = 0; j < 8; ++j) {
      bits |= static_cast<std::uint32_t>(
                  __builtin_popcountll((block[j] & low) ^ (block[8 + j] & high)) & 1)
              << j;
    }
    return bits;
  }
};

/// lanes_query_range over keys [0, n) of `keys` with the emulated 8-lane operations, as numbers.
template <bool Lookup>
std::vector<std::uint32_t> emulated_lanes(const ribbon::detail::query_plan& q,
                                          const ribbon::filter& f,
                                          const std::vector<std::uint64_t>& keys) {
  using ribbon::detail::bump_rule;
  using Out = std::conditional_t<Lookup, std::uint32_t, bool>;
  std::unique_ptr<Out[]> out(new Out[keys.size() + 1]);
  const auto key_hash = [&](std::uint64_t i) { return f.ref().key_hash(keys[i]); };
  if (q.layers[0].rule == bump_rule::two_bit) {
    ribbon::detail::kernels::lanes_query_range<emulated_avx512_lanes, bump_rule::two_bit, Lookup>(
        q, 0, keys.size(), key_hash, out.get());
  } else {
    ribbon::detail::kernels::lanes_query_range<emulated_avx512_lanes, bump_rule::shard_heads,
                                               Lookup>(q, 0, keys.size(), key_hash, out.get());
  }
  return std::vector<std::uint32_t>(out.get(), out.get() + keys.size());
}
#endif

/// The 8-lane pipeline (AVX-512's steps, its operations emulated) answers as the scalar path,
/// for filters and retrieval structures at the default shape, both layer-0 rules.
TEST(QueryPlan, EightLanesAnswerAsScalar) {
#ifdef RIBBON_X86_LANES
  const std::vector<std::uint64_t> members = ribbon_test::keys_range(23, 0, 20000);
  const std::vector<std::uint64_t> probes = probes_of(members);
  unsigned checked = 0;
  for (const shape& s : all_shapes()) {
    ribbon::filter f;
    if (s.width != 64 || s.bits != 8 || s.target_fpr > 0 || !build(s, members, &f)) continue;
    const ribbon::detail::planned_queries planned_plan = ribbon::detail::plan_queries(f.ref());
    const ribbon::detail::query_plan& q = planned_plan.plan;
    if (q.fixed_bits != 8 || q.layers[0].salt != 0) continue;  // not the lanes' shape
    const std::vector<std::uint32_t> out =
        f.is_retrieval() ? emulated_lanes<true>(q, f, probes) : emulated_lanes<false>(q, f, probes);
    for (std::size_t i = 0; i < probes.size(); ++i) {
      ASSERT_EQ(out[i], planned(f, probes[i])) << describe(s) << " key " << i;
    }
    ++checked;
  }
  EXPECT_GE(checked, 4u);  // bumped and standard, filters and retrieval, both encodings
#else
  GTEST_SKIP() << "not an x86-64 build";
#endif
}

/// The scalar routines chosen with every row check (fastest, AVX2, portable) answer as the
/// unplanned path: membership in filters, values in retrieval structures.
TEST(QueryPlan, EveryRowCheckGivesTheSameScalarAnswers) {
  const std::vector<std::uint64_t> members = ribbon_test::keys_range(22, 0, 20000);
  std::vector<std::uint32_t> values(members.size());
  for (std::size_t i = 0; i < members.size(); ++i) values[i] = members[i] & 0xFF;
  for (unsigned w : {32u, 64u, 128u}) {
    for (bool retrieval : {false, true}) {
      ribbon::build_options o;
      o.width = w;
      o.shard_size = small_shard(w);
      const ribbon::filter f =
          retrieval ? ribbon::filter::build(members.data(), values.data(), members.size(), o)
                    : ribbon::filter::build(members.data(), members.size(), o);
      for (const auto row_check :
           {ribbon::detail::row_check::fastest, ribbon::detail::row_check::avx2,
            ribbon::detail::row_check::portable}) {
        ribbon::detail::set_row_check(row_check);
        const ribbon::detail::planned_queries planned = ribbon::detail::plan_queries(f.ref());
        ribbon::detail::set_row_check(ribbon::detail::row_check::fastest);
        for (std::uint64_t k : probes_of(members)) {
          const std::uint64_t hash = f.ref().key_hash(k);
          if (retrieval) {
            ASSERT_EQ(planned.lookup(planned.plan, hash), f.ref().lookup_hash(hash)) << w;
          } else {
            ASSERT_EQ(planned.contains(planned.plan, hash), f.ref().contains_hash(hash)) << w;
          }
        }
      }
    }
  }
}

/// Keys laid out as Arrow lays out a string array: their bytes back to back, and the offsets
/// of their ends (32- and 64-bit).
struct arrow_layout {
  std::string data;
  std::vector<std::int32_t> offsets32{0};
  std::vector<std::int64_t> offsets64{0};
  explicit arrow_layout(const std::vector<std::string>& keys) {
    for (const std::string& k : keys) {
      data += k;
      offsets32.push_back(static_cast<std::int32_t>(data.size()));
      offsets64.push_back(static_cast<std::int64_t>(data.size()));
    }
  }
  const unsigned char* bytes() const { return reinterpret_cast<const unsigned char*>(data.data()); }
};

/// Arrow-layout byte-string batches (32- and 64-bit offsets) answer as the views do.
TEST(QueryPlan, OffsetBatchesEqualViewBatches) {
  const std::vector<std::string> keys = ribbon_test::string_keys(23, 0, 5000);
  const std::vector<std::string> probes = ribbon_test::string_keys(23, 2500, 5000);
  for (bool retrieval : {false, true}) {
    const std::vector<std::string_view> views = ribbon_test::views(keys);
    ribbon::build_options o;
    o.shard_size = 4096;
    std::vector<std::uint32_t> values(keys.size());
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::uint32_t>(i % 251);
    const ribbon::filter f =
        retrieval ? ribbon::filter::build(views.data(), values.data(), views.size(), o)
                  : ribbon::filter::build(views.data(), views.size(), o);
    const arrow_layout probe_layout(probes);
    const std::vector<std::int32_t>& offsets32 = probe_layout.offsets32;
    const std::vector<std::int64_t>& offsets64 = probe_layout.offsets64;
    const unsigned char* bytes = probe_layout.bytes();
    const std::vector<std::string_view> probe_views = ribbon_test::views(probes);
    const std::size_t n = probes.size();
    if (retrieval) {
      std::vector<std::uint32_t> a(n), b(n), c(n);
      f.lookup(probe_views.data(), n, a.data());
      f.lookup_offsets(offsets32.data(), bytes, n, b.data());
      f.lookup_offsets(offsets64.data(), bytes, n, c.data());
      EXPECT_EQ(a, b);
      EXPECT_EQ(a, c);
    } else {
      std::unique_ptr<bool[]> a(new bool[n]), b(new bool[n]), c(new bool[n]);
      f.contains(probe_views.data(), n, a.get());
      f.contains_offsets(offsets32.data(), bytes, n, b.get());
      f.contains_offsets(offsets64.data(), bytes, n, c.get());
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(a[i], f.contains(probe_views[i])) << i;
        ASSERT_EQ(b[i], a[i]) << i;
        ASSERT_EQ(c[i], a[i]) << i;
      }
    }
  }
}

/// Builds from Arrow-style offsets write the bytes of builds from views of the same keys.
TEST(QueryPlan, BuildsFromOffsetsEqualBuildsFromViews) {
  // Key 0 is the empty key: two equal offsets.
  const std::vector<std::string> keys = ribbon_test::string_keys(29, 0, 3000);
  const std::vector<std::string_view> views = ribbon_test::views(keys);
  const arrow_layout layout(keys);
  const std::vector<std::int32_t>& offsets32 = layout.offsets32;
  const std::vector<std::int64_t>& offsets64 = layout.offsets64;
  const unsigned char* bytes = layout.bytes();
  std::vector<std::uint32_t> values(keys.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::uint32_t>(i % 199);
  ribbon::build_options o;
  o.shard_size = 4096;
  const std::size_t n = keys.size();
  const auto filter_bytes = ribbon::filter::build(views.data(), n, o).serialize();
  EXPECT_EQ(ribbon::filter::build_offsets(offsets32.data(), bytes, n, o).serialize(), filter_bytes);
  EXPECT_EQ(ribbon::filter::build_offsets(offsets64.data(), bytes, n, o).serialize(), filter_bytes);
  const auto retrieval_bytes = ribbon::filter::build(views.data(), values.data(), n, o).serialize();
  EXPECT_EQ(ribbon::filter::build_offsets(offsets32.data(), bytes, values.data(), n, o).serialize(),
            retrieval_bytes);
  EXPECT_EQ(ribbon::filter::build_offsets(offsets64.data(), bytes, values.data(), n, o).serialize(),
            retrieval_bytes);
}

/// Files of format version 1 (tests/data) and 2 (2-bit codes, written here) answer through
/// the plan as through the unplanned path.
TEST(QueryPlan, OlderFormatVersionsAnswerAsBefore) {
  const std::string dir = RIBBON_TEST_DATA_DIR;
  const ribbon::filter lines = ribbon::filter::load(dir + "/v1_lines_3000.rbn");
  for (int i = 1; i <= 20000; ++i) {
    const std::string key = std::to_string(i);
    ASSERT_EQ(lines.contains(key), lines.ref().contains(key.data(), key.size())) << key;
  }
  const ribbon::filter wide = ribbon::filter::load(dir + "/v1_u64_5000_w128_r13.rbn");
  for (std::uint64_t i = 0; i < 20000; ++i) {
    const std::uint64_t key = i * 0x9E3779B97F4A7C15ULL;
    ASSERT_EQ(wide.contains(key), wide.ref().contains(key)) << i;
  }
  const std::vector<std::uint64_t> members = ribbon_test::keys_range(24, 0, 20000);
  ribbon::build_options o;
  o.threshold_codes = threshold_encoding::two_bit;
  o.shard_size = 4096;
  const std::vector<unsigned char> image = ribbon::filter::build(members.data(), members.size(), o)
                                               .serialize(ribbon::format::layout_choice::standard);
  const ribbon::filter v2 = ribbon::filter::from_bytes(image.data(), image.size());
  EXPECT_EQ(v2.format_version(), 2u);
  for (std::uint64_t k : probes_of(members)) ASSERT_EQ(v2.contains(k), v2.ref().contains(k)) << k;
}

}  // namespace
