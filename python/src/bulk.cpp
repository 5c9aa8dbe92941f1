// ribbon.BulkBuilder: the out-of-core builder (ribbon::bulk_builder), fed batch by batch.
#include <nanobind/ndarray.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <memory>

#include "bindings.hpp"
#include "errors.hpp"
#include "keys.hpp"
#include "options.hpp"
#include "ribbon/bulk_builder.hpp"

namespace nb = nanobind;

namespace ribbon::python {
namespace {

/// A bulk build: add() batches, then finish(path) once. close() (or leaving the `with`
/// block) drops it and its temporary files.
class bulk_build {
 public:
  bulk_build(key_kind kind, const bulk_options& options) : kind_(kind), options_(options) {
    options_.progress = &progress_;
    builder_ = translating(failure::options,
                           [&] { return std::make_unique<bulk_builder>(kind, options_); });
  }

  void add(nb::handle keys, nb::handle values) {
    const key_views views = to_key_views(keys, kind_);
    const std::vector<std::uint32_t> value_array = values_of(values, views.size());
    const std::uint32_t* v = value_array.empty() ? nullptr : value_array.data();
    bulk_builder& b = live();
    translating(failure::generic, [&] {
      nb::gil_scoped_release release;
      if (kind_ == key_kind::u64) {
        v ? b.add(views.integers(), v, views.size()) : b.add(views.integers(), views.size());
      } else {
        v ? b.add(views.strings(), v, views.size()) : b.add(views.strings(), views.size());
      }
    });
  }

  void add_hashes(nb::ndarray<nb::ro, nb::ndim<1>, std::uint64_t, nb::c_contig, nb::device::cpu> h,
                  nb::handle values) {
    const std::vector<std::uint32_t> value_array = values_of(values, h.shape(0));
    bulk_builder& b = live();
    translating(failure::generic, [&] {
      nb::gil_scoped_release release;
      if (value_array.empty()) {
        b.add_hashes(h.data(), h.shape(0));
      } else {
        b.add_hashes(h.data(), value_array.data(), h.shape(0));
      }
    });
  }

  nb::dict finish(const std::filesystem::path& path) {
    if (options_.groups != group_kind::none && !group_count_given_) {
      raise(failure::options,
            "a filter set's BulkBuilder needs set_group_count(n) (the distinct groups of its "
            "pairs) before finish()");
    }
    bulk_builder& b = live();
    bulk_result r;
    translating(failure::generic, [&] {
      run_interruptibly([&] { r = b.finish(path.string()); }, &progress_.cancel);
    });
    builder_.reset();
    nb::dict d;
    d["key_count"] = r.key_count;
    d["file_bytes"] = r.file_bytes;
    d["bits_per_key"] = r.bits_per_key();
    d["num_layers"] = r.num_layers;
    d["out_of_core"] = r.out_of_core;
    d["partitions"] = r.partitions;
    d["spilled_bytes"] = r.spilled_bytes;
    d["shard_ranges"] = r.shard_ranges;
    d["seconds"] = r.seconds;
    return d;
  }

  std::uint64_t key_count() { return live().key_count(); }

  void set_group_count(std::uint64_t groups) {
    bulk_builder& b = live();
    translating(failure::options, [&] { b.set_group_count(groups); });
    group_count_given_ = true;
  }

  void set_group_names(nb::handle names) {
    if (options_.groups == group_kind::none) {
      raise(failure::options, "set_group_names is for sets: make the builder with groups=");
    }
    group_names all = to_group_names(names, options_.groups);
    bulk_builder& b = live();
    translating(failure::options, [&] { b.set_group_names(std::move(all)); });
  }

  void set_metadata(const nb::bytes& metadata) {
    live().set_metadata(std::string(metadata.c_str(), metadata.size()));
  }

  void close() { builder_.reset(); }
  key_kind kind() const { return kind_; }

 private:
  /// The values of `count` keys: given exactly when the builder was made with_values.
  std::vector<std::uint32_t> values_of(nb::handle values, std::uint64_t count) {
    if (options_.with_values && values.is_none()) {
      raise(failure::keys,
            "this BulkBuilder stores values (with_values=True): add(keys, values=values)");
    }
    if (!options_.with_values && !values.is_none()) {
      raise(failure::keys,
            "values given to a filter build: make it with BulkBuilder(..., "
            "with_values=True, bits=B)");
    }
    if (values.is_none() || count == 0) return {};
    return to_values(values, count);
  }

  bulk_builder& live() {
    if (!builder_) raise(failure::generic, "this BulkBuilder is finished or closed");
    return *builder_;
  }

