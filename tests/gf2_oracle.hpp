/// @file gf2_oracle.hpp
/// The oracle the shard solver is tested against (test_solver_*.cpp): a brute-force GF(2)
/// elimination, and layer hashes' equations and results computed column by column.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "ribbon/detail/rows.hpp"
#include "ribbon/hash.hpp"

namespace ribbon_test {

// ---------------------------------------------------------------------------------------------
// Brute force: incremental Gaussian elimination over GF(2) with bit-vector rows. It knows
// nothing about bands, shards or interleaving: a row is a set of columns and an r-bit right
// side.

/// A bit vector that is zero outside the 64-bit words [first, first + words.size()).
struct bit_row {
  std::uint64_t first = 0;
  std::vector<std::uint64_t> words;
  std::uint32_t rhs = 0;

  void set(std::uint64_t column) {
    const std::uint64_t w = column / 64;
    if (words.empty()) first = w;
    if (w < first) {
      words.insert(words.begin(), first - w, 0);
      first = w;
    }
    if (w >= first + words.size()) words.resize(w - first + 1, 0);
    words[w - first] |= std::uint64_t{1} << (column % 64);
  }
  /// Drops zero words at both ends; an all-zero row ends up with no words.
  void trim() {
    std::size_t lo = 0, hi = words.size();
    while (lo < hi && words[lo] == 0) ++lo;
    while (hi > lo && words[hi - 1] == 0) --hi;
    words.resize(hi);
    words.erase(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(lo));
    first += lo;
  }
  bool zero() const { return words.empty(); }  // after trim()
  /// The lowest set column (the row is trimmed and non-zero).
  std::uint64_t lead() const {
    return first * 64 + static_cast<std::uint64_t>(__builtin_ctzll(words[0]));
  }
  void add(const bit_row& other) {
    rhs ^= other.rhs;
    if (other.words.empty()) return;
    if (words.empty()) {
      first = other.first;
      words = other.words;
      return;
    }
    if (other.first < first) {  // widen the window to the left
      words.insert(words.begin(), first - other.first, 0);
      first = other.first;
    }
    const std::uint64_t end = other.first + other.words.size();
    if (end > first + words.size()) words.resize(end - first, 0);
    for (std::size_t i = 0; i < other.words.size(); ++i) {
      words[other.first - first + i] ^= other.words[i];
    }
  }
};

/// A consistent system of equations in echelon form, one pivot row per column at most.
class gf2_system {
 public:
  explicit gf2_system(std::uint64_t columns) : pivots_(columns) {}

  /// Adds an equation. Returns false if it contradicts the equations so far (it is dropped
  /// then); `stored` (if given) gets the pivot column used, or -1 for a redundant row.
  bool add(bit_row row, std::int64_t* stored = nullptr) {
    if (stored) *stored = -1;
    row.trim();
    while (!row.zero()) {
      const std::uint64_t c = row.lead();
      if (c >= pivots_.size()) {
        ADD_FAILURE() << "row reaches column " << c << " beyond " << pivots_.size();
        return false;
      }
      if (pivots_[c].zero()) {
        pivots_[c] = std::move(row);
        if (stored) *stored = static_cast<std::int64_t>(c);
        return true;
      }
      row.add(pivots_[c]);
      row.trim();
    }
    return row.rhs == 0;
  }
  /// Removes the pivot row of `column` (undoes an add() that stored there).
  void remove(std::int64_t column) {
    if (column >= 0) pivots_[static_cast<std::size_t>(column)] = bit_row{};
  }
  /// Is `column` a pivot (leading) column of the rows added so far? The set of leading
  /// columns of an echelon basis depends only on the row space, not on the order of rows.
  bool is_pivot(std::uint64_t column) const { return !pivots_[column].zero(); }

 private:
  std::vector<bit_row> pivots_;
};

// ---------------------------------------------------------------------------------------------
// Rows and solutions as the test sees them.

template <unsigned W>
using word = ribbon::detail::word_t<W>;

/// Bit i of a coefficient word.
template <unsigned W>
bool coefficient_bit(word<W> c, unsigned i) {
  return ((c >> i) & 1u) != 0;
}

/// The equation of a layer hash over local columns (relative to `shard_begin`).
template <unsigned W>
bit_row equation(std::uint64_t hash, std::uint64_t num_starts, std::uint64_t shard_begin,
                 std::uint32_t r) {
  bit_row row;
  const std::uint64_t start = ribbon::fastrange64(hash, num_starts) - shard_begin;
  const word<W> c = ribbon::detail::coefficients<W>(hash);
  for (unsigned i = 0; i < W; ++i) {
    if (coefficient_bit<W>(c, i)) row.set(start + i);
  }
  row.rhs = ribbon::detail::fingerprint(hash, r);
  return row;
}

/// Solution bit j of global column `column`, read from the interleaved blocks byte by byte:
/// block b holds r words of W bits; bit k of word j of block b is column b*W + k.
template <unsigned W>
unsigned solution_bit(const void* solution, std::uint32_t r, std::uint64_t column,
                      std::uint32_t j) {
  const auto* bytes = static_cast<const unsigned char*>(solution);
  const std::uint64_t word_index = column / W * r + j;
  const std::uint64_t bit = column % W;
  return (bytes[word_index * (W / 8) + bit / 8] >> (bit % 8)) & 1u;
}

/// The r-bit result of the equation of `hash`, computed column by column.
template <unsigned W>
std::uint32_t brute_result(const void* solution, std::uint32_t r, std::uint64_t hash,
                           std::uint64_t num_starts) {
  const std::uint64_t start = ribbon::fastrange64(hash, num_starts);
  const word<W> c = ribbon::detail::coefficients<W>(hash);
  std::uint32_t result = 0;
  for (std::uint32_t j = 0; j < r; ++j) {
    unsigned bit = 0;
    for (unsigned i = 0; i < W; ++i) {
      if (coefficient_bit<W>(c, i)) bit ^= solution_bit<W>(solution, r, start + i, j);
    }
    result |= bit << j;
  }
  return result;
}

}  // namespace ribbon_test
