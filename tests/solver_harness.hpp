/// @file solver_harness.hpp
/// What the shard solver's tests share besides the oracle (gf2_oracle.hpp): the result type
/// for r bits, the solver's working arrays, and the names of the width/bits parameters.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "gf2_oracle.hpp"
#include "ribbon/detail/shard_solver.hpp"

namespace ribbon_test {

/// Calls f(type_tag<Result>) with the result type the builder uses for r result bits.
template <class T>
struct type_tag {
  using type = T;
};
template <class F>
void with_result_type(std::uint32_t r, F&& f) {
  if (r <= 8) {
    f(type_tag<std::uint8_t>{});
  } else if (r <= 16) {
    f(type_tag<std::uint16_t>{});
  } else {
    f(type_tag<std::uint32_t>{});
  }
}

/// Working arrays of the shard solver.
template <unsigned W, class Result>
struct workspace_arrays {
  std::vector<word<W>> coeffs;
  std::vector<Result> results;
  std::vector<std::uint32_t> undo_columns, undo_offsets;

  workspace_arrays(std::uint64_t columns, std::uint32_t bucket_size)
      : coeffs(columns),
        results(columns),
        undo_columns(ribbon::detail::undo_capacity(bucket_size, W)),
        undo_offsets(ribbon::detail::undo_capacity(bucket_size, W)) {}
  ribbon::detail::shard_workspace<W, Result> view() {
    return {coeffs.data(), results.data(), undo_columns.data(), undo_offsets.data()};
  }
};

/// Names the (width, result bits) instances "w64_r8".
inline std::string width_and_bits_name(
    const ::testing::TestParamInfo<std::tuple<unsigned, std::uint32_t>>& param_info) {
  return "w" + std::to_string(std::get<0>(param_info.param)) + "_r" +
         std::to_string(std::get<1>(param_info.param));
}

}  // namespace ribbon_test
