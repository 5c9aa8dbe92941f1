// Stage: the bulk build. Keys stream in; hashes stay in memory while they fit the memory
// plan (memory_plan.hpp), else they are spilled to partition files by their top bits
// (spill_files.hpp) and the layers that do not fit are built one shard range at a time
// (out_of_core_layer.hpp), the rest in memory (see bulk_builder.hpp and docs/internals.md,
// "Out of core").
#include "ribbon/bulk_builder.hpp"

#include <malloc.h>

#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "layered_builder.hpp"
#include "memory_plan.hpp"
#include "out_of_core_layer.hpp"
#include "output_file.hpp"
#include "ribbon/options.hpp"
#include "spill_files.hpp"
#include "temp_files.hpp"

namespace ribbon {

namespace {

using namespace detail;  // this file's stages

/// The error of a standard or homogeneous build whose keys (`keys` of them, or more when
/// `more`: the input is still being read) do not fit its limit in memory; `needed_mib`: the
/// smallest limit that holds them.
memory_limit_error too_many_for_in_memory_variant(std::uint64_t keys, bool more,
                                                  std::uint64_t needed_mib) {
  return memory_limit_error(
      "the standard and homogeneous variants build in memory only (their layer 0 is retried "
      "whole), and " +
          std::string(more ? "more than " : "") + std::to_string(keys) +
          " keys exceed the memory limit: they need " + needed_limit_text(needed_mib) +
          (more ? " (more for the keys not yet read)" : "") + ", or use the bumped variant",
      needed_mib);
}

}  // namespace

namespace detail {

/// What a bulk_builder's calls reach: the build of its record type (bulk_pipeline_of).
struct bulk_pipeline {
  filter_params params;
  bulk_options options;
  memory_plan plan;
  std::uint64_t count = 0;
  std::uint64_t group_count = 0;             ///< filter sets
  std::shared_ptr<const group_names> names;  ///< filter sets: written where not null
  bool finished = false;

  virtual ~bulk_pipeline() = default;
  /// Adds key hashes and, in retrieval, their values (else null).
  virtual void add(const std::uint64_t* hashes, const std::uint32_t* values, std::uint64_t n) = 0;
  virtual bulk_result finish(const std::string& path) = 0;
};

}  // namespace detail

struct bulk_builder::impl {
  std::unique_ptr<detail::bulk_pipeline> pipeline;
};

namespace {

/// The bulk build of one record type: key hashes (filters) or packed hashes with values
/// (retrieval; detail/records.hpp). Everything past add() is the same code for both.
template <class Record>
struct bulk_pipeline_of final : bulk_pipeline {
  // Retrieval: a buffer's records, made from the hashes and values added.
  std::vector<Record> staging =
      std::vector<Record>(std::is_same_v<Record, std::uint64_t> ? 0 : 4096);

  // In memory: records in chunks.
  std::vector<aligned_array<Record>> chunks;

  // Spilled: partition files of layer 0 by the top `partition_bits` bits of the hash. The
  // directory is declared first so that it is removed after its files.
  std::unique_ptr<spill_directory> directory;
  spill_files partitions;
  std::uint32_t partition_bits = 0;
  std::uint64_t spilled_bytes = 0;
  std::uint64_t shard_ranges = 0;

  bool spilled() const { return directory != nullptr; }

  /// The smallest limit (MiB, the caller's) whose plan fits: for memory_limit_error.
  std::uint64_t smallest_limit_mib(const std::function<bool(const memory_plan&)>& fits) const {
    return detail::smallest_limit_mib(params, options.build.threads, options.limit_of_caller, fits);
  }

  /// The error of a standard or homogeneous build of more keys than fit in memory.
  memory_limit_error in_memory_only(std::uint64_t keys, bool more) const {
    return too_many_for_in_memory_variant(
        keys, more, smallest_limit_mib([&](const memory_plan& larger) {
          return keys * in_memory_bytes_per_key(params) <= larger.spill_budget;
        }));
  }

