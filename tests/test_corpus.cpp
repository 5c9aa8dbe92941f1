// The golden corpus (tests/data/corpus, its README.md): the C++ reader answers every probe of
// every file as recorded (mapped, from bytes, through filter_ref; scalar and batched), and the
// C++ builders (in memory, out of core, and the GPU builder's pipeline on Thrust's TBB backend
// where it is built) re-create some of the files byte for byte from the recorded inputs.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "file_helpers.hpp"
#include "ribbon/bulk_builder.hpp"
#include "ribbon/filter.hpp"
#include "test_util.hpp"

#if defined(RIBBON_GPU_ON_TBB)
#include "ribbon/cuda/builder.hpp"
#endif

namespace {

using ribbon::filter;
using ribbon::format::layout_choice;

const std::string corpus_dir = RIBBON_TEST_DATA_DIR "/corpus/";

/// One line of MANIFEST.tsv.
struct entry {
  std::string file, version, kind, keys, inputs, probes, answers, command;
};

/// gtest prints a parameter by its file name.
void PrintTo(const entry& e, std::ostream* os) {
  *os << e.file;
}

std::vector<entry> read_manifest() {
  std::vector<entry> out;
  std::istringstream in(std::string([] {
    const std::vector<unsigned char> b = ribbon_test::read_bytes(corpus_dir + "MANIFEST.tsv");
    return std::string(b.begin(), b.end());
  }()));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cols;
    std::size_t start = 0;
    for (std::size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1) {
      cols.push_back(line.substr(start, tab - start));
    }
    cols.push_back(line.substr(start));
    if (cols.size() != 8) throw std::runtime_error("MANIFEST.tsv: not 8 columns: " + line);
    out.push_back({cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7]});
  }
  return out;
}

const std::vector<entry>& manifest() {
  static const std::vector<entry> entries = read_manifest();
  return entries;
}

const entry& entry_of(const std::string& file) {
  for (const entry& e : manifest()) {
    if (e.file == file) return e;
  }
  throw std::runtime_error(file + " is not in MANIFEST.tsv");
}

