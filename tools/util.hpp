// Small helpers shared by the subcommands: sizes, number formatting, JSON strings.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ribbon/format.hpp"
#include "ribbon/params.hpp"

namespace ribbon::cli {

using clock_type = std::chrono::steady_clock;

inline double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

/// Parses a byte count: "1048576", "64K", "512M", "2G", "1T", "1.5GiB" (1024-based, case
/// does not matter). Throws ribbon::error naming `option` for anything else.
std::uint64_t parse_size(const std::string& text, const std::string& option);

/// A CLI11 transform for an unsigned integer option (decimal, or hex after 0x): refuses a
/// sign, text beyond 2^64 - 1 (which CLI11 alone would wrap or clamp) and values `accepts`
/// refuses, naming the `accepted` range; passes the value on in decimal.
CLI::Validator unsigned_option(const std::function<bool(std::uint64_t)>& accepts,
                               const std::string& accepted);
/// Any 64-bit seed.
CLI::Validator seed_option();
/// --threads: 0 (all cores) up to max_threads().
CLI::Validator thread_option();
/// 8 threads per core: more only slow a build down.
std::uint64_t max_threads();
/// --shard-size: 0 (the default) or a power of two up to 2^31 (the library checks the
/// width's minimum).
CLI::Validator shard_size_option();
/// Adds --threshold-codes (auto, 1+-bit or 2-bit) to `cmd`, read into `value`.
void add_threshold_codes_option(CLI::App* cmd, std::string& value);
/// The encoding --threshold-codes names (none for "auto": the default).
std::optional<threshold_encoding> threshold_codes_of(const std::string& name);

/// The --layout choice named `name` (auto, standard or compact).
format::layout_choice file_layout_of(const std::string& name);

/// "12.3 MB" (decimal units, as rates are usually quoted).
std::string format_bytes(double bytes);
/// "1.23 M" for counts.
std::string format_count(double count);
/// "1:02:03" or "2:03".
std::string format_duration(double seconds);

/// `text` as a JSON string literal, quotes included.
std::string json_string(const std::string& text);

/// The --variant names (ribbon::variant_name), in filter_variant order: bumped, standard,
/// homogeneous, retrieval (bumped), standard-retrieval.
std::vector<std::string> variant_names();
/// Parses a --variant name; throws ribbon::error for an unknown one.
filter_variant parse_variant(const std::string& name);
/// The --backend names (ribbon::backend_name): cpu, gpu, auto.
std::vector<std::string> backend_names();

/// The message for a build or query asking for the GPU.
inline constexpr const char* gpu_unavailable = "the GPU backend is not available in this build";

}  // namespace ribbon::cli
