// ribbon.Filter, ribbon.build, ribbon.load: the same builders, readers and file format as the
// CLI (ribbon::filter).
#include <nanobind/ndarray.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cmath>
#include <cstring>
#include <memory>

#include "arrays.hpp"
#include "bindings.hpp"
#include "errors.hpp"
#include "info.hpp"
#include "keys.hpp"
#include "options.hpp"
#include "ribbon/bulk_builder.hpp"
#include "ribbon/filter.hpp"

#if defined(RIBBON_PYTHON_WITH_CUDA)
#include "ribbon/cuda/builder.hpp"
#endif

namespace nb = nanobind;

namespace ribbon::python {
namespace {

/// Builds (and queries) of fewer keys run on the calling thread: no helper thread for Ctrl-C.
constexpr std::uint64_t interruptible_keys = std::uint64_t{1} << 18;

/// A CPU build from byte-string keys in one Arrow array's buffers, in place.
filter build_from_arrow(const arrow_strings& chunk, const std::vector<std::uint32_t>* values,
                        const build_options& options) {
  return with_offsets(chunk, [&](const auto* offsets) {
    return values ? filter::build_offsets(offsets, chunk.data, values->data(), chunk.count, options)
                  : filter::build_offsets(offsets, chunk.data, chunk.count, options);
  });
}

filter build_filter(const key_views& keys, const std::vector<std::uint32_t>* values,
                    const build_options& options, bool gpu) {
  const std::uint64_t n = keys.size();
  const bool bytes = keys.kind() == key_kind::bytes;
  if (bytes && keys.arrow_chunks().size() == 1 && !gpu) {
    return build_from_arrow(keys.arrow_chunks()[0], values, options);
  }
  // Keys of several Arrow chunks (or for the GPU): a view per key.
  std::vector<std::string_view> joined;
  const std::string_view* strings = keys.strings();
  if (bytes && !keys.arrow_chunks().empty()) {
    joined = keys.views_of_arrow_chunks();
    strings = joined.data();
  }
#if defined(RIBBON_PYTHON_WITH_CUDA)
  if (gpu) {
    if (values) {
      std::vector<std::uint64_t> hashes(n);
      hash_keys(keys, options.seed, hashes.data());
      return cuda::build_from_hashes(hashes.data(), values->data(), n, keys.kind(), options);
    }
    return bytes ? cuda::build(strings, n, options) : cuda::build(keys.integers(), n, options);
  }
#else
  (void)gpu;
#endif
  if (values) {
    return bytes ? filter::build(strings, values->data(), n, options)
                 : filter::build(keys.integers(), values->data(), n, options);
  }
  return bytes ? filter::build(strings, n, options) : filter::build(keys.integers(), n, options);
}

filter build(nb::handle keys, nb::handle values, const build_arguments& args,
             const std::string& backend, std::optional<std::string> kind) {
  build_options options = to_build_options(args);
  const bool gpu = use_gpu(backend);
  std::optional<key_kind> expected;
  if (kind) expected = key_kind_from_name(*kind);
  key_views views = to_arrow_key_views(keys, expected);
  std::vector<std::uint32_t> value_array;
  if (!values.is_none()) {
    value_array = to_values(values, views.size());
    if (!args.bits)
      options.result_bits = value_bits_for(
          value_array.empty() ? 0 : *std::max_element(value_array.begin(), value_array.end()));
  }
  // Option errors before the build, as OptionsError.
  translating(failure::options,
              [&] { check_build_options(options, views.kind(), views.size(), !values.is_none()); });
  build_progress progress;
  options.progress = &progress;
  filter result;
  translating(failure::generic, [&] {
    run_interruptibly(
        [&] {
          result = build_filter(views, values.is_none() ? nullptr : &value_array, options, gpu);
        },
        views.size() >= interruptible_keys ? &progress.cancel : nullptr);
  });
  return result;
}

filter load(const std::filesystem::path& path, bool verify, bool mmap) {
  load_options options;
  options.verify_checksums = verify;
  options.use_mmap = mmap;
  return translating(failure::file, [&] {
    nb::gil_scoped_release release;
    return filter::load(path.string(), options);
  });
}

/// Adopts a file image from any object with the buffer protocol (one copy, 64-byte aligned).
filter from_buffer(nb::handle buffer, bool verify) {
  Py_buffer view;
  if (PyObject_GetBuffer(buffer.ptr(), &view, PyBUF_SIMPLE) != 0) throw nb::python_error();
  std::unique_ptr<Py_buffer, void (*)(Py_buffer*)> release_view(&view, PyBuffer_Release);
  load_options options;
  options.verify_checksums = verify;
  return translating(failure::file, [&] {
    nb::gil_scoped_release release;
    return filter::from_bytes(static_cast<const unsigned char*>(view.buf),
                              static_cast<std::uint64_t>(view.len), options);
  });
}

/// A layout by name: "auto" (compact for small filters; a loaded file keeps its own),
/// "standard" (format versions 1-4, for older readers) or "compact" (version 5).
ribbon::format::layout_choice layout_named(const std::string& name) {
  if (name == "auto") return ribbon::format::layout_choice::automatic;
  if (name == "standard") return ribbon::format::layout_choice::standard;
  if (name == "compact") return ribbon::format::layout_choice::compact;
  raise(failure::options, "layout must be 'auto', 'standard' or 'compact', not '" + name + "'");
}

nb::bytes to_bytes(const filter& f, const std::string& layout) {
  const ribbon::format::layout_choice choice = layout_named(layout);
  std::vector<unsigned char> image;
  {
    nb::gil_scoped_release release;
    image = f.serialize(choice);
  }
  return nb::bytes(reinterpret_cast<const char*>(image.data()), image.size());
}

nb::bytes to_bytes_as_saved(const filter& f) {
  return to_bytes(f, "auto");
}

/// Raises QueryError with the library's message unless `f` is a retrieval structure (true)
/// or answers membership (false: a filter, or a retrieval structure with check bits), and
/// not a filter set.
void require_retrieval(const filter& f, bool retrieval) {
  const bool answers = f.is_retrieval() == retrieval || (!retrieval && f.params().check_bits != 0);
  if (answers && !f.is_set()) return;
  translating(failure::query, [&] {
    const bool integers = f.params().keys == key_kind::u64;
    if (retrieval) {
      (void)(integers ? f.lookup(std::uint64_t{0}) : f.lookup(std::string_view()));
    } else {
      (void)(integers ? f.contains(std::uint64_t{0}) : f.contains(std::string_view()));
    }
  });
}

/// Answers byte-string keys held in Arrow chunks, chunk after chunk into `out`:
/// query(offsets, data, count, out) for each.
template <class Answer, class Query>
void query_arrow_chunks(const key_views& views, Answer* out, const Query& query) {
  for (const arrow_strings& chunk : views.arrow_chunks()) {
    with_offsets(chunk, [&](const auto* offsets) { query(offsets, chunk.data, chunk.count, out); });
    out += chunk.count;
  }
}

nb::ndarray<nb::numpy, bool, nb::ndim<1>> contains(const filter& f, nb::handle keys) {
  require_retrieval(f, false);
  const key_views views = to_arrow_key_views(keys, f.params().keys);
  return new_array<bool>(views.size(), [&](bool* out) {
    if (views.kind() == key_kind::u64) {
      f.contains(views.integers(), views.size(), out);
    } else if (!views.arrow_chunks().empty()) {
      query_arrow_chunks(views, out, [&](const auto* offsets, auto... rest) {
        f.contains_offsets(offsets, rest...);
      });
    } else {
      f.contains(views.strings(), views.size(), out);
    }
  });
}

/// The value `absent` of lookup(), checked: a uint32, of a structure with check bits.
std::uint32_t checked_absent(const filter& f, std::int64_t absent) {
  if (f.params().check_bits == 0) {
    raise(failure::query,
          "absent= needs a retrieval structure with check bits (build it with check_bits=C): "
          "without them every key gets a value");
  }
  if (absent < 0 || absent > 0xFFFFFFFFll) {
    raise(failure::query, "absent must be in [0, 2^32), not " + std::to_string(absent));
  }
  return static_cast<std::uint32_t>(absent);
}

nb::ndarray<nb::numpy, std::uint32_t, nb::ndim<1>> lookup(const filter& f, nb::handle keys,
                                                          std::optional<std::int64_t> absent) {
  require_retrieval(f, true);
  const bool checked = absent.has_value();
  const std::uint32_t absent_value = checked ? checked_absent(f, *absent) : 0;
  const key_views views = to_arrow_key_views(keys, f.params().keys);
  return new_array<std::uint32_t>(views.size(), [&](std::uint32_t* out) {
    std::unique_ptr<bool[]> found(checked ? new bool[views.size()] : nullptr);
    if (views.kind() == key_kind::u64) {
      f.lookup(views.integers(), views.size(), out, found.get());
    } else if (!views.arrow_chunks().empty()) {
      query_arrow_chunks(views, out, [&](const auto* offsets, auto data, auto count, auto* chunk) {
        f.lookup_offsets(offsets, data, count, chunk,
                         found ? found.get() + (chunk - out) : nullptr);
      });
    } else {
      f.lookup(views.strings(), views.size(), out, found.get());
    }
    for (std::uint64_t i = 0; found && i < views.size(); ++i) {
      if (!found[i]) out[i] = absent_value;
    }
  });
}

/// One key: int, bytes or str.
bool contains_one(const filter& f, nb::handle key) {
  nb::object one = nb::make_tuple(key);
  return contains(f, one).data()[0];
}

}  // namespace
}  // namespace ribbon::python

