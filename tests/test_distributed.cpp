// The distributed build's steps (ribbon/distributed.hpp), driven here by a small engine of
// our own: files assembled from shard ranges solved independently, in any order, retried,
// over several distributed layers, are byte-identical to filter::build() over the distinct
// keys; bad parts and misrouted hashes are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ribbon/distributed.hpp"
#include "ribbon/filter.hpp"
#include "test_util.hpp"

namespace {

namespace dist = ribbon::distributed;
using ribbon_test::rng;
using ribbon_test::temp_dir;

std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// How the test engine runs a build.
struct engine_options {
  std::uint64_t range_keys = 3000;                   // keys per range: several ranges per layer
  std::uint64_t one_place_keys = 300;                // layers this small are finished in one place
  std::uint64_t shuffle_seed = 1;                    // order in which ranges are solved
  bool retry_every_range = false;                    // solve each range twice (a retried task)
  std::uint64_t group_count = 0;                     // a filter set's distinct groups
  std::uint64_t task_slots = 1;                      // range tasks at once (plan_layer)
  std::shared_ptr<const ribbon::group_names> names;  // a set's group names (version 7)
  // Called after assemble(), the parts still there: (layers, finished layers, key count).
  std::function<void(const std::vector<dist::solved_layer>&, const dist::finished_layers&,
                     std::uint64_t)>
      after_assembly;
};

/// What the engine did.
struct engine_report {
  std::uint32_t distributed_layers = 0;
  std::uint64_t max_ranges = 0;
  std::uint32_t layer0_plans = 0;
};

/// A layer's input: hashes and, for retrieval, their stored values.
struct records {
  std::vector<std::uint64_t> hashes;
  std::vector<std::uint32_t> values;  // retrieval only
  bool with_values = false;

