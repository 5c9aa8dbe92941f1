#include "keys.hpp"

#include <nanobind/ndarray.h>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include "arrays.hpp"
#include "errors.hpp"

namespace nb = nanobind;

namespace ribbon::python {

using integer_array = nb::ndarray<nb::ro, nb::ndim<1>, nb::device::cpu>;

/// str(object).
std::string text_of(nb::handle object) {
  nb::object text = nb::steal(PyObject_Str(object.ptr()));
  if (!text.is_valid()) throw nb::python_error();
  return nb::cast<std::string>(text);
}

/// Appends views of the keys of an Arrow chunk (its offsets checked when it was added).
void append_views_of(const arrow_strings& chunk, std::vector<std::string_view>& views) {
  views.reserve(views.size() + chunk.count);
  for (std::uint64_t i = 0; i < chunk.count; ++i) {
    const std::int64_t begin = chunk.offset(i), end = chunk.offset(i + 1);
    views.emplace_back(reinterpret_cast<const char*>(chunk.data) + begin,
                       static_cast<std::uint64_t>(end - begin));
  }
}

/// Gathers the keys of one or more sources (array chunks) into a key_views.
class key_collector {
 public:
  /// `in_place`: Arrow string arrays stay in their buffers (key_views::arrow_chunks()).
  key_collector(std::optional<key_kind> expected, bool in_place)
      : expected_(expected), in_place_(in_place) {}

  void add(nb::handle keys) {
    if (PyUnicode_Check(keys.ptr()) || PyBytes_Check(keys.ptr()) || PyLong_Check(keys.ptr())) {
      raise(failure::key_type,
            "keys must be a collection of keys (a list, an array), not a single " +
                std::string(Py_TYPE(keys.ptr())->tp_name));
    }
    if (nb::hasattr(keys, "chunks") && nb::hasattr(keys, "num_chunks")) {  // pyarrow.ChunkedArray
      for (nb::handle chunk : keys.attr("chunks")) add_arrow(chunk);
    } else if (nb::hasattr(keys, "buffers") && nb::hasattr(keys, "null_count") &&
               nb::hasattr(keys, "type")) {  // pyarrow.Array
      add_arrow(keys);
    } else if (nb::hasattr(keys, "dtype") && nb::hasattr(keys, "__array_interface__")) {
      add_numpy(keys);
    } else {
      add_iterable(keys);
    }
  }

  key_views finish() {
    if (!kind_) kind_ = expected_.value_or(key_kind::u64);
    check_expected(*kind_);
    key_views v;
    v.kind_ = *kind_;
    if (*kind_ == key_kind::bytes && in_place_ && !arrow_chunks_.empty() && strings_.empty()) {
      for (const arrow_strings& chunk : arrow_chunks_) v.size_ += chunk.count;
      v.arrow_chunks_ = std::move(arrow_chunks_);
    } else if (*kind_ == key_kind::bytes) {
      for (const arrow_strings& chunk : arrow_chunks_) append_views(chunk);
      v.size_ = strings_.size();
      v.strings_ = std::move(strings_);
    } else if (arrays_.size() == 1 && integer_copy_.empty() && is_u64_contiguous(arrays_[0])) {
      v.size_ = arrays_[0].shape(0);
      v.integers_ = static_cast<const std::uint64_t*>(arrays_[0].data());
    } else {
      for (const integer_array& a : arrays_) append_converted(a);
      v.size_ = integer_copy_.size();
      v.integer_copy_ = std::move(integer_copy_);
      v.integers_ = v.integer_copy_.data();
    }
    v.arrays_ = std::move(arrays_);
    v.owners_ = std::move(owners_);
    return v;
  }

 private:
  void set_kind(key_kind kind, const char* what) {
    if (kind_ && *kind_ != kind) {
      raise(failure::key_type, std::string("keys mix integers and byte strings (") + what + ")");
    }
    kind_ = kind;
  }

  void check_expected(key_kind kind) const {
    if (expected_ && *expected_ != kind) {
      raise(failure::query, std::string("this filter was built from ") +
                                (*expected_ == key_kind::u64 ? "64-bit integer" : "byte-string") +
                                " keys and cannot be queried with " +
                                (kind == key_kind::u64 ? "64-bit integer" : "byte-string") +
                                " keys");
    }
  }

  static bool is_u64_contiguous(const integer_array& a) {
    return a.dtype().bits == 64 && a.stride(0) == 1;  // uint64 or int64: the same bits
  }

