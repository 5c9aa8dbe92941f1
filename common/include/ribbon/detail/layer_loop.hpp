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
