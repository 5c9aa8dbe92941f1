#include "ribbon/group_names.hpp"

#include <algorithm>
#include <cstring>

#include "ribbon/error.hpp"

namespace ribbon {

namespace {

void put_varint(std::vector<unsigned char>& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<unsigned char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<unsigned char>(v));
}

/// Reads a payload, failing with `source` and the reason on anything out of place.
class payload_reader {
 public:
  payload_reader(const unsigned char* data, std::uint64_t size, const std::string& source)
      : data_(data), size_(size), source_(source) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw error(source_ + ": group names: " + what);
  }
  std::uint64_t left() const { return size_ - at_; }
  bool done() const { return at_ == size_; }

  std::uint64_t u64() {
    if (left() < 8) fail("truncated count");
    std::uint64_t v;
    std::memcpy(&v, data_ + at_, 8);
    at_ += 8;
    return v;
  }
  /// A minimal LEB128 varint of at most 64 bits.
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
      if (done()) fail("truncated varint");
      const unsigned char byte = data_[at_++];
      if (shift == 63 && byte > 1) fail("varint beyond 64 bits");
      v |= std::uint64_t{byte & 0x7Fu} << shift;
      if ((byte & 0x80) == 0) {
        if (byte == 0 && shift > 0) fail("varint with a superfluous zero byte");
        return v;
      }
    }
  }
  std::string_view bytes(std::uint64_t n) {
    if (left() < n) fail("truncated name");
    std::string_view s(reinterpret_cast<const char*>(data_ + at_), static_cast<std::size_t>(n));
    at_ += n;
    return s;
  }

 private:
  const unsigned char* data_;
  std::uint64_t size_;
  std::uint64_t at_ = 0;
  const std::string& source_;
};

std::size_t common_prefix(std::string_view a, std::string_view b) {
  return static_cast<std::size_t>(
      std::mismatch(a.begin(),
                    a.begin() + static_cast<std::ptrdiff_t>(std::min(a.size(), b.size())),
                    b.begin())
          .first -
      a.begin());
}

template <class T>
void sort_unique(std::vector<T>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

group_names group_names::of(std::vector<std::uint64_t> names) {
  group_names g;
  g.kind_ = group_kind::u64;
  sort_unique(names);
  g.integers_ = std::move(names);
  return g;
}

group_names group_names::of(std::vector<std::string> names) {
  group_names g;
  g.kind_ = group_kind::bytes;
  sort_unique(names);  // std::string compares as unsigned chars (char_traits<char>::compare)
  g.strings_ = std::move(names);
  return g;
}

std::string group_names::text(std::uint64_t i) const {
  return kind_ == group_kind::u64 ? std::to_string(integers_[i]) : strings_[i];
}

std::vector<std::uint64_t> group_names::hashes(const set_hasher& hash) const {
  std::vector<std::uint64_t> out;
  out.reserve(size());
  for (std::uint64_t name : integers_) out.push_back(hash.group(name));
  for (const std::string& name : strings_) out.push_back(hash.group(std::string_view(name)));
  return out;
}

std::vector<unsigned char> group_names::encode() const {
  std::vector<unsigned char> out(8);
  const std::uint64_t count = size();
  std::memcpy(out.data(), &count, 8);
  std::uint64_t previous = 0;
  for (std::uint64_t name : integers_) {
    put_varint(out, name - previous);  // the first name is its own delta from 0
    previous = name;
  }
  std::string_view before;
  for (const std::string& name : strings_) {
    const std::size_t shared = common_prefix(before, name);
    put_varint(out, shared);
    put_varint(out, name.size() - shared);
    out.insert(out.end(), name.begin() + static_cast<std::ptrdiff_t>(shared), name.end());
    before = name;
  }
  return out;
}

group_names group_names::decode(const unsigned char* data, std::uint64_t size, group_kind kind,
                                const std::string& source) {
  payload_reader in(data, size, source);
  const std::uint64_t count = in.u64();
  // Every name takes at least one byte: a count beyond the payload is caught before any
  // allocation it would ask for.
  if (count > in.left()) in.fail("count " + std::to_string(count) + " beyond the payload");
  group_names g;
  g.kind_ = kind;
  if (kind == group_kind::u64) {
    g.integers_.reserve(count);
    std::uint64_t name = 0;
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t delta = in.varint();
      if (i > 0 && delta == 0) in.fail("names not strictly ascending");
      if (delta > UINT64_MAX - name) in.fail("names beyond 64 bits");
      name += delta;
      g.integers_.push_back(name);
    }
  } else if (kind == group_kind::bytes) {
    g.strings_.reserve(count);
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::string_view before = i ? std::string_view(g.strings_.back()) : std::string_view();
      const std::uint64_t shared = in.varint();
      if (shared > before.size()) in.fail("a shared prefix longer than the name before it");
      const std::string_view suffix = in.bytes(in.varint());
      std::string name(before.substr(0, static_cast<std::size_t>(shared)));
      name.append(suffix);
      if (i > 0 && !(before < std::string_view(name))) in.fail("names not strictly ascending");
      if (common_prefix(before, name) != shared) in.fail("a shared prefix that is not the longest");
      g.strings_.push_back(std::move(name));
    }
  } else {
    in.fail("not a filter set");
  }
  if (!in.done()) in.fail("bytes after the last name");
  return g;
}

}  // namespace ribbon