using namespace ribbon::python;

namespace {

using filter_class = nb::class_<ribbon::filter>;

void bind_queries(filter_class& c) {
  c.def("contains", &contains, nb::arg("keys"),
        R"(Membership of each key: a numpy bool array, True for every key of the set (filters,
and retrieval structures with check bits: True where the key's check bits match).

keys: a numpy integer or bytes array, a pyarrow array, or an iterable of int/bytes/str, of
the filter's key kind. Runs without the GIL, in parallel for large batches.)")
      .def("__contains__", &contains_one, nb::arg("key"), "Membership of one key.")
      .def_prop_rw(
          "query_threads", [](const ribbon::filter& f) { return f.query_threads(); },
          [](ribbon::filter& f, std::uint32_t threads) { f.set_query_threads(threads); },
          "Threads of batched contains() and lookup() (0, the default: all hardware threads).")
      .def("lookup", &lookup, nb::arg("keys"), nb::kw_only(), nb::arg("absent") = nb::none(),
           R"(Retrieval structures: the value stored for each key (numpy uint32 array).

A key that is not in the set gets an arbitrary value below 2^bits, except with check bits
(built with check_bits=C) and absent=V given: then V wherever the key's check bits do not
match (every member's match; a non-member's with probability 2^-C).)");
}

/// Files, buffers and pickling: all carry the file image.
void bind_serialization(filter_class& c) {
  c.def(
       "save",
       [](const ribbon::filter& f, const std::filesystem::path& path, const std::string& layout) {
         const ribbon::format::layout_choice choice = layout_named(layout);
         translating(failure::file, [&] {
           nb::gil_scoped_release release;
           f.save(path.string(), choice);
         });
       },
       nb::arg("path"), nb::kw_only(), nb::arg("layout") = "auto",
       "Writes the file atomically (a temporary file in the same directory, renamed). layout:\n"
       "'auto' (the compact layout of format version 5 for small filters; a loaded file keeps\n"
       "its own), 'standard' (versions 1-4, which older readers read) or 'compact'.")
      .def_static("from_bytes", &from_buffer, nb::arg("buffer"), nb::kw_only(),
                  nb::arg("verify") = true,
                  "A filter from a file image (bytes or any buffer), validated like a file.")
      .def("to_bytes", &to_bytes, nb::kw_only(), nb::arg("layout") = "auto",
           "The file bytes, laid out as save() lays them out.")
      .def("__bytes__", &to_bytes_as_saved, "The file bytes.")
      .def("__getstate__", &to_bytes_as_saved)
      .def("__setstate__", [](ribbon::filter& self, nb::bytes image) {
        new (&self) ribbon::filter(from_buffer(image, true));
      });
}

void bind_properties(filter_class& c) {
  c.def(
       "__len__", [](const ribbon::filter& f) { return f.key_count(); },
       "The key count recorded in the file.")
      .def("info", &info, "The fields of `ribbon info --json`, as a dict.")
      .def_prop_ro(
          "fpr",
          [](const ribbon::filter& f) -> nb::object {
            if (f.is_retrieval()) return nb::none();
            return nb::cast(ribbon::expected_fpr(f.params()));
          },
          "The expected false-positive rate (None for retrieval structures).")
      .def_prop_ro("bits_per_key", &ribbon::filter::bits_per_key,
                   "File bits per key (every section and the header).")
      .def_prop_ro("nbytes", &ribbon::filter::size_bytes, "Size of the file image in bytes.")
      .def_prop_ro(
          "key_kind", [](const ribbon::filter& f) { return key_kind_name(f.params().keys); },
          "\"u64\" (integer keys) or \"bytes\" (byte-string keys).")
      .def_prop_ro(
          "variant", [](const ribbon::filter& f) { return variant_name(f.variant()); },
          "bumped, standard, homogeneous, retrieval or standard-retrieval.")
      .def_prop_ro("is_retrieval", &ribbon::filter::is_retrieval,
                   "True for retrieval structures (built with values).")
      .def_prop_ro(
          "width", [](const ribbon::filter& f) { return f.params().width; },
          "Ribbon width w (32, 64 or 128).")
      .def_prop_ro(
          "bits", [](const ribbon::filter& f) { return f.params().value_bits(); },
          "Result bits r of a filter; value bits of a retrieval structure (r less check_bits).")
      .def_prop_ro(
          "check_bits", [](const ribbon::filter& f) { return f.params().check_bits; },
          "Retrieval: fingerprint bits stored above each value (0: none).")
      .def_prop_ro(
          "seed", [](const ribbon::filter& f) { return f.params().seed; }, "Hash seed.")
      .def("__repr__", [](const ribbon::filter& f) {
        char text[160];
        std::snprintf(text, sizeof(text),
                      "<ribbon.Filter %s, %s keys, %llu keys, w=%u, r=%u, %.3f bits/key>",
                      variant_name(f.variant()), key_kind_name(f.params().keys),
                      static_cast<unsigned long long>(f.key_count()), f.params().width,
                      f.params().result_bits, f.bits_per_key());
        return std::string(text);
      });
}

void bind_build(nb::module_& m) {
  m.def(
      "build",
      [](nb::handle keys, nb::handle values, nb::kwargs options) {
        keywords given("build", options);
        const build_arguments args = given.build_options();
        const std::string backend = given.value<std::string>("backend", "cpu");
        const std::optional<std::string> key_kind = given.optional<std::string>("key_kind");
        given.done();
        return build(keys, values, args, backend, key_kind);
      },
      nb::arg("keys"), nb::kw_only(), nb::arg("values") = nb::none(), nb::arg("options"),
      R"(Builds a filter (or, with values=, a retrieval structure) from keys.

keys: numpy integer array, numpy bytes/str array, pyarrow Array/ChunkedArray of integers or
  (large_)string/(large_)binary, or an iterable of int, bytes or str (str as UTF-8). Integer
  and byte-string keys hash as `ribbon build --format u64` and `--format lines` do, so the
  same keys and options give the CLI's file, byte for byte. Duplicates are allowed.
values: retrieval: one value in [0, 2^32) per key; bits defaults to the largest value's width.
check_bits: retrieval: C fingerprint bits stored above each value (bits + C <= 32), so that
  lookup(keys, absent=V) and contains() tell a non-member apart except with probability 2^-C
  (format version 4). 0 (default): none.
fpr / bits: the false-positive rate (fractional bits per key) or r (FPR 2^-r); default r = 8.
width: 32, 64 or 128. variant: "bumped", "standard" or "homogeneous". seed: hash seed.
threads: worker threads (default: all). shard_size: slots per shard (power of two).
slack / success_probability: standard and homogeneous variants' sizing.
backend: "cpu", "gpu" or "auto" (the GPU where this module has CUDA and a device).
key_kind: "u64" or "bytes", the kind of an empty key list (else inferred).
threshold_codes: how buckets store their thresholds: "1+-bit" (the smallest file), "2-bit"
  (format version 2 for older readers, about 0.04 % more space; CPU queries are as fast with
  either) or "auto"/None (1+-bit; 2-bit at w=32).
Runs without the GIL; Ctrl-C stops it within about a second.)");
  m.def("value_bits_for", &ribbon::value_bits_for, nb::arg("largest_value"),
        "The value bits of a build with values when bits is not given: as many as the largest "
        "value needs, at least 1 (the rule of build(values=), the Spark build and the CLI).");
}

void bind_load(nb::module_& m) {
  m.def("load", &load, nb::arg("path"), nb::kw_only(), nb::arg("verify") = true,
        nb::arg("mmap") = true,
        R"(Opens a filter file (any builder's: CPU, GPU, CLI, Python).

verify: check every section's checksum (reads the whole file). mmap: map the file instead
of reading it into memory.)");
}

}  // namespace

void bind_filter(nb::module_& m) {
  filter_class c(m, "Filter", R"(A static Ribbon filter or retrieval structure.

Made by ribbon.build(), ribbon.load() or Filter.from_bytes(); immutable. Queries take arrays of
keys of the kind the filter was built from (integers or byte strings) and return numpy arrays.
Pickles as its file bytes, so it can be shipped to Spark or Dask workers.)");
  bind_queries(c);
  bind_set_queries(c);
  bind_serialization(c);
  bind_properties(c);
  bind_build(m);
  bind_load(m);
}
