// The C ABI of ribbon/c.h over ribbon::filter's loading and query plan (no oneTBB: this file,
// filter.cpp and common/ make the ribbon_reader library; batched calls run the prefetching
// pipeline of query_kernels.hpp on std::threads).
#include "ribbon/c.h"

#include <algorithm>
#include <exception>
#include <functional>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "query_kernels.hpp"
#include "ribbon/filter.hpp"
#include "ribbon/version.hpp"

struct ribbon_reader {
  ribbon::filter filter;
};

namespace {

thread_local std::string last_error;

/// Runs f(), returning RIBBON_OK, or RIBBON_ERROR with the message kept for ribbon_last_error.
template <class F>
int guarded(F&& f) {
  try {
    f();
    last_error.clear();
    return RIBBON_OK;
  } catch (const std::exception& e) {
    last_error = e.what();
  } catch (...) {
    last_error = "unknown error";
  }
  return RIBBON_ERROR;
}

void require(bool condition, const char* message) {
  if (!condition) throw ribbon::error(message);
}

/// The reader, checked to be a filter (retrieval == false; or a retrieval structure with check
/// bits, which answers membership too) or retrieval structure of `kind`.
const ribbon::filter& checked(const ribbon_reader* reader, ribbon::key_kind kind, bool retrieval) {
  require(reader != nullptr, "reader is NULL");
  const ribbon::filter& f = reader->filter;
  // The scalar queries check kind and variant and throw the library's message.
  const bool answers_membership = !f.is_retrieval() || f.params().check_bits != 0;
  if (f.params().keys != kind || f.is_set() ||
      (retrieval ? !f.is_retrieval() : !answers_membership)) {
    if (retrieval) {
      (void)(kind == ribbon::key_kind::u64 ? f.lookup(std::uint64_t{0})
                                           : f.lookup(std::string_view()));
    } else {
      (void)(kind == ribbon::key_kind::u64 ? f.contains(std::uint64_t{0})
                                           : f.contains(std::string_view()));
    }
  }
  return f;
}

/// Checks that Arrow-layout offsets do not decrease (the key hashes read them unchecked).
void check_offsets(const void* data, const uint64_t* offsets, uint64_t count) {
  require(count == 0 || data != nullptr || offsets[count] == offsets[0], "data is NULL");
  for (uint64_t i = 0; i < count; ++i) {
    require(offsets[i] <= offsets[i + 1], "byte-string key offsets must not decrease");
  }
}

/// Runs run(begin, end) over [0, count) on `threads` threads (0: every hardware thread; at
/// most 8 a hardware thread, as the CLI allows), the calling thread one of them; batches too
/// small to share run on the calling thread alone. A thread that cannot be started is an
/// error (the started ones are joined first: a joinable std::thread must not be destroyed).
template <class Run>
void run_on_threads(uint64_t count, uint32_t threads, const Run& run) {
  constexpr uint64_t min_keys_per_thread = uint64_t{1} << 15;
  const uint64_t cores = std::max(1u, std::thread::hardware_concurrency());
  const uint64_t wanted = threads != 0 ? std::min<uint64_t>(threads, 8 * cores) : cores;
  const uint64_t n = std::max<uint64_t>(1, std::min(wanted, count / min_keys_per_thread));
  std::vector<std::thread> helpers;
  auto join_all = [&helpers] {
    for (std::thread& helper : helpers) helper.join();
  };
  try {
    for (uint64_t t = 1; t < n; ++t) {
      helpers.emplace_back([&run, t, n, count] { run(count * t / n, count * (t + 1) / n); });
    }
  } catch (...) {
    join_all();
    throw;
  }
  run(0, count / n);
  join_all();
}

/// Batched membership through the filter's plan on `threads` threads.
template <class KeyHash>
void contains_on_threads(const ribbon::filter& f, uint64_t count, const KeyHash& key_hash,
                         uint8_t* out, uint32_t threads) {
  run_on_threads(count, threads, [&](uint64_t begin, uint64_t end) {
    ribbon::detail::kernels::membership_keys(f.params(), f.queries().plan, begin, end, key_hash,
                                             out);
  });
}

/// Batched retrieval through the filter's plan on `threads` threads; found (where given): 1
/// where the check bits match.
template <class KeyHash>
void lookup_on_threads(const ribbon::filter& f, uint64_t count, const KeyHash& key_hash,
                       uint32_t* out, uint8_t* found, uint32_t threads) {
  run_on_threads(count, threads, [&](uint64_t begin, uint64_t end) {
    ribbon::detail::kernels::lookup_checked_keys(f.params(), f.queries().plan, begin, end, key_hash,
                                                 out, found);
  });
}

/// Key hashes of integer keys.
struct u64_key_hash {
  const ribbon::filter_ref& f;
  const uint64_t* keys;
  uint64_t operator()(uint64_t i) const { return f.key_hash(keys[i]); }
};

/// Key hashes of Arrow-layout byte-string keys.
ribbon::offsets_key_hash<uint64_t> bytes_key_hash(const ribbon::filter& f, const void* data,
                                                  const uint64_t* offsets) {
  return {offsets, static_cast<const unsigned char*>(data), f.ref().params.seed};
}

void check_batch(const void* keys, const void* out, uint64_t count) {
  require(count == 0 || (keys != nullptr && out != nullptr), "keys or out is NULL");
}

int open_with(ribbon_reader** out, const std::function<ribbon::filter()>& open) {
  return guarded([&] {
    require(out != nullptr, "out is NULL");
    *out = nullptr;
    ribbon::filter f = open();
    *out = new ribbon_reader{std::move(f)};
  });
}

/// One (group, key) query of a filter set, ask(filter): 1, 0 or RIBBON_ERROR (the library's
/// message).
template <class Ask>
int contains_in(const ribbon_reader* reader, const Ask& ask) {
  int found = RIBBON_ERROR;
  guarded([&] {
    require(reader != nullptr, "reader is NULL");
    found = ask(reader->filter) ? 1 : 0;
  });
  return found;
}

std::string_view bytes_of(const void* data, uint64_t size, const char* what) {
  require(data != nullptr || size == 0, what);
  return {static_cast<const char*>(data), static_cast<std::size_t>(size)};
}

}  // namespace

