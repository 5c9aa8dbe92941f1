// `ribbon build --values` / `--value-file`: a retrieval structure from key<TAB>value lines or
// keys and a file of values. Keys are hashed as they are read; a key given twice with two
// values is an error that names the key and where it came from.
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "build_settings.hpp"
#include "gpu_backend.hpp"
#include "ribbon/error.hpp"
#include "ribbon/options.hpp"

namespace ribbon::cli {
namespace {

/// Key hashes and values of a retrieval build, in input order, and where each key came from.
struct keyed_values {
  std::vector<std::uint64_t> hashes;
  std::vector<std::uint32_t> values;
  std::vector<std::uint64_t> keys_per_source;  ///< keys read from each input
};

/// Reads a --value-file: little-endian 8-byte unsigned values, each below 2^32, through the
/// same reader as u64 key files (so a bad size is reported the same way).
std::vector<std::uint32_t> read_value_file(const std::string& path) {
  std::vector<std::uint32_t> values;
  try {
    input_reader reader({path}, input_format::u64);
    reader.run(
        1, parse_output::keys, 0, [](input_chunk&) {},
        [&](input_chunk& c) {
          for (std::uint64_t i = 0; i < c.key_count; ++i) {
            const std::uint64_t v = c.values[i];
            if (v > UINT32_MAX) {
              throw error(path + ": value " + std::to_string(v) + " at byte " +
                          std::to_string(c.byte_offset + 8 * i) + " (value number " +
                          std::to_string(values.size() + 1) + ") does not fit in 32 bits");
            }
            values.push_back(static_cast<std::uint32_t>(v));
          }
        });
  } catch (const error& e) {
    throw error(std::string("value file: ") + e.what());
  }
  return values;
}

/// Where key number `index` (from 0, in input order) came from: "FILE:LINE" for line
/// formats, "FILE byte OFFSET" for u64.
std::string key_location(const input_reader& reader, const keyed_values& kv, input_format format,
                         std::uint64_t index) {
  std::size_t source = 0;
  while (source + 1 < kv.keys_per_source.size() && index >= kv.keys_per_source[source]) {
    index -= kv.keys_per_source[source++];
  }
  if (format == input_format::u64) {
    return reader.name(source) + " byte " + std::to_string(8 * index);
  }
  return reader.name(source) + ":" + std::to_string(index + 1);
}

/// Only regular files can be read again (not stdin or pipes).
bool inputs_rereadable(const build_settings& s) {
  return std::all_of(s.inputs.begin(), s.inputs.end(), [](const std::string& p) {
    struct stat st;
    return p != "-" && ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  });
}

/// Values must be below this: 2^--bits where given, else 2^32.
std::uint64_t value_limit_of(const build_settings& s) {
  return s.bits_given && s.options.result_bits < 32 ? std::uint64_t{1} << s.options.result_bits
                                                    : std::uint64_t{1} << 32;
}

std::string too_wide_for_bits(const build_settings& s) {
  return "does not fit in --bits " + std::to_string(s.options.result_bits) +
         " (values must be below 2^" + std::to_string(s.options.result_bits) + ")";
}

/// What the inputs of a retrieval build hold: key<TAB>value lines (--values), or keys.
input_records records_of(const build_settings& s) {
  return s.values ? input_records::key_values : input_records::keys;
}

/// The parallel stage of reading key<TAB>value lines: sets the chunk's error on a value too
/// wide for --bits.
void check_values(const build_settings& s, input_chunk& c) {
  if (!s.values) return;
  const std::uint64_t value_limit = value_limit_of(s);
  for (std::size_t i = 0; i < c.key_count; ++i) {
    if (c.entry_values[i] >= value_limit) {
      c.error = "value " + std::to_string(c.entry_values[i]) + " " + too_wide_for_bits(s);
      c.error_line = i;
      return;
    }
  }
}

/// Reads the key hashes (and, with --values, the values) of every input, in input order.
keyed_values read_keyed_values(const build_settings& s, input_reader& reader,
                               std::uint64_t value_file_values) {
  keyed_values kv;
  kv.keys_per_source.assign(s.inputs.size(), 0);
  const std::uint64_t expected =
      !s.value_file.empty() ? value_file_values : reader.estimated_keys();
  kv.hashes.reserve(expected);
  if (s.values) kv.values.reserve(expected);
  reader.run(
      s.options.threads, parse_output::hashes, s.options.seed,
      [&](input_chunk& c) { check_values(s, c); },
      [&](input_chunk& c) {
        if (!s.values && kv.hashes.size() + c.values.size() > value_file_values) {
          throw error("value file " + s.value_file + " holds " + std::to_string(value_file_values) +
                      " values, fewer than the keys (" + reader.name(c.source) + " has more)");
        }
        kv.hashes.insert(kv.hashes.end(), c.values.begin(), c.values.end());
        if (s.values)
          kv.values.insert(kv.values.end(), c.entry_values.begin(), c.entry_values.end());
        kv.keys_per_source[c.source] += c.key_count;
      });
  return kv;
}

/// Gives the keys the --value-file's values: one per key, each within --bits.
void attach_value_file(const build_settings& s, input_format format, const input_reader& reader,
                       std::vector<std::uint32_t> file_values, keyed_values& kv) {
  const std::uint64_t count = kv.hashes.size();
  if (file_values.size() != count) {
    throw error("value file " + s.value_file + " holds " + std::to_string(file_values.size()) +
                " values for " + std::to_string(count) + " keys: give one value per key");
  }
  kv.values = std::move(file_values);
  const std::uint64_t value_limit = value_limit_of(s);
  for (std::uint64_t i = 0; i < count; ++i) {
    if (kv.values[i] >= value_limit) {
      throw error("value file " + s.value_file + ": value " + std::to_string(kv.values[i]) +
                  " at byte " + std::to_string(8 * i) + " (for the key at " +
                  key_location(reader, kv, format, i) + ") " + too_wide_for_bits(s));
    }
  }
}

/// A --value-file read as the keys stream past, a chunk's values at a time: little-endian
/// 8-byte values, each below 2^32 and 2^--bits.
class value_file_stream {
 public:
  explicit value_file_stream(const build_settings& s)
      : s_(s), in_(s.value_file, std::ios::binary), limit_(value_limit_of(s)) {
    if (!in_) throw error("value file " + s.value_file + ": cannot open it");
  }

