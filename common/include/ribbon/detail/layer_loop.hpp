/// @file layer_loop.hpp
/// The layer sequence that every build follows (in memory, out of core, on the device,
/// distributed): which layer comes next, its kind, salt and size, whether it is solved in
/// shard ranges, its retries, and when the build stops; then build_layers(), the loop of the
/// in-memory builders over it, and the dispatch from run-time parameters to the solver's
/// compile-time layout. Host code only.
#pragma once

#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "ribbon/format.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"

namespace ribbon::detail {

/// Calls f(std::integral_constant<unsigned, W>{}, Result{}) for the parameters' width and
/// the narrowest result type holding the solver's bits.
template <class F>
decltype(auto) dispatch_layout(const filter_params& p, F&& f) {
  auto with_width = [&](auto width_tag) -> decltype(auto) {
    if (p.solver_bits() <= 8) return f(width_tag, std::uint8_t{});
    if (p.solver_bits() <= 16) return f(width_tag, std::uint16_t{});
    return f(width_tag, std::uint32_t{});
  };
  switch (p.width) {
    case 32: return with_width(std::integral_constant<unsigned, 32>{});
    case 64: return with_width(std::integral_constant<unsigned, 64>{});
    default: return with_width(std::integral_constant<unsigned, 128>{});
  }
}

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
};

/// The one place that decides a build's layers. Bumped layers follow each other until few
/// keys are left (or the layer cap is reached); then comes the final plain layer, retried
/// with a fresh salt (and, later, more slots) until it solves. The standard and homogeneous
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
  /// slots from the fifth try on. Throws ribbon::error once the tries are used up.
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

/// Builds layers first_layer, first_layer + 1, ... of layer_sequence for `keys` keys in one
/// place and appends them to `layers`, retrying standard and plain layers until they solve.
/// Counts the tries in stats.standard_attempts and stats.plain_layer_attempts.
///
/// The solver holds the records of the keys that reach the current layer and solves one
/// layer at a time. Each call finds the layer's input_keys, salt and geometry set:
///  - bumped(l, layer): solves bumped layer l (its records: the previous layer's bumped
///    records remixed with layer.salt; layer 0's are the key records, sorted) and sets
///    layer.bumped_keys; the bumped records are the next layer's input.
///  - standard(layer): one try of a standard layer 0 (layer.salt 0 on the first try: the key
///    records as they are). Returns false if a shard failed; the solver then still holds
///    every key record for the next try. On success sets layer.bumped_keys (the shard-head
///    keys, which go on to the plain layer).
///  - plain(l, layer): one try of the final plain layer over the previous layer's bumped
///    records remixed with layer.salt; returns false if it failed.
template <class LayerSolver, class Stats>
void build_layers(LayerSolver& solver, const filter_params& p, const layer_sizing& sizing,
                  std::uint32_t first_layer, std::uint64_t keys,
                  std::vector<format::layer_image>& layers, Stats& stats) {
  layer_sequence sequence(p, sizing, first_layer);
  std::uint64_t remaining = keys;
  while (const std::optional<layer_step> step = sequence.next(remaining)) {
    format::layer_image layer;
    layer.input_keys = step->keys;
    auto solve_try = [&](const layer_step& to_try) {
      layer.salt = to_try.salt;
      layer.geometry = to_try.geometry;
      if (to_try.kind == layer_kind::plain) return solver.plain(to_try.index, layer);
      if (to_try.kind == layer_kind::standard) return solver.standard(layer);
      solver.bumped(to_try.index, layer);
      return true;
    };
    std::uint32_t attempt = 0;
    while (!solve_try(attempt == 0 ? *step : sequence.retry(*step, attempt))) ++attempt;
    if (step->kind == layer_kind::plain) {
      stats.plain_layer_attempts = attempt + 1;
      layer.bumped_keys = 0;
    } else if (step->kind == layer_kind::standard) {
      stats.standard_attempts = attempt + 1;
    }
    remaining = layer.bumped_keys;
    layers.push_back(layer);
  }
}

}  // namespace ribbon::detail
