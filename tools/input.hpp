// Key input for the ribbon tool: reads files or stdin of keys, (group, key) pairs or
// key<TAB>value lines in big chunks of whole records, parses (and hashes) them in parallel,
// and hands them back in input order (a oneTBB pipeline with bounded tokens). input.cpp
// parses, input_reader.cpp reads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ribbon/hash.hpp"

namespace ribbon::cli {

/// How keys are written in an input.
enum class input_format {
  lines,  ///< one byte-string key per line (a trailing "\r" is not part of the key)
  u64,    ///< little-endian 8-byte integers
  hex64,  ///< one 64-bit integer per line in hex (optional 0x prefix, 1 to 16 digits)
};

/// Parses "lines", "u64" or "hex64"; throws ribbon::error otherwise.
input_format parse_input_format(const std::string& name);
const char* input_format_name(input_format format);
/// The key kind a filter built from this format has.
key_kind key_kind_of(input_format format);

/// Parses one key given as text (a command-line argument): u64 decimal, hex64 hex, lines
/// as is. Throws ribbon::error naming `where` on invalid text.
std::uint64_t parse_u64_decimal(std::string_view text, const std::string& where);
std::uint64_t parse_hex64(std::string_view text, const std::string& where);

/// A key's text for a message: quoted, at most 40 bytes, non-printable bytes escaped.
std::string quote_for_message(std::string_view text);

/// Parses a value of a key<TAB>value line: decimal, or hex with a 0x prefix, below 2^32.
/// Returns an empty string, or what is wrong with `text`.
std::string parse_value_text(std::string_view text, std::uint32_t& value);

/// What each record of an input holds, written in the input_format's way.
enum class input_records {
  keys,        ///< a key: a line, or an 8-byte integer (u64)
  pairs,       ///< group<TAB>key lines (split at the first tab), or two integers (u64): --groups
  key_values,  ///< key<TAB>value lines (split at the last tab; no u64): --values
};

/// What the parse stage makes of each record's key.
enum class parse_output {
  hashes,            ///< `values` holds the key hashes (builds)
  keys,              ///< `values` holds integer keys (u64, hex64), `texts` the text (lines, hex64)
  hashes_and_texts,  ///< `values` holds the key hashes, `texts` the text (lines, hex64)
};

/// A piece of one input: whole records, parsed in parallel.
struct input_chunk {
  std::size_t source = 0;         ///< index of the input it came from
  std::uint64_t byte_offset = 0;  ///< offset of its first byte in that input
  std::uint64_t first_line = 0;   ///< 1-based line of its first record (line formats)
  const char* data = nullptr;
  std::size_t size = 0;
  std::uint64_t key_count = 0;              ///< records
  std::vector<std::uint64_t> values;        ///< hashes or integer keys, see parse_output
  std::vector<std::string_view> texts;      ///< key texts, views into `data`
  std::vector<std::string_view> groups;     ///< pairs of line formats: the groups
  std::vector<std::uint64_t> group_ids;     ///< pairs of u64 integers: the groups
  std::vector<std::uint32_t> entry_values;  ///< key_values: the values (scratch for callers else)
  std::unique_ptr<bool[]> found;            ///< scratch for callers (query results)
  std::size_t found_capacity = 0;
  std::string output;                       ///< scratch for callers (text to print)
  std::uint64_t positives = 0;              ///< scratch for callers
  std::vector<std::uint32_t> looked_up;     ///< scratch for callers (retrieval lookups)
  std::vector<std::uint64_t> group_hashes;  ///< scratch for callers (a filter set's groups)

  /// found[] with room for key_count entries.
  bool* found_buffer();

