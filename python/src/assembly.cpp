// The distributed build's assembly (ribbon/distributed.hpp) for python/ribbon/distributed/
// assembly.py: the file framed around its parts' windows, the steps an engine runs where it
// likes, local files through C++ alone and object stores through their pyarrow file system,
// and the parts directory by the C++ temporaries' lock protocol.
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <functional>
#include <memory>
#include <tuple>
#include <vector>

#include "distributed_args.hpp"
#include "errors.hpp"
#include "ribbon/distributed.hpp"

namespace nb = nanobind;

namespace ribbon::python {
namespace {

namespace dist = ribbon::distributed;

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

/// The file framed around its parts' windows, and the steps an engine runs where it likes.
void bind_frame_and_steps(nb::module_& m) {
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

}  // namespace

void bind_assembly(nb::module_& m) {
  bind_frame_and_steps(m);
  bind_parts_directory(m);
}

}  // namespace ribbon::python
