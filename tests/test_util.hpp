/// @file test_util.hpp
/// Small helpers shared by the test suites: the size scale, deterministic key generators,
/// aligned buffers and temporary directories.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace ribbon_test {

/// RIBBON_TEST_SCALE (default 1.0): CI sets e.g. 0.1 under sanitizers to scale the large
/// sizes down. Sizes that matter for the structure never go below their given minimum.
inline double test_scale() {
  static const double scale = [] {
    const char* text = std::getenv("RIBBON_TEST_SCALE");
    if (text == nullptr || *text == '\0') return 1.0;
    char* end = nullptr;
    const double value = std::strtod(text, &end);
    return (end != text && value > 0) ? value : 1.0;
  }();
  return scale;
}

/// `n` scaled by RIBBON_TEST_SCALE, but at least `minimum`.
inline std::uint64_t scaled(std::uint64_t n, std::uint64_t minimum) {
  const auto value = static_cast<std::uint64_t>(static_cast<double>(n) * test_scale());
  return std::max(value, minimum);
}

/// SplitMix64's output function: a bijection of the 64-bit integers.
inline std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

/// A small deterministic pseudo-random generator (SplitMix64).
class rng {
 public:
  explicit rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    state_ += 0x9E3779B97F4A7C15ULL;
    return splitmix(state_);
  }
  /// Uniform in [0, bound) (bound > 0), by multiply-shift.
  std::uint64_t below(std::uint64_t bound) {
    __extension__ typedef unsigned __int128 u128;
    return static_cast<std::uint64_t>((static_cast<u128>(next()) * bound) >> 64);
  }
  /// Uniform in [lo, hi].
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi) { return lo + below(hi - lo + 1); }

 private:
  std::uint64_t state_;
};

/// The i-th key of the key family `family`: keys of one family with distinct indexes are
/// distinct (splitmix is a bijection), so [0, n) are members and [n, n + m) non-members.
inline std::uint64_t key_at(std::uint64_t family, std::uint64_t i) {
  return splitmix(i ^ (family << 48) ^ (family >> 16));
}

/// Keys key_at(family, first .. first + count - 1).
inline std::vector<std::uint64_t> keys_range(std::uint64_t family, std::uint64_t first,
                                             std::uint64_t count) {
  std::vector<std::uint64_t> keys(count);
  for (std::uint64_t i = 0; i < count; ++i) keys[i] = key_at(family, first + i);
  return keys;
}

/// Distinct byte-string keys of varied lengths (0 .. ~48 bytes, including binary bytes and
/// an empty string for index 0): "k<i>" followed by a pseudo-random tail.
inline std::vector<std::string> string_keys(std::uint64_t family, std::uint64_t first,
                                            std::uint64_t count) {
  std::vector<std::string> keys;
  keys.reserve(count);
  for (std::uint64_t i = first; i < first + count; ++i) {
    if (i == 0) {
      keys.emplace_back();
      continue;
    }
    // The decimal index followed by a separator that never occurs in it keeps keys distinct.
    std::string key = std::to_string(family) + ":" + std::to_string(i) + "|";
    const std::uint64_t h = splitmix(i * 31 + family);
    const std::uint64_t tail = h % 40;
    for (std::uint64_t j = 0; j < tail; ++j) {
      key.push_back(static_cast<char>(splitmix(h + j) & 0xFF));
    }
    keys.push_back(std::move(key));
  }
  return keys;
}

/// Views of `keys`.
inline std::vector<std::string_view> views(const std::vector<std::string>& keys) {
  return std::vector<std::string_view>(keys.begin(), keys.end());
}

/// 64-byte aligned bytes (parse_image requires an aligned image).
class aligned_buffer {
 public:
  explicit aligned_buffer(std::size_t size)
      : size_(size),
        data_(static_cast<unsigned char*>(std::aligned_alloc(64, (size + 64) / 64 * 64))) {
    if (data_ == nullptr) throw std::bad_alloc();
  }
  aligned_buffer(const unsigned char* bytes, std::size_t size) : aligned_buffer(size) {
    if (size) std::memcpy(data_.get(), bytes, size);
  }
  unsigned char* data() { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  struct free_deleter {
    void operator()(unsigned char* p) const { std::free(p); }
  };
  std::size_t size_;
  std::unique_ptr<unsigned char, free_deleter> data_;
};

/// A fresh temporary directory, removed with its contents on destruction.
class temp_dir {
 public:
  temp_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ribbon-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  /// Names of the entries of the directory `dir` (default: this one), sorted.
  std::vector<std::string> entries(const std::filesystem::path& dir = {}) const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir.empty() ? path_ : dir)) {
      names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace ribbon_test
