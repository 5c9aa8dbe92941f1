// The parsing half of the input pipeline (input.hpp): records of keys, (group, key) pairs and
// key<TAB>value lines, and the one-key parsers of the command line.
#include <algorithm>
#include <cstring>

#include "input.hpp"
#include "ribbon/error.hpp"

namespace ribbon::cli {

namespace {

int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// Optional 0x/0X prefix, then 1 to 16 hex digits, nothing else.
bool parse_hex_text(std::string_view text, std::uint64_t& value) {
  if (text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
  }
  if (text.empty() || text.size() > 16) return false;
  std::uint64_t v = 0;
  for (const char c : text) {
    const int d = hex_digit_value(c);
    if (d < 0) return false;
    v = (v << 4) | static_cast<std::uint64_t>(d);
  }
  value = v;
  return true;
}

/// 1 to 20 decimal digits of a value below 2^64, nothing else.
bool parse_decimal_text(std::string_view text, std::uint64_t& value) {
  std::uint64_t v = 0;
  bool ok = !text.empty() && text.size() <= 20;
  for (std::size_t i = 0; ok && i < text.size(); ++i) {
    const char c = text[i];
    const auto digit = static_cast<std::uint64_t>(c - '0');
    ok = c >= '0' && c <= '9' && v <= (UINT64_MAX - digit) / 10;
    v = v * 10 + digit;
  }
  if (ok) value = v;
  return ok;
}

std::string hex64_problem(std::string_view line) {
  if (line.empty()) return "empty line: hex64 input needs one hex number per line";
  return "invalid hex64 key " + quote_for_message(line) +
         ": expected 1 to 16 hex digits with an optional 0x prefix";
}

/// The hex64 key of a pair or key<TAB>value line (`side`: where it is, "after" or "before"
/// the tab).
std::string hex64_key_problem(std::string_view key, const char* side) {
  if (!key.empty()) return hex64_problem(key);
  return std::string("empty key ") + side + " the tab: hex64 keys need 1 to 16 hex digits";
}

/// Calls `on_line(line)` for each line of [data, data + size): without its "\n" and one
/// trailing "\r"; a last line without "\n" counts. Stops early when it returns false.
template <class OnLine>
void for_each_line(const char* data, std::size_t size, OnLine&& on_line) {
  const char* p = data;
  const char* const end = data + size;
  while (p < end) {
    const auto* newline = static_cast<const char*>(std::memchr(p, '\n', end - p));
    const char* line_end = newline != nullptr ? newline : end;
    std::size_t length = static_cast<std::size_t>(line_end - p);
    if (length > 0 && p[length - 1] == '\r') --length;
    if (!on_line(std::string_view(p, length))) return;
    p = newline != nullptr ? newline + 1 : end;
  }
}

/// Lines in [data, data + size), the last one counted without its "\n".
std::size_t count_lines(const char* data, std::size_t size) {
  const auto newlines = static_cast<std::size_t>(std::count(data, data + size, '\n'));
  return newlines + (size > 0 && data[size - 1] != '\n');
}

/// Where parse_chunk puts each record's key, as parse_output asks: the one place keys are
/// hashed by their format (the bytes of lines keys, the integers of hex64 and u64 keys), as
/// the library hashes them.
class key_sink {
 public:
  key_sink(input_chunk& c, input_format format, parse_output output, std::uint64_t seed)
      : c_(c),
        format_(format),
        hashes_(output != parse_output::keys),
        texts_(output != parse_output::hashes && format != input_format::u64),
        hash_{seed, seed_mix(seed)} {}

  /// Room for exactly n keys: a grown vector could take twice the memory.
  void reserve(std::size_t n) {
    if (hashes_ || format_ != input_format::lines) c_.values.reserve(n);
    if (texts_) c_.texts.reserve(n);
  }

  /// A key written as text (lines, hex64): false if it is not a hex64 key.
  bool add(std::string_view text) {
    if (format_ == input_format::lines) {
      if (hashes_) c_.values.push_back(hash_.key(text));
    } else {
      std::uint64_t key;
      if (!parse_hex_text(text, key)) return false;
      add(key);
    }
    if (texts_) c_.texts.push_back(text);
    return true;
  }

  /// An integer key (u64, or the digits of hex64).
  void add(std::uint64_t key) { c_.values.push_back(hashes_ ? hash_.key(key) : key); }