  void set_stage(build_progress::stage s, std::uint64_t total = 0) {
    if (!options.progress) return;
    options.progress->done.store(0, std::memory_order_relaxed);
    options.progress->total.store(total, std::memory_order_relaxed);
    options.progress->current.store(s, std::memory_order_relaxed);
  }

  /// Opens 2^bits partition files with buffers that share the plan's partition bytes.
  spill_files open_partitions(std::uint32_t bits) {
    const std::uint64_t files = std::uint64_t{1} << bits;
    const std::uint64_t buffer = plan.partition_buffer_bytes(files);
    spill_files out;
    for (std::uint64_t i = 0; i < files; ++i) out.push_back(directory->create("part", buffer));
    return out;
  }

  /// Partition files for an expected number of keys: enough that one file's keys fit a
  /// shard-range pass in the budget twice over, no more than have buffers of the smallest
  /// size (a file with too many keys is read once more per pass).
  std::uint32_t partition_bits_for(std::uint64_t expected) const {
    const std::uint64_t per_pass = std::max<std::uint64_t>(plan.in_memory_keys(params), 1);
    const std::uint64_t files = divide_round_up(expected, std::max<std::uint64_t>(per_pass / 2, 1));
    const std::uint64_t most_files = plan.partition_bytes / min_partition_buffer_bytes;
    std::uint32_t bits = 1;
    while (bits < max_partition_bits && (std::uint64_t{1} << bits) < files &&
           (std::uint64_t{2} << bits) <= most_files) {
      ++bits;
    }
    return bits;
  }

  static void scatter(spill_files& files, std::uint32_t bits, const Record* records,
                      std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) {
      files[record_hash(records[i]) >> (64 - bits)]->push(records[i]);
    }
  }

  /// Moves the in-memory hashes to partition files; later hashes go straight there.
  void spill() {
    // A variant built in memory only fails as soon as its keys are known not to fit, before
    // anything is spilled.
    if (!uses_bumping(params.variant)) throw in_memory_only(count, true);
    set_stage(build_progress::spilling, count);
    directory = std::make_unique<spill_directory>(options.tmp_dir);
    // Without a hint (stdin), guess generously, 64 budgets of keys: more files cost only
    // buffers and descriptors (a range takes as many small files as fit a pass), too few
    // cost extra reads of each file (one more per pass that a file holds).
    partition_bits = partition_bits_for(options.expected_keys ? options.expected_keys : 64 * count);
    partitions = open_partitions(partition_bits);
    std::uint64_t left = count;
    for (auto& chunk : chunks) {
      const std::uint64_t n = std::min(left, chunk_hashes);
      scatter(partitions, partition_bits, chunk.get(), n);
      left -= n;
      chunk.reset();
      if (options.progress) options.progress->done.fetch_add(n, std::memory_order_relaxed);
    }
    chunks.clear();
    set_stage(build_progress::adding);
  }

  /// Adds hashes (with their values in retrieval), as records, a buffer at a time.
  void add(const std::uint64_t* hashes, const std::uint32_t* values, std::uint64_t n) override {
    if (finished) throw error("bulk_builder: keys added after finish()");
    if constexpr (std::is_same_v<Record, std::uint64_t>) {
      (void)values;
      add_records(hashes, n);
    } else {
      for (std::uint64_t done = 0; done < n;) {
        const std::uint64_t take = std::min<std::uint64_t>(n - done, staging.size());
        check_values(values + done, take, params.value_bits(), count);
        for (std::uint64_t i = 0; i < take; ++i) {
          staging[i] =
              Record{hashes[done + i], params.stored_value(hashes[done + i], values[done + i])};
        }
        add_records(staging.data(), take);
        done += take;
      }
    }
  }

