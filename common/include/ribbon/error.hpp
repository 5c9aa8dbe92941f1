/// @file error.hpp
/// The one exception type of the library.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ribbon {

/// Thrown for bad parameters, unreadable or corrupt files and failed I/O. what() says which
/// file or parameter and why.
class error : public std::runtime_error {
 public:
  explicit error(const std::string& message) : std::runtime_error(message) {}
};

/// Thrown by retrieval builds given one key twice with two different values (or two keys
/// whose 64-bit hashes collide, with different values). key_hash() identifies the key: for
/// integer keys what() names the key itself; for byte strings a caller holding the keys can
/// find it by hashing them (as the `ribbon` tool does).
class conflicting_values_error : public error {
 public:
  conflicting_values_error(const std::string& message, std::uint64_t key_hash)
      : error(message), key_hash_(key_hash) {}
  std::uint64_t key_hash() const { return key_hash_; }

 private:
  std::uint64_t key_hash_;
};

}  // namespace ribbon