  records slice(std::uint64_t begin, std::uint64_t end) const {
    records out{{hashes.begin() + begin, hashes.begin() + end}, {}, with_values};
    if (with_values) out.values.assign(values.begin() + begin, values.begin() + end);
    return out;
  }
  void append(const records& more) {
    hashes.insert(hashes.end(), more.hashes.begin(), more.hashes.end());
    values.insert(values.end(), more.values.begin(), more.values.end());
  }
};

dist::range_outcome solve(const ribbon::filter_params& p, const dist::layer_plan& plan,
                          std::uint64_t r, const records& range, const std::string& part,
                          bool skip_if_repeats) {
  if (range.with_values) {
    return dist::solve_range(p, plan, r, range.hashes, range.values, part, skip_if_repeats);
  }
  return dist::solve_range(p, plan, r, range.hashes, part, skip_if_repeats);
}

/// Plans and solves one layer over its layer hashes; returns the bumped records.
records solve_layer(const ribbon::filter_params& p, const dist::layer_plan& plan, records layer,
                    const temp_dir& dir, const engine_options& o, dist::solved_layer& out,
                    bool skip_if_repeats, std::uint64_t& distinct) {
  std::vector<std::uint64_t> offsets;
  if (layer.with_values) {
    dist::group_by_range(plan, layer.hashes.data(), layer.values.data(), layer.hashes.size(),
                         offsets);
  } else {
    dist::group_by_range(plan, layer.hashes.data(), layer.hashes.size(), offsets);
  }
  std::vector<std::uint64_t> order(plan.num_ranges());
  for (std::uint64_t r = 0; r < order.size(); ++r) order[r] = r;
  rng shuffle(o.shuffle_seed + plan.layer);
  for (std::uint64_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[shuffle.below(i)]);
  std::map<std::uint64_t, records> bumped_by_range;
  out = {plan, 0, {}};
  distinct = 0;
  auto part_of = [&](std::uint64_t r) {
    return dir.file("L" + std::to_string(plan.layer) + "-R" + std::to_string(r) + ".part");
  };
  for (const std::uint64_t r : order) {
    records range = layer.slice(offsets[r], offsets[r + 1]);
    std::reverse(range.hashes.begin(), range.hashes.end());  // the order of rows is irrelevant
    std::reverse(range.values.begin(), range.values.end());
    dist::range_outcome outcome = solve(p, plan, r, range, part_of(r), skip_if_repeats);
    if (o.retry_every_range && outcome.solved) {
      outcome = solve(p, plan, r, range, part_of(r), skip_if_repeats);
    }
    distinct += outcome.distinct_keys;
    bumped_by_range[r] = {std::move(outcome.bumped), std::move(outcome.bumped_values),
                          layer.with_values};
  }
  records bumped{{}, {}, layer.with_values};
  for (std::uint64_t r = 0; r < plan.num_ranges(); ++r) {
    out.parts.push_back(part_of(r));
    bumped.append(bumped_by_range[r]);
  }
  out.bumped_keys = bumped.hashes.size();
  return bumped;
}

/// The driver's loop of distributed.hpp over key hashes (repeats allowed) and, for retrieval,
/// their values: layer 0 is planned for every hash, and planned again for the distinct count
/// if a range finds repeats.
engine_report build_distributed(const ribbon::filter_params& p, const records& keys,
                                const std::string& path, const engine_options& o) {
  temp_dir parts;
  engine_report report;
  std::vector<dist::solved_layer> layers;
  records layer = keys;
  if (layer.with_values) {
    dist::to_stored_values(p, layer.hashes.data(), layer.values.data(), layer.hashes.size());
  }
  dist::ranged_layers walk = dist::ranged_layers_for(p, o.one_place_keys, keys.hashes.size());
  while (const dist::layer_step* step = walk.current()) {
    const dist::layer_plan plan =
        dist::plan_layer(p, step->index, step->keys, o.range_keys, o.task_slots);
    report.max_ranges = std::max(report.max_ranges, plan.num_ranges());
    records layer_records = layer;
    dist::to_layer_hashes(plan, layer_records.hashes.data(), layer_records.hashes.size());
    dist::solved_layer solved;
    std::uint64_t distinct = 0;
    records bumped =
        solve_layer(p, plan, std::move(layer_records), parts, o, solved, walk.counting(), distinct);
    if (step->index == 0) ++report.layer0_plans;
    if (!walk.solved(distinct, bumped.hashes.size())) continue;  // layer 0 again
    layers.push_back(std::move(solved));
    layer = std::move(bumped);
  }
  const std::uint64_t key_count = layers.empty() ? 0 : layers.front().plan.input_keys;
  report.distributed_layers = static_cast<std::uint32_t>(layers.size());
  const std::uint64_t rest_keys = walk.rest() ? layer.hashes.size() : 0;
  const auto first = static_cast<std::uint32_t>(layers.size());
  const auto rest =
      layer.with_values
          ? dist::finish_layers(p, first, layer.hashes.data(), layer.values.data(), rest_keys)
          : dist::finish_layers(p, first, layer.hashes.data(), rest_keys);
  dist::assemble(path, p, key_count, layers, &rest, o.group_count, o.names);
  if (o.after_assembly) o.after_assembly(layers, rest, key_count);
  return report;
}

engine_report build_distributed(const ribbon::filter_params& p,
                                const std::vector<std::uint64_t>& key_hashes,
                                const std::string& path, const engine_options& o) {
  return build_distributed(p, records{key_hashes, {}, false}, path, o);
}

std::vector<std::uint64_t> integer_hashes(const ribbon::filter_params& p,
                                          const std::vector<std::uint64_t>& keys) {
  std::vector<std::uint64_t> hashes(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i)
    hashes[i] = ribbon::hash_u64(keys[i], ribbon::seed_mix(p.seed));
  return hashes;
}

ribbon::build_options small_shards(std::uint32_t width = 64) {
  ribbon::build_options o;
  o.width = width;
  o.shard_size = 32 * ribbon::detail::default_bucket_size(width);  // the smallest shard
  return o;
}

TEST(Distributed, IntegerKeysEqualFilterBuild) {
  const auto keys = ribbon_test::keys_range(1, 0, 60000);
  const ribbon::build_options options = small_shards();
  const auto p = dist::build_params(options, ribbon::key_kind::u64);
  temp_dir dir;
  const engine_report report =
      build_distributed(p, integer_hashes(p, keys), dir.file("d.rbn"), engine_options{});
  EXPECT_GE(report.distributed_layers, 2u);  // several distributed layers
  EXPECT_GE(report.max_ranges, 5u);          // several ranges per layer
  ribbon::filter::build(keys.data(), keys.size(), options).save(dir.file("f.rbn"));
  EXPECT_TRUE(read_file(dir.file("d.rbn")) == read_file(dir.file("f.rbn")));
}

/// Part files held in memory (an object store's stand-in), passed on in small pieces.
class memory_parts final : public dist::part_files {
 public:
  std::map<std::string, std::vector<unsigned char>> files;