  /// Appends a numpy integer array, converted to uint64 (signed values sign-extended).
  void append_converted(const integer_array& a) {
    const std::uint64_t n = a.shape(0);
    const std::int64_t stride = a.stride(0);
    const auto* base = static_cast<const unsigned char*>(a.data());
    const bool is_signed = a.dtype().code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Int);
    const std::size_t bytes = a.dtype().bits / 8;
    const std::uint64_t start = integer_copy_.size();
    integer_copy_.resize(start + n);
    std::uint64_t* out = integer_copy_.data() + start;
    auto convert = [&](auto tag) {
      using T = decltype(tag);
      for (std::uint64_t i = 0; i < n; ++i) {
        T v;
        std::memcpy(&v, base + static_cast<std::int64_t>(i) * stride * std::int64_t(sizeof(T)),
                    sizeof(T));
        out[i] = static_cast<std::uint64_t>(v);
      }
    };
    switch (bytes * 2 + (is_signed ? 1 : 0)) {
      case 2: return convert(std::uint8_t{});
      case 3: return convert(std::int8_t{});
      case 4: return convert(std::uint16_t{});
      case 5: return convert(std::int16_t{});
      case 8: return convert(std::uint32_t{});
      case 9: return convert(std::int32_t{});
      case 16: return convert(std::uint64_t{});
      default: return convert(std::int64_t{});
    }
  }

  void add_numpy(nb::handle array) {
    const std::string kind = nb::cast<std::string>(array.attr("dtype").attr("kind"));
    const auto ndim = nb::cast<std::int64_t>(array.attr("ndim"));
    if (ndim != 1) {
      raise(failure::key_type,
            "key arrays must be one-dimensional, not " + std::to_string(ndim) + "-dimensional");
    }
    if (kind == "i" || kind == "u") {
      set_kind(key_kind::u64, "a numpy integer array");
      arrays_.push_back(nb::cast<integer_array>(array));
    } else if (kind == "S" || kind == "U") {
      add_numpy_bytes(array, kind == "U");
    } else if (kind == "O") {
      add_iterable(array);
    } else {
      raise(failure::key_type,
            "keys must be integers or byte strings, not a numpy array of dtype " +
                text_of(array.attr("dtype")));
    }
  }

  /// Fixed-width numpy bytes (S) or str (U, encoded as UTF-8) arrays: each item without its
  /// trailing NULs, as numpy reads it.
  void add_numpy_bytes(nb::handle array, bool unicode) {
    set_kind(key_kind::bytes, "a numpy bytes array");
    nb::module_ np = nb::module_::import_("numpy");
    nb::object items = unicode ? np.attr("char").attr("encode")(array, "utf-8")
                               : np.attr("ascontiguousarray")(array);
    const auto itemsize = nb::cast<std::uint64_t>(items.attr("dtype").attr("itemsize"));
    const auto n = nb::cast<std::uint64_t>(items.attr("shape")[0]);
    const char* base = nullptr;
    if (n > 0 && itemsize > 0) {
      auto bytes = nb::cast<nb::ndarray<nb::ro, nb::ndim<1>, std::uint8_t, nb::device::cpu>>(
          items.attr("view")(np.attr("uint8")));
      base = reinterpret_cast<const char*>(bytes.data());
      owners_.push_back(nb::cast(bytes));
    }
    owners_.push_back(items);
    strings_.reserve(strings_.size() + n);
    for (std::uint64_t i = 0; i < n; ++i) {
      const char* item = base + i * itemsize;
      std::uint64_t size = itemsize;
      while (size > 0 && item[size - 1] == '\0') --size;
      strings_.emplace_back(item, size);
    }
  }

  void add_arrow(nb::handle array) {
    const std::string type = text_of(array.attr("type"));
    const auto nulls = nb::cast<std::uint64_t>(array.attr("null_count"));

    if (nulls != 0) {
      raise(failure::keys, "keys must not be null: the Arrow array has " + std::to_string(nulls) +
                               " null" + (nulls == 1 ? "" : "s"));
    }
    const bool integer = type.rfind("int", 0) == 0 || type.rfind("uint", 0) == 0;
    if (integer) {
      set_kind(key_kind::u64, "an Arrow integer array");
      nb::object values = array.attr("to_numpy")(nb::arg("zero_copy_only") = true);
      arrays_.push_back(nb::cast<integer_array>(values));
      return;
    }
    std::uint64_t offset_bytes = 0;
    if (type == "string" || type == "binary") offset_bytes = 4;
    if (type == "large_string" || type == "large_binary") offset_bytes = 8;
    if (offset_bytes == 0) {
      raise(
          failure::key_type,
          "Arrow keys must be integers, string, large_string, binary or large_binary, not " + type);
    }
    set_kind(key_kind::bytes, "an Arrow string array");
    add_arrow_strings(array, offset_bytes);
  }

