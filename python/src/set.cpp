// ribbon._build_set, Filter.contains_in and Filter.groups_of: filter sets
// (ribbon::filter::build_set; format version 7 with their groups' names, 6 without). The Python
// class ribbon.FilterSet (python/ribbon/sets.py) wraps a Filter that is a set.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include <algorithm>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "bindings.hpp"
#include "errors.hpp"
#include "keys.hpp"
#include "options.hpp"
#include "ribbon/filter.hpp"
#include "ribbon/options.hpp"

namespace nb = nanobind;

namespace ribbon::python {
namespace {

/// Calls f(pointer) with the views' items as integers or as byte-string views.
template <class F>
decltype(auto) with_items(const key_views& v, const F& f) {
  if (v.kind() == key_kind::u64) return f(v.integers());
  return f(v.strings());
}

/// The key_kind that reads a set's groups of kind `kind`.
key_kind reading_groups(group_kind kind) {
  return kind == group_kind::u64 ? key_kind::u64 : key_kind::bytes;
}

/// A single group (int, str, bytes or a numpy scalar) rather than a collection of them.
bool is_one_group(nb::handle groups) {
  if (PyLong_Check(groups.ptr()) || PyUnicode_Check(groups.ptr()) || PyBytes_Check(groups.ptr())) {
    return true;
  }
  return nb::hasattr(groups, "ndim") && nb::cast<int>(groups.attr("ndim")) == 0;
}

/// A built set's names with `more` (groups without keys) added.
void add_group_names(filter& f, nb::handle more) {
  group_names all = to_group_names(more, f.params().groups);
  if (f.params().groups == group_kind::u64) {
    std::vector<std::uint64_t> names = all.integers();
    names.insert(names.end(), f.groups().integers().begin(), f.groups().integers().end());
    all = group_names::of(std::move(names));
  } else {
    std::vector<std::string> names = all.strings();
    names.insert(names.end(), f.groups().strings().begin(), f.groups().strings().end());
    all = group_names::of(std::move(names));
  }
  f.set_group_names(std::move(all));
}

filter build_set(nb::handle groups, nb::handle keys, const build_arguments& args,
                 std::optional<std::string> key_kind_name,
                 std::optional<std::string> group_kind_name, bool with_names, nb::handle all_groups,
                 std::optional<nb::bytes> metadata) {
  build_options options = to_build_options(args);
  options.group_names = with_names;
  if (!with_names && !all_groups.is_none()) {
    raise(failure::options, "all_groups names groups: it needs group_names=True");
  }
  std::optional<key_kind> keys_expected, groups_expected;
  if (key_kind_name) keys_expected = key_kind_from_name(*key_kind_name);
  if (group_kind_name) groups_expected = key_kind_from_name(*group_kind_name);
  const key_views group_views = to_key_views(groups, groups_expected);
  const key_views key_views_ = to_key_views(keys, keys_expected);
  if (group_views.size() != key_views_.size()) {
    raise(failure::keys, "groups has " + std::to_string(group_views.size()) + " entries for " +
                             std::to_string(key_views_.size()) + " keys");
  }
  translating(failure::options,
              [&] { check_build_options(options, key_views_.kind(), key_views_.size(), false); });
  filter result;
  translating(failure::generic, [&] {
    nb::gil_scoped_release release;
    result = with_items(group_views, [&](const auto* g) {
      return with_items(key_views_, [&](const auto* k) {
        return filter::build_set(g, k, key_views_.size(), options);
      });
    });
  });
  translating(failure::keys, [&] {
    if (!all_groups.is_none()) add_group_names(result, all_groups);
  });
  if (metadata) result.set_metadata(std::string(metadata->c_str(), metadata->size()));
  return result;
}

/// The names of a set's groups: a numpy uint64 array, or a list of bytes.
nb::object groups_of_set(const filter& f) {
  const group_names& names =
      translating(failure::query, [&]() -> const group_names& { return f.groups(); });
  if (names.kind() == group_kind::u64) {
    return nb::cast(new_array<std::uint64_t>(names.size(), [&](std::uint64_t* out) {
      std::copy(names.integers().begin(), names.integers().end(), out);
    }));
  }
  nb::list out;
  for (const std::string& name : names.strings()) out.append(nb::bytes(name.data(), name.size()));
  return out;
}

/// groups_of(): (offsets, indices) as numpy uint64 arrays.
nb::tuple groups_of(const filter& f, nb::handle keys) {
  const key_views key_views_ = to_key_views(keys, f.params().keys);
  filter::group_matches m;
  translating(failure::query, [&] {
    nb::gil_scoped_release release;
    m = with_items(key_views_, [&](const auto* k) { return f.groups_of(k, key_views_.size()); });
  });
  auto to_array = [](const std::vector<std::uint64_t>& v) {
    return new_array<std::uint64_t>(
        v.size(), [&](std::uint64_t* out) { std::copy(v.begin(), v.end(), out); });
  };
  return nb::make_tuple(to_array(m.offsets), to_array(m.groups));
}

nb::ndarray<nb::numpy, bool, nb::ndim<1>> contains_in(const filter& f, nb::handle groups,
                                                      nb::handle keys) {
  if (!f.is_set()) {
    raise(failure::query, "this is not a filter set: query it with contains() (or lookup())");
  }
  const key_kind group_kind = reading_groups(f.params().groups);
  const key_views key_views_ = to_key_views(keys, f.params().keys);
  const bool one = is_one_group(groups);
  const nb::object group_source = one ? nb::object(nb::make_tuple(groups)) : nb::borrow(groups);
  const key_views group_views = to_key_views(group_source, group_kind);
  if (!one && group_views.size() != key_views_.size()) {
    raise(failure::keys, "groups has " + std::to_string(group_views.size()) + " entries for " +
                             std::to_string(key_views_.size()) + " keys");
  }
  return new_array<bool>(key_views_.size(), [&](bool* out) {
    with_items(key_views_, [&](const auto* k) {
      if (one) {
        with_items(group_views,
                   [&](const auto* g) { f.contains_in(g[0], k, key_views_.size(), out); });
      } else {
        with_items(group_views,
                   [&](const auto* g) { f.contains_in(g, k, key_views_.size(), out); });
      }
    });
  });
}

}  // namespace
}  // namespace ribbon::python