  // Owned by the reader.
  std::unique_ptr<char[]> buffer;
  std::size_t capacity = 0;
  std::string error;                ///< non-empty: this chunk failed (read or parse error)
  bool error_has_location = false;  ///< `error` already names the file and offset
  std::uint64_t error_line = 0;     ///< 0-based line in the chunk of a parse error
  // A `process` callback may set `error` and `error_line` (line formats) too: the reader then
  // stops and reports it, in input order, as "FILE:LINE: error".
};

/// Group i of a chunk of pairs: its text (Group std::string_view, line formats) or its
/// integer (Group std::uint64_t, u64).
template <class Group>
Group group_at(const input_chunk& c, std::size_t i);
template <>
inline std::string_view group_at(const input_chunk& c, std::size_t i) {
  return c.groups[i];
}
template <>
inline std::uint64_t group_at(const input_chunk& c, std::size_t i) {
  return c.group_ids[i];
}

/// Parses the chunk's bytes (c.data, c.size: whole records) as the reader's parallel stage
/// does: fills c.values and c.texts (see parse_output), c.groups or c.group_ids (pairs),
/// c.entry_values (key_values) and c.key_count, or sets c.error and c.error_line at the
/// first bad line. The one place keys are hashed by their format. No threads, no I/O.
void parse_chunk(input_chunk& c, input_format format, input_records records, parse_output output,
                 std::uint64_t seed);

/// Counters a progress display polls.
struct input_counters {
  std::atomic<std::uint64_t> bytes{0};  ///< bytes read so far
  std::atomic<std::uint64_t> keys{0};   ///< keys handed to the consumer so far
  std::atomic<bool> done{false};        ///< every input has been read and consumed
};

/// Reads a list of inputs ("-" is stdin) in order, as one stream of keys.
class input_reader {
 public:
  /// Checks that every input can be opened (so that a typo fails before any work) and
  /// notes the sizes of regular files. Chunks are RIBBON_CLI_CHUNK_BYTES (for tests) or
  /// 8 MiB, at most `max_chunk_bytes` if that is not 0; they hold whole records (the part of
  /// one cut at the end of a chunk starts the next).
  input_reader(std::vector<std::string> paths, input_format format,
               input_records records = input_records::keys, std::size_t max_chunk_bytes = 0);
  ~input_reader();
  input_reader(const input_reader&) = delete;
  input_reader& operator=(const input_reader&) = delete;

  input_format format() const { return format_; }
  /// The name of input `index` in messages ("<stdin>" for "-").
  const std::string& name(std::size_t index) const { return sources_[index].name; }
  /// Total bytes of the inputs if every one is a regular file, else 0.
  std::uint64_t total_bytes() const { return all_sizes_known_ ? total_bytes_ : 0; }
  /// An estimate of the number of records (0: unknown): the 8-byte integers of u64 files (two
  /// a pair), from the average line length of the first bytes of the first file for lines.
  std::uint64_t estimated_keys() const { return estimated_keys_; }
  std::size_t chunk_bytes() const { return chunk_bytes_; }
  /// Chunks in flight when run() on `threads` threads (0: all).
  static std::uint64_t chunks_in_flight(std::uint32_t threads);
  /// The chunk size (for max_chunk_bytes) that keeps run() with parse_output::hashes on
  /// `threads` threads within `bytes`: each chunk in flight holds its data and its hashes
  /// (8 per key: as many bytes as the data for u64, up to 4 times for lines of 2 bytes).
  static std::size_t chunk_bytes_within(std::uint64_t bytes, std::uint32_t threads,
                                        input_format format);
  input_counters& counters() { return counters_; }

  /// Reads every input once on `threads` threads (0: all). Each chunk is parsed (parse_chunk)
  /// and given to `process` in parallel, then to `consume` one at a time in input order.
  /// Throws ribbon::error at the first bad input, naming the file, the line or byte offset
  /// and the cause; the callbacks have then seen only the chunks before it.
  void run(std::uint32_t threads, parse_output output, std::uint64_t seed,
           const std::function<void(input_chunk&)>& process,
           const std::function<void(input_chunk&)>& consume);

 private:
  struct source {
    std::string path;  ///< "-" for stdin
    std::string name;
    bool regular = false;
    std::uint64_t size = 0;  ///< bytes left to read, for regular files
  };
  struct state;
  void estimate_keys();
  /// Bytes of a record of u64 inputs (0: records are lines).
  std::size_t record_bytes() const;

  input_format format_;
  input_records records_;
  std::size_t chunk_bytes_;
  std::vector<source> sources_;
  std::uint64_t total_bytes_ = 0;
  bool all_sizes_known_ = true;
  std::uint64_t estimated_keys_ = 0;
  input_counters counters_;
};

}  // namespace ribbon::cli
