/// @file version.hpp
/// The release this header belongs to, and the file format versions it reads and writes.
/// CMakeLists.txt's `project(ribbon VERSION ...)` is the one version number: configuring the
/// project fails if these macros disagree with it, and python/tests/test_version.py checks
/// that the CLI, the Python package, the C ABI and the jar say the same.
#pragma once

#include <cstdint>

#include "ribbon/format.hpp"

#define RIBBON_VERSION_MAJOR 0
#define RIBBON_VERSION_MINOR 1
#define RIBBON_VERSION_PATCH 0
/// "MAJOR.MINOR.PATCH", as `ribbon --version` prints it.
#define RIBBON_VERSION_STRING "0.1.0"

namespace ribbon {

/// What a build of ribbon is and which file format versions it handles.
struct release_info {
  const char* version;                  ///< RIBBON_VERSION_STRING
  std::uint32_t oldest_read_format;     ///< readers accept files from this version...
  std::uint32_t newest_read_format;     ///< ...to this one
  std::uint32_t oldest_written_format;  ///< writers write the oldest version that holds a
  std::uint32_t newest_written_format;  ///< file, within these two (docs/format.md, section 12)
};

namespace detail {
/// The first row of format::version_rules that writers choose (version 1 is read only).
constexpr std::uint32_t oldest_written_format() {
  for (const auto& rule : format::version_rules) {
    if (rule.written) return rule.version;
  }
  return 0;
}
}  // namespace detail

/// This release: the versions of format::version_rules.
constexpr release_info release() {
  return {RIBBON_VERSION_STRING, format::oldest_readable_version, format::current_version,
          detail::oldest_written_format(), format::current_version};
}

}  // namespace ribbon
