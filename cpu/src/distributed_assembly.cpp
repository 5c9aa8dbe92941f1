// The assembly of a distributed build (distributed.hpp): the file framed around the parts
// that range tasks wrote, the steps that fill it (checksums, window copies, the pieces) through
// the part_files and file_writer interfaces, and the locked parts directory.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <optional>

#include "output_file.hpp"
#include "ribbon/detail/xxhash64.hpp"
#include "ribbon/distributed.hpp"
#include "temp_files.hpp"

namespace ribbon::distributed {

namespace {

[[noreturn]] void fail_io(const std::string& what, const std::string& path) {
  throw error("cannot " + what + " " + path + ": " + std::strerror(errno));
}

/// Bytes the assembly reads from a part at once.
constexpr std::size_t copy_buffer_bytes = 4 << 20;

/// A file_writer over a byte sink: the file in order, each byte once.
class stream_writer final : public file_writer {
 public:
  explicit stream_writer(const format::byte_sink& sink) : sink_(sink) {}
  void write(std::uint64_t offset, const void* data, std::size_t size) override {
    if (offset != written_) {
      throw error("assemble: a stream written at " + std::to_string(offset) + " after " +
                  std::to_string(written_) + " bytes");
    }
    sink_(data, size);
    written_ += size;
  }

 private:
  const format::byte_sink& sink_;
  std::uint64_t written_ = 0;
};

/// Checks that the layers chain (each one's keys are the previous one's bumped keys).
void check_chain(std::uint64_t key_count, const std::vector<solved_layer>& layers,
                 const finished_layers* rest, bool with_parts) {
  if (key_count != 0 && layers.empty()) throw error("assemble: keys but no layer 0");
  std::uint64_t expected = key_count;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const layer_plan& plan = layers[l].plan;
    if (plan.layer != l || plan.input_keys != expected) {
      throw error("assemble: layer " + std::to_string(l) + " was planned as layer " +
                  std::to_string(plan.layer) + " for " + std::to_string(plan.input_keys) +
                  " keys, but " + std::to_string(expected) + " keys reach it");
    }
    if (with_parts && layers[l].parts.size() != plan.num_ranges()) {
      throw error("assemble: layer " + std::to_string(l) + " has " +
                  std::to_string(layers[l].parts.size()) + " part files for " +
                  std::to_string(plan.num_ranges()) + " ranges");
    }
    expected = layers[l].bumped_keys;
  }
  const bool rest_has_layers = rest && !rest->layers().empty();
  if (expected != 0 && (!rest_has_layers || rest->layers().front().input_keys != expected)) {
    throw error("assemble: " + std::to_string(expected) +
                " bumped keys of the last distributed layer reach no finished layer");
  }
  if (expected == 0 && rest_has_layers) {
    throw error("assemble: finished layers follow a layer that bumped nothing");
  }
}

}  // namespace

namespace {

/// The image of the file (layers checked by check_chain): the distributed layers' sections
/// external (null) with the given checksums, then the finished layers.
format::filter_image image_of(const filter_params& p, std::uint64_t key_count,
                              const std::vector<solved_layer>& layers,
                              const std::vector<section_checksums>& checksums,
                              const finished_layers* rest, std::uint64_t group_count,
                              std::shared_ptr<const group_names> names,
                              std::shared_ptr<const std::string> metadata) {
  if (checksums.size() != layers.size()) throw error("assemble: a checksum pair per layer");
  format::filter_image image{p, key_count, {}};
  image.group_count = group_count;
  image.names = std::move(names);
  image.metadata = std::move(metadata);
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const solved_layer& layer = layers[l];
    format::layer_image li;
    li.geometry = layer.plan.geometry;
    li.salt = layer.plan.salt;
    li.input_keys = layer.plan.input_keys;
    li.bumped_keys = layer.bumped_keys;
    li.threshold_checksum = checksums[l].thresholds;
    li.solution_checksum = checksums[l].solution;
    image.layers.push_back(li);
  }
  if (rest) {
    image.layers.insert(image.layers.end(), rest->layers().begin(), rest->layers().end());
  }
  return image;
}

}  // namespace

