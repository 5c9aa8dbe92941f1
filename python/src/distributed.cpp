// The engine-neutral steps of the distributed build (ribbon/distributed.hpp), for
// python/ribbon/distributed/: parameters and layer plans as picklable objects (engines ship
// them to their workers), hash arrays in and out as numpy arrays, no per-key Python.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <functional>
#include <memory>
#include <tuple>
#include <vector>

#include "bindings.hpp"
#include "errors.hpp"
#include "keys.hpp"
#include "options.hpp"
#include "ribbon/detail/xxhash64.hpp"
#include "ribbon/distributed.hpp"

namespace nb = nanobind;

namespace ribbon::python {
namespace {

namespace dist = ribbon::distributed;

template <class T>
using input_array = nb::ndarray<nb::ro, nb::ndim<1>, T, nb::c_contig, nb::device::cpu>;
using hash_array = input_array<std::uint64_t>;
using value_array = input_array<std::uint32_t>;  ///< retrieval: (stored) values of the hashes

/// A numpy array that owns `v`'s memory (no copy).
template <class T>
nb::ndarray<nb::numpy, T, nb::ndim<1>> to_numpy(std::vector<T>&& v) {
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T, nb::ndim<1>>(owned->data(), {owned->size()}, owner);
}

template <class T>
std::vector<T> to_vector(const input_array<T>& a) {
  return std::vector<T>(a.data(), a.data() + a.shape(0));
}

/// The arrays concatenated: one copy, which the solver then sorts in place.
template <class T>
std::vector<T> concatenated(const std::vector<input_array<T>>& arrays) {
  std::uint64_t total = 0;
  for (const auto& a : arrays) total += a.shape(0);
  std::vector<T> out;
  out.reserve(total);
  for (const auto& a : arrays) out.insert(out.end(), a.data(), a.data() + a.shape(0));
  return out;
}

using params_state =
    std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t,
               std::uint32_t, std::uint64_t, std::uint64_t, std::uint32_t, std::uint32_t,
               std::uint32_t, std::uint32_t, std::uint32_t>;

params_state params_to_state(const filter_params& p) {
  return {p.width,
          p.result_bits,
          p.bucket_size,
          p.threshold_light,
          p.threshold_heavy,
          static_cast<std::uint32_t>(p.variant),
          p.shard_size,
          p.seed,
          static_cast<std::uint32_t>(p.keys),
          p.extra_bit_fraction,
          static_cast<std::uint32_t>(p.threshold_codes),
          static_cast<std::uint32_t>(p.groups),
          p.check_bits};
}

filter_params params_from_state(const params_state& s) {
  filter_params p;
  std::tie(p.width, p.result_bits, p.bucket_size, p.threshold_light, p.threshold_heavy, std::ignore,
           p.shard_size, p.seed, std::ignore, p.extra_bit_fraction, std::ignore, std::ignore,
           p.check_bits) = s;
  p.variant = static_cast<filter_variant>(std::get<5>(s));
  p.keys = static_cast<key_kind>(std::get<8>(s));
  p.threshold_codes = static_cast<threshold_encoding>(std::get<10>(s));  // check_params checks it
  p.groups = static_cast<group_kind>(std::get<11>(s));                   // and this
  if (const char* problem = check_params(p)) raise(failure::options, problem);
  return p;
}

using plan_state = std::tuple<std::uint32_t, std::uint64_t, std::uint64_t, std::uint64_t,
                              std::uint32_t, std::uint64_t, std::uint64_t, std::uint32_t>;

plan_state plan_to_state(const dist::layer_plan& p) {
  return {p.layer,
          p.input_keys,
          p.salt,
          p.geometry.num_starts,
          p.geometry.shard_bits,
          p.geometry.upper_start_block,
          p.shards_per_range,
          static_cast<std::uint32_t>(p.geometry.codes)};
}

dist::layer_plan plan_from_state(const plan_state& s) {
  dist::layer_plan p;
  std::tie(p.layer, p.input_keys, p.salt, p.geometry.num_starts, p.geometry.shard_bits,
           p.geometry.upper_start_block, p.shards_per_range, std::ignore) = s;
  p.geometry.kind = layer_kind::bumped;
  const std::uint32_t codes = std::get<7>(s);
  if (codes != static_cast<std::uint32_t>(threshold_encoding::two_bit) &&
      codes != static_cast<std::uint32_t>(threshold_encoding::one_plus_bit)) {
    raise(failure::options, "unknown threshold encoding in a layer plan");
  }
  p.geometry.codes = static_cast<threshold_encoding>(codes);
  return p;
}

/// A filter set's group kind, named as key kinds are ("u64", "bytes"); none without a name.
group_kind group_kind_named(const std::optional<std::string>& name) {
  if (!name) return group_kind::none;
  return key_kind_from_name(*name) == key_kind::u64 ? group_kind::u64 : group_kind::bytes;
}

/// A set's group names (a collection of its group kind), or none (None: format version 6).
std::shared_ptr<const group_names> names_for(const filter_params& p, nb::handle names) {
  if (names.is_none()) return nullptr;
  if (!p.is_set()) raise(failure::options, "group_names are for filter sets");
  return std::make_shared<const group_names>(to_group_names(names, p.groups));
}

/// Application metadata (bytes), or none (None).
std::shared_ptr<const std::string> metadata_for(const std::optional<nb::bytes>& metadata) {
  if (!metadata) return nullptr;
  return std::make_shared<const std::string>(metadata->c_str(), metadata->size());
}

void bind_params(nb::module_& m) {
  nb::class_<filter_params>(m, "DistributedParams",
                            "The parameters of a distributed build (what `ribbon build` uses).")
      .def(
          "__init__",
          [](filter_params* self, const std::string& kind_name, std::optional<double> fpr,
             std::optional<std::int64_t> bits, std::int64_t width, std::uint64_t seed,
             std::optional<std::int64_t> shard_size, std::optional<std::string> threshold_codes,
             std::optional<std::string> group_kind_name, bool values, std::int64_t check_bits) {
            build_arguments args;
            args.fpr = fpr;
            args.bits = bits;
            args.width = width;
            args.seed = seed;
            args.shard_size = shard_size;
            args.threshold_codes = std::move(threshold_codes);
            args.check_bits = check_bits;
            const build_options options = to_build_options(args);
            const key_kind kind = key_kind_from_name(kind_name);
            const group_kind groups = group_kind_named(group_kind_name);
            if (values && group_kind_name) {
              raise(failure::options, "a filter set stores no values");
            }
            if (!values && check_bits != 0) {
              raise(failure::options, "check_bits is for builds with values");
            }
            new (self) filter_params(translating(failure::options, [&] {
              return values ? dist::retrieval_params(options, kind)
                            : dist::build_params(options, kind, groups);
            }));
          },
          nb::arg("key_kind"), nb::kw_only(), nb::arg("fpr") = nb::none(),
          nb::arg("bits") = nb::none(), nb::arg("width") = 64, nb::arg("seed") = 0,
          nb::arg("shard_size") = nb::none(), nb::arg("threshold_codes") = nb::none(),
          nb::arg("group_kind") = nb::none(), nb::arg("values") = false, nb::arg("check_bits") = 0,
          "The parameters of `ribbon build` for these options; group_kind (\"u64\" or "
          "\"bytes\"): those of a filter set (`ribbon build --groups -o`) whose groups are of "
          "that kind; values: those of `ribbon build --values --bits bits [--check-bits "
          "check_bits]` (a retrieval structure; bits: value bits).")
      .def_prop_ro("key_kind", [](const filter_params& p) { return key_kind_name(p.keys); })
      .def_prop_ro("group_kind",
                   [](const filter_params& p) -> std::optional<std::string> {
                     if (!p.is_set()) return std::nullopt;
                     return std::string(group_kind_name(p.groups));
                   })
      .def_prop_ro(
          "values", [](const filter_params& p) { return is_retrieval(p.variant); },
          "True for a retrieval structure (values beside the hashes).")
      .def_prop_ro("value_bits", &filter_params::value_bits)
      .def_ro("check_bits", &filter_params::check_bits)
      .def_ro("width", &filter_params::width)
      .def_ro("result_bits", &filter_params::result_bits)
      .def_ro("seed", &filter_params::seed)
      .def_ro("shard_size", &filter_params::shard_size)
      .def_prop_ro(
          "threshold_codes",
          [](const filter_params& p) { return threshold_encoding_name(p.threshold_codes); })
      .def("__getstate__", &params_to_state)
      .def("__setstate__", [](filter_params* self, const params_state& s) {
        new (self) filter_params(params_from_state(s));
      });
}

void bind_plan(nb::module_& m) {
  nb::class_<dist::layer_plan>(m, "LayerPlan",
                               "One distributed layer: its geometry and its shard ranges.")
      .def_ro("layer", &dist::layer_plan::layer)
      .def_ro("input_keys", &dist::layer_plan::input_keys)
      .def_ro("shards_per_range", &dist::layer_plan::shards_per_range)
      .def_prop_ro("num_ranges", &dist::layer_plan::num_ranges)
      .def_prop_ro("num_shards", [](const dist::layer_plan& p) { return p.geometry.num_shards(); })
      .def_prop_ro(
          "num_starts", [](const dist::layer_plan& p) { return p.geometry.num_starts; },
          "Row starts of the layer: a layer hash starts at fastrange64(hash, num_starts).")
      .def_prop_ro(
          "shard_bits", [](const dist::layer_plan& p) { return p.geometry.shard_bits; },
          "log2 of the shard size: a start's shard is start >> shard_bits.")
      .def("part_bytes", &dist::layer_plan::part_bytes, nb::arg("params"), nb::arg("range"))
      .def("threshold_bytes", &dist::layer_plan::threshold_bytes, nb::arg("params"),
           nb::arg("range"))
      .def("__getstate__", &plan_to_state)
      .def("__setstate__", [](dist::layer_plan* self, const plan_state& s) {
        new (self) dist::layer_plan(plan_from_state(s));
      });
}

/// The walk through the layers in ranges (ribbon/layer_sequence.hpp): the driver's loop is
/// the out-of-core builder's, not a copy of its rules.
void bind_walk(nb::module_& m) {
  using dist::layer_step;
  nb::class_<layer_step>(m, "LayerStep", "One layer of a build, as the layer sequence plans it.")
      .def_ro("index", &layer_step::index)
      .def_ro("keys", &layer_step::keys, "keys that reach the layer")
      .def_ro("in_ranges", &layer_step::in_ranges,
              "solved in shard ranges by the engine (else finished in one place with the "
              "layers after it)")
      .def_prop_ro("last", &layer_step::last, "the final plain layer");
  nb::class_<dist::ranged_layers>(
      m, "RangedLayers",
      "The walk of a distributed build through its layers: layer 0 (planned for the rows, "
      "again for the distinct count if there were repeats) and the bumped layers of more than "
      "one_place_keys keys in shard ranges, the rest in one place.")
      .def(
          "__init__",
          [](dist::ranged_layers* self, const filter_params& p, std::uint64_t one_place_keys,
             std::uint64_t rows) {
            new (self) dist::ranged_layers(dist::ranged_layers_for(p, one_place_keys, rows));
          },
          nb::arg("params"), nb::arg("one_place_keys"), nb::arg("rows"))
      .def_prop_ro(
          "current",
          [](const dist::ranged_layers& w) -> std::optional<layer_step> {
            if (const layer_step* step = w.current()) return *step;
            return std::nullopt;
          },
          "The layer to solve in ranges now; None once the walk has left the ranges.")
      .def_prop_ro("counting", &dist::ranged_layers::counting,
                   "current is layer 0 planned for the rows: its ranges may stop at a repeat")
      .def(
          "solved",
          [](dist::ranged_layers& w, std::uint64_t distinct, std::uint64_t bumped) {
            return translating(failure::generic, [&] { return w.solved(distinct, bumped); });
          },
          nb::arg("distinct"), nb::arg("bumped"),
          "Reports current solved (its distinct and bumped keys): True when the walk moved on, "
          "False when layer 0 met repeats and is planned again for `distinct` keys.")
      .def_prop_ro("rest", &dist::ranged_layers::rest,
                   "Once current is None: the first layer to finish in one place, or None.");
}

/// Planning a layer and solving its shard ranges.
void bind_range_steps(nb::module_& m) {
  m.def(
      "plan_layer",
      [](const filter_params& p, std::uint32_t layer, std::uint64_t keys, std::uint64_t range_keys,
         std::uint64_t task_slots) {
        return translating(failure::options, [&] {
          return dist::plan_layer(p, layer, keys, range_keys, task_slots);
        });
      },
      nb::arg("params"), nb::arg("layer"), nb::arg("keys"), nb::arg("range_keys"),
      nb::arg("task_slots") = 1);
  m.def(
      "to_layer_hashes",
      [](const dist::layer_plan& plan, const hash_array& hashes) {
        std::vector<std::uint64_t> out = to_vector(hashes);
        {
          nb::gil_scoped_release release;
          dist::to_layer_hashes(plan, out.data(), out.size());
        }
        return to_numpy(std::move(out));
      },
      nb::arg("plan"), nb::arg("hashes"));
  m.def(
      "group_by_range",
      [](const dist::layer_plan& plan, const hash_array& hashes,
         std::optional<value_array> values) -> nb::object {
        std::vector<std::uint64_t> grouped = to_vector(hashes), offsets;
        if (!values) {
          nb::gil_scoped_release release;
          dist::group_by_range(plan, grouped.data(), grouped.size(), offsets);
        } else {
          if (values->shape(0) != grouped.size()) {
            raise(failure::keys, "group_by_range: a value per hash");
          }
          std::vector<std::uint32_t> grouped_values = to_vector(*values);
          {
            nb::gil_scoped_release release;
            dist::group_by_range(plan, grouped.data(), grouped_values.data(), grouped.size(),
                                 offsets);
          }
          return nb::make_tuple(to_numpy(std::move(grouped)), to_numpy(std::move(offsets)),
                                to_numpy(std::move(grouped_values)));
        }
        return nb::make_tuple(to_numpy(std::move(grouped)), to_numpy(std::move(offsets)));
      },
      nb::arg("plan"), nb::arg("hashes"), nb::arg("values") = nb::none(),
      "(grouped hashes, offsets[, grouped values]): the hashes of range r at [offsets[r], "
      "offsets[r + 1]), each value (retrieval) moved with its hash.");
  m.def(
      "to_stored_values",
      [](const filter_params& p, const hash_array& key_hashes, const value_array& values) {
        if (values.shape(0) != key_hashes.shape(0)) {
          raise(failure::keys, "to_stored_values: a value per key hash");
        }
        std::vector<std::uint32_t> stored = to_vector(values);
        translating(failure::keys, [&] {
          nb::gil_scoped_release release;
          dist::to_stored_values(p, key_hashes.data(), stored.data(), stored.size());
        });
        return to_numpy(std::move(stored));
      },
      nb::arg("params"), nb::arg("key_hashes"), nb::arg("values"),
      "Retrieval: the values layer 0 stores for keys of these hashes (each value under its "
      "key's check bits); KeysError for a value of more than the value bits.");
  m.def(
      "solve_range",
      [](const filter_params& p, const dist::layer_plan& plan, std::uint64_t range,
         const std::vector<hash_array>& hash_arrays, const std::string& part_path,
         bool skip_if_repeats, std::uint32_t threads,
         std::optional<std::vector<value_array>> value_arrays) {
        std::vector<std::uint64_t> hashes = concatenated(hash_arrays);
        std::optional<std::vector<std::uint32_t>> values;
        if (value_arrays) values = concatenated(*value_arrays);
        dist::range_outcome outcome = translating(failure::generic, [&] {
          nb::gil_scoped_release release;
          if (values) {
            return dist::solve_range(p, plan, range, std::move(hashes), std::move(*values),
                                     part_path, skip_if_repeats, threads);
          }
          return dist::solve_range(p, plan, range, std::move(hashes), part_path, skip_if_repeats,
                                   threads);
        });
        nb::object bumped_values = nb::none();
        if (values) bumped_values = nb::cast(to_numpy(std::move(outcome.bumped_values)));
        return nb::make_tuple(outcome.received_keys, outcome.distinct_keys, outcome.solved,
                              to_numpy(std::move(outcome.bumped)),
                              to_numpy(std::move(outcome.part)), bumped_values);
      },
      nb::arg("params"), nb::arg("plan"), nb::arg("range"), nb::arg("hash_arrays"),
      nb::arg("part_path"), nb::arg("skip_if_repeats") = false, nb::arg("threads") = 0,
      nb::arg("value_arrays") = nb::none(),
      "Solves one range from its hash arrays (and, for retrieval, their stored values' "
      "arrays) into its part file (part_path empty: no file, the part's bytes returned); "
      "returns (received, distinct, solved, bumped, part bytes, bumped values or None). "
      "Conflicting values raise ConflictingValuesError, whose key_hash names the key.");
}

/// The last layers built in one place, and the file written from all the layers' parts.
void bind_finish_steps(nb::module_& m) {
  nb::class_<dist::finished_layers>(m, "FinishedLayers",
                                    "The last layers of a build, built in memory.")
      .def_prop_ro("num_layers", [](const dist::finished_layers& f) { return f.layers().size(); });
  m.def(
      "finish_layers",
      [](const filter_params& p, std::uint32_t first_layer, const hash_array& bumped,
         std::uint32_t threads, std::optional<value_array> values) {
        if (values && values->shape(0) != bumped.shape(0)) {
          raise(failure::keys, "finish_layers: a value per bumped hash");
        }
        return translating(failure::generic, [&] {
          nb::gil_scoped_release release;
          if (values) {
            return dist::finish_layers(p, first_layer, bumped.data(), values->data(),
                                       bumped.shape(0), threads);
          }
          return dist::finish_layers(p, first_layer, bumped.data(), bumped.shape(0), threads);
        });
      },
      nb::arg("params"), nb::arg("first_layer"), nb::arg("bumped"), nb::arg("threads") = 0,
      nb::arg("values") = nb::none());
  m.def(
      "assemble",
      [](const std::string& path, const filter_params& p, std::uint64_t key_count,
         const std::vector<std::tuple<dist::layer_plan, std::uint64_t, std::vector<std::string>>>&
             layers,
         const dist::finished_layers* rest, std::uint64_t group_count, nb::handle names,
         std::optional<nb::bytes> metadata) {
        std::vector<dist::solved_layer> solved;
        for (const auto& [plan, bumped, parts] : layers) solved.push_back({plan, bumped, parts});
        const std::shared_ptr<const group_names> set_names = names_for(p, names);
        const std::shared_ptr<const std::string> bytes = metadata_for(metadata);
        translating(failure::file, [&] {
          nb::gil_scoped_release release;
          dist::assemble(path, p, key_count, solved, rest, group_count, set_names, bytes);
        });
      },
      nb::arg("path"), nb::arg("params"), nb::arg("key_count"), nb::arg("layers"),
      nb::arg("rest").none(), nb::arg("group_count") = 0, nb::arg("group_names") = nb::none(),
      nb::arg("metadata") = nb::none(),
      "Writes the file from (plan, bumped_keys, part paths) per distributed layer and the "
      "finished layers.");
}

/// The file framed around sections that others write, with the checksums they need.
void bind_frame_steps(nb::module_& m) {
  m.def(
      "frame_file",
      [](const filter_params& p, std::uint64_t key_count,
         const std::vector<
             std::tuple<dist::layer_plan, std::uint64_t, std::uint64_t, std::uint64_t>>& layers,
         const dist::finished_layers* rest, std::uint64_t group_count, nb::handle names,
         std::optional<nb::bytes> metadata) {
        std::vector<dist::solved_layer> solved;
        std::vector<dist::section_checksums> checksums;
        const std::shared_ptr<const group_names> set_names = names_for(p, names);
        const std::shared_ptr<const std::string> bytes = metadata_for(metadata);
        for (const auto& [plan, bumped, threshold_sum, solution_sum] : layers) {
          solved.push_back({plan, bumped, {}});
          checksums.push_back({threshold_sum, solution_sum});
        }
        dist::file_frame frame = translating(failure::generic, [&] {
          return dist::frame_file(p, key_count, solved, checksums, rest, group_count, set_names,
                                  bytes);
        });
        std::vector<std::tuple<std::uint64_t, nb::bytes>> pieces;
        for (const auto& piece : frame.pieces) {
          pieces.emplace_back(piece.offset, nb::bytes(piece.bytes.data(), piece.bytes.size()));
        }
        std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint32_t, std::uint32_t>> holes;
        for (const auto& hole : frame.holes) {
          holes.emplace_back(hole.offset, hole.bytes, hole.layer,
                             static_cast<std::uint32_t>(hole.which));
        }
        return std::make_tuple(frame.file_bytes, pieces, holes);
      },
      nb::arg("params"), nb::arg("key_count"), nb::arg("layers"), nb::arg("rest").none(),
      nb::arg("group_count") = 0, nb::arg("group_names") = nb::none(),
      nb::arg("metadata") = nb::none(),
      "The file around its distributed sections, from (plan, bumped_keys, threshold checksum, "
      "solution checksum) per distributed layer: (file_bytes, [(offset, bytes)], [(offset, "
      "size, layer, section: 0 thresholds, 1 solution)]).");

  nb::class_<xxh64_stream>(m, "SectionChecksum",
                           "The format's section checksum (XXH64), over pieces in order.")
      .def(nb::init<>())
      .def(
          "update",
          [](xxh64_stream& sum, const nb::ndarray<nb::ro, std::uint8_t, nb::ndim<1>, nb::c_contig,
                                                  nb::device::cpu>& bytes) {
            nb::gil_scoped_release release;
            sum.update(bytes.data(), bytes.shape(0));
          },
          nb::arg("bytes"))
      .def("digest", &xxh64_stream::digest);
}

using window_tuple =
    std::tuple<std::string, std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t>;

window_tuple window_to_tuple(const dist::part_window& w) {
  return {w.part, w.part_bytes, w.offset, w.bytes, w.file_offset};
}

dist::part_window window_from_tuple(const window_tuple& t) {
  dist::part_window w;
  std::tie(w.part, w.part_bytes, w.offset, w.bytes, w.file_offset) = t;
  return w;
}

std::vector<window_tuple> windows_to_tuples(const std::vector<dist::part_window>& windows) {
  std::vector<window_tuple> out;
  for (const auto& w : windows) out.push_back(window_to_tuple(w));
  return out;
}

/// A Python buffer's view, released when destroyed.
class buffer_view {
 public:
  explicit buffer_view(nb::handle object) {
    if (PyObject_GetBuffer(object.ptr(), &view_, PyBUF_SIMPLE) != 0) throw nb::python_error();
  }
  ~buffer_view() { PyBuffer_Release(&view_); }
  buffer_view(const buffer_view&) = delete;
  buffer_view& operator=(const buffer_view&) = delete;
  const void* data() const { return view_.buf; }
  std::size_t size() const { return static_cast<std::size_t>(view_.len); }

