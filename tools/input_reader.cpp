// The reading half of the input pipeline (input.hpp): the serial stage that cuts inputs into
// chunks of whole records, and the pipeline around parse_chunk (input.cpp).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "input.hpp"
#include "ribbon/error.hpp"

namespace ribbon::cli {

namespace {

constexpr std::size_t default_chunk_bytes = std::size_t{8} << 20;
// Small enough for tests to cut lines across chunks; 16 keeps a u64 pair whole.
constexpr std::size_t min_chunk_bytes = 16;
constexpr std::size_t largest_chunk_bytes = std::size_t{1} << 30;

std::size_t chunk_bytes_from_environment() {
  const char* text = std::getenv("RIBBON_CLI_CHUNK_BYTES");
  if (text == nullptr || *text == '\0') return default_chunk_bytes;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || value == 0) {
    throw error(std::string("RIBBON_CLI_CHUNK_BYTES: not a positive number: '") + text + "'");
  }
  return static_cast<std::size_t>(value);
}

std::string errno_text(int code) {
  return std::strerror(code);
}

}  // namespace

input_reader::input_reader(std::vector<std::string> paths, input_format format,
                           input_records records, std::size_t max_chunk_bytes)
    : format_(format),
      records_(records),
      chunk_bytes_(std::clamp(max_chunk_bytes != 0
                                  ? std::min(max_chunk_bytes, chunk_bytes_from_environment())
                                  : chunk_bytes_from_environment(),
                              min_chunk_bytes, largest_chunk_bytes)) {
  if (format == input_format::u64 && records == input_records::key_values) {
    throw error("key<TAB>value lines are text: --format lines or hex64, not u64");
  }
  for (std::string& path : paths) {
    source s;
    s.name = path == "-" ? "<stdin>" : path;
    s.path = std::move(path);
    struct stat st;
    if (s.path == "-") {
      // A regular file redirected to stdin has a size too (from the current offset on).
      const off_t position = ::lseek(STDIN_FILENO, 0, SEEK_CUR);
      if (::fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode) && position >= 0) {
        s.regular = true;
        s.size = static_cast<std::uint64_t>(std::max<off_t>(st.st_size - position, 0));
      }
    } else {
      // O_NONBLOCK: opening a named pipe must not wait for its writer here.
      const int fd = ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
      if (fd < 0) {
        const int open_errno = errno;
        throw error("cannot open " + s.name + ": " + errno_text(open_errno));
      }
      const bool ok = ::fstat(fd, &st) == 0;
      const int stat_errno = errno;
      ::close(fd);
      if (!ok) throw error("cannot stat " + s.name + ": " + errno_text(stat_errno));
      if (S_ISDIR(st.st_mode)) throw error(s.name + ": is a directory");
      if (S_ISREG(st.st_mode)) {
        s.regular = true;
        s.size = static_cast<std::uint64_t>(st.st_size);
      }
    }
    if (s.regular) {
      total_bytes_ += s.size;
    } else {
      all_sizes_known_ = false;
    }
    sources_.push_back(std::move(s));
  }
  estimate_keys();
}

input_reader::~input_reader() = default;

std::uint64_t input_reader::chunks_in_flight(std::uint32_t threads) {
  // Enough chunks in flight to keep every thread busy, few enough to bound memory (a
  // thread count above the machine's does not add any).
  const std::uint32_t cores = std::max(1u, std::thread::hardware_concurrency());
  const std::uint32_t busy = threads != 0 ? std::min(threads, cores) : cores;
  return 2 * std::uint64_t{busy} + 2;
}

std::size_t input_reader::chunk_bytes_within(std::uint64_t bytes, std::uint32_t threads,
                                             input_format format) {
  const std::uint64_t per_data_byte = format == input_format::u64 ? 2 : 5;
  const std::uint64_t chunk = bytes / (chunks_in_flight(threads) * per_data_byte);
  return static_cast<std::size_t>(
      std::clamp<std::uint64_t>(chunk, std::uint64_t{16} << 10, default_chunk_bytes));
}

std::size_t input_reader::record_bytes() const {
  if (format_ != input_format::u64) return 0;
  return records_ == input_records::pairs ? 16 : 8;
}