  /// The next `count` values into `values`.
  void read(std::uint64_t count, std::vector<std::uint32_t>& values) {
    raw_.resize(count);
    in_.read(reinterpret_cast<char*>(raw_.data()), static_cast<std::streamsize>(count * 8));
    if (static_cast<std::uint64_t>(in_.gcount()) != count * 8) {
      throw error("value file " + s_.value_file + " holds fewer values than the keys (" +
                  std::to_string(read_ + static_cast<std::uint64_t>(in_.gcount()) / 8) +
                  "): give one value per key");
    }
    values.resize(count);
    for (std::uint64_t i = 0; i < count; ++i) {
      std::uint64_t v;
      std::memcpy(&v, &raw_[i], 8);  // the file is little-endian, as this machine
      if (v >= limit_) {
        throw error("value file " + s_.value_file + ": value " + std::to_string(v) + " at byte " +
                    std::to_string(8 * (read_ + i)) + " " +
                    (v > UINT32_MAX ? "does not fit in 32 bits" : too_wide_for_bits(s_)));
      }
      values[i] = static_cast<std::uint32_t>(v);
    }
    read_ += count;
  }

  /// Throws if values are left over after the last key.
  void expect_end() {
    if (in_.peek() != std::char_traits<char>::eof()) {
      throw error("value file " + s_.value_file + " holds more values than the " +
                  std::to_string(read_) + " keys: give one value per key");
    }
  }

