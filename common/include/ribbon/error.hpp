/// @file error.hpp
/// The one exception type of the library.
#pragma once

#include <stdexcept>
#include <string>

namespace ribbon {

/// Thrown for bad parameters, unreadable or corrupt files and failed I/O. what() says which
/// file or parameter and why.
class error : public std::runtime_error {
 public:
  explicit error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace ribbon
