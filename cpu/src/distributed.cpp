// The steps of a distributed build (distributed.hpp): the out-of-core builder's shard-range
// solver and the format writer, with the ranges solved wherever an engine runs them.
#include "ribbon/distributed.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include "layered_builder.hpp"
#include "output_file.hpp"
#include "ribbon/detail/records.hpp"
#include "ribbon/detail/xxhash64.hpp"
#include "ribbon/options.hpp"
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

layer_sizing sizing_of(const filter_params& p) {
  return default_sizing(p.width);  // what sizing_from() gives every bumped build
}

/// Runs f(i) for i < n in parallel pieces (vectorized steps on large batches).
template <class F>
void for_each_index(std::uint64_t n, const F& f) {
  constexpr std::uint64_t piece = 1 << 16;
  if (n <= piece) {
    for (std::uint64_t i = 0; i < n; ++i) f(i);
    return;
  }
  tbb::parallel_for(std::uint64_t{0}, detail::divide_round_up(n, piece), [&](std::uint64_t b) {
    const std::uint64_t end = std::min(n, (b + 1) * piece);
    for (std::uint64_t i = b * piece; i < end; ++i) f(i);
  });
}

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

filter_params build_params(const build_options& options, key_kind keys, group_kind groups) {
  if (options.variant != filter_variant::bumped) {
    throw error("the distributed build makes the default (bumped) filter only");
  }
  filter_params p = ribbon::build_params(options, keys, false);
  p.groups = groups;
  if (const char* problem = check_params(p)) throw error(problem);
  return p;
}

filter_params retrieval_params(const build_options& options, key_kind keys) {
  if (options.variant != filter_variant::bumped) {
    throw error("the distributed build makes the default (bumped) retrieval structure only");
  }
  return ribbon::build_params(options, keys, true);
}

void to_stored_values(const filter_params& p, const std::uint64_t* key_hashes,
                      std::uint32_t* values, std::uint64_t n) {
  detail::check_values(values, n, p.value_bits(), 0);
  for_each_index(n, [&](std::uint64_t i) { values[i] = p.stored_value(key_hashes[i], values[i]); });
}

std::uint64_t layer_plan::threshold_bytes(const filter_params& p, std::uint64_t range) const {
  return geometry.shard_range_threshold_bytes(first_shard(range), end_shard(range), p.bucket_size);
}

std::uint64_t layer_plan::solution_bytes(const filter_params& p, std::uint64_t range) const {
  return geometry.shard_range_solution_bytes(first_shard(range), end_shard(range), p.width,
                                             p.result_bits);
}

ranged_layers ranged_layers_for(const filter_params& p, std::uint64_t one_place_keys,
                                std::uint64_t rows) {
  return ranged_layers(p, sizing_of(p), one_place_keys, rows);
}

layer_plan plan_layer(const filter_params& p, std::uint32_t layer, std::uint64_t keys,
                      std::uint64_t range_keys, std::uint64_t task_slots) {
  if (keys == 0) throw error("plan_layer: a layer without keys has nothing to plan");
  const layer_step step = layer_sequence::in_ranges(p, sizing_of(p), 0).at(layer, keys);
  if (!step.in_ranges) {
    throw error("plan_layer: layer " + std::to_string(layer) + " with " + std::to_string(keys) +
                " keys is the final plain layer: finish it with finish_layers");
  }
  layer_plan plan;
  plan.layer = layer;
  plan.input_keys = keys;
  plan.salt = step.salt;
  plan.geometry = step.geometry;
  const double keys_per_shard = static_cast<double>(keys) *
                                static_cast<double>(plan.geometry.shard_size()) /
                                static_cast<double>(plan.geometry.num_starts);
  const std::uint64_t shards = plan.geometry.num_shards();
  plan.shards_per_range = std::clamp<std::uint64_t>(
      static_cast<std::uint64_t>(static_cast<double>(range_keys) / std::ceil(keys_per_shard)), 1,
      shards);
  if (task_slots > 1) {  // fill the last wave: ranges up to a multiple of the slots
    const std::uint64_t waves = detail::divide_round_up(plan.num_ranges(), task_slots);
    plan.shards_per_range = detail::divide_round_up(shards, std::min(shards, waves * task_slots));
  }
  return plan;
}

void to_layer_hashes(const layer_plan& plan, std::uint64_t* hashes, std::uint64_t n) {
  if (plan.layer == 0) return;
  const std::uint64_t salt = plan.salt;
  for_each_index(n, [&](std::uint64_t i) { hashes[i] = remix(hashes[i], salt); });
}