void input_reader::estimate_keys() {
  if (format_ == input_format::u64) {
    estimated_keys_ = total_bytes_ / 8;
    return;
  }
  // Lines: the average line length of the first bytes of the first regular input.
  for (const source& s : sources_) {
    if (!s.regular || s.size == 0) continue;
    const int fd = s.path == "-" ? STDIN_FILENO : ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    const off_t start = s.path == "-" ? ::lseek(fd, 0, SEEK_CUR) : 0;
    std::vector<char> sample(
        std::min<std::uint64_t>(s.size, std::min(chunk_bytes_, std::size_t{1} << 20)));
    const ssize_t got = start >= 0 ? ::pread(fd, sample.data(), sample.size(), start) : -1;
    if (fd != STDIN_FILENO) ::close(fd);
    if (got <= 0) return;
    const auto lines =
        static_cast<std::uint64_t>(std::count(sample.data(), sample.data() + got, '\n'));
    const double bytes_per_line = lines > 0 ? static_cast<double>(got) / static_cast<double>(lines)
                                            : static_cast<double>(got);
    estimated_keys_ =
        static_cast<std::uint64_t>(static_cast<double>(total_bytes_) / bytes_per_line) + 1;
    return;
  }
}

namespace {

void reserve_buffer(input_chunk& c, std::size_t capacity, std::size_t keep) {
  if (c.capacity >= capacity) return;
  std::unique_ptr<char[]> bigger(new char[capacity]);
  if (keep > 0) std::memcpy(bigger.get(), c.buffer.get(), keep);
  c.buffer = std::move(bigger);
  c.capacity = capacity;
}

}  // namespace

/// The serial read stage's position and the chunks in flight.
struct input_reader::state {
  explicit state(input_reader& r) : reader(r) {}
  input_reader& reader;

  // Chunks are owned here so that an exception anywhere in the pipeline frees them all.
  std::mutex pool_mutex;
  std::vector<std::unique_ptr<input_chunk>> all_chunks;
  std::vector<input_chunk*> free_chunks;

  std::size_t next_source = 0;
  std::size_t current = 0;
  int fd = -1;
  bool eof = false;
  bool stopped = false;      ///< an error chunk went out: read nothing more
  std::uint64_t offset = 0;  ///< bytes read from the current source
  std::vector<char> carry;   ///< the partial line (or key) after the last cut

  input_chunk* take() {
    std::lock_guard<std::mutex> lock(pool_mutex);
    if (free_chunks.empty()) {
      all_chunks.push_back(std::make_unique<input_chunk>());
      return all_chunks.back().get();
    }
    input_chunk* c = free_chunks.back();
    free_chunks.pop_back();
    return c;
  }
  void give(input_chunk* c) {
    std::lock_guard<std::mutex> lock(pool_mutex);
    free_chunks.push_back(c);
  }
  void close_source() {
    if (fd > STDIN_FILENO) ::close(fd);
    fd = -1;
  }
  ~state() { close_source(); }

  /// Makes `c` an error chunk (with its location in the message) and stops reading.
  input_chunk* fail(input_chunk* c, std::string message) {
    c->error = std::move(message);
    c->error_has_location = true;
    c->size = 0;
    stopped = true;
    close_source();
    return c;
  }

  /// Opens the next input when none is open: false once every input is read. An input that
  /// cannot be opened gives an error chunk in `failed`.
  bool open_next(input_chunk*& failed) {
    if (fd >= 0) return true;
    if (next_source == reader.sources_.size()) return false;
    current = next_source++;
    const source& s = reader.sources_[current];
    offset = 0;
    eof = false;
    carry.clear();
    fd = s.path == "-" ? STDIN_FILENO : ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int open_errno = errno;
      failed = fail(take(), "cannot open " + s.name + ": " + errno_text(open_errno));
      return true;
    }
    if (s.regular) (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return true;
  }

  /// A fresh chunk of the current input that starts with the carried partial line; returns
  /// the bytes it holds.
  std::size_t start_chunk(input_chunk& c) {
    c.source = current;
    c.byte_offset = offset - carry.size();
    c.first_line = 0;
    c.key_count = 0;
    c.error.clear();
    c.error_has_location = false;
    c.output.clear();
    c.positives = 0;
    reserve_buffer(c, std::max(reader.chunk_bytes_, 2 * carry.size()), 0);
    const std::size_t size = carry.size();
    if (size > 0) std::memcpy(c.buffer.get(), carry.data(), size);
    carry.clear();
    return size;
  }

  /// Reads into `c` after its first `size` bytes until it is full or the input ends; the
  /// error message of a failed read, else empty.
  std::string fill(input_chunk& c, std::size_t& size) {
    while (size < c.capacity && !eof) {
      const ssize_t n = ::read(fd, c.buffer.get() + size, c.capacity - size);
      if (n < 0) {
        const int read_errno = errno;
        if (read_errno == EINTR) continue;
        return "cannot read " + reader.sources_[current].name + " at byte " +
               std::to_string(offset) + ": " + errno_text(read_errno);
      }
      if (n == 0) {
        eof = true;
        break;
      }
      size += static_cast<std::size_t>(n);
      offset += static_cast<std::uint64_t>(n);
      reader.counters_.bytes.fetch_add(static_cast<std::uint64_t>(n), std::memory_order_relaxed);
    }
    return {};
  }