extern "C" {

int ribbon_c_api_version(void) {
  return RIBBON_C_API_VERSION;
}

const char* ribbon_version(void) {
  return ribbon::release().version;
}

void ribbon_format_versions(uint32_t* oldest_read, uint32_t* newest_read, uint32_t* oldest_written,
                            uint32_t* newest_written) {
  constexpr ribbon::release_info release = ribbon::release();
  if (oldest_read != nullptr) *oldest_read = release.oldest_read_format;
  if (newest_read != nullptr) *newest_read = release.newest_read_format;
  if (oldest_written != nullptr) *oldest_written = release.oldest_written_format;
  if (newest_written != nullptr) *newest_written = release.newest_written_format;
}

const char* ribbon_last_error(void) {
  return last_error.c_str();
}

int ribbon_open_file(const char* path, int verify_checksums, ribbon_reader** out) {
  return open_with(out, [&] {
    require(path != nullptr, "path is NULL");
    ribbon::load_options options;
    options.verify_checksums = verify_checksums != 0;
    return ribbon::filter::load(path, options);
  });
}

int ribbon_open_buffer(const void* data, uint64_t size, int verify_checksums, ribbon_reader** out) {
  return open_with(out, [&] {
    require(data != nullptr || size == 0, "data is NULL");
    ribbon::load_options options;
    options.verify_checksums = verify_checksums != 0;
    return ribbon::filter::from_bytes(static_cast<const unsigned char*>(data), size, options);
  });
}

void ribbon_close(ribbon_reader* reader) {
  delete reader;
}

int ribbon_get_info(const ribbon_reader* reader, ribbon_info* out) {
  return guarded([&] {
    require(reader != nullptr && out != nullptr, "reader or out is NULL");
    const ribbon::filter& f = reader->filter;
    const ribbon::filter_params& p = f.params();
    *out = ribbon_info{};
    out->format_version = f.format_version();
    out->variant = static_cast<uint32_t>(p.variant);
    out->key_kind = static_cast<uint32_t>(p.keys);
    out->width = p.width;
    out->result_bits = p.result_bits;
    out->check_bits = p.check_bits;
    out->num_layers = f.num_layers();
    out->is_retrieval = f.is_retrieval() ? 1 : 0;
    out->key_count = f.key_count();
    out->file_bytes = f.size_bytes();
    out->seed = p.seed;
    out->shard_size = p.shard_size;
    out->bits_per_key = f.bits_per_key();
    out->expected_fpr = f.is_retrieval() ? 0.0 : ribbon::expected_fpr(p);
  });
}

int ribbon_contains_u64(const ribbon_reader* reader, uint64_t key) {
  int found = RIBBON_ERROR;
  guarded([&] { found = checked(reader, ribbon::key_kind::u64, false).contains(key) ? 1 : 0; });
  return found;
}

int ribbon_contains_bytes(const ribbon_reader* reader, const void* key, uint64_t size) {
  int found = RIBBON_ERROR;
  guarded([&] {
    require(key != nullptr || size == 0, "key is NULL");
    const std::string_view k(static_cast<const char*>(key), static_cast<std::size_t>(size));
    found = checked(reader, ribbon::key_kind::bytes, false).contains(k) ? 1 : 0;
  });
  return found;
}

int ribbon_get_set_info(const ribbon_reader* reader, uint32_t* group_kind, uint64_t* group_count) {
  return guarded([&] {
    require(reader != nullptr && group_kind != nullptr && group_count != nullptr,
            "reader, group_kind or group_count is NULL");
    *group_kind = static_cast<uint32_t>(reader->filter.params().groups);
    *group_count = reader->filter.group_count();
  });
}

int ribbon_contains_in_u64(const ribbon_reader* reader, uint64_t group, uint64_t key) {
  return contains_in(reader, [&](const ribbon::filter& f) { return f.contains_in(group, key); });
}

int ribbon_contains_in_u64_bytes(const ribbon_reader* reader, uint64_t group, const void* key,
                                 uint64_t key_size) {
  return contains_in(reader, [&](const ribbon::filter& f) {
    return f.contains_in(group, bytes_of(key, key_size, "key is NULL"));
  });
}

int ribbon_contains_in_bytes_u64(const ribbon_reader* reader, const void* group,
                                 uint64_t group_size, uint64_t key) {
  return contains_in(reader, [&](const ribbon::filter& f) {
    return f.contains_in(bytes_of(group, group_size, "group is NULL"), key);
  });
}

int ribbon_contains_in_bytes(const ribbon_reader* reader, const void* group, uint64_t group_size,
                             const void* key, uint64_t key_size) {
  return contains_in(reader, [&](const ribbon::filter& f) {
    return f.contains_in(bytes_of(group, group_size, "group is NULL"),
                         bytes_of(key, key_size, "key is NULL"));
  });
}

int ribbon_contains_u64_batch(const ribbon_reader* reader, const uint64_t* keys, uint64_t count,
                              uint8_t* out) {
  return ribbon_contains_u64_batch_threads(reader, keys, count, out, 1);
}

int ribbon_contains_bytes_batch(const ribbon_reader* reader, const void* data,
                                const uint64_t* offsets, uint64_t count, uint8_t* out) {
  return ribbon_contains_bytes_batch_threads(reader, data, offsets, count, out, 1);
}

int ribbon_contains_u64_batch_threads(const ribbon_reader* reader, const uint64_t* keys,
                                      uint64_t count, uint8_t* out, uint32_t threads) {
  return guarded([&] {
    const ribbon::filter& f = checked(reader, ribbon::key_kind::u64, false);
    check_batch(keys, out, count);
    contains_on_threads(f, count, u64_key_hash{f.ref(), keys}, out, threads);
  });
}

int ribbon_contains_bytes_batch_threads(const ribbon_reader* reader, const void* data,
                                        const uint64_t* offsets, uint64_t count, uint8_t* out,
                                        uint32_t threads) {
  return guarded([&] {
    const ribbon::filter& f = checked(reader, ribbon::key_kind::bytes, false);
    check_batch(offsets, out, count);
    check_offsets(data, offsets, count);
    contains_on_threads(f, count, bytes_key_hash(f, data, offsets), out, threads);
  });
}

int ribbon_lookup_u64(const ribbon_reader* reader, uint64_t key, uint32_t* value) {
  return guarded([&] {
    require(value != nullptr, "value is NULL");
    *value = checked(reader, ribbon::key_kind::u64, true).lookup(key);
  });
}

int ribbon_lookup_bytes(const ribbon_reader* reader, const void* key, uint64_t size,
                        uint32_t* value) {
  return guarded([&] {
    require(value != nullptr && (key != nullptr || size == 0), "key or value is NULL");
    const std::string_view k(static_cast<const char*>(key), static_cast<std::size_t>(size));
    *value = checked(reader, ribbon::key_kind::bytes, true).lookup(k);
  });
}

int ribbon_lookup_u64_batch(const ribbon_reader* reader, const uint64_t* keys, uint64_t count,
                            uint32_t* out) {
  return ribbon_lookup_u64_batch_threads(reader, keys, count, out, 1);
}

int ribbon_lookup_bytes_batch(const ribbon_reader* reader, const void* data,
                              const uint64_t* offsets, uint64_t count, uint32_t* out) {
  return ribbon_lookup_bytes_batch_threads(reader, data, offsets, count, out, 1);
}

int ribbon_lookup_u64_batch_threads(const ribbon_reader* reader, const uint64_t* keys,
                                    uint64_t count, uint32_t* out, uint32_t threads) {
  return guarded([&] {
    const ribbon::filter& f = checked(reader, ribbon::key_kind::u64, true);
    check_batch(keys, out, count);
    lookup_on_threads(f, count, u64_key_hash{f.ref(), keys}, out, nullptr, threads);
  });
}

int ribbon_lookup_bytes_batch_threads(const ribbon_reader* reader, const void* data,
                                      const uint64_t* offsets, uint64_t count, uint32_t* out,
                                      uint32_t threads) {
  return guarded([&] {
    const ribbon::filter& f = checked(reader, ribbon::key_kind::bytes, true);
    check_batch(offsets, out, count);
    check_offsets(data, offsets, count);
    lookup_on_threads(f, count, bytes_key_hash(f, data, offsets), out, nullptr, threads);
  });
}

int ribbon_find_u64(const ribbon_reader* reader, uint64_t key, uint32_t* value) {
  int found = RIBBON_ERROR;
  guarded([&] {
    require(value != nullptr, "value is NULL");
    const std::optional<uint32_t> v = checked(reader, ribbon::key_kind::u64, true).find(key);
    if (v) *value = *v;
    found = v ? 1 : 0;
  });
  return found;
}

int ribbon_find_bytes(const ribbon_reader* reader, const void* key, uint64_t size,
                      uint32_t* value) {
  int found = RIBBON_ERROR;
  guarded([&] {
    require(value != nullptr && (key != nullptr || size == 0), "key or value is NULL");
    const std::string_view k(static_cast<const char*>(key), static_cast<std::size_t>(size));
    const std::optional<uint32_t> v = checked(reader, ribbon::key_kind::bytes, true).find(k);
    if (v) *value = *v;
    found = v ? 1 : 0;
  });
  return found;
}

int ribbon_find_u64_batch_threads(const ribbon_reader* reader, const uint64_t* keys, uint64_t count,
                                  uint32_t* out, uint8_t* found, uint32_t threads) {
  return guarded([&] {
    const ribbon::filter& f = checked(reader, ribbon::key_kind::u64, true);
    check_batch(keys, out, count);
    require(count == 0 || found != nullptr, "found is NULL");
    lookup_on_threads(f, count, u64_key_hash{f.ref(), keys}, out, found, threads);
  });
}

int ribbon_find_bytes_batch_threads(const ribbon_reader* reader, const void* data,
                                    const uint64_t* offsets, uint64_t count, uint32_t* out,
                                    uint8_t* found, uint32_t threads) {
  return guarded([&] {
    const ribbon::filter& f = checked(reader, ribbon::key_kind::bytes, true);
    check_batch(offsets, out, count);
    require(count == 0 || found != nullptr, "found is NULL");
    check_offsets(data, offsets, count);
    lookup_on_threads(f, count, bytes_key_hash(f, data, offsets), out, found, threads);
  });
}

}  // extern "C"
