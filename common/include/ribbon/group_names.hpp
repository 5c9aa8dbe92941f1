/// @file group_names.hpp
/// The names of a filter set's groups: what lets a set answer "which groups may hold this
/// key?" on its own (format version 7's group-names section, docs/format.md section 12).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ribbon/hash.hpp"
#include "ribbon/params.hpp"

namespace ribbon {

/// Every group a set builder was given, those without keys included: sorted (integers by
/// value, byte strings by unsigned bytes), each once. Its section encoding is canonical, so
/// one list of names has one payload whatever the builder.
class group_names {
 public:
  group_names() = default;
  /// The names of integer groups, in any order, repeats allowed.
  static group_names of(std::vector<std::uint64_t> names);
  /// The names of byte-string groups, in any order, repeats allowed.
  static group_names of(std::vector<std::string> names);

  group_kind kind() const { return kind_; }
  std::uint64_t size() const {
    return kind_ == group_kind::u64 ? integers_.size() : strings_.size();
  }
  /// Integer groups' names, ascending (empty for byte-string groups).
  const std::vector<std::uint64_t>& integers() const { return integers_; }
  /// Byte-string groups' names, ascending (empty for integer groups).
  const std::vector<std::string>& strings() const { return strings_; }
  /// Name i as the CLI prints it: decimal for integers, the bytes themselves for strings.
  std::string text(std::uint64_t i) const;

  /// Each name's group hash (set_hasher::group), in the names' order.
  std::vector<std::uint64_t> hashes(const set_hasher& hash) const;

  /// The section payload: a u64 count, then LEB128 deltas (integers) or front-coded names
  /// (shared prefix, suffix length, suffix bytes).
  std::vector<unsigned char> encode() const;
  /// Decodes and checks a payload (ascending, canonical, nothing after the last name);
  /// throws ribbon::error naming `source` and what is wrong.
  static group_names decode(const unsigned char* data, std::uint64_t size, group_kind kind,
                            const std::string& source);

  friend bool operator==(const group_names& a, const group_names& b) {
    return a.kind_ == b.kind_ && a.integers_ == b.integers_ && a.strings_ == b.strings_;
  }

 private:
  group_kind kind_ = group_kind::none;
  std::vector<std::uint64_t> integers_;
  std::vector<std::string> strings_;
};

}  // namespace ribbon