/// The lines of a file (each ends in \n; a trailing \r is dropped, as `ribbon build` drops it).
std::vector<std::string> lines_of(const std::string& path) {
  const std::vector<unsigned char> bytes = ribbon_test::read_bytes(path);
  std::vector<std::string> out;
  std::string line;
  for (const unsigned char c : bytes) {
    if (c != '\n') {
      line.push_back(static_cast<char>(c));
      continue;
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(std::move(line));
    line.clear();
  }
  return out;
}

std::uint64_t parse_hex(const std::string& text) {
  std::size_t at = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X') ? 2 : 0;
  return std::stoull(text.substr(at), nullptr, 16);
}

std::vector<std::uint64_t> read_u64(const std::string& path) {
  const std::vector<unsigned char> bytes = ribbon_test::read_bytes(path);
  std::vector<std::uint64_t> out(bytes.size() / 8);
  for (std::size_t i = 0; i < out.size(); ++i) {
    for (int b = 7; b >= 0; --b) out[i] = (out[i] << 8) | bytes[i * 8 + static_cast<unsigned>(b)];
  }
  return out;
}

/// A line split at its first (`last`: last) tab.
std::pair<std::string, std::string> split_tab(const std::string& line, bool last = false) {
  const std::size_t tab = last ? line.rfind('\t') : line.find('\t');
  return {line.substr(0, tab), line.substr(tab + 1)};
}

/// A file's probes, parsed: keys as bytes or integers, groups (sets) as bytes or integers.
struct probes {
  std::vector<std::string> text_keys, text_groups;
  std::vector<std::uint64_t> int_keys, int_groups;
  std::vector<std::string_view> key_views() const { return ribbon_test::views(text_keys); }
  std::vector<std::string_view> group_views() const { return ribbon_test::views(text_groups); }
  std::size_t size() const { return text_keys.size() + int_keys.size(); }
};

probes read_probes(const entry& e) {
  probes p;
  const bool set = e.kind.rfind("set-", 0) == 0;
  for (const std::string& line : lines_of(corpus_dir + e.probes)) {
    std::string key = line;
    if (set) {
      auto [group, rest] = split_tab(line);
      key = rest;
      if (e.kind == "set-u64") {
        p.int_groups.push_back(std::stoull(group));
      } else {
        p.text_groups.push_back(group);
      }
    }
    if (e.keys == "u64") {
      p.int_keys.push_back(parse_hex(key));
    } else {
      p.text_keys.push_back(key);
    }
  }
  return p;
}

/// The answer to probe i under one way of asking: "0"/"1" for filters and sets, the value or
/// "absent" for retrieval.
std::string filter_answer(bool present) {
  return present ? "1" : "0";
}
std::string value_answer(std::optional<std::uint32_t> value) {
  return value ? std::to_string(*value) : "absent";
}

/// Every way the library asks `f`: scalar and batched calls of the filter, and the filter_ref.
std::vector<std::string> answers_of(const filter& f, const entry& e, const probes& p,
                                    const char* how) {
  SCOPED_TRACE(std::string(how));
  const std::size_t n = p.size();
  std::vector<std::string> scalar(n);
  std::unique_ptr<bool[]> batched(new bool[n]);
  const ribbon::filter_ref& ref = f.ref();
  const bool u64 = e.keys == "u64";
  const std::vector<std::string_view> keys = p.key_views();
  const auto ref_hash = [&](std::size_t i) {
    return u64 ? ref.key_hash(p.int_keys[i]) : ref.key_hash(keys[i].data(), keys[i].size());
  };
  if (e.kind == "filter") {
    for (std::size_t i = 0; i < n; ++i) {
      scalar[i] = filter_answer(u64 ? f.contains(p.int_keys[i]) : f.contains(keys[i]));
      EXPECT_EQ(filter_answer(ref.contains_hash(ref_hash(i))), scalar[i]) << "filter_ref, " << i;
    }
    if (u64) {
      f.contains(p.int_keys.data(), n, batched.get());
    } else {
      f.contains(keys.data(), n, batched.get());
    }
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(filter_answer(batched[i]), scalar[i]) << "batched, probe " << i;
    }
  } else if (e.kind == "values") {
    const ribbon::filter_params& params = f.params();
    std::vector<std::uint32_t> values(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::optional<std::uint32_t> found = u64 ? f.find(p.int_keys[i]) : f.find(keys[i]);
      scalar[i] = value_answer(found);
      const std::uint32_t looked_up = u64 ? f.lookup(p.int_keys[i]) : f.lookup(keys[i]);
      if (found) {
        EXPECT_EQ(looked_up, *found) << "lookup, probe " << i;
      }
      // filter_ref: the r bits stored, the value under the check bits.
      const std::uint64_t hash = ref_hash(i);
      const std::uint32_t stored = ref.lookup_hash(hash);
      EXPECT_EQ(value_answer(params.check_bits == 0 || params.check_passes(hash, stored)
                                 ? std::optional<std::uint32_t>(params.value_of(stored))
                                 : std::nullopt),
                scalar[i])
          << "filter_ref, probe " << i;
      EXPECT_EQ(filter_answer(ref.contains_hash(hash)), filter_answer(found.has_value()));
    }
    if (u64) {
      f.lookup(p.int_keys.data(), n, values.data(), batched.get());
    } else {
      f.lookup(keys.data(), n, values.data(), batched.get());
    }
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(value_answer(batched[i] ? std::optional<std::uint32_t>(values[i]) : std::nullopt),
                scalar[i])
          << "batched, probe " << i;
    }
  } else {
    const ribbon::set_hasher hasher{f.params().seed, ref.seed_mixed};
    const std::vector<std::string_view> groups = p.group_views();
    const bool int_groups = e.kind == "set-u64";
    for (std::size_t i = 0; i < n; ++i) {
      bool present = false;
      std::uint64_t pair = 0;
      if (int_groups && u64) {
        present = f.contains_in(p.int_groups[i], p.int_keys[i]);
        pair = hasher.pair(p.int_groups[i], p.int_keys[i]);
      } else if (int_groups) {
        present = f.contains_in(p.int_groups[i], keys[i]);
        pair = hasher.pair(p.int_groups[i], keys[i]);
      } else if (u64) {
        present = f.contains_in(groups[i], p.int_keys[i]);
        pair = hasher.pair(groups[i], p.int_keys[i]);
      } else {
        present = f.contains_in(groups[i], keys[i]);
        pair = hasher.pair(groups[i], keys[i]);
      }
      scalar[i] = filter_answer(present);
      EXPECT_EQ(filter_answer(ref.contains_hash(pair)), scalar[i]) << "filter_ref, probe " << i;
    }
    if (int_groups && u64) {
      f.contains_in(p.int_groups.data(), p.int_keys.data(), n, batched.get());
    } else if (int_groups) {
      f.contains_in(p.int_groups.data(), keys.data(), n, batched.get());
    } else if (u64) {
      f.contains_in(groups.data(), p.int_keys.data(), n, batched.get());
    } else {
      f.contains_in(groups.data(), keys.data(), n, batched.get());
    }
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(filter_answer(batched[i]), scalar[i]) << "batched, probe " << i;
    }
  }
  return scalar;
}