  /// The end of the last whole record in the first `size` bytes of a full chunk; 0 when a
  /// record is longer than the chunk. The rest is carried to the next chunk: the one way a
  /// record cut between chunks is joined.
  std::size_t whole_records_end(const input_chunk& c, std::size_t size) const {
    if (const std::size_t record = reader.record_bytes()) return size - size % record;
    const char* last_newline = static_cast<const char*>(::memrchr(c.buffer.get(), '\n', size));
    return last_newline != nullptr ? static_cast<std::size_t>(last_newline - c.buffer.get()) + 1
                                   : 0;
  }

  /// The next chunk of whole records of the open input, the partial one after it carried; or
  /// an error chunk; or nullptr when the input ended with nothing left.
  input_chunk* read_chunk() {
    input_chunk* c = take();
    std::size_t size = start_chunk(*c);
    std::size_t cut = 0;
    for (;;) {
      const std::string failed = fill(*c, size);
      if (!failed.empty()) return fail(c, failed);
      if (eof) break;
      cut = whole_records_end(*c, size);
      if (cut > 0) break;
      reserve_buffer(*c, 2 * c->capacity, size);  // a line longer than the buffer: read on
    }
    if (eof) {
      const source& s = reader.sources_[current];
      close_source();
      if (reader.format_ == input_format::u64 && size % 8 != 0) {
        const std::size_t trailing = size % 8;
        return fail(c, s.name + ": size " + std::to_string(offset) +
                           " bytes is not a multiple of 8 (u64 keys are 8-byte integers): " +
                           std::to_string(trailing) + " trailing bytes at offset " +
                           std::to_string(offset - trailing));
      }
      if (reader.format_ == input_format::u64 && size % reader.record_bytes() != 0) {  // pairs
        return fail(c, "--groups --format u64 reads (group, key) pairs of 8-byte integers: " +
                           s.name + " ends with a group and no key (an odd number of integers)");
      }
      if (size == 0) {
        give(c);
        return nullptr;
      }
      cut = size;
    } else {
      carry.assign(c->buffer.get() + cut, c->buffer.get() + size);
    }
    c->data = c->buffer.get();
    c->size = cut;
    return c;
  }
};

void input_reader::run(std::uint32_t threads, parse_output output, std::uint64_t seed,
                       const std::function<void(input_chunk&)>& process,
                       const std::function<void(input_chunk&)>& consume) {
  state st(*this);
  const input_format format = format_;
  const input_records records = records_;

  // Serial, in order: the next chunk of whole lines (or whole keys) of the current input.
  auto read_stage = [&](tbb::flow_control& fc) -> input_chunk* {
    while (!st.stopped) {
      input_chunk* failed = nullptr;
      if (!st.open_next(failed)) break;
      if (failed != nullptr) return failed;
      if (input_chunk* c = st.read_chunk()) return c;
    }
    fc.stop();
    return nullptr;
  };

  // Parallel: parse (and hash) the chunk, then the caller's work on it.
  auto parse_stage = [&](input_chunk* c) -> input_chunk* {
    if (!c->error.empty()) return c;
    parse_chunk(*c, format, records, output, seed);
    if (c->error.empty()) process(*c);
    return c;
  };

  // Serial, in order: line numbers, errors with their location, the caller's consumer.
  std::size_t line_source = 0;
  std::uint64_t line_base = 0;  // lines of line_source before this chunk
  auto consume_stage = [&](input_chunk* c) {
    if (c->source != line_source) {
      line_source = c->source;
      line_base = 0;
    }
    c->first_line = line_base + 1;
    if (!c->error.empty()) {
      if (c->error_has_location) throw error(c->error);
      throw error(sources_[c->source].name + ":" + std::to_string(c->first_line + c->error_line) +
                  ": " + c->error);
    }
    consume(*c);
    line_base += c->key_count;
    counters_.keys.fetch_add(c->key_count, std::memory_order_relaxed);
    st.give(c);
  };

  const int concurrency = threads != 0 ? static_cast<int>(threads) : tbb::task_arena::automatic;
  tbb::task_arena arena(concurrency);
  arena.execute([&] {
    tbb::parallel_pipeline(
        chunks_in_flight(static_cast<std::uint32_t>(arena.max_concurrency())),
        tbb::make_filter<void, input_chunk*>(tbb::filter_mode::serial_in_order, read_stage) &
            tbb::make_filter<input_chunk*, input_chunk*>(tbb::filter_mode::parallel, parse_stage) &
            tbb::make_filter<input_chunk*, void>(tbb::filter_mode::serial_in_order, consume_stage));
  });
  counters_.done.store(true, std::memory_order_relaxed);
}

}  // namespace ribbon::cli