void route(const layer_plan& plan, const std::uint64_t* hashes, std::uint64_t n,
           std::uint64_t* ranges) {
  for_each_index(n, [&](std::uint64_t i) { ranges[i] = plan.range_of(hashes[i]); });
}

namespace {

/// Moves the items of `items` (n of them) to the places `place(i)` gives (a permutation).
template <class T, class Place>
void permute(T* items, std::uint64_t n, const Place& place) {
  std::vector<T> moved(n);
  for (std::uint64_t i = 0; i < n; ++i) moved[place(i)] = items[i];
  std::copy(moved.begin(), moved.end(), items);
}

/// group_by_range's places: the stable counting sort of the hashes by range.
std::vector<std::uint64_t> range_places(const layer_plan& plan, const std::uint64_t* hashes,
                                        std::uint64_t n, std::vector<std::uint64_t>& offsets) {
  const std::uint64_t ranges = plan.num_ranges();
  offsets.assign(ranges + 1, 0);
  for (std::uint64_t i = 0; i < n; ++i) ++offsets[plan.range_of(hashes[i]) + 1];
  for (std::uint64_t r = 0; r < ranges; ++r) offsets[r + 1] += offsets[r];
  std::vector<std::uint64_t> cursor(offsets.begin(), offsets.end() - 1), places(n);
  for (std::uint64_t i = 0; i < n; ++i) places[i] = cursor[plan.range_of(hashes[i])]++;
  return places;
}

}  // namespace

void group_by_range(const layer_plan& plan, std::uint64_t* hashes, std::uint64_t n,
                    std::vector<std::uint64_t>& offsets) {
  const std::vector<std::uint64_t> places = range_places(plan, hashes, n, offsets);
  permute(hashes, n, [&](std::uint64_t i) { return places[i]; });
}

void group_by_range(const layer_plan& plan, std::uint64_t* hashes, std::uint32_t* values,
                    std::uint64_t n, std::vector<std::uint64_t>& offsets) {
  const std::vector<std::uint64_t> places = range_places(plan, hashes, n, offsets);
  permute(hashes, n, [&](std::uint64_t i) { return places[i]; });
  permute(values, n, [&](std::uint64_t i) { return places[i]; });
}

namespace {

/// solve_range over records (hashes, or hashes with stored values); the bumped records come
/// back in `bumped`.
template <class Record>
range_outcome solve_records(const filter_params& p, const layer_plan& plan, std::uint64_t range,
                            std::vector<Record> records, const std::string& part_path,
                            bool skip_if_repeats, std::uint32_t threads,
                            std::vector<Record>& bumped) {
  if (range >= plan.num_ranges()) {
    throw error("solve_range: layer " + std::to_string(plan.layer) + " has " +
                std::to_string(plan.num_ranges()) + " ranges, not " + std::to_string(range + 1));
  }
  for (const Record& record : records) {
    const std::uint64_t h = detail::record_hash(record);
    if (plan.range_of(h) != range) {
      throw error("solve_range: a hash of range " + std::to_string(plan.range_of(h)) +
                  " was given to range " + std::to_string(range) + " of layer " +
                  std::to_string(plan.layer));
    }
  }
  range_outcome outcome;
  outcome.received_keys = records.size();
  const std::uint64_t lo = plan.first_shard(range), hi = plan.end_shard(range);
  aligned_bytes thresholds, solution;
  build_stats stats;
  auto solve = [&](auto width_tag, auto result_tag) {
    // A bumped build: no option changes its sizing.
    detail::layered_builder<decltype(width_tag)::value, decltype(result_tag), Record> builder(
        p, build_options{}, stats, nullptr);
    auto make_windows = [&] {
      thresholds = allocate_aligned(plan.threshold_bytes(p, range));
      solution = allocate_aligned(plan.solution_bytes(p, range));
      return detail::section_windows{reinterpret_cast<std::uint64_t*>(thresholds.get()),
                                     solution.get()};
    };
    bool solved = false;
    auto proceed = [&](const Record*, std::uint64_t distinct) {
      solved = !(skip_if_repeats && distinct != outcome.received_keys);
      return solved;
    };
    outcome.distinct_keys =
        builder.solve_shard_range(plan.geometry, lo, hi, records, make_windows, proceed);
    return solved;
  };
  outcome.solved =
      detail::run_with_threads(threads, [&] { return detail::dispatch_layout(p, solve); });
  if (!outcome.solved) return outcome;
  bumped = std::move(records);
  if (part_path.empty()) {
    outcome.part.resize(plan.part_bytes(p, range));
    std::memcpy(outcome.part.data(), thresholds.get(), plan.threshold_bytes(p, range));
    std::memcpy(outcome.part.data() + plan.threshold_bytes(p, range), solution.get(),
                plan.solution_bytes(p, range));
    return outcome;
  }
  detail::write_atomically(part_path, [&](const format::byte_sink& sink) {
    sink(thresholds.get(), plan.threshold_bytes(p, range));
    sink(solution.get(), plan.solution_bytes(p, range));
  });
  return outcome;
}

void require_values(const filter_params& p, bool with_values, const char* step) {
  if (is_retrieval(p.variant) != with_values) {
    throw error(std::string(step) + (with_values ? ": values given to a filter's build"
                                                 : ": a retrieval build needs the values"));
  }
}

}  // namespace