/// Compares answers with the recorded ones, reporting the first few differences.
void expect_answers(const std::vector<std::string>& got, const std::vector<std::string>& want,
                    const char* how) {
  ASSERT_EQ(got.size(), want.size()) << how;
  int reported = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i] && reported++ < 5) {
      ADD_FAILURE() << how << ": probe " << i << " answers " << got[i] << ", recorded " << want[i];
    }
  }
  EXPECT_EQ(reported, 0) << how << ": answers differ from the recorded ones";
}

TEST(CorpusManifest, HoldsEveryFormatVersion) {
  ASSERT_GE(manifest().size(), 20u) << corpus_dir;
  std::set<std::string> versions, kinds;
  for (const entry& e : manifest()) {
    versions.insert(e.version);
    kinds.insert(e.kind);
  }
  EXPECT_EQ(versions, (std::set<std::string>{"1", "2", "3", "4", "5", "6", "7"}));
  EXPECT_EQ(kinds, (std::set<std::string>{"filter", "values", "set-bytes", "set-u64"}));
}

class CorpusFile : public ::testing::TestWithParam<entry> {};

TEST_P(CorpusFile, AnswersAsRecorded) {
  const entry& e = GetParam();
  const std::string path = corpus_dir + e.file;
  const probes p = read_probes(e);
  const std::vector<std::string> recorded = lines_of(corpus_dir + e.answers);
  ASSERT_EQ(p.size(), recorded.size()) << e.probes << " vs " << e.answers;

  const filter mapped = filter::load(path);
  EXPECT_EQ(std::to_string(mapped.format_version()), e.version);
  EXPECT_EQ(mapped.is_set(), e.kind.rfind("set-", 0) == 0);
  EXPECT_EQ(mapped.is_retrieval(), e.kind == "values");
  expect_answers(answers_of(mapped, e, p, "load (mmap)"), recorded, "load (mmap)");

  const std::vector<unsigned char> bytes = ribbon_test::read_bytes(path);
  const filter copy = filter::from_bytes(bytes.data(), bytes.size());
  expect_answers(answers_of(copy, e, p, "from_bytes"), recorded, "from_bytes");
  // A file loaded and written again is the same bytes (it keeps its layout), but for version
  // 1, which no writer writes any more (its filters are written as version 2).
  if (e.version != "1") {
    EXPECT_TRUE(copy.serialize() == bytes) << "serialize() of the loaded file";
  }
}

std::string test_name(const ::testing::TestParamInfo<entry>& info) {
  std::string name = info.param.file.substr(0, info.param.file.rfind(".rbn"));
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Manifest, CorpusFile, ::testing::ValuesIn(manifest()), test_name);

// --- Writers: the C++ builders re-create corpus files from the recorded inputs ---

void expect_corpus_bytes(const std::string& file, const std::vector<unsigned char>& written,
                         const char* how) {
  const std::vector<unsigned char> golden = ribbon_test::read_bytes(corpus_dir + file);
  ASSERT_FALSE(golden.empty()) << file;
  EXPECT_TRUE(written == golden) << how << " does not re-create " << file << " (" << written.size()
                                 << " bytes, recorded " << golden.size() << ")";
}

std::string input_of(const std::string& file) {
  return corpus_dir + entry_of(file).inputs;
}

/// Text keys of a lines input; integer keys of a hex64 input.
std::vector<std::string> text_input(const std::string& file) {
  return lines_of(input_of(file));
}
std::vector<std::uint64_t> hex_input(const std::string& file) {
  std::vector<std::uint64_t> keys;
  for (const std::string& line : lines_of(input_of(file))) keys.push_back(parse_hex(line));
  return keys;
}

