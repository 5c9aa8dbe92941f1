/// @file layer_sequence.hpp
/// The layer sequence that every build follows (in memory, out of core, on the device,
/// distributed): which layer comes next, its kind, salt and size, whether it is solved in
/// shard ranges, its retries, and when the build stops. Host code only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ribbon/error.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"

namespace ribbon {

/// One layer of a build, as layer_sequence plans it.
struct layer_step {
  std::uint32_t index = 0;
  std::uint64_t keys = 0;  ///< keys that reach the layer
  /// bumped; standard (a standard or homogeneous layer 0, retried whole); plain (the last
  /// layer, retried)
  layer_kind kind = layer_kind::bumped;
  std::uint64_t salt = 0;   ///< of the first (or only) try
  layer_geometry geometry;  ///< of the first (or only) try
  /// Solved one shard range at a time (out of core, or on a cluster) rather than in one
  /// place; the layers after the first one in one place are all built there.
  bool in_ranges = false;

  bool last() const { return kind == layer_kind::plain; }
  /// Whether this try's records are remixed from the previous layer's (or the key hashes);
  /// if not, they are the key records as they are (layer_remixes()).
  bool remixes() const { return layer_remixes(index, salt); }
};

/// The one place that decides a build's layers. Bumped layers follow each other until few
/// keys are left (or the layer cap is reached); then comes the final plain layer, retried
/// with a fresh salt and more slots until it solves. The standard and homogeneous
/// variants have a standard layer 0, retried whole the same way, then the plain layer.
///
/// A sequence in ranges (the out-of-core and distributed builds) solves layer 0 and every
/// later bumped layer of more than `one_place_keys` keys in shard ranges; the first layer
/// that fits in one place, and every one after it, is built there.
class layer_sequence {
 public:
  /// Every layer in one place, from `first_layer` on.
  layer_sequence(const filter_params& p, const layer_sizing& sizing, std::uint32_t first_layer = 0)
      : layer_sequence(p, sizing, first_layer, false, 0) {}

  /// Layer 0 and the bumped layers of more than `one_place_keys` keys in shard ranges.
  static layer_sequence in_ranges(const filter_params& p, const layer_sizing& sizing,
                                  std::uint64_t one_place_keys) {
    return layer_sequence(p, sizing, 0, true, one_place_keys);
  }

  /// Layer `index` for `keys` keys (any index: no state is read or changed).
  layer_step at(std::uint32_t index, std::uint64_t keys) const {
    layer_step step;
    step.index = index;
    step.keys = keys;
    if (is_plain_layer(index, keys, p_, sizing_)) {
      step.kind = layer_kind::plain;
    } else if (index == 0 && !uses_bumping(p_.variant)) {
      step.kind = layer_kind::standard;
    } else {
      step.in_ranges = ranges_ && (index == 0 || keys > one_place_keys_);
      step.salt = bumped_layer_salt(p_.seed, index);
      step.geometry = bumped_layer_geometry(keys, p_, sizing_);
      return step;
    }
    return retry(step, 0);
  }

  /// The next layer, for the `keys` keys that reach it (the previous layer's bumped keys;
  /// the first call: the keys of the build); nothing once no key is left.
  std::optional<layer_step> next(std::uint64_t keys) {
    if (keys == 0) return std::nullopt;
    return at(next_index_++, keys);
  }

  /// The layer that next() gave last, planned again for `keys` keys (layer 0, first planned
  /// for the input count, once the distinct count is known).
  layer_step again(std::uint64_t keys) const { return at(next_index_ - 1, keys); }

  /// Try `attempt` (0: the first) of a standard or plain layer: a fresh salt each time, more
  /// slots at every try (plain) or from the fifth on (standard). Throws ribbon::error once the
  /// tries are used up.
  layer_step retry(layer_step step, std::uint32_t attempt) const {
    if (step.kind == layer_kind::plain) {
      const plain_layer_try next = plain_layer_attempt(step.index, step.keys, p_, sizing_, attempt);
      step.salt = next.salt;
      step.geometry = next.geometry;
    } else {
      const standard_layer_try next = standard_layer_attempt(step.keys, p_, sizing_, attempt);
      step.salt = next.salt;
      step.geometry = next.geometry;
    }
    return step;
  }

 private:
  layer_sequence(const filter_params& p, const layer_sizing& sizing, std::uint32_t first_layer,
                 bool ranges, std::uint64_t one_place_keys)
      : p_(p),
        sizing_(sizing),
        next_index_(first_layer),
        ranges_(ranges),
        one_place_keys_(one_place_keys) {}

  filter_params p_;
  layer_sizing sizing_;
  std::uint32_t next_index_;
  bool ranges_;
  std::uint64_t one_place_keys_;
};

/// The walk of a build in ranges (out of core, distributed) through its layer sequence: the
/// one loop that both follow.
///
/// Layer 0 is first planned for the input rows, repeated keys included (the distinct count is
/// not known before the keys are read). Its ranges count their distinct keys (and may stop at
/// the first repeat); if there were repeats, layer 0 is planned again for the distinct count
/// and solved once more. Each later layer in ranges takes the previous one's bumped keys. The
/// walk leaves the ranges at the first layer that is built in one place (rest()), or when no
/// key is left.
///
///     ranged_layers walk(p, sizing, one_place_keys, rows);
///     while (const layer_step* step = walk.current()) {
///       solve *step in ranges (walk.counting(): stopping at a repeated key is allowed);
///       walk.solved(distinct keys received, keys bumped);  // false: solve current() again
///     }
///     if (walk.rest()) build *walk.rest() and the layers after it in one place;
class ranged_layers {
 public:
  ranged_layers(const filter_params& p, const layer_sizing& sizing, std::uint64_t one_place_keys,
                std::uint64_t rows)
      : sequence_(layer_sequence::in_ranges(p, sizing, one_place_keys)),
        step_(sequence_.next(rows)),
        counting_(step_.has_value()) {}

  /// The layer to solve in ranges now; null once the walk has left the ranges.
  const layer_step* current() const { return step_ && step_->in_ranges ? &*step_ : nullptr; }

  /// Is current() layer 0 as planned for the rows, repeats not yet ruled out? Its ranges
  /// then report their distinct keys, and may stop solving at a repeat.
  bool counting() const { return counting_; }

  /// Reports current() solved from `distinct` distinct keys, `bumped` of them bumped. Returns
  /// true when the layer stands and the walk has moved on; false when layer 0 met repeated
  /// keys and is planned again for `distinct` keys (current()), to be solved again (`bumped`
  /// is then ignored). Throws ribbon::error if a layer after the first counting try received
  /// other than its keys.
  bool solved(std::uint64_t distinct, std::uint64_t bumped) {
    const layer_step& step = *current();
    if (distinct != step.keys && !counting_) {
      throw error("layer " + std::to_string(step.index) + ": " + std::to_string(step.keys) +
                  " keys arrived as " + std::to_string(distinct) + " distinct ones");
    }
    counting_ = false;
    if (distinct != step.keys) {
      step_ = sequence_.again(distinct);
      return false;
    }
    step_ = sequence_.next(bumped);
    return true;
  }

  /// Once current() is null: the first layer to build in one place; nothing if no key is left.
  std::optional<layer_step> rest() const { return current() ? std::nullopt : step_; }

 private:
  layer_sequence sequence_;
  std::optional<layer_step> step_;
  bool counting_;
};

}  // namespace ribbon
