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
#include "distributed_args.hpp"
#include "errors.hpp"
#include "keys.hpp"
#include "options.hpp"
#include "ribbon/distributed.hpp"

namespace nb = nanobind;

namespace ribbon::python {

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

/// Parameters travel as the format's own serialized form (format::params_bytes).
nb::bytes params_to_state(const filter_params& p) {
  const std::vector<unsigned char> bytes = format::params_bytes(p);
  return nb::bytes(bytes.data(), bytes.size());
}

filter_params params_from_state(const nb::bytes& state) {
  return translating(failure::options,
                     [&] { return format::params_from_bytes(state.c_str(), state.size()); });
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
      .def("__setstate__", [](filter_params* self, const nb::bytes& s) {
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

/// The steps over hash arrays: without the GIL, C++ errors as ribbon exceptions.
void bind_steps(nb::module_& m) {
  bind_range_steps(m);
  bind_finish_steps(m);
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