  void read(const dist::part_window& w, std::vector<unsigned char>& buffer,
            const ribbon::format::byte_sink& sink) override {
    const std::vector<unsigned char>& bytes = files.at(w.part);
    if (bytes.size() != w.part_bytes) throw ribbon::error("part " + w.part + ": wrong size");
    for (std::uint64_t done = 0; done < w.bytes;) {
      const std::uint64_t n = std::min<std::uint64_t>({buffer.size(), w.bytes - done, 1000});
      sink(bytes.data() + w.offset + done, n);
      done += n;
    }
  }
};

/// A file written in memory at offsets; `in_order`: a stream, which takes the next bytes only.
class memory_file final : public dist::file_writer {
 public:
  explicit memory_file(bool in_order) : in_order_(in_order) {}
  std::vector<unsigned char> bytes;

  void write(std::uint64_t offset, const void* data, std::size_t size) override {
    if (in_order_ && offset != bytes.size()) throw ribbon::error("a write out of order");
    if (bytes.size() < offset + size) bytes.resize(offset + size);
    std::memcpy(bytes.data() + offset, data, size);
  }

 private:
  bool in_order_;
};

TEST(Distributed, AssemblyStepsRunApartWriteAssemblesBytes) {
  // The steps an engine runs in different places (the checksums in one pass, each part's
  // windows by its own writer into the file, the frame's pieces; or one stream from parts
  // on other storage) write the bytes of assemble() and of filter::build().
  const auto keys = ribbon_test::keys_range(3, 0, 60000);
  const ribbon::build_options options = small_shards();
  const auto p = dist::build_params(options, ribbon::key_kind::u64);
  temp_dir dir;
  std::vector<unsigned char> placed, streamed;
  std::size_t parts = 0;
  engine_options o;
  o.after_assembly = [&](const std::vector<dist::solved_layer>& layers,
                         const dist::finished_layers& rest, std::uint64_t key_count) {
    const std::vector<dist::section_checksums> zeros(layers.size());
    const dist::file_frame unsummed = dist::frame_file(p, key_count, layers, zeros, &rest);
    dist::local_part_files local;
    memory_parts memory;
    for (const dist::solved_layer& layer : layers) {
      for (const std::string& part : layer.parts) memory.files[part] = read_file(part);
    }
    const std::vector<dist::section_checksums> sums = dist::checksum_sections(unsummed, local);
    const std::vector<dist::section_checksums> memory_sums =
        dist::checksum_sections(unsummed, memory);
    ASSERT_EQ(sums.size(), layers.size());
    for (std::size_t l = 0; l < sums.size(); ++l) {
      EXPECT_EQ(sums[l].thresholds, memory_sums[l].thresholds);
      EXPECT_EQ(sums[l].solution, memory_sums[l].solution);
    }
    const dist::file_frame frame = dist::frame_file(p, key_count, layers, sums, &rest);
    std::vector<std::vector<dist::part_window>> by_part = dist::windows_by_part(unsummed);
    parts = by_part.size();
    std::reverse(by_part.begin(), by_part.end());  // any order: positioned writes
    const std::string path = dir.file("placed.rbn");
    dist::local_file_writer::create(path, frame.file_bytes);
    EXPECT_THROW(dist::local_file_writer::create(path, frame.file_bytes), ribbon::error);
    for (const auto& windows : by_part) {
      EXPECT_EQ(windows.size(), 2u);  // a part's thresholds and its solution
      dist::local_file_writer out(path);
      dist::copy_windows(windows, local, out);
    }
    dist::local_file_writer out(path);
    dist::write_pieces(frame, out);
    out.sync();
    placed = read_file(path);
    memory_file stream(true);
    dist::write_file(frame, memory, stream);
    streamed = stream.bytes;
    memory_file unordered(true);  // the windows alone, out of order: refused by a stream
    EXPECT_THROW(dist::copy_windows(by_part.front(), memory, unordered), ribbon::error);
    memory.files.at(layers[0].parts[1]).push_back(0);  // a damaged part
    EXPECT_THROW(dist::checksum_sections(unsummed, memory), ribbon::error);
  };
  build_distributed(p, integer_hashes(p, keys), dir.file("d.rbn"), o);
  ribbon::filter::build(keys.data(), keys.size(), options).save(dir.file("f.rbn"));
  const std::vector<unsigned char> expected = read_file(dir.file("f.rbn"));
  EXPECT_GE(parts, 5u);
  EXPECT_TRUE(read_file(dir.file("d.rbn")) == expected);
  EXPECT_TRUE(placed == expected);
  EXPECT_TRUE(streamed == expected);
}

TEST(Distributed, PartsDirectoriesFollowTheTemporariesLockProtocol) {
  // A parts directory is locked while its build lives; the next build of the same output
  // removes the dead builds' (lock free, only a build's files in them, or empty and old) and
  // leaves the live one's, an empty young one (perhaps a build's between creating and
  // locking it: here one made right then) and anything else.
  temp_dir dir;
  const std::string out = dir.file("f.rbn"), prefix = dist::parts_prefix(out);
  EXPECT_EQ(prefix, ".f.rbn.ribbon-parts-");
  auto make = [&](const std::string& suffix, const std::vector<std::string>& files) {
    std::filesystem::create_directory(dir.file(prefix + suffix));
    for (const auto& f : files) std::ofstream(dir.file(prefix + suffix + "/" + f)) << "x";
    return dir.file(prefix + suffix);
  };
  const std::string dead =
      make("dead01", {"L00-100-R000000001.part", "assembled.ribbon", ".ribbon-tmp-abc123"});
  const std::string uuid_named =
      make("0123456789abcdef0123456789abcdef", {"L01-7-R000000000.part"});
  const std::string foreign = make("other1", {"notes.txt"});
  const std::string young = make("young1", {});
  const std::string other_output = dir.file(".g.rbn.ribbon-parts-dead02");
  std::filesystem::create_directory(other_output);
  std::ofstream(other_output + "/L00-1-R000000000.part") << "x";
  std::string between;
  auto live = std::make_unique<dist::parts_directory>(out);
  std::ofstream(live->path() + "/L00-1-R000000000.part") << "x";
  {
    dist::parts_directory next(out, [&](const std::string& path) {
      between = path;
      dist::parts_directory sibling(out);  // sees `path` created, not yet locked
      EXPECT_TRUE(std::filesystem::exists(path));
    });
    EXPECT_EQ(next.path(), between);
    EXPECT_TRUE(std::filesystem::exists(next.path()));
    EXPECT_EQ(next.path().rfind(dir.file(prefix), 0), 0u);
    std::ofstream(next.path() + "/L00-1-R000000000.part") << "x";
  }
  EXPECT_FALSE(std::filesystem::exists(between));  // removed with its part
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_FALSE(std::filesystem::exists(uuid_named));
  EXPECT_TRUE(std::filesystem::exists(foreign));
  EXPECT_TRUE(std::filesystem::exists(young));
  EXPECT_TRUE(std::filesystem::exists(other_output));
  EXPECT_TRUE(std::filesystem::exists(live->path() + "/L00-1-R000000000.part"));
  const std::string live_path = live->path();
  live->remove();
  EXPECT_FALSE(std::filesystem::exists(live_path));
  live.reset();
}

TEST(Distributed, TaskSlotsFillTheLastWave) {
  const ribbon::build_options options = small_shards();
  const auto p = dist::build_params(options, ribbon::key_kind::u64);
  for (std::uint64_t range_keys : {3000u, 7000u, 13000u, 100000u}) {
    const dist::layer_plan alone = dist::plan_layer(p, 0, 60000, range_keys);
    for (std::uint64_t slots = 1; slots <= 6; ++slots) {
      const dist::layer_plan plan = dist::plan_layer(p, 0, 60000, range_keys, slots);
      const std::uint64_t waves = ribbon::detail::divide_round_up(alone.num_ranges(), slots);
      // As many waves, no range larger, no fewer ranges (whole shards: not always more).
      EXPECT_LE(plan.shards_per_range, alone.shards_per_range) << range_keys << " " << slots;
      EXPECT_EQ(ribbon::detail::divide_round_up(plan.num_ranges(), slots), waves)
          << range_keys << " " << slots;
      EXPECT_GE(plan.num_ranges(), alone.num_ranges()) << range_keys << " " << slots;
    }
  }
  // Where shards are many, the last wave is filled: 7 ranges become 8 on 2 or 4 slots, 9 on 3.
  const std::uint64_t many = 10'000'000;
  const auto seven = [&](std::uint64_t slots) {
    return dist::plan_layer(p, 0, many, many / 13 * 2, slots).num_ranges();
  };
  ASSERT_EQ(seven(1), 7u);
  EXPECT_EQ(seven(2), 8u);
  EXPECT_EQ(seven(3), 9u);
  EXPECT_EQ(seven(4), 8u);
  EXPECT_EQ(seven(7), 7u);
}

TEST(Distributed, FilterSetEqualsBuildSet) {
  // The pairs' hashes through the distributed steps, the group count in the header and the
  // groups' names after the layers: the bytes of filter::build_set (and so of `ribbon build
  // --groups -o`); without names, those of version 6.
  const auto keys = ribbon_test::keys_range(7, 0, 60000);
  std::vector<std::uint64_t> groups(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) groups[i] = (i * i) % 997;
  const ribbon::build_options options = small_shards();
  const auto p = dist::build_params(options, ribbon::key_kind::u64, ribbon::group_kind::u64);
  std::vector<std::uint64_t> hashes(keys.size());
  const ribbon::set_hasher hasher{p.seed, ribbon::seed_mix(p.seed)};
  for (std::size_t i = 0; i < keys.size(); ++i) hashes[i] = hasher.pair(groups[i], keys[i]);
  engine_options o;
  o.group_count = std::set<std::uint64_t>(groups.begin(), groups.end()).size();
  temp_dir dir;
  ribbon::build_options unnamed = options;
  unnamed.group_names = false;
  EXPECT_GE(build_distributed(p, hashes, dir.file("d.rbn"), o).distributed_layers, 2u);
  ribbon::filter::build_set(groups.data(), keys.data(), keys.size(), unnamed)
      .save(dir.file("f.rbn"));
  EXPECT_TRUE(read_file(dir.file("d.rbn")) == read_file(dir.file("f.rbn")));
  EXPECT_EQ(ribbon::filter::load(dir.file("d.rbn")).group_count(), o.group_count);
  EXPECT_EQ(ribbon::filter::load(dir.file("d.rbn")).format_version(), 6u);
  o.names = std::make_shared<const ribbon::group_names>(ribbon::group_names::of(groups));
  build_distributed(p, hashes, dir.file("named.rbn"), o);
  ribbon::filter::build_set(groups.data(), keys.data(), keys.size(), options)
      .save(dir.file("f.rbn"));
  EXPECT_TRUE(read_file(dir.file("named.rbn")) == read_file(dir.file("f.rbn")));
  EXPECT_EQ(ribbon::filter::load(dir.file("named.rbn")).groups().size(), o.group_count);
  // A set whose group count does not fit its keys is refused, as the format's writer refuses.
  o.group_count = 0;
  EXPECT_THROW(build_distributed(p, hashes, dir.file("bad.rbn"), o), ribbon::error);
}

TEST(Distributed, AnyRangeOrderRetriesAndTaskSlotsGiveTheSameBytes) {
  const auto keys = ribbon_test::keys_range(2, 0, 30000);
  const ribbon::build_options options = small_shards();
  const auto p = dist::build_params(options, ribbon::key_kind::u64);
  temp_dir dir;
  ribbon::filter::build(keys.data(), keys.size(), options).save(dir.file("f.rbn"));
  const auto expected = read_file(dir.file("f.rbn"));
  for (std::uint64_t seed : {3, 4}) {
    engine_options o;
    o.shuffle_seed = seed;
    o.retry_every_range = seed == 4;
    o.range_keys = 1000 * seed;
    build_distributed(p, integer_hashes(p, keys), dir.file("d.rbn"), o);
    EXPECT_TRUE(read_file(dir.file("d.rbn")) == expected) << "seed " << seed;
  }
  // Ranges cut for 1 to 6 task slots (plan_layer): the same file.
  for (std::uint64_t slots = 1; slots <= 6; ++slots) {
    engine_options o;
    o.range_keys = 7000;
    o.task_slots = slots;
    build_distributed(p, integer_hashes(p, keys), dir.file("d.rbn"), o);
    EXPECT_TRUE(read_file(dir.file("d.rbn")) == expected) << slots << " slots";
  }
}

TEST(Distributed, ByteStringKeysWithFractionalBitsEqualFilterBuild) {
  const auto strings = ribbon_test::string_keys(3, 0, 40000);
  ribbon::build_options options = small_shards(128);
  options.target_fpr = 0.01;
  options.seed = 77;
  const auto p = dist::build_params(options, ribbon::key_kind::bytes);
  std::vector<std::uint64_t> hashes;
  for (const auto& s : strings) hashes.push_back(ribbon::hash_bytes(s.data(), s.size(), p.seed));
  temp_dir dir;
  engine_options o;
  o.range_keys = 6000;
  const engine_report report = build_distributed(p, hashes, dir.file("d.rbn"), o);
  EXPECT_GE(report.max_ranges, 3u);
  const auto views = ribbon_test::views(strings);
  ribbon::filter::build(views.data(), views.size(), options).save(dir.file("f.rbn"));
  EXPECT_TRUE(read_file(dir.file("d.rbn")) == read_file(dir.file("f.rbn")));
}

TEST(Distributed, Width32WithOneRangePerLayerEqualsFilterBuild) {
  const auto keys = ribbon_test::keys_range(4, 0, 20000);
  ribbon::build_options options = small_shards(32);
  options.result_bits = 5;
  const auto p = dist::build_params(options, ribbon::key_kind::u64);
  temp_dir dir;
  engine_options o;
  o.range_keys = 1 << 30;
  build_distributed(p, integer_hashes(p, keys), dir.file("d.rbn"), o);
  ribbon::filter::build(keys.data(), keys.size(), options).save(dir.file("f.rbn"));
  EXPECT_TRUE(read_file(dir.file("d.rbn")) == read_file(dir.file("f.rbn")));
}

TEST(Distributed, RepeatedKeysBuildTheFileOfTheDistinctKeys) {
  auto distinct = ribbon_test::keys_range(5, 0, 20000);
  std::vector<std::uint64_t> with_repeats = distinct;
  with_repeats.insert(with_repeats.end(), distinct.begin(), distinct.begin() + 7000);
  with_repeats.push_back(distinct[12345]);
  const ribbon::build_options options = small_shards();
  const auto p = dist::build_params(options, ribbon::key_kind::u64);
  temp_dir dir;
  const engine_report report =
      build_distributed(p, integer_hashes(p, with_repeats), dir.file("d.rbn"), engine_options{});
  EXPECT_EQ(report.layer0_plans, 2u);  // planned for 27001 keys, then for 20000
  ribbon::filter::build(distinct.data(), distinct.size(), options).save(dir.file("f.rbn"));
  EXPECT_TRUE(read_file(dir.file("d.rbn")) == read_file(dir.file("f.rbn")));
  EXPECT_EQ(ribbon::filter::load(dir.file("d.rbn")).key_count(), distinct.size());
}

TEST(Distributed, TinyAndEmptyInputsEqualFilterBuild) {
  const ribbon::build_options options;
  const auto p = dist::build_params(options, ribbon::key_kind::u64);
  for (std::uint64_t n : {0, 1, 2, 100}) {
    const auto keys = ribbon_test::keys_range(6, 0, n);
    temp_dir dir;
    build_distributed(p, integer_hashes(p, keys), dir.file("d.rbn"), engine_options{});
    ribbon::filter::build(keys.data(), keys.size(), options).save(dir.file("f.rbn"));
    EXPECT_TRUE(read_file(dir.file("d.rbn")) == read_file(dir.file("f.rbn"))) << n << " keys";
  }
}

/// Key hashes of integer keys with values (value i = key mod 2^value_bits, some repeated).
records keyed_values(const ribbon::filter_params& p, const std::vector<std::uint64_t>& keys) {
  records out{integer_hashes(p, keys), std::vector<std::uint32_t>(keys.size()), true};
  for (std::size_t i = 0; i < keys.size(); ++i) {
    out.values[i] =
        static_cast<std::uint32_t>(keys[i] & ((std::uint64_t{1} << p.value_bits()) - 1));
  }
  return out;
}

TEST(Distributed, RetrievalEqualsFilterBuildWithValues) {
  // Values (and check bits) carried beside the hashes through every layer, repeats of a key
  // with its value, any range order and retries: the bytes of filter::build(keys, values).
  const auto keys = ribbon_test::keys_range(8, 0, 50000);
  for (const std::uint32_t check_bits : {0u, 8u}) {
    ribbon::build_options options = small_shards();
    options.result_bits = 11;
    options.check_bits = check_bits;
    const auto p = dist::retrieval_params(options, ribbon::key_kind::u64);
    records input = keyed_values(p, keys);
    const std::vector<std::uint32_t> values = input.values;
    input.append(input.slice(100, 2100));  // 2000 pairs given twice, each with its value
    temp_dir dir;
    engine_options o;
    o.retry_every_range = check_bits != 0;
    const engine_report report = build_distributed(p, input, dir.file("d.rbn"), o);
    EXPECT_GE(report.distributed_layers, 2u);
    EXPECT_EQ(report.layer0_plans, 2u);  // planned again for the distinct count
    ribbon::filter::build(keys.data(), values.data(), keys.size(), options).save(dir.file("f.rbn"));
    EXPECT_TRUE(read_file(dir.file("d.rbn")) == read_file(dir.file("f.rbn"))) << check_bits;
    const auto loaded = ribbon::filter::load(dir.file("d.rbn"));
    for (std::size_t i = 0; i < keys.size(); i += 97) ASSERT_EQ(loaded.lookup(keys[i]), values[i]);
  }
}

TEST(Distributed, RetrievalRefusesConflictingAndTooWideValues) {
  ribbon::build_options options = small_shards();
  options.result_bits = 6;
  const auto p = dist::retrieval_params(options, ribbon::key_kind::u64);
  const auto keys = ribbon_test::keys_range(9, 0, 20000);
  records input = keyed_values(p, keys);
  input.hashes.push_back(input.hashes[12345]);
  input.values.push_back(input.values[12345] ^ 1);  // key 12345 again, another value
  temp_dir dir;
  try {
    build_distributed(p, input, dir.file("d.rbn"), engine_options{});
    ADD_FAILURE() << "conflicting values were accepted";
  } catch (const ribbon::conflicting_values_error& e) {
    EXPECT_EQ(e.key_hash(), input.hashes[12345]);
    EXPECT_NE(std::string(e.what()).find("key " + std::to_string(keys[12345])), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("d.rbn")));
  std::vector<std::uint32_t> wide = {1, 64};
  EXPECT_THROW(dist::to_stored_values(p, input.hashes.data(), wide.data(), 2), ribbon::error);
  // A filter's steps refuse values and a retrieval's steps want them.
  const auto filter_p = dist::build_params(options, ribbon::key_kind::u64);
  const dist::layer_plan plan = dist::plan_layer(p, 0, 100, 3000);
  const std::vector<std::uint64_t> no_hashes, two_hashes = {1, 2};
  const std::vector<std::uint32_t> no_values, one_value = {1};
  const std::string no_part;
  EXPECT_THROW(dist::solve_range(filter_p, plan, 0, no_hashes, no_values, no_part), ribbon::error);
  EXPECT_THROW(dist::solve_range(p, plan, 0, no_hashes, no_part), ribbon::error);
  EXPECT_THROW(dist::solve_range(p, plan, 0, two_hashes, one_value, no_part), ribbon::error);
}

TEST(Distributed, RefusesMisroutedHashesBadPartsAndOtherVariants) {
  const ribbon::build_options options = small_shards();
  const auto p = dist::build_params(options, ribbon::key_kind::u64);
  const auto keys = ribbon_test::keys_range(7, 0, 20000);
  auto hashes = integer_hashes(p, keys);
  const dist::layer_plan plan = dist::plan_layer(p, 0, hashes.size(), 3000);
  ASSERT_GE(plan.num_ranges(), 3u);
  temp_dir dir;
  std::vector<std::uint64_t> offsets;
  dist::group_by_range(plan, hashes.data(), hashes.size(), offsets);
  std::vector<std::uint64_t> range1(hashes.begin() + offsets[1], hashes.begin() + offsets[2]);
  range1.push_back(hashes[offsets[2]]);  // a hash of range 2
  try {
    dist::solve_range(p, plan, 1, range1, dir.file("p1"));
    ADD_FAILURE() << "a misrouted hash was accepted";
  } catch (const ribbon::error& e) {
    EXPECT_NE(std::string(e.what()).find("a hash of range 2 was given to range 1"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(dir.entries().empty());  // nothing written, no temporary file

  // A part of the wrong size (another build's, or damaged) is refused; nothing is written.
  dist::solved_layer layer{plan, 0, {}};
  std::vector<std::uint64_t> bumped;
  for (std::uint64_t r = 0; r < plan.num_ranges(); ++r) {
    layer.parts.push_back(dir.file("p" + std::to_string(r)));
    std::vector<std::uint64_t> range(hashes.begin() + offsets[r], hashes.begin() + offsets[r + 1]);
    auto outcome = dist::solve_range(p, plan, r, range, layer.parts.back());
    bumped.insert(bumped.end(), outcome.bumped.begin(), outcome.bumped.end());
  }
  layer.bumped_keys = bumped.size();
  const auto rest = dist::finish_layers(p, 1, bumped.data(), bumped.size());
  std::ofstream(layer.parts[1], std::ios::app) << "x";
  try {
    dist::assemble(dir.file("out.rbn"), p, hashes.size(), {layer}, &rest);
    ADD_FAILURE() << "a damaged part was accepted";
  } catch (const ribbon::error& e) {
    EXPECT_NE(std::string(e.what()).find("not a part of this build, or damaged"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("out.rbn")));
  // A layer whose key count does not follow from the previous one is refused.
  EXPECT_THROW(dist::assemble(dir.file("out.rbn"), p, hashes.size() + 1, {layer}, &rest),
               ribbon::error);
  ribbon::build_options standard = options;
  standard.variant = ribbon::filter_variant::standard;
  EXPECT_THROW(dist::build_params(standard, ribbon::key_kind::u64), ribbon::error);
}

}  // namespace
