#include "util.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <thread>

#include "ribbon/error.hpp"
#include "ribbon/options.hpp"

namespace ribbon::cli {

std::uint64_t parse_size(const std::string& text, const std::string& option) {
  auto invalid = [&]() -> error {
    return error(option + ": invalid size '" + text +
                 "': give bytes or a number with K, M, G or T (or KiB, MiB, GiB, TiB; "
                 "1024-based), e.g. 512M");
  };
  std::size_t i = 0;
  long double value = 0;
  bool digits = false;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    value = value * 10 + (text[i++] - '0');
    digits = true;
  }
  if (i < text.size() && text[i] == '.') {
    long double scale = 0.1L;
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
      value += scale * (text[i] - '0');
      scale /= 10;
      digits = true;
    }
  }
  if (!digits) throw invalid();
  std::string unit;
  for (; i < text.size(); ++i)
    unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  int shift = 0;
  if (unit.empty() || unit == "b") {
    shift = 0;
  } else if (unit.size() == 1 || (unit.size() == 3 && unit.compare(1, 2, "ib") == 0)) {
    switch (unit[0]) {
      case 'k': shift = 10; break;
      case 'm': shift = 20; break;
      case 'g': shift = 30; break;
      case 't': shift = 40; break;
      default: throw invalid();
    }
  } else {
    throw invalid();
  }
  const long double bytes = std::ldexp(value, shift);
  if (bytes >= 18446744073709551615.0L)
    throw error(option + ": size '" + text + "' is too large (at most 2^64 - 1 bytes)");
  if (shift == 0 && bytes != std::floor(bytes)) throw invalid();  // fractional bytes
  return static_cast<std::uint64_t>(bytes);
}

namespace {

/// The unsigned integer of `text`: decimal, or hex after 0x; nothing for anything else (a
/// sign, other characters, a value beyond 2^64 - 1).
std::optional<std::uint64_t> parse_unsigned(const std::string& text) {
  const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const char* first = text.data() + (hex ? 2 : 0);
  const char* last = text.data() + text.size();
  std::uint64_t value = 0;
  const auto [end, status] = std::from_chars(first, last, value, hex ? 16 : 10);
  if (first == last || status != std::errc() || end != last) return std::nullopt;
  return value;
}

}  // namespace

CLI::Validator unsigned_option(const std::function<bool(std::uint64_t)>& accepts,
                               const std::string& accepted) {
  return CLI::Validator(
      [accepts, accepted](std::string& text) -> std::string {
        const std::optional<std::uint64_t> value = parse_unsigned(text);
        if (!value || !accepts(*value)) return "'" + text + "' is out of range: give " + accepted;
        text = std::to_string(*value);  // CLI11 would read "010" as octal
        return {};
      },
      "", "unsigned");
}

CLI::Validator seed_option() {
  return unsigned_option([](std::uint64_t) { return true; }, "an integer from 0 to 2^64 - 1");
}

std::uint64_t max_threads() {
  return 8 * std::uint64_t{std::max(1u, std::thread::hardware_concurrency())};
}

CLI::Validator thread_option() {
  return unsigned_option(
      [](std::uint64_t n) { return n <= max_threads(); },
      "0 (all cores) to " + std::to_string(max_threads()) + " (8 per core of this machine)");
}

CLI::Validator shard_size_option() {
  return unsigned_option(
      [](std::uint64_t n) {
        return n == 0 || (n <= (std::uint64_t{1} << 31) && (n & (n - 1)) == 0);
      },
      "0 (the default shard size, 131072) or a power of two up to 2^31");
}

namespace {

/// `value` divided by 1000 until below 1000 (or out of units), printed with its unit.
std::string with_decimal_unit(double value, const char* const* units, int unit_count,
                              const char* unscaled_format, const char* scaled_format) {
  int unit = 0;
  while (value >= 1000 && unit + 1 < unit_count) {
    value /= 1000;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), unit == 0 ? unscaled_format : scaled_format, value,
                units[unit]);
  return text;
}

}  // namespace

std::string format_bytes(double bytes) {
  static const char* const units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  return with_decimal_unit(bytes, units, 6, "%.0f %s", "%.1f %s");
}

std::string format_count(double count) {
  static const char* const units[] = {"", " K", " M", " G", " T"};
  return with_decimal_unit(count, units, 5, "%.0f%s", "%.2f%s");
}

std::string format_duration(double seconds) {
  const auto total = static_cast<long long>(seconds + 0.5);
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof(text), "%lld:%02lld:%02lld", total / 3600, total / 60 % 60,
                  total % 60);
  } else {
    std::snprintf(text, sizeof(text), "%lld:%02lld", total / 60, total % 60);
  }
  return text;
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
          out += escaped;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

void add_threshold_codes_option(CLI::App* cmd, std::string& value) {
  cmd->add_option("--threshold-codes", value,
                  "how buckets store their thresholds: 1+-bit (the smallest file), 2-bit "
                  "(format version 2 for large filters, which older readers read; GPU kernels "
                  "decide from one "
                  "word; about 0.04% more space) or auto (1+-bit; 2-bit at w=32). CPU queries "
                  "are as fast with either")
      ->check(CLI::IsMember({"auto", "1+-bit", "2-bit"}))
      ->capture_default_str();
}

format::layout_choice file_layout_of(const std::string& name) {
  return name == "standard"  ? format::layout_choice::standard
         : name == "compact" ? format::layout_choice::compact
                             : format::layout_choice::automatic;
}

std::optional<threshold_encoding> threshold_codes_of(const std::string& name) {
  std::optional<threshold_encoding> encoding;
  threshold_encoding_from_name(name, &encoding);  // the option's check allows only known names
  return encoding;
}

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (const filter_variant variant : all_variants) names.emplace_back(variant_name(variant));
  return names;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const build_backend backend : all_backends) names.emplace_back(backend_name(backend));
  return names;
}

filter_variant parse_variant(const std::string& name) {
  filter_variant variant = filter_variant::bumped;
  if (!variant_from_name(name, &variant)) {
    throw error("unknown variant '" + name +
                "' (bumped, standard, homogeneous, retrieval, standard-retrieval)");
  }
  return variant;
}

}  // namespace ribbon::cli