  key_kind kind_;
  build_progress progress_;
  bulk_options options_;
  bool group_count_given_ = false;
  std::unique_ptr<bulk_builder> builder_;
};

}  // namespace
}  // namespace ribbon::python

using namespace ribbon::python;

void bind_bulk(nb::module_& m) {
  nb::class_<bulk_build>(
      m, "BulkBuilder",
      R"(Builds a filter file (or, with_values, a retrieval file) from keys added in batches, in
bounded memory.

The out-of-core builder of `ribbon build`: while the key hashes fit in memory_limit they stay
in memory; beyond it they are spilled to partition files under tmp_dir and each layer is built
one shard range at a time. The file is byte-identical to ribbon.build over the same keys (and
values).
Use it as a context manager: leaving the block removes every temporary file.)")
      .def(
          "__init__",
          [](bulk_build* self, const std::string& kind, nb::kwargs given_options) {
            keywords given("BulkBuilder", given_options);
            const build_arguments args = given.build_options({"slack", "success_probability"});
            ribbon::bulk_options options;
            options.build = to_build_options(args);
            options.with_values = given.value<bool>("with_values", false);
            if (options.with_values && !args.bits) {
              raise(failure::options,
                    "with_values=True needs bits=B, the bits of each value: they must be "
                    "known before the values stream past (ribbon.build takes them from the "
                    "largest value)");
            }
            options.memory_limit = given.value<std::uint64_t>("memory_limit", 0);
            options.tmp_dir = given.value<std::string>("tmp_dir", "");
            options.expected_keys = given.value<std::uint64_t>("expected_keys", 0);
            options.groups = group_kind_named(given.optional<std::string>("groups"));
            if (const auto metadata = given.optional<nb::bytes>("metadata")) {
              options.metadata =
                  std::make_shared<const std::string>(metadata->c_str(), metadata->size());
            }
            given.done();
            new (self) bulk_build(key_kind_from_name(kind), options);
          },
          nb::arg("kind"), nb::arg("options"),
          R"(kind: "u64" (integer keys) or "bytes" (byte strings).
memory_limit: bytes the build may use (default: half the machine's or cgroup's memory).
tmp_dir: where partition files go (default $TMPDIR or /tmp). expected_keys: a sizing hint.
with_values: a retrieval structure (key -> value, as ribbon.build(keys, values)): every add()
gives values=, each below 2^bits (bits= is then required), with check_bits as ribbon.build's.
A key added twice with one value counts once; with two, finish() raises
ConflictingValuesError and writes nothing.
groups: "u64" or "bytes", a filter set (ribbon.build_set) whose groups are of that kind:
add_hashes() takes the pairs' hashes as ribbon.hash_pairs returns them, and set_group_count()
(and set_group_names(), for a set that knows its groups) come before finish().
metadata: bytes saved with the file (format version 7).
The other options are ribbon.build's.)")
      .def("add", &bulk_build::add, nb::arg("keys"), nb::kw_only(), nb::arg("values") = nb::none(),
           "Adds a batch of keys (any input ribbon.build takes, of this builder's kind) and, "
           "with_values, their values (an integer array or iterable of as many).")
      .def("add_hashes", &bulk_build::add_hashes, nb::arg("hashes"), nb::kw_only(),
           nb::arg("values") = nb::none(),
           "Adds key hashes as ribbon.hash_keys(keys, seed=seed) returns them (and, "
           "with_values, their values).")
      .def("finish", &bulk_build::finish, nb::arg("path"),
           R"(Builds and writes the file atomically; returns the build's statistics (dict).

Call once. Ctrl-C stops it within about a second, leaving no output or temporary files.)")
      .def_prop_ro("key_count", &bulk_build::key_count, "Keys added so far.")
      .def("set_group_count", &bulk_build::set_group_count, nb::arg("count"),
           "Sets (groups=): the number of distinct groups among the pairs added.")
      .def("set_group_names", &bulk_build::set_group_names, nb::arg("names"),
           "Sets (groups=): the names of every group (those without pairs too), which the "
           "file records; without them the file is format version 6.")
      .def("set_metadata", &bulk_build::set_metadata, nb::arg("metadata"),
           "Sets the bytes saved with the file (format version 7), replacing metadata=: for "
           "metadata that depends on the keys added, so that finish() writes the file once, "
           "with it.")
      .def_prop_ro(
          "kind", [](const bulk_build& b) { return key_kind_name(b.kind()); },
          "\"u64\" or \"bytes\".")
      .def("close", &bulk_build::close, "Drops the build and its temporary files.")
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def(
          "__exit__",
          [](bulk_build& b, nb::handle, nb::handle, nb::handle) {
            b.close();
            return false;
          },
          nb::arg("type").none(), nb::arg("value").none(), nb::arg("traceback").none());
}
