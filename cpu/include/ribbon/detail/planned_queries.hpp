/// @file planned_queries.hpp
/// Internals of the CPU's queries (not part of the API): the plan a filter resolves its queries
/// into when it is built or opened, and the process-wide choice of row check that tests
/// compare and benchmarks time.
#pragma once

#include <cstdint>
#include <memory>

#include "ribbon/filter_ref.hpp"

namespace ribbon::detail {

/// The row check of batched queries: the fastest this CPU has (AVX-512 or AVX2 where present,
/// the default), AVX2 (where present, else portable) or the portable one. Process-wide; tests
/// compare them, benchmarks time them.
enum class row_check { fastest, avx2, portable };
void set_row_check(row_check which);

/// A filter's queries, resolved once when it is built or opened: the constants of its layers
/// (query_plan) and the scalar routines specialised for its width, layer 0's threshold codes,
/// r and this CPU's row check (AVX-512, AVX2 or portable, chosen here, never per query).
/// Layers with 1+-bit codes are planned with those codes decoded into 2-bit codes (held in
/// `two_bit_codes`, 2 bits per bucket: about 0.2 % of an r = 8 filter's memory), which
/// answer queries about 1.4x faster; the file is unchanged.
struct planned_queries {
  query_plan plan;
  std::shared_ptr<const std::uint64_t[]> two_bit_codes;
  bool (*contains)(const query_plan&, std::uint64_t hash) = nullptr;
  std::uint32_t (*lookup)(const query_plan&, std::uint64_t hash) = nullptr;
};
/// The plan of the filter `f` views (with the row check set_row_check() chose).
planned_queries plan_queries(const filter_ref& f);

}  // namespace ribbon::detail
