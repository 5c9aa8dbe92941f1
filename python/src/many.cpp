// ribbon._build_many: many standalone filters in one call (ribbon::build_many). The Python
// wrapper ribbon.build_many (python/ribbon/__init__.py) turns a group column into the
// offsets and order arrays taken here.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <vector>

#include "bindings.hpp"
#include "errors.hpp"
#include "keys.hpp"
#include "options.hpp"
#include "ribbon/build_many.hpp"

#if defined(RIBBON_PYTHON_WITH_CUDA)
#include "ribbon/cuda/builder.hpp"
#endif

namespace nb = nanobind;

namespace ribbon::python {
namespace {

using positions = nb::ndarray<const std::uint64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

std::vector<filter> build_groups(const key_views& keys, const key_groups& groups,
                                 const build_options& options, bool gpu) {
#if defined(RIBBON_PYTHON_WITH_CUDA)
  if (gpu) {
    if (keys.kind() == key_kind::u64) {
      return cuda::build_many(keys.integers(), keys.size(), groups, options);
    }
    std::vector<std::uint64_t> hashes(keys.size());
    hash_keys(keys, options.seed, hashes.data());
    return cuda::build_many_from_hashes(hashes.data(), hashes.size(), key_kind::bytes, groups,
                                        options);
  }
#else
  (void)gpu;
#endif
  if (keys.kind() == key_kind::u64) {
    return build_many(keys.integers(), keys.size(), groups, options);
  }
  if (keys.arrow_chunks().empty()) {
    return build_many(keys.strings(), keys.size(), groups, options);
  }
  // Keys in Arrow buffers: hashed once, as a whole-column build would hash them.
  std::vector<std::uint64_t> hashes(keys.size());
  hash_keys(keys, options.seed, hashes.data());
  return build_many_from_hashes(hashes.data(), hashes.size(), key_kind::bytes, groups, options);
}

nb::list build_many_filters(nb::handle keys, const positions& offsets,
                            const std::optional<positions>& order, const build_arguments& args,
                            const std::string& backend, std::optional<std::string> kind) {
  const build_options options = to_build_options(args);
  const bool gpu = use_gpu(backend);
  std::optional<key_kind> expected;
  if (kind) expected = key_kind_from_name(*kind);
  const key_views views = to_arrow_key_views(keys, expected);
  if (offsets.shape(0) == 0) raise(failure::options, "offsets needs at least one entry (0)");
  const std::uint64_t rows = order ? order->shape(0) : offsets.data()[offsets.shape(0) - 1];
  if (rows != views.size()) {
    raise(failure::keys, "groups has " + std::to_string(rows) + " entries for " +
                             std::to_string(views.size()) + " keys");
  }
  const key_groups groups{offsets.data(), offsets.shape(0) - 1, order ? order->data() : nullptr};
  translating(failure::options,
              [&] { check_build_options(options, views.kind(), views.size(), false); });
  std::vector<filter> filters;
  translating(failure::generic, [&] {
    nb::gil_scoped_release release;
    filters = build_groups(views, groups, options, gpu);
  });
  nb::list out;
  for (filter& f : filters) out.append(nb::cast(std::move(f)));
  return out;
}

}  // namespace
}  // namespace ribbon::python

void bind_many(nb::module_& m) {
  using namespace ribbon::python;
  m.def(
      "_build_many",
      [](nb::handle keys, const positions& offsets, const std::optional<positions>& order,
         nb::kwargs options) {
        keywords given("build_many", options);
        const build_arguments args = given.build_options({"check_bits"});
        const std::string backend = given.value<std::string>("backend", "cpu");
        const std::optional<std::string> key_kind = given.optional<std::string>("key_kind");
        given.done();
        return build_many_filters(keys, offsets, order, args, backend, key_kind);
      },
      nb::arg("keys"), nb::arg("offsets"), nb::arg("order").none(), nb::arg("options"),
      "The filters of groups of keys: group g holds keys[order[i]] (keys[i] where order is "
      "None) for i in [offsets[g], offsets[g + 1]) (ribbon.build_many makes offsets and order "
      "from a group column).");
}
