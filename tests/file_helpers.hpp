/// @file file_helpers.hpp
/// Helpers of the file tests (test_format.cpp, test_files.cpp): whole files as bytes, and the
/// message of the ribbon::error an action throws.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ribbon/error.hpp"

namespace ribbon_test {

/// Writes `size` bytes at `data` to `path`, replacing what was there.
inline void write_bytes(const std::string& path, const unsigned char* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  ASSERT_TRUE(out.good()) << path;
}

/// The bytes of the file at `path` (none if it cannot be read).
inline std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<unsigned char>((std::istreambuf_iterator<char>(in)),
                                    std::istreambuf_iterator<char>());
}

/// The message of the ribbon::error thrown by f(), or "" if none was thrown.
template <class F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const ribbon::error& e) {
    return e.what();
  }
  return "";
}

inline bool contains_text(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace ribbon_test