  /// Keeps records in memory while they fit the spill budget, checked a chunk at a time (one
  /// large call stays within the limit too), and scatters the rest to the partition files.
  void add_records(const Record* records, std::uint64_t n) {
    std::uint64_t done = 0;
    while (done < n && !spilled()) {
      const std::uint64_t fill = count & (chunk_hashes - 1);
      if (fill == 0) chunks.push_back(allocate_array<Record>(chunk_hashes));
      const std::uint64_t take = std::min(n - done, chunk_hashes - fill);
      std::copy_n(records + done, take, chunks.back().get() + fill);
      done += take;
      count += take;
      if (count * in_memory_bytes_per_key(params) > plan.spill_budget) spill();
    }
    if (done < n) {
      scatter(partitions, partition_bits, records + done, n - done);
      count += n - done;
    }
    if (options.progress) options.progress->keys.store(count, std::memory_order_relaxed);
  }

  bulk_result finish_in_memory(const std::string& path) {
    bulk_result result;
    const auto* chunk_table = chunks.data();
    auto source = [chunk_table](std::uint64_t i) {
      return chunk_table[i >> chunk_shift][i & (chunk_hashes - 1)];
    };
    auto on_the_cpu = [&] {
      build_options build = options.build;
      build.threads = plan.solver_threads;  // the threads whose workspaces fit the limit
      return build_in_memory(params, build, count, source, &result.stats, options.progress);
    };
    filter f;
    if constexpr (std::is_same_v<Record, std::uint64_t>) {
      if (options.in_memory) {  // another builder (the GPU's), which takes hashes only
        auto visit_hashes = [&](const hash_visitor& visit) {
          for (std::uint64_t done = 0; done < count; done += chunk_hashes) {
            visit(chunks[done >> chunk_shift].get(), std::min(chunk_hashes, count - done));
          }
        };
        set_stage(build_progress::solving);
        f = options.in_memory(count, visit_hashes, params.keys, options.build);
      } else {
        f = on_the_cpu();
      }
    } else {
      f = on_the_cpu();  // retrieval: the CPU builder only
    }
    result.key_count = f.key_count();
    builder_access::set_group_count(f, group_count);
    builder_access::set_group_names(f, names);
    if (options.metadata) f.set_metadata(*options.metadata);
    chunks.clear();
    set_stage(build_progress::writing, f.size_bytes());
    f.save(path, options.layout);
    result.layers = f.layers();
    result.file_bytes = f.size_bytes();
    return result;
  }

  /// The layers of a spilled build: those in ranges from partition files, the rest in memory.
  template <unsigned Width, class Result>
  bulk_result finish_out_of_core(const std::string& path);

  spill_files partition_bumped_keys(const spill_file& bumped, const layer_step& step,
                                    std::uint32_t& bits);

  void write_out_of_core(const std::string& path, const format::filter_image& image,
                         const std::vector<std::array<std::unique_ptr<spill_file>, 2>>& sections);