/// An out-of-core bulk build (a memory limit of 1 byte: every hash is spilled) of keys added
/// by `add`, in the layout the corpus file has; returns the file's bytes.
template <class Add>
std::vector<unsigned char> bulk_bytes(ribbon::key_kind kind, ribbon::bulk_options o,
                                      layout_choice layout, Add&& add) {
  const ribbon_test::temp_dir dir;
  o.memory_limit = 1;
  o.tmp_dir = dir.path().string();
  o.layout = layout;
  ribbon::bulk_builder builder(kind, o);
  add(builder);
  const ribbon::bulk_result result = builder.finish(dir.file("bulk.rbn"));
  EXPECT_TRUE(result.out_of_core);
  return ribbon_test::read_bytes(dir.file("bulk.rbn"));
}

TEST(CorpusWriters, DefaultsOfTextKeys) {
  // ribbon build -i inputs/words_3000.txt (w = 64, r = 8, compact layout)
  const std::string file = "v5_words_bumped_w64.rbn";
  const std::vector<std::string> keys = text_input(file);
  const std::vector<std::string_view> views = ribbon_test::views(keys);
  ribbon::build_options o;
  expect_corpus_bytes(file, filter::build(views.data(), views.size(), o).serialize(), "build");
  ribbon::bulk_options b;
  b.build = o;
  expect_corpus_bytes(
      file,
      bulk_bytes(ribbon::key_kind::bytes, b, layout_choice::automatic,
                 [&](ribbon::bulk_builder& builder) { builder.add(views.data(), views.size()); }),
      "bulk_builder out of core");
}

TEST(CorpusWriters, IntegerKeysTwoBitCodesFractionalBits) {
  // --format u64 --threshold-codes 2-bit --fpr 0.01 --layout standard
  const std::string file = "v2_ints_bumped_w64_2bit_fpr.rbn";
  const std::vector<std::uint64_t> keys = read_u64(input_of(file));
  ASSERT_EQ(keys.size(), 4000u);
  ribbon::build_options o;
  o.threshold_codes = ribbon::threshold_encoding::two_bit;
  o.target_fpr = 0.01;
  expect_corpus_bytes(
      file, filter::build(keys.data(), keys.size(), o).serialize(layout_choice::standard), "build");
  ribbon::bulk_options b;
  b.build = o;
  expect_corpus_bytes(
      file,
      bulk_bytes(ribbon::key_kind::u64, b, layout_choice::standard,
                 [&](ribbon::bulk_builder& builder) { builder.add(keys.data(), keys.size()); }),
      "bulk_builder out of core");
}

TEST(CorpusWriters, HexKeysWidth128Homogeneous) {
  {
    // --format hex64 -w 128 --fpr 0.003 --threshold-codes 2-bit --seed 3
    const std::string file = "v5_hex_bumped_w128_2bit_fpr.rbn";
    const std::vector<std::uint64_t> keys = hex_input(file);
    ribbon::build_options o;
    o.width = 128;
    o.target_fpr = 0.003;
    o.threshold_codes = ribbon::threshold_encoding::two_bit;
    o.seed = 3;
    expect_corpus_bytes(file, filter::build(keys.data(), keys.size(), o).serialize(), "build");
  }
  {
    // --format u64 --variant homogeneous -r 4 --layout standard
    const std::string file = "v3_ints_homogeneous_w64_r4.rbn";
    const std::vector<std::uint64_t> keys = read_u64(input_of(file));
    ribbon::build_options o;
    o.variant = ribbon::filter_variant::homogeneous;
    o.result_bits = 4;
    expect_corpus_bytes(
        file, filter::build(keys.data(), keys.size(), o).serialize(layout_choice::standard),
        "build");
  }
}