  /// An Arrow (large_)string/binary array's offsets and data buffers, offsets checked.
  void add_arrow_strings(nb::handle array, std::uint64_t offset_bytes) {
    const std::uint64_t n = nb::len(array);
    if (n == 0) return;
    const auto first = nb::cast<std::uint64_t>(array.attr("offset"));

    nb::list buffers = nb::list(array.attr("buffers")());
    if (buffers.size() < 3) raise(failure::key_type, "an Arrow string array without 3 buffers");
    nb::object offsets_buffer = buffers[1], data_buffer = buffers[2];
    auto address = [](const nb::object& buffer) {
      return static_cast<std::uintptr_t>(nb::cast<std::uint64_t>(buffer.attr("address")));
    };
    const auto offsets_size = nb::cast<std::uint64_t>(offsets_buffer.attr("size"));
    if (offsets_size < (first + n + 1) * offset_bytes) {
      raise(failure::keys, "the Arrow array's offsets buffer is too short");
    }
    const auto* offsets = reinterpret_cast<const unsigned char*>(address(offsets_buffer));
    const char* data = nullptr;
    std::uint64_t data_size = 0;
    if (!data_buffer.is_none()) {
      data = reinterpret_cast<const char*>(address(data_buffer));
      data_size = nb::cast<std::uint64_t>(data_buffer.attr("size"));
    }
    auto offset_at = [&](std::uint64_t i) -> std::int64_t {
      if (offset_bytes == 4) {
        std::int32_t v;
        std::memcpy(&v, offsets + i * 4, 4);
        return v;
      }
      std::int64_t v;
      std::memcpy(&v, offsets + i * 8, 8);
      return v;
    };
    std::int64_t begin = offset_at(first);
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::int64_t end = offset_at(first + i + 1);
      if (begin < 0 || end < begin || static_cast<std::uint64_t>(end) > data_size) {
        raise(failure::keys, "the Arrow array's offsets are out of order or out of range");
      }
      begin = end;
    }
    arrow_chunks_.push_back({offsets + first * offset_bytes, static_cast<unsigned>(offset_bytes),
                             reinterpret_cast<const unsigned char*>(data), n});
    owners_.push_back(nb::borrow(array));
  }

  void append_views(const arrow_strings& chunk) { append_views_of(chunk, strings_); }

  /// Any iterable of int, bytes or str (str as UTF-8).
  void add_iterable(nb::handle keys) {
    PyObject* iterator = PyObject_GetIter(keys.ptr());
    if (iterator == nullptr) {
      PyErr_Clear();
      raise(failure::key_type, std::string("keys must be an array or an iterable of int, bytes or "
                                           "str, not ") +
                                   Py_TYPE(keys.ptr())->tp_name);
    }
    nb::object it = nb::steal(iterator);
    std::uint64_t index = 0;
    while (PyObject* raw = PyIter_Next(iterator)) {
      nb::object item = nb::steal(raw);
      add_item(item, index++);
    }
    if (PyErr_Occurred()) throw nb::python_error();
  }

  void add_item(const nb::object& item, std::uint64_t index) {
    PyObject* p = item.ptr();
    if (PyBytes_Check(p)) {
      set_kind(key_kind::bytes, "bytes");
      strings_.emplace_back(PyBytes_AS_STRING(p), static_cast<std::size_t>(PyBytes_GET_SIZE(p)));
      owners_.push_back(item);
    } else if (PyUnicode_Check(p)) {
      set_kind(key_kind::bytes, "str");
      Py_ssize_t size = 0;
      const char* utf8 = PyUnicode_AsUTF8AndSize(p, &size);  // cached in the str object
      if (utf8 == nullptr) throw nb::python_error();
      strings_.emplace_back(utf8, static_cast<std::size_t>(size));
      owners_.push_back(item);
    } else if (PyIndex_Check(p) && !PyBool_Check(p)) {
      set_kind(key_kind::u64, "int");
      integer_copy_.push_back(integer_key(item, index));
    } else if (p == Py_None) {
      raise(failure::keys, "key " + std::to_string(index) + " is None: keys must not be null");
    } else {
      raise(failure::key_type, "key " + std::to_string(index) + " is a " + Py_TYPE(p)->tp_name +
                                   ": keys must be int, bytes or str");
    }
  }

  /// An int in [-2^63, 2^64): negative ones as their 64-bit two's complement (like int64).
  static std::uint64_t integer_key(const nb::object& item, std::uint64_t index) {
    nb::object number = nb::steal(PyNumber_Index(item.ptr()));
    if (!number.is_valid()) throw nb::python_error();
    int overflow = 0;
    const long long small = PyLong_AsLongLongAndOverflow(number.ptr(), &overflow);
    if (overflow == 0) {
      if (small == -1 && PyErr_Occurred()) throw nb::python_error();
      return static_cast<std::uint64_t>(small);
    }
    if (overflow > 0) {
      const unsigned long long big = PyLong_AsUnsignedLongLong(number.ptr());
      if (!(big == static_cast<unsigned long long>(-1) && PyErr_Occurred())) return big;
      PyErr_Clear();
    }
    raise(failure::keys, "key " + std::to_string(index) + " (" + text_of(item) +
                             ") is outside the 64-bit range [-2^63, 2^64)");
  }

  std::optional<key_kind> expected_;
  bool in_place_ = false;
  std::optional<key_kind> kind_;
  std::vector<arrow_strings> arrow_chunks_;
  std::vector<integer_array> arrays_;
  std::vector<std::uint64_t> integer_copy_;
  std::vector<std::string_view> strings_;
  std::vector<nb::object> owners_;
};