  bulk_result finish(const std::string& path) override {
    if (finished) throw error("bulk_builder: finish() called twice");
    finished = true;
    const bool out_of_core = spilled();
    // Whatever happens, the spill files and their directory go now, not with the builder.
    struct spill_remover {
      bulk_pipeline_of& owner;
      ~spill_remover() {
        owner.partitions.clear();
        owner.directory.reset();
      }
    } remove_spill{*this};
    if (out_of_core && !uses_bumping(params.variant)) throw in_memory_only(count, false);
    const auto start = clock_type::now();
    bulk_result result = run_with_threads(plan.solver_threads, [&] {
      if (!out_of_core) return finish_in_memory(path);
      return dispatch_layout(params, [&](auto width_tag, auto result_tag) {
        return finish_out_of_core<decltype(width_tag)::value, decltype(result_tag)>(path);
      });
    });
    for (auto& layer : result.layers) {
      layer.thresholds = nullptr;
      layer.solution = nullptr;
    }
    result.params = params;
    result.group_count = group_count;
    result.input_keys = count;
    result.stats.input_keys = count;
    result.stats.distinct_keys = result.key_count;
    result.num_layers = static_cast<std::uint32_t>(result.layers.size());
    result.out_of_core = out_of_core;
    result.partitions = out_of_core ? 1u << partition_bits : 0;
    result.spilled_bytes = spilled_bytes;
    result.shard_ranges = shard_ranges;
    result.seconds = seconds_since(start);
    set_stage(build_progress::finished);
    return result;
  }
};

template <class Record>
template <unsigned Width, class Result>
bulk_result bulk_pipeline_of<Record>::finish_out_of_core(const std::string& path) {
  bulk_result result;
  const auto build_start = clock_type::now();
  layered_builder<Width, Result, Record> builder(params, options.build, result.stats,
                                                 options.progress);
  std::vector<format::layer_image> layers;
  std::vector<aligned_bytes> buffers;
  // Out-of-core layers' sections, by layer and section (layers built in memory have none).
  std::vector<std::array<std::unique_ptr<spill_file>, 2>> section_files;
  ranged_layers walk(params, builder.sizing(), plan.in_memory_keys(params), count);
  spill_files parts = std::move(partitions);
  std::uint32_t bits = partition_bits;
  std::unique_ptr<spill_file> bumped;
  while (const layer_step* step = walk.current()) {
    const auto layer_start = clock_type::now();
    out_of_core_layer<Width, Result, Record> layer_builder(
        *directory, plan, builder, options.range_solver.get(), params, *step, walk.counting(),
        [this](const std::function<bool(const memory_plan&)>& fits) {
          return smallest_limit_mib(fits);
        });
    for (auto& part : parts) part->flush();
    for (auto& part : parts) spilled_bytes += part->size();
    layer_builder.run(parts, bits);
    parts.clear();
    spilled_bytes += layer_builder.spilled_bytes();
    const std::uint32_t index = step->index;
    if (!walk.solved(layer_builder.distinct_keys(), layer_builder.image().bumped_keys)) {
      parts = layer_builder.take_distinct_parts();  // layer 0 again, from the distinct keys
      continue;
    }
    layers.push_back(layer_builder.image());
    shard_ranges += layer_builder.ranges();
    section_files.push_back(
        {layer_builder.take_threshold_file(), layer_builder.take_solution_file()});
    bumped = layer_builder.take_bumped_file();
    (index == 0 ? result.stats.solve_seconds : result.stats.later_layers_seconds) +=
        seconds_since(layer_start);
    if (walk.current()) parts = partition_bumped_keys(*bumped, *walk.current(), bits);
  }
  if (const std::optional<layer_step> rest = walk.rest()) {  // the rest fits in memory
    auto previous = allocate_array<Record>(rest->keys);
    bumped->read(previous.get(), rest->keys * sizeof(Record), 0);
    bumped.reset();
    const auto rest_start = clock_type::now();
    builder.build_rest(rest->index, std::move(previous), rest->keys, layers, buffers);
    result.stats.later_layers_seconds += seconds_since(rest_start);
  }
  result.stats.total_seconds = seconds_since(build_start);
  const std::uint64_t distinct = layers.front().input_keys;
  builder.size_for(count, distinct);
  const format::filter_image image{params,      distinct, layers,          options.layout,
                                   group_count, names,    options.metadata};
  write_out_of_core(path, image, section_files);
  result.layers = layers;
  result.file_bytes = format::image_bytes(image);
  result.key_count = distinct;
  return result;
}

/// Partitions the bumped keys of a layer by their hash of layer `step`, on disk; sets `bits`.
template <class Record>
spill_files bulk_pipeline_of<Record>::partition_bumped_keys(const spill_file& bumped,
                                                            const layer_step& step,
                                                            std::uint32_t& bits) {
  const std::uint64_t salt = step.salt;
  const bool remixes = step.remixes();
  bits = partition_bits_for(step.keys);
  spill_files parts = open_partitions(bits);
  std::vector<Record> buffer(plan.io_buffer_bytes / sizeof(Record));
  bumped.for_each_piece(buffer, [&](const Record* records, std::uint64_t n) {
    Record* next = buffer.data();  // remixed in place: the piece is read
    for (std::uint64_t i = 0; i < n; ++i) {
      next[i] = remixes ? with_hash(records[i], remix(record_hash(records[i]), salt)) : records[i];
    }
    scatter(parts, bits, next, n);
  });
  return parts;
}

/// Writes the file, the out-of-core layers' sections copied from their spill files.
template <class Record>
void bulk_pipeline_of<Record>::write_out_of_core(
    const std::string& path, const format::filter_image& image,
    const std::vector<std::array<std::unique_ptr<spill_file>, 2>>& sections) {
  set_stage(build_progress::writing, format::image_bytes(image));
  std::vector<unsigned char> buffer(plan.io_buffer_bytes);
  auto progress = [this](std::uint64_t done) {
    if (options.progress) options.progress->done.store(done, std::memory_order_relaxed);
  };
  write_file_atomically(
      path, image, [&](std::size_t l, format::section which, const format::byte_sink& sink) {
        sections.at(l).at(static_cast<std::size_t>(which))->stream(buffer, sink, progress);
      });
}

}  // namespace