void bind_sets(nb::module_& m) {
  using namespace ribbon::python;
  m.def(
      "_build_set",
      [](nb::handle groups, nb::handle keys, nb::kwargs options) {
        keywords given("build_set", options);
        const build_arguments args = given.build_options({"check_bits"});
        const std::optional<std::string> key_kind = given.optional<std::string>("key_kind");
        const std::optional<std::string> group_kind = given.optional<std::string>("group_kind");
        const bool group_names = given.value<bool>("group_names", true);
        const nb::object all_groups = given.object("all_groups");
        const std::optional<nb::bytes> metadata = given.optional<nb::bytes>("metadata");
        given.done();
        return build_set(groups, keys, args, key_kind, group_kind, group_names, all_groups,
                         metadata);
      },
      nb::arg("groups"), nb::arg("keys"), nb::arg("options"),
      "The filter set (a Filter answering contains_in) of the pairs (groups[i], keys[i]); "
      "ribbon.build_set wraps it in a FilterSet.");
}

void bind_set_queries(nb::class_<ribbon::filter>& c) {
  using namespace ribbon::python;
  c.def("contains_in", &contains_in, nb::arg("groups"), nb::arg("keys"),
        "Filter sets: may group groups[i] hold keys[i]? A numpy bool array. groups: one group "
        "(int, str or bytes) for every key, or one per key.")
      .def("groups", &groups_of_set,
           "A filter set's group names, sorted (those without keys too): a numpy uint64 array "
           "or a list of bytes. QueryError for a set written without names (version 6).")
      .def("groups_of", &groups_of, nb::arg("keys"),
           "For each key, the groups that may hold it: (offsets, indices), numpy uint64 "
           "arrays; key i's groups are groups()[indices[offsets[i]:offsets[i + 1]]].")
      .def_prop_ro("has_group_names", &ribbon::filter::has_group_names,
                   "True for a filter set that knows its groups' names (format version 7).")
      .def_prop_ro(
          "metadata",
          [](const ribbon::filter& f) -> nb::object {
            const std::optional<std::string_view> m = f.metadata();
            if (!m) return nb::none();
            return nb::bytes(m->data(), m->size());
          },
          "The application metadata stored with the file (bytes), or None.")
      .def(
          "with_metadata",
          [](const ribbon::filter& f, std::optional<nb::bytes> metadata) {
            const std::vector<unsigned char> bytes = f.serialize();
            ribbon::filter copy = ribbon::filter::from_bytes(bytes.data(), bytes.size());
            if (metadata) {
              copy.set_metadata(std::string(metadata->c_str(), metadata->size()));
            } else {
              copy.clear_metadata();
            }
            return copy;
          },
          nb::arg("metadata").none(),
          "A copy of the filter that saves `metadata` (bytes) with it (format version 7), or "
          "none (None).")
      .def_prop_ro("is_set", &ribbon::filter::is_set,
                   "True for a filter set (format versions 6, 7).")
      .def_prop_ro("group_count", &ribbon::filter::group_count,
                   "A filter set's distinct groups (0 for other files).")
      .def_prop_ro(
          "group_kind",
          [](const ribbon::filter& f) { return ribbon::group_kind_name(f.params().groups); },
          "A filter set's group kind: \"u64\" or \"bytes\" (\"none\" for other files).");
}
