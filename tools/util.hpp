// Small helpers shared by the subcommands: sizes, number formatting, JSON strings.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ribbon/params.hpp"

namespace ribbon::cli {

using clock_type = std::chrono::steady_clock;

inline double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

/// Parses a byte count: "1048576", "64K", "512M", "2G", "1T", "1.5GiB" (1024-based, case
/// does not matter). Throws ribbon::error naming `option` for anything else.
std::uint64_t parse_size(const std::string& text, const std::string& option);

/// "12.3 MB" (decimal units, as rates are usually quoted).
std::string format_bytes(double bytes);
/// "1.23 M" for counts.
std::string format_count(double count);
/// "1:02:03" or "2:03".
std::string format_duration(double seconds);

/// `text` as a JSON string literal, quotes included.
std::string json_string(const std::string& text);

/// The --variant names, in filter_variant order: bumped, standard, homogeneous, retrieval
/// (bumped retrieval), standard-retrieval.
const std::vector<std::string>& variant_names();
/// Parses a --variant name; throws ribbon::error for an unknown one.
filter_variant parse_variant(const std::string& name);
/// The --variant name of a variant.
const std::string& variant_name(filter_variant variant);

/// The message for a build or query asking for the GPU.
inline constexpr const char* gpu_unavailable = "the GPU backend is not available in this build";

}  // namespace ribbon::cli