 private:
  Py_buffer view_{};
};

/// Part files on a pyarrow file system (an object store): the C++ assembly reads them
/// through its open_input_file(path) (size(), read_at(bytes, offset)), with the GIL.
class filesystem_part_files final : public dist::part_files {
 public:
  explicit filesystem_part_files(nb::object fs) : fs_(std::move(fs)) {}

  void read(const dist::part_window& w, std::vector<unsigned char>& buffer,
            const format::byte_sink& sink) override {
    nb::gil_scoped_acquire gil;
    nb::object file = fs_.attr("open_input_file")(w.part);
    try {
      const auto size = nb::cast<std::uint64_t>(file.attr("size")());
      if (size != w.part_bytes) {
        throw error("part file " + w.part + " has " + std::to_string(size) + " bytes, not " +
                    std::to_string(w.part_bytes) + " (not a part of this build, or damaged)");
      }
      for (std::uint64_t done = 0; done < w.bytes;) {
        const std::uint64_t n = std::min<std::uint64_t>(buffer.size(), w.bytes - done);
        const nb::object chunk = file.attr("read_at")(n, w.offset + done);
        const buffer_view view(chunk);
        if (view.size() == 0) throw error("part file " + w.part + " ended early");
        {
          nb::gil_scoped_release release;
          sink(view.data(), view.size());
        }
        done += view.size();
      }
    } catch (...) {
      try {
        file.attr("close")();
      } catch (const nb::python_error&) {
      }
      throw;
    }
    file.attr("close")();
  }