key_views to_key_views(nb::handle keys, std::optional<key_kind> expected) {
  key_collector collector(expected, false);
  collector.add(keys);
  return collector.finish();
}

std::vector<std::string_view> key_views::views_of_arrow_chunks() const {
  std::vector<std::string_view> views;
  for (const arrow_strings& chunk : arrow_chunks_) append_views_of(chunk, views);
  return views;
}

key_views to_arrow_key_views(nb::handle keys, std::optional<key_kind> expected) {
  key_collector collector(expected, true);
  collector.add(keys);
  return collector.finish();
}

namespace {

/// out[i] = integer(item i) or bytes(item i as a std::string_view), whatever holds the items.
template <class IntegerHash, class BytesHash>
void hash_items(const key_views& items, const IntegerHash& integer, const BytesHash& bytes,
                std::uint64_t* out) {
  const std::uint64_t n = items.size();
  if (items.kind() == key_kind::u64) {
    const std::uint64_t* k = items.integers();
    for (std::uint64_t i = 0; i < n; ++i) out[i] = integer(k[i]);
  } else if (items.arrow_chunks().empty()) {
    const std::string_view* k = items.strings();
    for (std::uint64_t i = 0; i < n; ++i) out[i] = bytes(k[i]);
  } else {
    for (const arrow_strings& chunk : items.arrow_chunks()) {
      with_offsets(chunk, [&](const auto* offsets) {
        const auto* data = reinterpret_cast<const char*>(chunk.data);
        for (std::uint64_t i = 0; i < chunk.count; ++i) {
          *out++ = bytes(std::string_view(data + offsets[i],
                                          static_cast<std::size_t>(offsets[i + 1] - offsets[i])));
        }
      });
    }
  }
}

}  // namespace

void hash_keys(const key_views& keys, std::uint64_t seed, std::uint64_t* out) {
  const set_hasher hash{seed, seed_mix(seed)};  // a key is hashed alike in sets and filters
  hash_items(
      keys, [&](std::uint64_t k) { return hash.key(k); },
      [&](std::string_view k) { return hash.key(k); }, out);
}

void hash_pairs(const key_views& groups, const key_views& keys, std::uint64_t seed,
                std::uint64_t* out) {
  const set_hasher hash{seed, seed_mix(seed)};
  hash_keys(keys, seed, out);
  std::vector<std::uint64_t> group_hashes(groups.size());
  hash_items(
      groups, [&](std::uint64_t g) { return hash.group(g); },
      [&](std::string_view g) { return hash.group(g); }, group_hashes.data());
  if (groups.size() == 1) {  // one group for every key (a data file's keys): hashed once
    for (std::uint64_t i = 0; i < keys.size(); ++i) out[i] = pair_hash(group_hashes[0], out[i]);
    return;
  }
  for (std::uint64_t i = 0; i < keys.size(); ++i) out[i] = pair_hash(group_hashes[i], out[i]);
}

key_kind key_kind_from_name(const std::string& name) {
  key_kind kind = key_kind::u64;
  if (!ribbon::key_kind_from_name(name, &kind)) {
    raise(failure::options, "key kind must be \"u64\" or \"bytes\", not \"" + name + "\"");
  }
  return kind;
}

