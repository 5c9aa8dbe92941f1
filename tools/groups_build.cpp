// `ribbon build --groups --out-dir DIR`: a filter per group of (group, key) pairs, one file
// per group, built in one call across the cores (ribbon::build_many), in memory.
#include <sys/stat.h>

#include <tbb/parallel_for.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "build_settings.hpp"
#include "gpu_backend.hpp"
#include "ribbon/build_many.hpp"
#include "ribbon/detail/counting_sort.hpp"
#include "ribbon/error.hpp"
#include "ribbon/options.hpp"

namespace ribbon::cli {
namespace {

/// The (group, key) pairs read: a group index and a key hash per pair, and each group's name.
struct grouped_hashes {
  std::vector<std::uint64_t> hashes;
  std::vector<std::uint64_t> group_of;  ///< per pair
  std::vector<std::string> names;       ///< per group, in order of first appearance
};

std::string name_of(std::string_view group) {
  return std::string(group);
}
std::string name_of(std::uint64_t group) {
  return std::to_string(group);
}

/// Reads the pairs (Group: std::string_view or std::uint64_t, as group_at gives them),
/// numbering the groups in order of first appearance; the reader hashes the keys.
template <class Group>
grouped_hashes read_pairs(const build_settings& s, input_reader& reader) {
  using label =
      std::conditional_t<std::is_same_v<Group, std::uint64_t>, std::uint64_t, std::string>;
  grouped_hashes out;
  std::unordered_map<label, std::uint64_t> numbers;
  reader.run(
      s.options.threads, parse_output::hashes, s.options.seed, [](input_chunk&) {},
      [&](input_chunk& c) {
        for (std::size_t i = 0; i < c.key_count; ++i) {
          const Group group = group_at<Group>(c, i);
          const auto [it, added] = numbers.try_emplace(label(group), out.names.size());
          if (added) out.names.push_back(name_of(group));
          out.group_of.push_back(it->second);
        }
        out.hashes.insert(out.hashes.end(), c.values.begin(), c.values.end());
      });
  return out;
}

/// Offsets and order of each group's pairs (a counting sort by group, stable).
struct group_layout {
  std::vector<std::uint64_t> offsets;
  std::vector<std::uint64_t> order;
};

group_layout layout_of(const grouped_hashes& pairs) {
  group_layout layout;
  const std::vector<std::uint64_t> places = detail::counting_sort_places(
      pairs.group_of.size(), pairs.names.size(), [&](std::uint64_t i) { return pairs.group_of[i]; },
      layout.offsets);
  layout.order.resize(places.size());
  for (std::uint64_t i = 0; i < places.size(); ++i) layout.order[places[i]] = i;
  return layout;
}

/// Before any work: files can be written in DIR, or DIR can be made where it is missing.
void check_output_dir(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    check_output_path(dir);  // a new entry there: the parent is writable
    return;
  }
  if (!S_ISDIR(st.st_mode)) throw error("--out-dir " + dir + ": not a directory");
  check_output_path(dir + "/" + group_file_name("g"));
}

/// Creates DIR if it is missing (not its parents); throws if it cannot be a directory.
void make_output_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0777) == 0 || errno == EEXIST) {
    struct stat st;
    if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return;
    throw error("--out-dir " + dir + ": not a directory");
  }
  throw error("--out-dir " + dir + ": cannot create the directory: " + std::strerror(errno));
}

std::uint64_t total_bytes(const std::vector<filter>& filters) {
  std::uint64_t bytes = 0;
  for (const filter& f : filters) bytes += f.size_bytes();
  return bytes;
}

}  // namespace

std::string group_file_name(std::string_view group) {
  if (group.empty()) return "%.ribbon";  // no escape gives a lone '%'
  static const char hex[] = "0123456789ABCDEF";
  std::string name;
  for (std::size_t i = 0; i < group.size(); ++i) {
    const auto c = static_cast<unsigned char>(group[i]);
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '-' || (c == '.' && i > 0);
    if (plain) {
      name += static_cast<char>(c);
    } else {
      name += '%';
      name += hex[c >> 4];
      name += hex[c & 15];
    }
  }
  return name + ".ribbon";
}

int run_groups_build(const build_settings& s, input_format format, filter_variant variant, bool gpu,
                     clock_type::time_point start, progress_mode mode) {
  const build_options options = build_options_of(s, variant);
  (void)build_params(options, key_kind_of(format), false);  // bad options before any work
  check_output_dir(s.out_dir);
  input_reader reader(s.inputs, format, input_records::pairs);
  const grouped_hashes pairs = format == input_format::u64
                                   ? read_pairs<std::uint64_t>(s, reader)
                                   : read_pairs<std::string_view>(s, reader);
  std::vector<std::string> paths(pairs.names.size());
  for (std::size_t g = 0; g < paths.size(); ++g) {
    const std::string name = group_file_name(pairs.names[g]);
    if (name.size() > 255) {
      throw error("group " + quote_for_message(pairs.names[g]) + " makes a file name of " +
                  std::to_string(name.size()) + " bytes, beyond the 255 a directory allows");
    }
    paths[g] = s.out_dir + "/" + name;
  }
  const group_layout layout = layout_of(pairs);
  const key_groups groups{layout.offsets.data(), pairs.names.size(), layout.order.data()};
  const auto build = gpu ? build_many_on_gpu : build_many_from_hashes;
  const std::vector<filter> filters =
      build(pairs.hashes.data(), pairs.hashes.size(), key_kind_of(format), groups, options);
  make_output_dir(s.out_dir);
  tbb::parallel_for(std::size_t{0}, filters.size(),
                    [&](std::size_t g) { filters[g].save(paths[g], file_layout_of(s.layout)); });
  if (mode != progress_mode::quiet) {
    const double seconds = seconds_since(start);
    const std::uint64_t bytes = total_bytes(filters);
    std::uint64_t distinct = 0;
    for (const filter& f : filters) distinct += f.key_count();
    char figures[160];
    std::snprintf(figures, sizeof(figures), "%llu bytes, %.3f bits/key, %.2f s",
                  static_cast<unsigned long long>(bytes),
                  distinct ? 8.0 * static_cast<double>(bytes) / static_cast<double>(distinct) : 0.0,
                  seconds);
    const std::string line = "ribbon build: " + s.out_dir + ": " + std::to_string(filters.size()) +
                             " groups, " + std::to_string(pairs.hashes.size()) + " pairs (" +
                             std::to_string(distinct) + " distinct keys), " + figures +
                             ", a file per group";
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  return 0;
}

}  // namespace ribbon::cli