bulk_builder::bulk_builder(key_kind keys, const bulk_options& options)
    : impl_(std::make_unique<impl>()) {
  filter_params params = build_params(options.build, keys, options.with_values);
  params.groups = options.groups;
  if (params.is_set() && (options.with_values || options.in_memory)) {
    throw error("bulk_builder: a filter set (groups) is a filter, built on the CPU");
  }
  if (options.with_values) {
    if (options.in_memory || options.range_solver) {
      throw error(
          "bulk_builder: builds with values run on the CPU (in_memory and range_solver "
          "are for filters)");
    }
    impl_->pipeline = std::make_unique<bulk_pipeline_of<packed_keyed_value>>();
  } else {
    impl_->pipeline = std::make_unique<bulk_pipeline_of<std::uint64_t>>();
  }
  bulk_pipeline& b = *impl_->pipeline;
  b.options = options;
  b.params = params;
  prepare_temp_parent(options.tmp_dir);
  const std::uint64_t limit = options.memory_limit ? options.memory_limit : default_memory_limit();
  b.plan = plan_memory(params, limit, options.build.threads);
  if (!uses_bumping(params.variant) &&
      options.expected_keys * in_memory_bytes_per_key(params) > b.plan.spill_budget) {
    throw too_many_for_in_memory_variant(
        options.expected_keys, false,
        smallest_limit_mib(
            params, options.build.threads, options.limit_of_caller, [&](const memory_plan& plan) {
              return options.expected_keys * in_memory_bytes_per_key(params) <= plan.spill_budget;
            }));
  }
#if defined(__GLIBC__)
  // Freed buffers must go back to the system for the limit to bound the resident size. By
  // default glibc raises its mmap threshold to the largest buffer freed so far (up to 32 MiB),
  // and buffers below it come from heaps that keep their freed memory: fix it.
  ::mallopt(M_MMAP_THRESHOLD, 256 << 10);
#endif
}

std::uint64_t bulk_builder::memory_floor() const {
  return impl_->pipeline->plan.floor;
}

bulk_builder::~bulk_builder() = default;

const filter_params& bulk_builder::params() const {
  return impl_->pipeline->params;
}

std::uint64_t bulk_builder::key_count() const {
  return impl_->pipeline->count;
}

void bulk_builder::set_group_count(std::uint64_t groups) {
  if (!impl_->pipeline->params.is_set()) {
    throw error("bulk_builder: set_group_count() is for filter sets (bulk_options::groups)");
  }
  impl_->pipeline->group_count = groups;
}

void bulk_builder::set_group_names(group_names names) {
  if (impl_->pipeline->params.groups != names.kind()) {
    throw error("bulk_builder: set_group_names() takes names of the set's group kind");
  }
  impl_->pipeline->names = std::make_shared<const group_names>(std::move(names));
}

void bulk_builder::set_metadata(std::string bytes) {
  impl_->pipeline->options.metadata = std::make_shared<const std::string>(std::move(bytes));
}