void assemble(const std::string& path, const filter_params& p, std::uint64_t key_count,
              const std::vector<solved_layer>& layers, const finished_layers* rest,
              std::uint64_t group_count, std::shared_ptr<const group_names> names,
              std::shared_ptr<const std::string> metadata) {
  check_chain(key_count, layers, rest, true);
  // The descriptors (written first) carry the sections' checksums: one pass to compute
  // them, one to copy, as the out-of-core builder reads its spill file back.
  local_part_files parts;
  const std::vector<section_checksums> checksums = checksum_sections(
      frame_file(p, key_count, layers, std::vector<section_checksums>(layers.size()), rest,
                 group_count, names, metadata),
      parts);
  const file_frame frame = frame_file(p, key_count, layers, checksums, rest, group_count,
                                      std::move(names), std::move(metadata));
  detail::write_atomically(path, [&](const format::byte_sink& sink) {
    stream_writer out(sink);
    write_file(frame, parts, out);
  });
}

file_frame frame_file(const filter_params& p, std::uint64_t key_count,
                      const std::vector<solved_layer>& layers,
                      const std::vector<section_checksums>& checksums, const finished_layers* rest,
                      std::uint64_t group_count, std::shared_ptr<const group_names> names,
                      std::shared_ptr<const std::string> metadata) {
  check_chain(key_count, layers, rest, false);
  const format::filter_image image = image_of(p, key_count, layers, checksums, rest, group_count,
                                              std::move(names), std::move(metadata));
  file_frame frame;
  // An external section passes a null pointer of its size to the sink: a hole, which breaks
  // the bytes around it into pieces (write_image hands the sink's pointers through as given).
  std::size_t hole_layer = 0;
  format::section hole_which = format::section::thresholds;
  auto sink = [&](const void* data, std::size_t size) {
    if (data == nullptr) {
      frame.holes.push_back(
          {frame.file_bytes, size, static_cast<std::uint32_t>(hole_layer), hole_which, {}});
    } else {
      if (frame.pieces.empty() ||
          frame.pieces.back().offset + frame.pieces.back().bytes.size() != frame.file_bytes) {
        frame.pieces.push_back({frame.file_bytes, {}});
      }
      const auto* bytes = static_cast<const unsigned char*>(data);
      frame.pieces.back().bytes.insert(frame.pieces.back().bytes.end(), bytes, bytes + size);
    }
    frame.file_bytes += size;
  };
  format::write_image(image, sink,
                      [&](std::size_t l, format::section which, const format::byte_sink& out) {
                        hole_layer = l;
                        hole_which = which;
                        const layer_plan& plan = layers.at(l).plan;
                        const layer_geometry& g = plan.geometry;
                        out(nullptr, which == format::section::thresholds
                                         ? g.threshold_words(p.bucket_size) * 8
                                         : g.solution_bytes(p.width, p.result_bits));
                      });
  for (file_frame::hole& hole : frame.holes) {
    const solved_layer& layer = layers.at(hole.layer);
    const layer_plan& plan = layer.plan;
    if (layer.parts.size() != plan.num_ranges()) continue;  // no parts named
    std::uint64_t offset = hole.offset;
    for (std::uint64_t r = 0; r < plan.num_ranges(); ++r) {
      const std::uint64_t split = plan.threshold_bytes(p, r), size = plan.part_bytes(p, r);
      part_window w{layer.parts[r], size, 0, split, offset};
      if (hole.which == format::section::solution) {
        w.offset = split;
        w.bytes = size - split;
      }
      offset += w.bytes;
      hole.windows.push_back(std::move(w));
    }
    if (offset != hole.offset + hole.bytes) {
      throw error("assemble: layer " + std::to_string(hole.layer) +
                  "'s parts do not tile its section");
    }
  }
  return frame;
}

void local_part_files::read(const part_window& w, std::vector<unsigned char>& buffer,
                            const format::byte_sink& sink) {
  const detail::unique_fd fd(::open(w.part.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) fail_io("open part file", w.part);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail_io("stat part file", w.part);
  if (static_cast<std::uint64_t>(st.st_size) != w.part_bytes) {
    throw error("part file " + w.part + " has " + std::to_string(st.st_size) + " bytes, not " +
                std::to_string(w.part_bytes) + " (not a part of this build, or damaged)");
  }
  detail::stream_file(fd.get(), w.offset, w.bytes, buffer, sink, "part file " + w.part);
}

void local_file_writer::create(const std::string& path, std::uint64_t bytes) {
  const detail::unique_fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  if (fd.get() < 0) fail_io("create", path);
  if (bytes != 0) {
    const int failed = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(bytes));
    if (failed != 0) {
      ::unlink(path.c_str());
      errno = failed;
      fail_io("allocate " + std::to_string(bytes) + " bytes for", path);
    }
  }
}

local_file_writer::local_file_writer(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd_ < 0) fail_io("open", path);
}

local_file_writer::~local_file_writer() {
  ::close(fd_);
}

