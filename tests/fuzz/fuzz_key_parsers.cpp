// libFuzzer target: the key parsers of the ribbon tool (tools/input.cpp), without the reader's
// threads: a chunk of lines, hex64 lines or u64 keys, key<TAB>value lines, and the one-key
// parsers of the command line. The first byte picks the parser, the rest is the text. Besides
// memory errors it checks what every parse must give: one key per line, views inside the
// chunk, and hex64 keys that read back to their values.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "input.hpp"
#include "ribbon/error.hpp"

namespace {

using ribbon::cli::input_chunk;
using ribbon::cli::input_format;
using ribbon::cli::input_records;
using ribbon::cli::parse_output;

void require(bool condition) {
  if (!condition) std::abort();
}

/// Views of a parsed chunk lie inside it and hold no line break.
void check_texts(const input_chunk& c) {
  for (std::string_view text : c.texts) {
    require(text.data() >= c.data && text.data() + text.size() <= c.data + c.size);
    require(text.find('\n') == std::string_view::npos);
  }
}

void parse_chunk(std::string_view text, input_format format, parse_output output) {
  input_chunk c;
  c.data = text.data();
  c.size = text.size();
  ribbon::cli::parse_chunk(c, format, input_records::keys, output, 7);
  if (!c.error.empty()) return;
  const bool texts = output == parse_output::keys && format != input_format::u64;
  require(c.key_count == (texts ? c.texts.size() : c.values.size()));
  check_texts(c);
  if (format == input_format::hex64 && output == parse_output::keys) {
    for (std::size_t i = 0; i < c.texts.size(); ++i) {
      require(ribbon::cli::parse_hex64(c.texts[i], "fuzz") == c.values[i]);
    }
  }
}

void parse_key_values(std::string_view text, input_format key_format) {
  input_chunk c;
  c.data = text.data();
  c.size = text.size();
  ribbon::cli::parse_chunk(c, key_format, input_records::key_values, parse_output::keys, 0);
  if (!c.error.empty()) return;
  require(c.entry_values.size() == c.key_count && c.texts.size() == c.key_count);
  require(key_format != input_format::hex64 || c.values.size() == c.texts.size());
  check_texts(c);
}

void parse_one_key(std::string_view text) {
  try {
    (void)ribbon::cli::parse_u64_decimal(text, "fuzz");
  } catch (const ribbon::error&) {
  }
  try {
    (void)ribbon::cli::parse_hex64(text, "fuzz");
  } catch (const ribbon::error&) {
  }
  std::uint32_t value = 0;
  (void)ribbon::cli::parse_value_text(text, value);
  (void)ribbon::cli::quote_for_message(text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 8) {
    case 0: parse_chunk(text, input_format::lines, parse_output::hashes); break;
    case 1: parse_chunk(text, input_format::lines, parse_output::keys); break;
    case 2: parse_chunk(text, input_format::hex64, parse_output::hashes); break;
    case 3: parse_chunk(text, input_format::hex64, parse_output::keys); break;
    case 4: parse_chunk(text, input_format::u64, parse_output::keys); break;
    case 5: parse_key_values(text, input_format::lines); break;
    case 6: parse_key_values(text, input_format::hex64); break;
    default: parse_one_key(text); break;
  }
  return 0;
}