 private:
  const build_settings& s_;
  std::ifstream in_;
  std::uint64_t limit_;
  std::uint64_t read_ = 0;
  std::vector<std::uint64_t> raw_;
};

/// Reads every key (hashed) with its value, in input order: on_chunk(chunk, values) with the
/// chunk's key hashes in chunk.values and their values in `values`.
template <class OnChunk>
void read_hashes_and_values(const build_settings& s, input_reader& reader,
                            const OnChunk& on_chunk) {
  std::optional<value_file_stream> value_file;
  if (!s.values) value_file.emplace(s);
  reader.run(
      s.options.threads, parse_output::hashes, s.options.seed,
      [&](input_chunk& c) { check_values(s, c); },
      [&](input_chunk& c) {
        if (value_file) value_file->read(c.key_count, c.entry_values);
        on_chunk(c, c.entry_values);
      });
  if (value_file) value_file->expect_end();
}

/// The message for two values of one key in a streamed build: the inputs (and the value
/// file) are read again for the key's text and the two places it was given.
std::string conflict_message_from_inputs(const build_settings& s, input_format key_format,
                                         const conflicting_values_error& e) {
  if (!inputs_rereadable(s)) return e.what();
  input_reader again(s.inputs, key_format, records_of(s));
  std::optional<value_file_stream> value_file;
  if (!s.values) value_file.emplace(s);
  std::string key, first_place, places;
  std::uint32_t first_value = 0;
  again.run(
      1, parse_output::hashes_and_texts, s.options.seed, [](input_chunk&) {},
      [&](input_chunk& c) {
        if (value_file) value_file->read(c.key_count, c.entry_values);
        for (std::uint64_t i = 0; i < c.key_count && places.empty(); ++i) {
          if (c.values[i] != e.key_hash()) continue;
          const std::string place =
              key_format == input_format::u64
                  ? again.name(c.source) + " byte " + std::to_string(c.byte_offset + 8 * i)
                  : again.name(c.source) + ":" + std::to_string(c.first_line + i);
          if (first_place.empty()) {
            first_place = place;
            first_value = c.entry_values[i];
            if (key_format == input_format::lines) key = quote_for_message(c.texts[i]);
          } else if (c.entry_values[i] != first_value) {
            places = " (" + first_place + " and " + place + ")";
          }
        }
      });
  if (places.empty()) return e.what();  // not found (the inputs changed): the library's message
  if (key_format != input_format::lines) return e.what() + places;  // names the integer key
  return "duplicate key with different values: " + key + places;
}

/// The message for two values of one key in an in-memory build: as a streamed build's where
/// the inputs can be read again; else (stdin, pipes) the two places from the hashes in memory.
std::string conflict_message(const build_settings& s, input_format format, input_reader& reader,
                             const keyed_values& kv, const conflicting_values_error& e) {
  if (inputs_rereadable(s)) return conflict_message_from_inputs(s, format, e);
  const std::uint64_t n = kv.hashes.size();
  std::uint64_t first = n, second = n;
  for (std::uint64_t i = 0; i < n && second == n; ++i) {
    if (kv.hashes[i] != e.key_hash()) continue;
    if (first == n) {
      first = i;
    } else if (kv.values[i] != kv.values[first]) {
      second = i;
    }
  }
  if (second == n) return e.what();  // not found: keep the library's message
  const std::string places = " (" + key_location(reader, kv, format, first) + " and " +
                             key_location(reader, kv, format, second) + ")";
  if (format != input_format::lines) return e.what() + places;  // names the integer key
  return "duplicate key with different values: one key is given two values" + places;
}

/// A retrieval build within --memory-limit: keys and values stream into the bulk builder,
/// which spills them past the limit, as filter builds do. --bits must be given (each value is
/// checked against it as it passes).
int run_streamed_retrieval_build(const build_settings& s, input_format key_format,
                                 filter_variant variant, std::uint64_t memory_limit,
                                 clock_type::time_point start, progress_mode mode) {
  if (!s.bits_given) {
    throw error(
        "--memory-limit with values needs -r/--bits, the bits of each value: they must be "
        "known before the values stream past (in memory the largest value sets them)");
  }
  // A quarter of the reader's eighth for its chunks' data: a chunk of key<TAB>value lines
  // holds views, hashes and values too.
  const std::uint64_t reader_bytes = memory_limit / 8;
  input_reader reader(
      s.inputs, key_format, records_of(s),
      input_reader::chunk_bytes_within(reader_bytes / 4, s.options.threads, input_format::lines));
  build_progress progress;
  bulk_options options;
  options.build = build_options_of(s, variant);
  options.with_values = true;
  options.layout = file_layout_of(s.layout);
  options.memory_limit = memory_limit - reader_bytes;
  options.tmp_dir = s.tmp_dir;
  options.expected_keys = reader.estimated_keys();
  options.progress = &progress;
  options.metadata = metadata_of(s);
  // If reading fails, finish() is never called and the builder's destructor removes its
  // temporary files: nothing is written.
  bulk_builder builder(key_kind_of(key_format), options);
  if (mode != progress_mode::quiet)
    note_memory_limit(builder, options, false, memory_limit, reader_bytes);
  progress_display display(mode, "build", &reader.counters(), reader.total_bytes(), &progress);
  read_hashes_and_values(s, reader,
                         [&](const input_chunk& c, const std::vector<std::uint32_t>& values) {
                           builder.add_hashes(c.values.data(), values.data(), c.key_count);
                         });
  bulk_result result;
  try {
    result = builder.finish(s.output);
  } catch (const conflicting_values_error& e) {
    display.stop(false);
    throw error(conflict_message_from_inputs(s, key_format, e));
  }
  display.stop(true);
  if (mode != progress_mode::quiet) {
    print_summary(s, result, seconds_since(start),
                  reader.counters().bytes.load(std::memory_order_relaxed), false);
  }
  return 0;
}

}  // namespace

int run_retrieval_build(const build_settings& s, input_format format, filter_variant variant,
                        bool gpu, std::uint64_t memory_limit, clock_type::time_point start,
                        progress_mode mode) {
  if (memory_limit != 0) {
    return run_streamed_retrieval_build(s, format, variant, memory_limit, start, mode);
  }
  const input_format key_format = format;
  std::vector<std::uint32_t> file_values;
  if (!s.value_file.empty()) file_values = read_value_file(s.value_file);
  input_reader reader(s.inputs, format, records_of(s));
  build_options options = build_options_of(s, variant);
  // Fail on bad options before reading anything.
  (void)build_params(options, key_kind_of(key_format), true);
  const std::shared_ptr<const std::string> metadata = metadata_of(s);

  build_progress progress;
  progress_display display(mode, "build", &reader.counters(), reader.total_bytes(), &progress);
  keyed_values kv = read_keyed_values(s, reader, file_values.size());
  if (!s.values) attach_value_file(s, format, reader, std::move(file_values), kv);
  if (!s.bits_given) {
    options.result_bits = value_bits_for(
        kv.values.empty() ? 0 : *std::max_element(kv.values.begin(), kv.values.end()));
  }

  progress.current.store(build_progress::solving, std::memory_order_relaxed);
  const std::uint64_t count = kv.hashes.size();
  build_stats stats;
  filter f;
  try {
    f = gpu ? build_retrieval_on_gpu(kv.hashes.data(), kv.values.data(), count,
                                     key_kind_of(key_format), options)
            : filter::build_from_hashes(kv.hashes.data(), kv.values.data(), count,
                                        key_kind_of(key_format), options, &stats);
  } catch (const conflicting_values_error& e) {
    display.stop(false);
    throw error(conflict_message(s, key_format, reader, kv, e));
  }
  progress.current.store(build_progress::writing, std::memory_order_relaxed);
  if (metadata) f.set_metadata(*metadata);
  f.save(s.output, file_layout_of(s.layout));
  progress.current.store(build_progress::finished, std::memory_order_relaxed);
  display.stop(true);
  if (mode != progress_mode::quiet) {
    bulk_result result;
    result.params = f.params();
    result.input_keys = count;
    result.key_count = f.key_count();
    result.file_bytes = f.size_bytes();
    result.num_layers = f.num_layers();
    result.stats = stats;
    print_summary(s, result, seconds_since(start),
                  reader.counters().bytes.load(std::memory_order_relaxed), gpu);
  }
  return 0;
}

}  // namespace ribbon::cli