void local_file_writer::write(std::uint64_t offset, const void* data, std::size_t size) {
  detail::write_fully(fd_, data, size, offset, path_);
}

void local_file_writer::sync() {
  if (::fsync(fd_) != 0) fail_io("flush", path_);
}

std::vector<section_checksums> checksum_sections(const file_frame& frame, part_files& parts) {
  std::vector<section_checksums> sums;
  std::vector<unsigned char> buffer(copy_buffer_bytes);
  for (const file_frame::hole& hole : frame.holes) {
    if (hole.windows.empty() && hole.bytes != 0) {
      throw error("checksum_sections: a frame without parts");
    }
    xxh64_stream sum;
    for (const part_window& w : hole.windows) {
      parts.read(w, buffer, [&](const void* data, std::size_t size) { sum.update(data, size); });
    }
    if (sums.size() <= hole.layer) sums.resize(hole.layer + 1);
    (hole.which == format::section::thresholds ? sums[hole.layer].thresholds
                                               : sums[hole.layer].solution) = sum.digest();
  }
  return sums;
}

std::vector<std::vector<part_window>> windows_by_part(const file_frame& frame) {
  std::vector<std::vector<part_window>> by_part;
  std::map<std::string, std::size_t> index;
  for (const file_frame::hole& hole : frame.holes) {
    for (const part_window& w : hole.windows) {
      const auto [at, added] = index.emplace(w.part, by_part.size());
      if (added) by_part.emplace_back();
      by_part[at->second].push_back(w);
    }
  }
  return by_part;
}

void copy_windows(const std::vector<part_window>& windows, part_files& parts, file_writer& out) {
  std::vector<unsigned char> buffer(copy_buffer_bytes);
  for (const part_window& w : windows) {
    std::uint64_t offset = w.file_offset;
    parts.read(w, buffer, [&](const void* data, std::size_t size) {
      out.write(offset, data, size);
      offset += size;
    });
  }
}

void write_pieces(const file_frame& frame, file_writer& out) {
  for (const file_frame::piece& piece : frame.pieces) {
    out.write(piece.offset, piece.bytes.data(), piece.bytes.size());
  }
}

void write_file(const file_frame& frame, part_files& parts, file_writer& out) {
  std::vector<unsigned char> buffer(copy_buffer_bytes);
  auto piece = frame.pieces.begin();
  auto hole = frame.holes.begin();
  while (piece != frame.pieces.end() || hole != frame.holes.end()) {
    if (hole == frame.holes.end() ||
        (piece != frame.pieces.end() && piece->offset < hole->offset)) {
      out.write(piece->offset, piece->bytes.data(), piece->bytes.size());
      ++piece;
      continue;
    }
    if (hole->windows.empty() && hole->bytes != 0) throw error("write_file: a frame without parts");
    copy_windows(hole->windows, parts, out);
    ++hole;
  }
}

std::string parts_prefix(const std::string& output) {
  const std::size_t slash = output.find_last_of('/');
  return "." + (slash == std::string::npos ? output : output.substr(slash + 1)) + ".ribbon-parts-";
}

struct parts_directory::impl {
  std::string directory;
  detail::unique_fd directory_fd;
  std::optional<detail::locked_temp> temp;  // after directory_fd: removed before it is closed
  std::string path;
};

parts_directory::parts_directory(const std::string& output,
                                 const std::function<void(const std::string&)>& before_locking)
    : impl_(std::make_unique<impl>()) {
  const std::size_t slash = output.find_last_of('/');
  impl_->directory =
      slash == std::string::npos ? "." : output.substr(0, std::max<std::size_t>(slash, 1));
  impl_->directory_fd = detail::open_directory(impl_->directory);
  if (impl_->directory_fd.get() < 0) fail_io("open directory", impl_->directory);
  const std::string prefix = parts_prefix(output);
  detail::reclaim_stale_temporaries(impl_->directory_fd.get(), detail::temp_kind::parts_directory,
                                    prefix);
  impl_->temp.emplace(impl_->directory_fd.get(), impl_->directory,
                      detail::temp_kind::parts_directory, prefix, before_locking);
  impl_->path = impl_->temp->path();
}

parts_directory::~parts_directory() {
  remove();
}

const std::string& parts_directory::path() const {
  return impl_->path;
}

void parts_directory::remove() noexcept {
  if (!impl_->temp) return;
  detail::remove_files_in(impl_->temp->fd());
  impl_->temp.reset();  // the directory removed, the lock dropped
}

}  // namespace ribbon::distributed
