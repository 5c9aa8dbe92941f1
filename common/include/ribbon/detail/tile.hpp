/// @file tile.hpp
/// A tile: a few lanes that run one algorithm together (a cooperative-groups tile of a warp on
/// the GPU). Algorithms are written once against this small interface and run on two
/// implementations: ribbon::cuda::detail::device_tile (cooperative groups, one thread a lane)
/// and host_tile below (the lanes of one CPU thread in lockstep), so that CI, which has no GPU,
/// runs the very logic of the GPU kernels.
///
/// The interface, for a tile type T:
///  - `T::size`: the number of lanes;
///  - `T::values<V>`: one V per lane, read and written as `values[lane]` inside for_each_lane
///    (on the GPU each thread holds its own lane's value only);
///  - `for_each_lane(f)`: f(lane) on every lane; lanes may not communicate inside f;
///  - `ballot(pred)`: bit `lane` set where pred(lane) holds;
///  - `shuffle(values, lane)`: that lane's value, on every lane;
///  - `sync()`: memory written by any lane before it is visible to every lane after it.
/// Statements outside for_each_lane are uniform: every lane runs them with equal values (the
/// host runs them once). Uniform code may read shared state and may write it with equal values
/// from every lane; a uniform write of a location that another lane may still read needs a
/// sync() before it.
#pragma once

#include <cstdint>

#include "ribbon/config.hpp"

namespace ribbon::detail {

/// One value per lane of a host_tile.
template <class V, unsigned Lanes>
struct host_lane_values {
  V lane[Lanes];
  V& operator[](unsigned l) { return lane[l]; }
  const V& operator[](unsigned l) const { return lane[l]; }
};

/// The lanes of a tile run in lockstep on one CPU thread: each per-lane step runs for every
/// lane before the next step starts, which is the order a converged warp guarantees.
template <unsigned Lanes>
struct host_tile {
  static_assert(Lanes >= 1 && Lanes <= 32 && (Lanes & (Lanes - 1)) == 0,
                "a tile has a power-of-two number of lanes, at most 32");
  static constexpr unsigned size = Lanes;
  template <class V>
  using values = host_lane_values<V, Lanes>;

  template <class F>
  void for_each_lane(F&& f) const {
    for (unsigned l = 0; l < Lanes; ++l) f(l);
  }
  template <class Predicate>
  std::uint32_t ballot(Predicate&& predicate) const {
    std::uint32_t bits = 0;
    for (unsigned l = 0; l < Lanes; ++l)
      bits |= static_cast<std::uint32_t>(predicate(l) ? 1 : 0) << l;
    return bits;
  }
  template <class V>
  V shuffle(const values<V>& v, unsigned from) const {
    return v[from];
  }
  void sync() const {}
};

}  // namespace ribbon::detail
