// Python keys -> the key arrays the C++ builders and queries take.
//
// Integer keys (key_kind::u64) become a uint64 array, byte-string keys (key_kind::bytes) an
// array of std::string_view, read in place wherever the Python object allows:
//   numpy uint64/int64 arrays (contiguous)             the array's memory
//   other numpy integer arrays, strided arrays          converted to uint64 (signed: two's
//                                                       complement, so -1 is 2^64 - 1)
//   numpy bytes arrays (dtype S), str arrays (dtype U)  views of the items (U: UTF-8 encoded
//                                                       first); numpy drops trailing NULs
//   pyarrow Array/ChunkedArray of integers             as the numpy arrays (nulls rejected)
//   pyarrow string, large_string, binary, large_binary views into the data buffer, from the
//                                                       offsets buffer (nulls rejected)
//   any other iterable of int, bytes or str            ints converted, bytes viewed, str
//                                                       viewed as UTF-8
// The same keys give the same key hashes as `ribbon build` (u64 files: integers; lines
// files: byte strings), so a Python build writes the CLI's bytes.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ribbon/group_names.hpp"
#include "ribbon/hash.hpp"

namespace ribbon::python {

/// Keys of one kind as the C++ API takes them. Points into the Python objects it keeps
/// references to, or into its own converted copy. Make it with the GIL held (to_key_views);
/// read it with or without the GIL; destroy it with the GIL held.
/// An Arrow string or binary array (offset_bytes 4) or a large_ one (8), in its buffers:
/// key i is the bytes [offset(i), offset(i + 1)) of `data`.
struct arrow_strings {
  const unsigned char* offsets = nullptr;  ///< the array's first offset (its slice offset applied)
  unsigned offset_bytes = 0;               ///< 0: none
  const unsigned char* data = nullptr;
  std::uint64_t count = 0;

  std::int64_t offset(std::uint64_t i) const {
    if (offset_bytes == 4) return reinterpret_cast<const std::int32_t*>(offsets)[i];
    return reinterpret_cast<const std::int64_t*>(offsets)[i];
  }
};

class key_views {
 public:
  key_kind kind() const { return kind_; }
  std::uint64_t size() const { return size_; }
  /// kind() == key_kind::u64: size() integer keys.
  const std::uint64_t* integers() const { return integers_; }
  /// kind() == key_kind::bytes: size() byte strings (unless arrow_chunks() holds them).
  const std::string_view* strings() const { return strings_.data(); }
  /// Byte-string keys of to_arrow_key_views() read in their Arrow arrays' buffers, chunk after
  /// chunk (empty otherwise, and strings() holds the keys).
  const std::vector<arrow_strings>& arrow_chunks() const { return arrow_chunks_; }
  /// A view of every key of arrow_chunks(), in order (where a caller needs one array).
  std::vector<std::string_view> views_of_arrow_chunks() const;

 private:
  friend class key_collector;
  key_kind kind_ = key_kind::u64;
  std::uint64_t size_ = 0;
  const std::uint64_t* integers_ = nullptr;
  std::vector<std::uint64_t> integer_copy_;
  std::vector<std::string_view> strings_;
  std::vector<arrow_strings> arrow_chunks_;
  /// What integers_, strings_ and arrow_chunks_ point into.
  std::vector<nanobind::ndarray<nanobind::ro, nanobind::ndim<1>, nanobind::device::cpu>> arrays_;
  std::vector<nanobind::object> owners_;
};

/// Reads `keys` (see the file comment). `expected`: the kind the caller needs (a query of a
/// filter), also the kind of an empty iterable (u64 if not given). Raises ribbon.KeyTypeError
/// for unsupported types or mixed kinds, ribbon.KeysError for nulls and integers out of range,
/// ribbon.QueryError for keys of the other kind than `expected`.
key_views to_key_views(nanobind::handle keys, std::optional<key_kind> expected = std::nullopt);

/// to_key_views() for builds and queries: Arrow string and binary arrays (chunked or not) are
/// read in their buffers, without a view per key (key_views::arrow_chunks()).
key_views to_arrow_key_views(nanobind::handle keys, std::optional<key_kind> expected);

/// Calls f(offsets) with an Arrow chunk's offsets as std::int32_t or std::int64_t.
template <class F>
decltype(auto) with_offsets(const arrow_strings& chunk, const F& f) {
  if (chunk.offset_bytes == 4) return f(reinterpret_cast<const std::int32_t*>(chunk.offsets));
  return f(reinterpret_cast<const std::int64_t*>(chunk.offsets));
}

/// out[i] = the key hash `ribbon build` uses for keys[i] with this seed: hash_u64(key,
/// seed_mix(seed)) for integers, hash_bytes(data, size, seed) for byte strings. No GIL needed.
void hash_keys(const key_views& keys, std::uint64_t seed, std::uint64_t* out);

/// out[i] = the hash a filter set of this seed stores for (groups[i], keys[i]) (what
/// set_hasher::pair gives; groups.size() == keys.size()). No GIL needed.
void hash_pairs(const key_views& groups, const key_views& keys, std::uint64_t seed,
                std::uint64_t* out);

/// A filter set's group names of kind `kind` from a collection (numpy, pyarrow or any
/// iterable of int, str or bytes), sorted and each once. Make it with the GIL held.
group_names to_group_names(nanobind::handle names, group_kind kind);

/// The key_kind named "u64" or "bytes"; raises ribbon.OptionsError for other names.
key_kind key_kind_from_name(const std::string& name);

/// A filter set's group kind, named as key kinds are ("u64", "bytes"); none without a name.
group_kind group_kind_named(const std::optional<std::string>& name);

/// values= of a retrieval build: any integer array or iterable, each value in [0, 2^32);
/// raises ribbon.KeysError unless there are `key_count` of them.
std::vector<std::uint32_t> to_values(nanobind::handle values, std::uint64_t key_count);

}  // namespace ribbon::python