 private:
  input_chunk& c_;
  input_format format_;
  bool hashes_;
  bool texts_;
  set_hasher hash_;  // its key() is the library's hash of keys
};

/// Whether a pair or key<TAB>value line has its tab (at `tab`); else sets the chunk's error,
/// which says what the option `needs`.
bool has_tab(input_chunk& c, std::string_view line, std::size_t tab, const char* needs) {
  if (tab != std::string_view::npos) return true;
  c.error = "no tab in " + quote_for_message(line) + ": " + needs;
  return false;
}

/// Parses each line of the chunk with `parse(line)`, which sets c.error and returns false at
/// a bad one (c.error_line is then its line).
template <class ParseLine>
void parse_lines(input_chunk& c, ParseLine&& parse) {
  std::uint64_t line = 0;
  for_each_line(c.data, c.size, [&](std::string_view text) {
    if (!parse(text)) {
      c.error_line = line;
      return false;
    }
    ++line;
    return true;
  });
  c.key_count = line;
}

/// Records of 8-byte integers: keys, or (group, key) pairs.
void parse_u64_records(input_chunk& c, input_records records, key_sink& keys) {
  const bool pairs = records == input_records::pairs;
  const std::size_t record_bytes = pairs ? 16 : 8;
  const std::size_t n = c.size / record_bytes;
  keys.reserve(n);
  if (pairs) c.group_ids.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const char* record = c.data + record_bytes * i;
    std::uint64_t key;
    if (pairs) {
      std::memcpy(&c.group_ids[i], record, 8);
      record += 8;
    }
    std::memcpy(&key, record, 8);
    keys.add(key);
  }
  c.key_count = n;
}

void parse_text_records(input_chunk& c, input_records records, key_sink& keys) {
  const std::size_t n = count_lines(c.data, c.size);
  keys.reserve(n);
  switch (records) {
    case input_records::keys:
      parse_lines(c, [&](std::string_view line) {
        if (keys.add(line)) return true;
        c.error = hex64_problem(line);
        return false;
      });
      return;
    case input_records::pairs:
      c.groups.reserve(n);
      parse_lines(c, [&](std::string_view line) {
        const std::size_t tab = line.find('\t');
        if (!has_tab(c, line, tab, "--groups needs group<TAB>key lines")) return false;
        const std::string_view key = line.substr(tab + 1);
        if (!keys.add(key)) c.error = hex64_key_problem(key, "after");
        c.groups.push_back(line.substr(0, tab));
        return c.error.empty();
      });
      return;
    case input_records::key_values:
      c.entry_values.reserve(n);
      parse_lines(c, [&](std::string_view line) {
        const std::size_t tab = line.rfind('\t');
        if (!has_tab(c, line, tab, "--values needs key<TAB>value lines")) return false;
        const std::string_view key = line.substr(0, tab);
        std::uint32_t value = 0;
        c.error = parse_value_text(line.substr(tab + 1), value);
        if (c.error.empty() && !keys.add(key)) c.error = hex64_key_problem(key, "before");
        c.entry_values.push_back(value);
        return c.error.empty();
      });
      return;
  }
}

}  // namespace

std::string quote_for_message(std::string_view text) {
  constexpr std::size_t max_shown = 40;
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < max_shown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (text.size() > max_shown) out += "...";
  return out + "'";
}

void parse_chunk(input_chunk& c, input_format format, input_records records, parse_output output,
                 std::uint64_t seed) {
  c.values.clear();
  c.texts.clear();
  c.groups.clear();
  c.group_ids.clear();
  c.entry_values.clear();
  c.key_count = 0;
  key_sink keys(c, format, output, seed);
  if (format == input_format::u64) {
    parse_u64_records(c, records, keys);
  } else {
    parse_text_records(c, records, keys);
  }
}

input_format parse_input_format(const std::string& name) {
  if (name == "lines") return input_format::lines;
  if (name == "u64") return input_format::u64;
  if (name == "hex64") return input_format::hex64;
  throw error("unknown input format '" + name + "' (lines, u64 or hex64)");
}

const char* input_format_name(input_format format) {
  switch (format) {
    case input_format::lines: return "lines";
    case input_format::u64: return "u64";
    case input_format::hex64: return "hex64";
  }
  return "?";
}

key_kind key_kind_of(input_format format) {
  return format == input_format::lines ? key_kind::bytes : key_kind::u64;
}

std::uint64_t parse_u64_decimal(std::string_view text, const std::string& where) {
  std::uint64_t value = 0;
  if (!parse_decimal_text(text, value)) {
    throw error(where + ": invalid u64 key " + quote_for_message(text) +
                ": expected a decimal integer below 2^64");
  }
  return value;
}

std::uint64_t parse_hex64(std::string_view text, const std::string& where) {
  std::uint64_t value = 0;
  if (!parse_hex_text(text, value)) throw error(where + ": " + hex64_problem(text));
  return value;
}

std::string parse_value_text(std::string_view text, std::uint32_t& value) {
  std::uint64_t v = 0;
  const bool hex = text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  if (!(hex ? parse_hex_text(text, v) : parse_decimal_text(text, v))) {
    return "invalid value " + quote_for_message(text) +
           ": expected a decimal integer or 0x and hex digits, below 2^32";
  }
  if (v > UINT32_MAX) {
    return "value " + std::string(text) + " does not fit in 32 bits (the largest is 4294967295)";
  }
  value = static_cast<std::uint32_t>(v);
  return {};
}

bool* input_chunk::found_buffer() {
  if (found_capacity < key_count) {
    found.reset(new bool[key_count]);
    found_capacity = key_count;
  }
  return found.get();
}

}  // namespace ribbon::cli
