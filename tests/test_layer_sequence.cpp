// The layer sequence (ribbon/layer_sequence.hpp) that every build follows: kinds, salts,
// sizes, which layers are solved in shard ranges, retries and the end of a build; and the walk
// of the builds in ranges through it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "ribbon/detail/layer_loop.hpp"
#include "ribbon/error.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/layer_sequence.hpp"
#include "ribbon/params.hpp"

namespace {

using ribbon::layer_kind;
using ribbon::layer_sequence;
using ribbon::layer_step;
using ribbon::ranged_layers;

ribbon::filter_params params_of(ribbon::filter_variant variant) {
  ribbon::filter_params p = ribbon::make_params(64, 8);
  p.variant = variant;
  p.seed = 42;
  return p;
}

TEST(LayerSequence, BumpedLayersThenThePlainOneThenTheEnd) {
  const ribbon::filter_params p = params_of(ribbon::filter_variant::bumped);
  const ribbon::layer_sizing sizing = ribbon::default_sizing(64);
  layer_sequence sequence(p, sizing);
  const std::optional<layer_step> first = sequence.next(1000000);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->index, 0u);
  EXPECT_EQ(first->kind, layer_kind::bumped);
  EXPECT_EQ(first->salt, 0u);  // layer 0 hashes are the key hashes
  EXPECT_EQ(first->geometry.num_starts, ribbon::bumped_layer_starts(1000000, p, sizing));
  EXPECT_FALSE(first->in_ranges);
  const std::optional<layer_step> second = sequence.next(60000);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->index, 1u);
  EXPECT_EQ(second->kind, layer_kind::bumped);
  EXPECT_EQ(second->salt, ribbon::layer_salt(p.seed, 1, 0));
  const std::optional<layer_step> last = sequence.next(sizing.plain_max_keys);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->index, 2u);
  EXPECT_TRUE(last->last());
  EXPECT_EQ(last->salt, ribbon::plain_layer_attempt(2, sizing.plain_max_keys, p, sizing, 0).salt);
  EXPECT_FALSE(sequence.next(0));
  // The layer cap makes the last layer plain, however many keys reach it.
  EXPECT_TRUE(sequence.at(ribbon::max_layers - 1, 1000000).last());
}

TEST(LayerSequence, StandardVariantsHaveAStandardLayerZeroThenThePlainLayer) {
  for (const auto variant :
       {ribbon::filter_variant::standard, ribbon::filter_variant::homogeneous}) {
    const ribbon::filter_params p = params_of(variant);
    const ribbon::layer_sizing sizing = ribbon::default_sizing(64);
    layer_sequence sequence(p, sizing);
    const layer_step zero = *sequence.next(100000);
    EXPECT_EQ(zero.kind, layer_kind::standard);
    EXPECT_EQ(zero.salt, 0u);
    EXPECT_EQ(sequence.next(900000)->kind, layer_kind::plain);  // however many keys
    for (std::uint32_t attempt : {1u, 7u}) {
      const ribbon::standard_layer_try expected =
          ribbon::standard_layer_attempt(100000, p, sizing, attempt);
      const layer_step retried = sequence.retry(zero, attempt);
      EXPECT_EQ(retried.salt, expected.salt);
      EXPECT_EQ(retried.geometry.num_starts, expected.geometry.num_starts);
    }
  }
}

TEST(LayerSequence, InRangesLayerZeroAlwaysThenOnlyTheLayersAboveTheOnePlaceLimit) {
  const ribbon::filter_params p = params_of(ribbon::filter_variant::bumped);
  const ribbon::layer_sizing sizing = ribbon::default_sizing(64);
  layer_sequence sequence = layer_sequence::in_ranges(p, sizing, 10000);
  EXPECT_TRUE(sequence.next(5000)->in_ranges);    // layer 0, below the limit
  EXPECT_TRUE(sequence.next(10001)->in_ranges);   // above it
  const layer_step fits = *sequence.next(10000);  // at it: in one place, still bumped
  EXPECT_FALSE(fits.in_ranges);
  EXPECT_EQ(fits.kind, layer_kind::bumped);
  EXPECT_FALSE(sequence.at(3, 100).in_ranges);  // the plain layer never is
  // Never in ranges in one place, whatever the count.
  EXPECT_FALSE(layer_sequence(p, sizing).at(1, 1000000).in_ranges);
}

