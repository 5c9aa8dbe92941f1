/// @file layer_loop.hpp
/// build_layers(), the loop of the in-memory builders over the layer sequence
/// (ribbon/layer_sequence.hpp), and the dispatch from run-time parameters to the solver's
/// compile-time layout. Host code only.
#pragma once

#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "ribbon/format.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/layer_sequence.hpp"
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

/// One filter's walk through its layers (layer_sequence), a try at a time: the loop of
/// build_layers(), and what a builder of many filters in lockstep keeps one of per filter.
/// current() is the try to solve now; layer() is the layer it fills, with input_keys, salt
/// and geometry set.
class layer_walk {
 public:
  layer_walk(const filter_params& p, const layer_sizing& sizing, std::uint32_t first_layer,
             std::uint64_t keys)
      : sequence_(p, sizing, first_layer) {
    begin(sequence_.next(keys));
  }

  /// Whether every layer is built.
  bool done() const { return !step_.has_value(); }
  const layer_step& current() const { return try_; }
  format::layer_image& layer() { return layer_; }
  /// Tries of the current layer before this one (0: this is the first).
  std::uint32_t attempt() const { return attempt_; }

  /// Ends the current try. A solved layer (its bumped_keys set, except a plain layer's) joins
  /// `layers` and the walk moves to the next layer, for its bumped keys; a failed standard or
  /// plain layer is tried again with a fresh salt (sequence.retry(): it throws ribbon::error
  /// once the tries are used up).
  void end_try(bool solved, std::vector<format::layer_image>& layers) {
    if (!solved) {
      set_try(sequence_.retry(*step_, ++attempt_));
      return;
    }
    if (step_->kind == layer_kind::plain) layer_.bumped_keys = 0;
    layers.push_back(layer_);
    begin(sequence_.next(layer_.bumped_keys));
  }

 private:
  void begin(const std::optional<layer_step>& step) {
    step_ = step;
    attempt_ = 0;
    if (!step_) return;
    layer_ = format::layer_image{};
    layer_.input_keys = step_->keys;
    set_try(*step_);
  }
  void set_try(const layer_step& t) {
    try_ = t;
    layer_.salt = t.salt;
    layer_.geometry = t.geometry;
  }

  layer_sequence sequence_;
  std::optional<layer_step> step_;  // the layer being built; nothing once done
  layer_step try_;
  format::layer_image layer_;
  std::uint32_t attempt_ = 0;
};

/// Builds layers first_layer, first_layer + 1, ... of layer_sequence for `keys` keys in one
/// place and appends them to `layers`, retrying standard and plain layers until they solve.
/// Counts the tries in stats.standard_attempts and stats.plain_layer_attempts.
///
/// The solver holds the records of the keys that reach the current layer and solves one
/// layer at a time. Each call gets the try's step (its index, kind, salt, and whether its
/// records are remixed: step.remixes()) and finds the layer's input_keys, salt and geometry
/// set:
///  - bumped(step, layer): solves a bumped layer (its records: the previous layer's bumped
///    records remixed with the salt; layer 0's are the key records, sorted) and sets
///    layer.bumped_keys; the bumped records are the next layer's input.
///  - standard(step, layer): one try of a standard layer 0 (the key records as they are on
///    the first try, remixed on a retry). Returns false if a shard failed; the solver then
///    still holds every key record for the next try. On success sets layer.bumped_keys (the
///    shard-head keys, which go on to the plain layer).
///  - plain(step, layer): one try of the final plain layer over the previous layer's bumped
///    records remixed with the salt; returns false if it failed.
template <class LayerSolver, class Stats>
void build_layers(LayerSolver& solver, const filter_params& p, const layer_sizing& sizing,
                  std::uint32_t first_layer, std::uint64_t keys,
                  std::vector<format::layer_image>& layers, Stats& stats) {
  for (layer_walk walk(p, sizing, first_layer, keys); !walk.done();) {
    const layer_step& step = walk.current();
    format::layer_image& layer = walk.layer();
    bool solved = true;
    if (step.kind == layer_kind::plain) {
      solved = solver.plain(step, layer);
      if (solved) stats.plain_layer_attempts = walk.attempt() + 1;
    } else if (step.kind == layer_kind::standard) {
      solved = solver.standard(step, layer);
      if (solved) stats.standard_attempts = walk.attempt() + 1;
    } else {
      solver.bumped(step, layer);
    }
    walk.end_try(solved, layers);
  }
}

}  // namespace ribbon::detail