namespace {

/// Throws unless the builder was made for values (with_values) exactly when they are given.
void check_values_given(const bulk_pipeline& b, bool values_given) {
  const bool with_values = is_retrieval(b.params.variant);
  if (with_values && !values_given) {
    throw error("bulk_builder: a build with values (with_values) takes keys with their values");
  }
  if (!with_values && values_given) {
    throw error("bulk_builder: values given to a filter build (set bulk_options::with_values)");
  }
}

}  // namespace

void bulk_builder::add_hashes(const std::uint64_t* hashes, std::uint64_t count) {
  check_values_given(*impl_->pipeline, false);
  impl_->pipeline->add(hashes, nullptr, count);
}

void bulk_builder::add_hashes(const std::uint64_t* hashes, const std::uint32_t* values,
                              std::uint64_t count) {
  check_values_given(*impl_->pipeline, true);
  impl_->pipeline->add(hashes, values, count);
}

namespace {

/// Hashes keys in parallel pieces and adds the hashes (with their values, when given),
/// `batch` at a time.
template <class Hash>
void add_hashed(bulk_pipeline& builder, std::uint64_t count, const std::uint32_t* values,
                const Hash& hash) {
  constexpr std::uint64_t piece = 1 << 13;
  std::vector<std::uint64_t> hashes(std::min(count, builder.plan.io_buffer_bytes / 8));
  for (std::uint64_t done = 0; done < count;) {
    const std::uint64_t n = std::min<std::uint64_t>(hashes.size(), count - done);
    tbb::parallel_for(std::uint64_t{0}, divide_round_up(n, piece), [&](std::uint64_t b) {
      const std::uint64_t end = std::min(n, (b + 1) * piece);
      for (std::uint64_t i = b * piece; i < end; ++i) hashes[i] = hash(done + i);
    });
    builder.add(hashes.data(), values ? values + done : nullptr, n);
    done += n;
  }
}

/// Adds integer keys (and their values, or null) to `builder`.
void add_u64_keys(bulk_pipeline& builder, const std::uint64_t* keys, const std::uint32_t* values,
                  std::uint64_t count) {
  if (builder.params.keys != key_kind::u64)
    throw error("bulk_builder: integer keys added to a byte-string build");
  const std::uint64_t mixed = seed_mix(builder.params.seed);
  add_hashed(builder, count, values,
             [keys, mixed](std::uint64_t i) { return hash_u64(keys[i], mixed); });
}

/// Adds byte-string keys (and their values, or null) to `builder`.
void add_byte_keys(bulk_pipeline& builder, const std::string_view* keys,
                   const std::uint32_t* values, std::uint64_t count) {
  if (builder.params.keys != key_kind::bytes)
    throw error("bulk_builder: byte-string keys added to an integer build");
  const std::uint64_t seed = builder.params.seed;
  add_hashed(builder, count, values, [keys, seed](std::uint64_t i) {
    return hash_bytes(keys[i].data(), keys[i].size(), seed);
  });
}

}  // namespace

void bulk_builder::add(const std::uint64_t* keys, std::uint64_t count) {
  check_values_given(*impl_->pipeline, false);
  add_u64_keys(*impl_->pipeline, keys, nullptr, count);
}

void bulk_builder::add(const std::string_view* keys, std::uint64_t count) {
  check_values_given(*impl_->pipeline, false);
  add_byte_keys(*impl_->pipeline, keys, nullptr, count);
}

void bulk_builder::add(const std::uint64_t* keys, const std::uint32_t* values,
                       std::uint64_t count) {
  check_values_given(*impl_->pipeline, true);
  add_u64_keys(*impl_->pipeline, keys, values, count);
}

void bulk_builder::add(const std::string_view* keys, const std::uint32_t* values,
                       std::uint64_t count) {
  check_values_given(*impl_->pipeline, true);
  add_byte_keys(*impl_->pipeline, keys, values, count);
}

bulk_result bulk_builder::finish(const std::string& path) {
  return impl_->pipeline->finish(path);
}

}  // namespace ribbon