/// values= of a retrieval build: any integer array or iterable, each value in [0, 2^32).
std::vector<std::uint32_t> to_values(nanobind::handle values, std::uint64_t key_count) {
  key_views v = to_key_views(values, key_kind::u64);  // integers, read like integer keys
  if (v.size() != key_count) {
    raise(failure::keys, "values has " + std::to_string(v.size()) + " entries for " +
                             std::to_string(key_count) + " keys");
  }
  std::vector<std::uint32_t> out(v.size());
  for (std::uint64_t i = 0; i < v.size(); ++i) {
    if (v.integers()[i] > 0xFFFFFFFFull) {
      raise(failure::keys, "value " + std::to_string(i) + " (counting from 0) is not in [0, 2^32)");
    }
    out[i] = static_cast<std::uint32_t>(v.integers()[i]);
  }
  return out;
}

group_kind group_kind_named(const std::optional<std::string>& name) {
  if (!name) return group_kind::none;
  return key_kind_from_name(*name) == key_kind::u64 ? group_kind::u64 : group_kind::bytes;
}

/// The key kind named, if any.
std::optional<key_kind> kind_named(const std::optional<std::string>& name) {
  if (!name) return std::nullopt;
  return key_kind_from_name(*name);
}

group_names to_group_names(nb::handle names, group_kind kind) {
  const key_kind wanted = kind == group_kind::u64 ? key_kind::u64 : key_kind::bytes;
  const key_views v = to_key_views(names);
  if (v.size() > 0 && v.kind() != wanted) {
    raise(failure::query, std::string("group names of the wrong kind: this set names its groups "
                                      "by ") +
                              (kind == group_kind::u64 ? "integers" : "byte strings"));
  }
  if (v.size() == 0)
    return kind == group_kind::u64 ? group_names::of(std::vector<std::uint64_t>{})
                                   : group_names::of(std::vector<std::string>{});
  if (kind == group_kind::u64) {
    return group_names::of(std::vector<std::uint64_t>(v.integers(), v.integers() + v.size()));
  }
  std::vector<std::string> out;
  out.reserve(v.size());
  for (std::uint64_t i = 0; i < v.size(); ++i) out.emplace_back(v.strings()[i]);
  return group_names::of(std::move(out));
}

}  // namespace ribbon::python

void bind_keys(nb::module_& m) {
  using namespace ribbon::python;
  m.def(
      "hash_keys",
      [](nb::handle keys, std::uint64_t seed, std::optional<std::string> kind) {
        const key_views views = to_arrow_key_views(keys, kind_named(kind));
        return new_array<std::uint64_t>(views.size(),
                                        [&](std::uint64_t* out) { hash_keys(views, seed, out); });
      },
      nb::arg("keys"), nb::kw_only(), nb::arg("seed") = 0, nb::arg("key_kind") = nb::none(),
      R"(The 64-bit key hashes `ribbon build` computes for these keys (numpy uint64 array).

Integer keys: hash_u64(key, seed_mix(seed)); byte strings: XXH64(bytes, seed). The key kind is
inferred as ribbon.build infers it (key_kind= forces it, e.g. for an empty list). Takes the
keys ribbon.build takes; BulkBuilder.add_hashes() accepts the result.)");
  m.def(
      "hash_pairs",
      [](nb::handle groups, nb::handle keys, std::uint64_t seed,
         std::optional<std::string> group_kind, std::optional<std::string> key_kind) {
        const key_views group_views = to_arrow_key_views(groups, kind_named(group_kind));
        const key_views key_views_ = to_arrow_key_views(keys, kind_named(key_kind));
        if (group_views.size() != key_views_.size() && group_views.size() != 1) {
          raise(failure::keys, "groups has " + std::to_string(group_views.size()) +
                                   " entries for " + std::to_string(key_views_.size()) + " keys");
        }
        return new_array<std::uint64_t>(key_views_.size(), [&](std::uint64_t* out) {
          hash_pairs(group_views, key_views_, seed, out);
        });
      },
      nb::arg("groups"), nb::arg("keys"), nb::kw_only(), nb::arg("seed") = 0,
      nb::arg("group_kind") = nb::none(), nb::arg("key_kind") = nb::none(),
      R"(The 64-bit hashes a filter set of this seed stores for the pairs (groups[i], keys[i])
(numpy uint64 array): `ribbon build --groups -o` and ribbon.build_set hash them so. Groups and
keys are each integers or byte strings, inferred as ribbon.build infers keys (group_kind= and
key_kind= force them). One group (a sequence of length 1) is every key's group: hashed once.)");
  m.def(
      "key_kind_of", [](nb::handle keys) { return key_kind_name(to_key_views(keys).kind()); },
      nb::arg("keys"), "\"u64\" or \"bytes\": the key kind ribbon.build infers for these keys.");
}