 private:
  nb::object fs_;
};

/// The file as a stream (an object store's upload): `write(bytes)` calls, in file order, with
/// the GIL. Each call gets its own bytes (a stream may keep them while it uploads).
class stream_file_writer final : public dist::file_writer {
 public:
  explicit stream_file_writer(nb::object write) : write_(std::move(write)) {}
  void write(std::uint64_t offset, const void* data, std::size_t size) override {
    if (offset != written_) {
      throw error("write_file: a stream written at " + std::to_string(offset) + " after " +
                  std::to_string(written_) + " bytes");
    }
    nb::gil_scoped_acquire gil;
    write_(nb::bytes(data, size));
    written_ += size;
  }

 private:
  nb::object write_;
  std::uint64_t written_ = 0;
};

/// Runs f(parts): the local part files for None, else those of a pyarrow file system.
template <class F>
void with_parts(nb::handle filesystem, F&& f) {
  if (filesystem.is_none()) {
    dist::local_part_files parts;
    nb::gil_scoped_release release;
    f(static_cast<dist::part_files&>(parts));
  } else {
    filesystem_part_files parts{nb::borrow(filesystem)};
    nb::gil_scoped_release release;
    f(static_cast<dist::part_files&>(parts));
  }
}

using piece_state = std::tuple<std::uint64_t, nb::bytes>;
using hole_state = std::tuple<std::uint64_t, std::uint64_t, std::uint32_t, std::uint32_t,
                              std::vector<window_tuple>>;
using frame_state = std::tuple<std::uint64_t, std::vector<piece_state>, std::vector<hole_state>>;

frame_state frame_to_state(const dist::file_frame& f) {
  frame_state s;
  std::get<0>(s) = f.file_bytes;
  for (const auto& piece : f.pieces) {
    std::get<1>(s).emplace_back(piece.offset, nb::bytes(piece.bytes.data(), piece.bytes.size()));
  }
  for (const auto& hole : f.holes) {
    std::get<2>(s).emplace_back(hole.offset, hole.bytes, hole.layer,
                                static_cast<std::uint32_t>(hole.which),
                                windows_to_tuples(hole.windows));
  }
  return s;
}

dist::file_frame frame_from_state(const frame_state& s) {
  dist::file_frame f;
  f.file_bytes = std::get<0>(s);
  for (const auto& [offset, bytes] : std::get<1>(s)) {
    const auto* data = reinterpret_cast<const unsigned char*>(bytes.c_str());
    f.pieces.push_back({offset, std::vector<unsigned char>(data, data + bytes.size())});
  }
  for (const auto& [offset, size, layer, which, windows] : std::get<2>(s)) {
    dist::file_frame::hole hole{offset, size, layer, static_cast<format::section>(which), {}};
    if (which > 1) raise(failure::options, "unknown section in a file frame");
    for (const auto& w : windows) hole.windows.push_back(window_from_tuple(w));
    f.holes.push_back(std::move(hole));
  }
  return f;
}

/// The assembly: the file framed around its parts' windows, and the steps an engine runs
/// where it likes (ribbon/distributed.hpp). Local files are read and written by C++ alone;
/// an object store's through its pyarrow file system.
void bind_assembly(nb::module_& m) {
  nb::class_<dist::file_frame>(
      m, "FileFrame",
      "The file around its distributed sections (header, descriptors, padding, finished "
      "layers) and the parts' windows that fill them. Picklable: assembly tasks get it.")
      .def_ro("file_bytes", &dist::file_frame::file_bytes)
      .def_prop_ro(
          "piece_bytes",
          [](const dist::file_frame& f) {
            std::uint64_t n = 0;
            for (const auto& piece : f.pieces) n += piece.bytes.size();
            return n;
          },
          "Bytes of the file outside the distributed sections (what write_pieces writes).")
      .def(
          "windows_by_part",
          [](const dist::file_frame& f) {
            std::vector<std::vector<window_tuple>> out;
            for (const auto& windows : dist::windows_by_part(f)) {
              out.push_back(windows_to_tuples(windows));
            }
            return out;
          },
          "Per part file: its windows (part, part bytes, offset, bytes, file offset), the work "
          "of one copy_windows task.")
      .def("__getstate__", &frame_to_state)
      .def("__setstate__", [](dist::file_frame* self, const frame_state& s) {
        new (self) dist::file_frame(frame_from_state(s));
      });
  m.def(
      "assembly_frame",
      [](const filter_params& p, std::uint64_t key_count,
         const std::vector<std::tuple<dist::layer_plan, std::uint64_t, std::vector<std::string>>>&
             layers,
         const dist::finished_layers* rest,
         std::optional<std::vector<std::tuple<std::uint64_t, std::uint64_t>>> checksums,
         std::uint64_t group_count, nb::handle names, std::optional<nb::bytes> metadata) {
        std::vector<dist::solved_layer> solved;
        for (const auto& [plan, bumped, parts] : layers) solved.push_back({plan, bumped, parts});
        std::vector<dist::section_checksums> sums(solved.size());
        if (checksums) {
          if (checksums->size() != solved.size()) {
            raise(failure::options, "assembly_frame: a checksum pair per layer");
          }
          for (std::size_t l = 0; l < sums.size(); ++l) {
            sums[l] = {std::get<0>((*checksums)[l]), std::get<1>((*checksums)[l])};
          }
        }
        const std::shared_ptr<const group_names> set_names = names_for(p, names);
        const std::shared_ptr<const std::string> bytes = metadata_for(metadata);
        return translating(failure::generic, [&] {
          for (const auto& layer : solved) {
            if (layer.parts.size() != layer.plan.num_ranges()) {
              throw error("assembly_frame: layer " + std::to_string(layer.plan.layer) + " has " +
                          std::to_string(layer.parts.size()) + " parts for " +
                          std::to_string(layer.plan.num_ranges()) + " ranges");
            }
          }
          return dist::frame_file(p, key_count, solved, sums, rest, group_count, set_names, bytes);
        });
      },
      nb::arg("params"), nb::arg("key_count"), nb::arg("layers"), nb::arg("rest").none(),
      nb::arg("checksums") = nb::none(), nb::arg("group_count") = 0,
      nb::arg("group_names") = nb::none(), nb::arg("metadata") = nb::none(),
      "The FileFrame of the file from (plan, bumped_keys, part paths) per distributed layer "
      "and the finished layers, the descriptors carrying `checksums` ((thresholds, solution) "
      "per layer; None: zeros, for the windows alone).");
  m.def(
      "checksum_sections",
      [](const dist::file_frame& frame, nb::handle filesystem) {
        std::vector<dist::section_checksums> sums;
        translating(failure::file, [&] {
          with_parts(filesystem, [&](dist::part_files& parts) {
            sums = dist::checksum_sections(frame, parts);
          });
        });
        std::vector<std::tuple<std::uint64_t, std::uint64_t>> out;
        for (const auto& s : sums) out.emplace_back(s.thresholds, s.solution);
        return out;
      },
      nb::arg("frame"), nb::arg("filesystem") = nb::none(),
      "(thresholds, solution) checksums per distributed layer, reading each section's parts "
      "in order (local files; else on `filesystem`, a pyarrow FileSystem).");
  m.def(
      "create_assembled_file",
      [](const std::string& path, std::uint64_t bytes) {
        translating(failure::file, [&] {
          nb::gil_scoped_release release;
          dist::local_file_writer::create(path, bytes);
        });
      },
      nb::arg("path"), nb::arg("bytes"),
      "Creates the local file to assemble, all its bytes allocated (a full disk fails here).");
  m.def(
      "copy_windows",
      [](const std::vector<window_tuple>& windows, const std::string& path, nb::handle filesystem) {
        std::vector<dist::part_window> ws;
        for (const auto& w : windows) ws.push_back(window_from_tuple(w));
        translating(failure::file, [&] {
          dist::local_file_writer out(path);
          with_parts(filesystem,
                     [&](dist::part_files& parts) { dist::copy_windows(ws, parts, out); });
        });
      },
      nb::arg("windows"), nb::arg("path"), nb::arg("filesystem") = nb::none(),
      "Writes windows of parts (FileFrame.windows_by_part) at their offsets in the local file "
      "`path` (made by create_assembled_file; positioned writes, other writers at once).");
  m.def(
      "write_pieces",
      [](const dist::file_frame& frame, const std::string& path) {
        translating(failure::file, [&] {
          nb::gil_scoped_release release;
          dist::local_file_writer out(path);
          dist::write_pieces(frame, out);
          out.sync();
        });
      },
      nb::arg("frame"), nb::arg("path"),
      "Writes the frame's pieces at their offsets in the local file `path` and flushes it "
      "to disk (the sections written before by copy_windows).");
  m.def(
      "write_file",
      [](const dist::file_frame& frame, nb::object write, nb::handle filesystem) {
        stream_file_writer out(std::move(write));
        translating(failure::file, [&] {
          with_parts(filesystem,
                     [&](dist::part_files& parts) { dist::write_file(frame, parts, out); });
        });
      },
      nb::arg("frame"), nb::arg("write"), nb::arg("filesystem") = nb::none(),
      "Streams the whole file in order to write(bytes) (an object store's output stream), "
      "the parts read from `filesystem` (None: local files).");
}

/// The parts directory of a local output, by the C++ temporaries' lock protocol.
void bind_parts_directory(nb::module_& m) {
  nb::class_<dist::parts_directory>(
      m, "PartsDirectory",
      "The locked parts directory of a distributed build beside local `output` (dead builds' "
      "directories of the same output removed first); removed with its files by remove().")
      .def(
          "__init__",
          [](dist::parts_directory* self, const std::string& output, nb::object before_locking) {
            std::function<void(const std::string&)> hook;
            if (!before_locking.is_none()) {
              hook = [before_locking](const std::string& path) {
                nb::gil_scoped_acquire gil;
                before_locking(path);
              };
            }
            translating(failure::file, [&] {
              nb::gil_scoped_release release;
              new (self) dist::parts_directory(output, hook);
            });
          },
          nb::arg("output"), nb::arg("before_locking") = nb::none(),
          "before_locking(path): called between creating the directory and locking it (tests).")
      .def_prop_ro("path", &dist::parts_directory::path)
      .def("remove", &dist::parts_directory::remove, nb::call_guard<nb::gil_scoped_release>());
  m.def("parts_prefix", &dist::parts_prefix, nb::arg("output"),
        "The name prefix of the parts directories of builds of `output`.");
}

/// The steps over hash arrays: without the GIL, C++ errors as ribbon exceptions.
void bind_steps(nb::module_& m) {
  bind_parts_directory(m);
  bind_range_steps(m);
  bind_finish_steps(m);
  bind_frame_steps(m);
  bind_assembly(m);
}

}  // namespace
}  // namespace ribbon::python

void bind_distributed(nb::module_& m) {
  ribbon::python::bind_params(m);
  ribbon::python::bind_plan(m);
  ribbon::python::bind_walk(m);
  ribbon::python::bind_steps(m);
}
