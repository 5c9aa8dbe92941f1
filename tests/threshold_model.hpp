// The rules of the 1+-bit threshold encoding (ribbon/detail/threshold_codes.hpp) restated for
// the tests, independently of the writer: which code a failing bucket gets, and the smallest
// code below the one it got that the encoding could have given it.
#pragma once

#include <cstdint>

namespace ribbon_test {

class code_rules {
 public:
  /// The rules of a list of `capacity` entries; 2-bit codes (`two_bit`) give every code.
  explicit code_rules(std::uint64_t capacity, bool two_bit = false)
      : capacity_(capacity), two_bit_(two_bit) {}

  /// The code a bucket gets when it wants `wanted` (0: it did not fail); updates the state.
  unsigned give(unsigned wanted) {
    if (wanted == 0 || two_bit_) return wanted;
    const unsigned code = all_tail_ || wanted == 3 ? 3 : heavy_tail_ ? 2 : wanted;
    if (code == 3 && !all_tail_) {
      if (all_slots_used_ < 2) {
        ++all_slots_used_;
      } else {
        all_tail_ = true;
      }
    } else if (code == 2 && !heavy_tail_) {
      if (listed_ < capacity_) {
        ++listed_;
      } else {
        heavy_tail_ = true;
      }
    }
    return code;
  }

  /// For a bucket about to get `code` > 0: the code whose threshold the bucket must have
  /// failed at (0 in a tail, where any failure gets the tail's code).
  unsigned smaller(unsigned code) const {
    if (code == 3) return all_tail_ ? 0 : 2;
    if (code == 2) return heavy_tail_ ? 0 : 1;
    return 0;
  }

  bool in_tail() const { return heavy_tail_ || all_tail_; }

 private:
  std::uint64_t capacity_;
  bool two_bit_;
  std::uint64_t listed_ = 0;
  unsigned all_slots_used_ = 0;
  bool heavy_tail_ = false, all_tail_ = false;
};

}  // namespace ribbon_test
