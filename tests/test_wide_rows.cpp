// The GPU query kernels' core (ribbon/detail/wide_rows.hpp: a row's result from 16-byte
// loads, whole for a thread per key or piece by piece for a tile per key) on the host, key for
// key against filter_ref, for every width, r = 8 and 16 and the variants that take it.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "ribbon/detail/wide_rows.hpp"
#include "ribbon/filter.hpp"
#include "test_util.hpp"

namespace {

using ribbon::filter_variant;

/// Checks every probe of `f` through layer0_row<Width, Bits> against filter_ref, the tile
/// emulated by a loop over its lanes. Counts in `bumped` the probes that layer 0 bumped.
template <unsigned Width, unsigned Bits>
void check_rows(const ribbon::filter& f, const std::vector<std::uint64_t>& probes,
                std::uint64_t& bumped) {
  const ribbon::filter_ref& ref = f.ref();
  EXPECT_TRUE(ribbon::detail::has_layer0_rows(ref, Bits));
  constexpr unsigned lanes = ribbon::detail::loads_per_block<Width, Bits>;
  constexpr unsigned piece_bits = ribbon::detail::words_per_load<Width>;
  const ribbon::detail::layer_plan first(ref.params, ref.layers[0]);
  bumped = 0;
  for (std::uint64_t key : probes) {
    const std::uint64_t hash = ref.key_hash(key);
    const ribbon::detail::layer0_row<Width, Bits> row(first, hash);
    if (row.bumped) {
      ++bumped;
      if (f.is_retrieval()) {
        EXPECT_EQ(row.lookup_after_layer0(ref), ref.lookup_hash(hash)) << key;
      } else {
        EXPECT_EQ(row.contains_after_layer0(ref), ref.contains_hash(hash)) << key;
      }
      continue;
    }
    // The device loads 16 bytes at a time (LDG.128): every piece must be 16-byte aligned.
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(row.block) % 16, 0u);
    // The thread per key: the whole result, against the reference row in layer 0.
    const std::uint32_t whole = row.result();
    const std::uint32_t expected = ribbon::detail::row_result<Width>(
        ref.layers[0].solution, Bits, row.start, ribbon::detail::coefficients<Width>(hash));
    ASSERT_EQ(whole, expected) << "w " << Width << " r " << Bits << " key " << key;
    // The tile per key: each lane's piece holds only its own bits, and the OR is the whole.
    std::uint32_t tile = 0;
    for (unsigned lane = 0; lane < lanes; ++lane) {
      const std::uint32_t piece = row.piece_result(lane);
      const std::uint32_t own = ((1u << piece_bits) - 1) << (lane * piece_bits);
      ASSERT_EQ(piece & ~own, 0u) << "lane " << lane << " key " << key;
      tile |= piece;
    }
    ASSERT_EQ(tile, whole) << "w " << Width << " r " << Bits << " key " << key;
    if (f.is_retrieval()) {
      ASSERT_EQ(whole, ref.lookup_hash(hash)) << key;
    } else {
      ASSERT_EQ(row.matches(ref.params, whole), ref.contains_hash(hash)) << key;
    }
  }
}

template <unsigned Width>
void check_width(filter_variant variant, std::uint32_t bits) {
  const std::uint64_t n = ribbon_test::scaled(60000, 40000);
  std::vector<std::uint64_t> keys(n), probes(2 * n);
  std::vector<std::uint32_t> values(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    keys[i] = ribbon::mix64(i * 7 + Width + bits);
    values[i] = static_cast<std::uint32_t>(ribbon::mix64(i) >> (64 - bits));
  }
  for (std::uint64_t i = 0; i < probes.size(); ++i) {
    probes[i] = (i & 1) ? keys[i / 2] : ribbon::mix64(i + (std::uint64_t{1} << 42));
  }
  ribbon::build_options o;
  o.variant = variant;
  o.width = Width;
  o.result_bits = bits;
  o.shard_size = 16384;  // several shards (32 buckets at w = 128): shard-head bumps too
  const ribbon::filter f = ribbon::is_retrieval(variant)
                               ? ribbon::filter::build(keys.data(), values.data(), n, o)
                               : ribbon::filter::build(keys.data(), n, o);
  std::uint64_t bumped = 0;
  if (bits == 8) {
    check_rows<Width, 8>(f, probes, bumped);
  } else {
    check_rows<Width, 16>(f, probes, bumped);
  }
  // Both paths ran: rows answered from layer 0 and keys that layer 0 passed on.
  EXPECT_GT(bumped, 0u);
  EXPECT_LT(bumped, probes.size() / 2);
}

TEST(WideRows, MatchFilterRefForEveryWidthAndCommonR) {
  for (filter_variant v : {filter_variant::bumped, filter_variant::standard,
                           filter_variant::homogeneous, filter_variant::bumped_retrieval}) {
    for (std::uint32_t bits : {8u, 16u}) {
      SCOPED_TRACE(testing::Message() << "variant " << static_cast<int>(v) << " r " << bits);
      check_width<32>(v, bits);
      check_width<64>(v, bits);
      check_width<128>(v, bits);
    }
  }
}

TEST(WideRows, OtherFiltersTakeTheGeneralPath) {
  std::vector<std::uint64_t> keys(5000);
  for (std::uint64_t i = 0; i < keys.size(); ++i) keys[i] = ribbon::mix64(i + 3);
  ribbon::build_options o;
  o.result_bits = 7;
  EXPECT_FALSE(
      ribbon::detail::has_layer0_rows(ribbon::filter::build(keys.data(), keys.size(), o).ref(), 8));
  o.target_fpr = 0.003;  // fractional bits: some blocks hold r + 1 words
  const ribbon::filter fractional = ribbon::filter::build(keys.data(), keys.size(), o);
  EXPECT_FALSE(ribbon::detail::has_layer0_rows(fractional.ref(), fractional.params().result_bits));
}

}  // namespace