TEST(CorpusWriters, ValuesWithCheckBits) {
  // --values --check-bits 6 --shard-size 4096 --layout standard (values below 2^12: r = 12)
  const std::string file = "v4_values_check_w64_c6.rbn";
  std::vector<std::string> keys;
  std::vector<std::uint32_t> values;
  for (const std::string& line : text_input(file)) {
    auto [key, value] = split_tab(line, true);
    keys.push_back(key);
    values.push_back(static_cast<std::uint32_t>(std::stoul(value)));
  }
  const std::vector<std::string_view> views = ribbon_test::views(keys);
  ribbon::build_options o;
  o.result_bits = 12;
  o.check_bits = 6;
  o.shard_size = 4096;
  expect_corpus_bytes(file,
                      filter::build(views.data(), values.data(), views.size(), o)
                          .serialize(layout_choice::standard),
                      "build");
  ribbon::bulk_options b;
  b.build = o;
  b.with_values = true;
  expect_corpus_bytes(file,
                      bulk_bytes(ribbon::key_kind::bytes, b, layout_choice::standard,
                                 [&](ribbon::bulk_builder& builder) {
                                   builder.add(views.data(), values.data(), views.size());
                                 }),
                      "bulk_builder out of core");
}

TEST(CorpusWriters, FilterSetOfTextGroups) {
  // --groups --no-group-names -i inputs/pairs_4000.tsv (group<TAB>key lines)
  const std::string file = "v6_set_bytes_w64.rbn";
  std::vector<std::string> groups, keys;
  for (const std::string& line : text_input(file)) {
    auto [group, key] = split_tab(line);
    groups.push_back(group);
    keys.push_back(key);
  }
  const std::vector<std::string_view> g = ribbon_test::views(groups), k = ribbon_test::views(keys);
  ribbon::build_options o;
  o.group_names = false;  // version 6
  expect_corpus_bytes(file, filter::build_set(g.data(), k.data(), k.size(), o).serialize(),
                      "build_set");
  ribbon::bulk_options b;
  b.build = o;
  b.groups = ribbon::group_kind::bytes;
  expect_corpus_bytes(file,
                      bulk_bytes(ribbon::key_kind::bytes, b, layout_choice::automatic,
                                 [&](ribbon::bulk_builder& builder) {
                                   const ribbon::set_hasher hasher{0, ribbon::seed_mix(0)};
                                   std::vector<std::uint64_t> pairs;
                                   ribbon::group_counter counter;
                                   for (std::size_t i = 0; i < k.size(); ++i) {
                                     pairs.push_back(hasher.pair(g[i], k[i]));
                                     counter.add(hasher.group(g[i]));
                                   }
                                   builder.add_hashes(pairs.data(), pairs.size());
                                   builder.set_group_count(counter.count());
                                 }),
                      "bulk_builder out of core");
}

TEST(CorpusWriters, ManyShardsOutOfCore) {
  // -r 32 --shard-size 32768 -i inputs/lines_270000.txt (seq -f 'k%.0f' 1 270000): three
  // layers, layer 0 of 8 shards, the standard layout because the sections pass 1 MiB.
  const std::string file = "v3_lines_270000_r32_shards.rbn";
  std::vector<std::string> keys;
  for (int i = 1; i <= 270000; ++i) keys.push_back("k" + std::to_string(i));
  const std::vector<std::string_view> views = ribbon_test::views(keys);
  ribbon::build_options o;
  o.result_bits = 32;
  o.shard_size = 32768;
  expect_corpus_bytes(file, filter::build(views.data(), views.size(), o).serialize(), "build");
  ribbon::bulk_options b;
  b.build = o;
  expect_corpus_bytes(
      file,
      bulk_bytes(ribbon::key_kind::bytes, b, layout_choice::automatic,
                 [&](ribbon::bulk_builder& builder) { builder.add(views.data(), views.size()); }),
      "bulk_builder out of core");
}

#if defined(RIBBON_GPU_ON_TBB)
TEST(CorpusWriters, GpuPipelineOnTbb) {
  {
    const std::string file = "v2_ints_bumped_w64_2bit_fpr.rbn";
    const std::vector<std::uint64_t> keys = read_u64(input_of(file));
    ribbon::build_options o;
    o.threshold_codes = ribbon::threshold_encoding::two_bit;
    o.target_fpr = 0.01;
    expect_corpus_bytes(
        file, ribbon::cuda::build(keys.data(), keys.size(), o).serialize(layout_choice::standard),
        "cuda::build (TBB backend)");
  }
  {
    const std::string file = "v5_words_bumped_w64.rbn";
    const std::vector<std::string> keys = text_input(file);
    const std::vector<std::string_view> views = ribbon_test::views(keys);
    expect_corpus_bytes(file, ribbon::cuda::build(views.data(), views.size()).serialize(),
                        "cuda::build (TBB backend)");
  }
}
#endif

}  // namespace
