#include "info.hpp"

#include <nanobind/stl/string.h>

#include <cstddef>

namespace nb = nanobind;

namespace ribbon::python {
namespace {

/// A summary field's value as Filter.info() gives it: an int, a float, a str or None.
struct python_value {
  nb::object operator()(std::uint64_t value) const { return nb::cast(value); }
  nb::object operator()(summary_number n) const { return nb::cast(n.value); }
  nb::object operator()(const std::string& text) const { return nb::cast(text); }
  nb::object operator()(std::nullptr_t) const { return nb::none(); }
};

/// The fields for_each_field() gives (of a filter's summary, or of a layer: index, layer).
template <class... Summary>
nb::dict as_dict(const Summary&... summary) {
  nb::dict d;
  for_each_field(summary...,
                 [&](const char* name, const auto& value) { d[name] = python_value{}(value); });
  return d;
}

}  // namespace

nb::dict info(const filter& f) {
  const filter_summary x = summarize(f);
  nb::dict d = as_dict(x);
  nb::list layers;
  for (std::size_t l = 0; l < x.layers.size(); ++l) layers.append(as_dict(l, x.layers[l]));
  d["layers"] = layers;
  return d;
}

}  // namespace ribbon::python
