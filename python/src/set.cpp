// ribbon._build_set and Filter.contains_in: filter sets (ribbon::filter::build_set, format
// version 6). The Python class ribbon.FilterSet (python/ribbon/sets.py) wraps a Filter that is
// a set.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <string>

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

filter build_set(nb::handle groups, nb::handle keys, const build_arguments& args,
                 std::optional<std::string> key_kind_name,
                 std::optional<std::string> group_kind_name) {
  const build_options options = to_build_options(args);
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
  return result;
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
      [](nb::handle groups, nb::handle keys, std::optional<double> fpr,
         std::optional<std::int64_t> bits, std::int64_t width, const std::string& variant,
         std::uint64_t seed, std::optional<std::int64_t> threads,
         std::optional<std::int64_t> shard_size, std::optional<double> slack,
         std::optional<double> success_probability, std::optional<std::string> key_kind,
         std::optional<std::string> group_kind, std::optional<std::string> threshold_codes) {
        return build_set(groups, keys,
                         build_arguments{fpr, bits, width, variant, seed, threads, shard_size,
                                         slack, success_probability, threshold_codes},
                         key_kind, group_kind);
      },
      nb::arg("groups"), nb::arg("keys"), nb::kw_only(), nb::arg("fpr") = nb::none(),
      nb::arg("bits") = nb::none(), nb::arg("width") = 64, nb::arg("variant") = "bumped",
      nb::arg("seed") = 0, nb::arg("threads") = nb::none(), nb::arg("shard_size") = nb::none(),
      nb::arg("slack") = nb::none(), nb::arg("success_probability") = nb::none(),
      nb::arg("key_kind") = nb::none(), nb::arg("group_kind") = nb::none(),
      nb::arg("threshold_codes") = nb::none(),
      "The filter set (a Filter answering contains_in) of the pairs (groups[i], keys[i]); "
      "ribbon.build_set wraps it in a FilterSet.");
}

void bind_set_queries(nb::class_<ribbon::filter>& c) {
  using namespace ribbon::python;
  c.def("contains_in", &contains_in, nb::arg("groups"), nb::arg("keys"),
        "Filter sets: may group groups[i] hold keys[i]? A numpy bool array. groups: one group "
        "(int, str or bytes) for every key, or one per key.")
      .def_prop_ro("is_set", &ribbon::filter::is_set, "True for a filter set (format version 6).")
      .def_prop_ro("group_count", &ribbon::filter::group_count,
                   "A filter set's distinct groups (0 for other files).")
      .def_prop_ro(
          "group_kind",
          [](const ribbon::filter& f) { return ribbon::group_kind_name(f.params().groups); },
          "A filter set's group kind: \"u64\" or \"bytes\" (\"none\" for other files).");
}