range_outcome solve_range(const filter_params& p, const layer_plan& plan, std::uint64_t range,
                          std::vector<std::uint64_t> hashes, const std::string& part_path,
                          bool skip_if_repeats, std::uint32_t threads) {
  require_values(p, false, "solve_range");
  std::vector<std::uint64_t> bumped;
  range_outcome outcome =
      solve_records(p, plan, range, std::move(hashes), part_path, skip_if_repeats, threads, bumped);
  outcome.bumped = std::move(bumped);
  return outcome;
}

range_outcome solve_range(const filter_params& p, const layer_plan& plan, std::uint64_t range,
                          std::vector<std::uint64_t> hashes, std::vector<std::uint32_t> values,
                          const std::string& part_path, bool skip_if_repeats,
                          std::uint32_t threads) {
  require_values(p, true, "solve_range");
  if (values.size() != hashes.size()) {
    throw error("solve_range: " + std::to_string(values.size()) + " values for " +
                std::to_string(hashes.size()) + " hashes");
  }
  std::vector<detail::packed_keyed_value> records(hashes.size()), bumped;
  for (std::size_t i = 0; i < hashes.size(); ++i) records[i] = {hashes[i], values[i]};
  hashes = {};
  values = {};
  range_outcome outcome = solve_records(p, plan, range, std::move(records), part_path,
                                        skip_if_repeats, threads, bumped);
  for (const detail::packed_keyed_value& record : bumped) {
    outcome.bumped.push_back(record.hash);
    outcome.bumped_values.push_back(record.value);
  }
  return outcome;
}

struct finished_layers::impl {
  std::vector<format::layer_image> layers;
  std::vector<aligned_bytes> buffers;
};

finished_layers::finished_layers() : impl_(std::make_unique<impl>()) {}
finished_layers::~finished_layers() = default;
finished_layers::finished_layers(finished_layers&&) noexcept = default;
finished_layers& finished_layers::operator=(finished_layers&&) noexcept = default;

const std::vector<format::layer_image>& finished_layers::layers() const {
  return impl_->layers;
}

template <class Record>
finished_layers finish_records(const filter_params& p, std::uint32_t first_layer,
                               const Record* bumped, std::uint64_t n, std::uint32_t threads) {
  finished_layers out;
  if (n == 0) return out;
  if (first_layer == 0) throw error("finish_layers: layer 0 is always distributed");
  auto previous = allocate_array<Record>(n);
  std::copy_n(bumped, n, previous.get());
  build_stats stats;
  auto build = [&](auto width_tag, auto result_tag) {
    // A bumped build: no option changes its sizing.
    detail::layered_builder<decltype(width_tag)::value, decltype(result_tag), Record> builder(
        p, build_options{}, stats, nullptr);
    builder.build_rest(first_layer, std::move(previous), n, out.impl_->layers, out.impl_->buffers);
  };
  detail::run_with_threads(threads, [&] { detail::dispatch_layout(p, build); });
  return out;
}

finished_layers finish_layers(const filter_params& p, std::uint32_t first_layer,
                              const std::uint64_t* bumped_hashes, std::uint64_t n,
                              std::uint32_t threads) {
  require_values(p, false, "finish_layers");
  return finish_records(p, first_layer, bumped_hashes, n, threads);
}

finished_layers finish_layers(const filter_params& p, std::uint32_t first_layer,
                              const std::uint64_t* bumped_hashes,
                              const std::uint32_t* bumped_values, std::uint64_t n,
                              std::uint32_t threads) {
  require_values(p, true, "finish_layers");
  std::vector<detail::packed_keyed_value> records(n);
  for (std::uint64_t i = 0; i < n; ++i) records[i] = {bumped_hashes[i], bumped_values[i]};
  return finish_records(p, first_layer, records.data(), n, threads);
}

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