TEST(LayerSequence, AgainPlansTheSameLayerForAnotherCount) {
  const ribbon::filter_params p = params_of(ribbon::filter_variant::bumped);
  const ribbon::layer_sizing sizing = ribbon::default_sizing(64);
  layer_sequence sequence = layer_sequence::in_ranges(p, sizing, 0);
  const layer_step planned = *sequence.next(500000);
  const layer_step again = sequence.again(300000);
  EXPECT_EQ(again.index, planned.index);
  EXPECT_EQ(again.keys, 300000u);
  EXPECT_EQ(again.geometry.num_starts, ribbon::bumped_layer_starts(300000, p, sizing));
  EXPECT_EQ(sequence.next(20000)->index, 1u);  // and the sequence goes on from there
}

// The walk of the out-of-core and distributed builds: layer 0 planned for the rows, again for
// the distinct count after repeats (only then), the later layers in ranges while above the
// one-place limit, then the rest in one place.
TEST(RangedLayers, LayerZeroAgainAfterRepeatsThenTheLayersInRangesThenTheRest) {
  const ribbon::filter_params p = params_of(ribbon::filter_variant::bumped);
  const ribbon::layer_sizing sizing = ribbon::default_sizing(64);
  ranged_layers walk(p, sizing, 10000, 500000);
  ASSERT_NE(walk.current(), nullptr);
  EXPECT_EQ(walk.current()->index, 0u);
  EXPECT_EQ(walk.current()->keys, 500000u);
  EXPECT_TRUE(walk.counting());
  EXPECT_FALSE(walk.solved(300000, 1234));  // repeats: layer 0 again, for the distinct keys
  ASSERT_NE(walk.current(), nullptr);
  EXPECT_EQ(walk.current()->index, 0u);
  EXPECT_EQ(walk.current()->keys, 300000u);
  EXPECT_EQ(walk.current()->geometry.num_starts, ribbon::bumped_layer_starts(300000, p, sizing));
  EXPECT_FALSE(walk.counting());
  EXPECT_FALSE(walk.rest());
  EXPECT_TRUE(walk.solved(300000, 20000));
  ASSERT_NE(walk.current(), nullptr);  // 20000 bumped keys: above the limit, in ranges
  EXPECT_EQ(walk.current()->index, 1u);
  EXPECT_EQ(walk.current()->keys, 20000u);
  EXPECT_THROW(walk.solved(19999, 100), ribbon::error);  // only layer 0 may meet repeats
  EXPECT_TRUE(walk.solved(20000, 9000));
  EXPECT_EQ(walk.current(), nullptr);  // 9000: in one place, from layer 2 on
  ASSERT_TRUE(walk.rest());
  EXPECT_EQ(walk.rest()->index, 2u);
  EXPECT_EQ(walk.rest()->keys, 9000u);
}

TEST(RangedLayers, EndsWithoutARestWhenNoKeyIsLeft) {
  const ribbon::filter_params p = params_of(ribbon::filter_variant::bumped);
  const ribbon::layer_sizing sizing = ribbon::default_sizing(64);
  ranged_layers empty(p, sizing, 0, 0);
  EXPECT_EQ(empty.current(), nullptr);
  EXPECT_FALSE(empty.rest());
  ranged_layers walk(p, sizing, 0, 1000);
  EXPECT_TRUE(walk.solved(1000, 0));  // no repeats, nothing bumped
  EXPECT_EQ(walk.current(), nullptr);
  EXPECT_FALSE(walk.rest());
}

// A plain layer's first try has just over (1 + 1/w) n columns (whole blocks: starts plus one
// block of tail), and every retry has more, so that a build never loops on one size.
TEST(LayerSequence, PlainLayersStartTightAndGrowAtEveryTry) {
  for (const std::uint32_t width : {32u, 64u, 128u}) {
    const ribbon::filter_params p = ribbon::make_params(width, 8);
    const ribbon::layer_sizing sizing = ribbon::default_sizing(width);
    for (const std::uint64_t keys : {1ull, 135ull, 629ull, 2048ull, 500000ull}) {
      SCOPED_TRACE(std::to_string(width) + " " + std::to_string(keys));
      const double tight = static_cast<double>(keys) * (1.0 + 1.0 / width);
      std::uint64_t previous = ribbon::plain_layer_starts(keys, p, sizing, 0);
      EXPECT_GE(static_cast<double>(previous + width), tight);
      EXPECT_LE(static_cast<double>(previous), std::max(tight, static_cast<double>(width)));
      EXPECT_EQ(previous % width, 0u);
      for (std::uint32_t attempt = 1; attempt < ribbon::max_plain_attempts; ++attempt) {
        const std::uint64_t starts = ribbon::plain_layer_starts(keys, p, sizing, attempt);
        EXPECT_GE(starts, previous + width);
        previous = starts;
      }
      // By the last try a layer has room for any keys with distinct hashes.
      EXPECT_GT(static_cast<double>(previous), 1.25 * static_cast<double>(keys));
    }
  }
}

}  // namespace
