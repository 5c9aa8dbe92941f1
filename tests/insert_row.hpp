/// @file insert_row.hpp
/// Ribbon's row insertion (docs/design.md, "Elimination"), one row at a time: the reference the
/// tests check the shard solver's elimination against (the library eliminates whole buckets, see
/// shard_solver.hpp).
#pragma once

#include <cstdint>

#include "ribbon/detail/shard_solver.hpp"

namespace ribbon_test {

enum class insert_outcome { stored, redundant, failed };

/// The same insertion on row-major working arrays indexed by local column: eliminate
/// `coeff` (relative to `column`, bit 0 set) against stored pivots until it finds a free
/// pivot column. A row that reduces to 0 = 0 is redundant (a duplicate key); 0 = f != 0 fails.
/// On `stored`, `column` is the pivot column used.
template <class Word, class Result>
insert_outcome insert_row(Word* coeffs, Result* results, std::uint64_t& column, Word coeff,
                          Result result) {
  while (coeffs[column] != 0) {
    if (!ribbon::detail::reduce_with_pivot(coeffs[column], results[column], column, coeff,
                                           result)) {
      return result == 0 ? insert_outcome::redundant : insert_outcome::failed;
    }
  }
  coeffs[column] = coeff;
  results[column] = result;
  return insert_outcome::stored;
}

}  // namespace ribbon_test
