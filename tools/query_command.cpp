// `ribbon query` (print the keys that may be in the set) and `ribbon verify` (checksums,
// structure, and optionally that every given key is positive). Both read keys with the
// input pipeline and use the batched CPU query path on each chunk.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "input.hpp"
#include "progress.hpp"
#include "ribbon/error.hpp"
#include "ribbon/filter.hpp"
#include "util.hpp"

namespace ribbon::cli {
namespace {

const char* kind_description(key_kind kind) {
  return kind == key_kind::bytes ? "byte-string keys (--format lines)"
                                 : "64-bit integer keys (--format u64 or --format hex64)";
}

/// Loads with every checksum verified, and checks the filter's key kind against `format` and
/// that --values is given exactly for retrieval files (`command` names the subcommand).
filter load_for_format(const std::string& path, input_format format, bool values,
                       const char* command, bool group_given = false) {
  filter f = filter::load(path);
  if (f.is_set() && !group_given) {
    throw error(path + ": a filter set answers (group, key): give --group GROUP" +
                (std::string(command) == "verify" ? " (the group of every key of -i)" : ""));
  }
  if (!f.is_set() && group_given) {
    throw error(path + ": --group is for filter sets (built with `ribbon build --groups -o`)");
  }
  if (f.params().keys != key_kind_of(format)) {
    throw error(path + ": the filter was built from " + kind_description(f.params().keys) +
                " and cannot be queried with --format " + input_format_name(format));
  }
  // Retrieval with check bits answers membership too.
  if (f.is_retrieval() && !values && f.params().check_bits == 0) {
    throw error(path +
                ": a retrieval structure (built with values) answers lookups, not "
                "membership: use '" +
                command + " --values'" +
                (std::string(command) == "verify" ? " with key<TAB>value lines" : ""));
  }
  if (!f.is_retrieval() && values) {
    throw error(path +
                ": --values is for retrieval structures (built with --values or "
                "--value-file); this file is a filter");
  }
  if (values && format == input_format::u64 && std::string(command) == "verify") {
    throw error(
        "--values reads key<TAB>value text lines (--format lines or hex64); --format "
        "u64 has no text");
  }
  return f;
}

/// The group a query asks a filter set about (--group): its text, and the integer it names
/// where the set's groups are integers.
struct query_group {
  std::string text;
  std::uint64_t number = 0;
};

/// --group's value for the set `f` (nothing without --group).
std::optional<query_group> group_for(const filter& f, const std::optional<std::string>& group) {
  if (!group) return std::nullopt;
  query_group g{*group};
  if (f.params().groups == group_kind::u64) g.number = parse_u64_decimal(*group, "--group");
  return g;
}

/// found[i] for every key of the chunk (the pipeline runs chunks in parallel, so one thread
/// per batch), in `group` of a filter set where one is given; sets c.positives.
void query_chunk(const filter& f, input_format format, input_chunk& c,
                 const std::optional<query_group>& group = std::nullopt) {
  bool* found = c.found_buffer();
  const bool text = format == input_format::lines;
  if (!group) {
    if (text) f.contains(c.texts.data(), c.key_count, found);
    if (!text) f.contains(c.values.data(), c.key_count, found);
  } else if (f.params().groups == group_kind::u64) {
    if (text) f.contains_in(group->number, c.texts.data(), c.key_count, found);
    if (!text) f.contains_in(group->number, c.values.data(), c.key_count, found);
  } else {
    const std::string_view name = group->text;
    if (text) f.contains_in(name, c.texts.data(), c.key_count, found);
    if (!text) f.contains_in(name, c.values.data(), c.key_count, found);
  }
  c.positives = static_cast<std::uint64_t>(std::count(found, found + c.key_count, true));
}

/// --groups-of: appends a line per key of the chunk to c.output, the key then each group that
/// may hold it (TAB-separated, ascending); sets c.positives to the keys with any group.
/// append_key(i, out) appends key i's text.
template <class AppendKey>
void groups_of_chunk(const filter& f, input_format format, input_chunk& c,
                     const AppendKey& append_key) {
  const group_names& names = f.groups();
  const filter::group_matches m = format == input_format::lines
                                      ? f.groups_of(c.texts.data(), c.key_count)
                                      : f.groups_of(c.values.data(), c.key_count);
  c.positives = 0;
  for (std::uint64_t i = 0; i < c.key_count; ++i) {
    append_key(i, c.output);
    for (std::uint64_t j = m.offsets[i]; j < m.offsets[i + 1]; ++j) {
      c.output += '\t';
      c.output += names.text(m.groups[j]);
    }
    c.output += '\n';
    c.positives += m.offsets[i + 1] > m.offsets[i];
  }
}

/// looked_up[i] = the value stored for key i of the chunk (retrieval) and found[i] whether
/// its check bits match (every key without check bits); sets c.positives to the found keys.
void lookup_chunk(const filter& f, input_format format, input_chunk& c) {
  c.looked_up.resize(c.key_count);
  bool* found = c.found_buffer();
  if (format == input_format::lines) {
    f.lookup(c.texts.data(), c.key_count, c.looked_up.data(), found);
  } else {
    f.lookup(c.values.data(), c.key_count, c.looked_up.data(), found);
  }
  c.positives = static_cast<std::uint64_t>(std::count(found, found + c.key_count, true));
}

/// Appends key<TAB>value lines of a looked-up chunk to `out`: for each found key, and for
/// the others (check bits not matching) key<TAB>absent where `absent` is given.
/// append_key(i, out) appends key i's text.
template <class AppendKey>
void append_lookups(const input_chunk& c, const std::optional<std::string>& absent,
                    const AppendKey& append_key, std::string& out) {
  for (std::uint64_t i = 0; i < c.key_count; ++i) {
    if (!c.found[i] && !absent) continue;
    append_key(i, out);
    out += '\t';
    out += c.found[i] ? std::to_string(c.looked_up[i]) : *absent;
    out += '\n';
  }
}

/// Key `i` of a chunk as text: as written for line formats, decimal for u64.
void append_key_text(const input_chunk& c, input_format format, std::uint64_t i, std::string& out) {
  if (format == input_format::u64) {
    out += std::to_string(c.values[i]);
  } else {
    out.append(c.texts[i].data(), c.texts[i].size());
  }
}

void write_stdout(const std::string& text) {
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) {
    throw error(std::string("cannot write to stdout: ") + std::strerror(errno));
  }
}

void finish_stdout() {
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    throw error(std::string("cannot write to stdout: ") + std::strerror(errno));
  }
}

/// Positional keys as a chunk (texts and values like the pipeline's).
input_chunk chunk_of_arguments(const std::vector<std::string>& keys, input_format format) {
  input_chunk c;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string where = "key argument " + std::to_string(i + 1);
    if (format == input_format::u64) c.values.push_back(parse_u64_decimal(keys[i], where));
    if (format == input_format::hex64) c.values.push_back(parse_hex64(keys[i], where));
    c.texts.emplace_back(keys[i]);
  }
  c.key_count = keys.size();
  return c;
}

struct query_settings {
  std::string filter_path;
  std::vector<std::string> inputs;
  std::vector<std::string> keys;
  std::string format = "lines";
  bool count = false;
  bool values = false;
  std::optional<std::string> absent;
  std::optional<std::string> group;
  bool groups_of = false;
  bool progress = false;
};

int run_query(query_settings s) {
  const input_format format = parse_input_format(s.format);
  if (s.inputs.empty() && s.keys.empty()) {
    if (::isatty(STDIN_FILENO)) {
      throw error("no keys: give -i FILE, keys as arguments, or pipe keys into stdin");
    }
    s.inputs.push_back("-");
  }
  filter f =
      load_for_format(s.filter_path, format, s.values, "query", s.group.has_value() || s.groups_of);
  if (s.groups_of && !f.has_group_names()) {
    throw error(s.filter_path +
                ": --groups-of: this filter set has no group names (built with "
                "--no-group-names, format version 6); rebuild it without that flag");
  }
  const std::optional<query_group> group = group_for(f, s.group);
  if (s.absent && f.params().check_bits == 0) {
    throw error(s.filter_path +
                ": --absent needs a retrieval structure with check bits (built with "
                "--check-bits): without them every key gets a value");
  }
  f.set_query_threads(1);
  std::uint64_t queried = 0, positive = 0;

  // Arguments first, then the inputs in order; positives (or key<TAB>value for every key
  // with --values) are printed in that order.
  if (!s.keys.empty()) {
    input_chunk c = chunk_of_arguments(s.keys, format);
    std::string out;
    if (s.values) {
      lookup_chunk(f, format, c);
      positive += c.positives;
      append_lookups(
          c, s.absent, [&](std::uint64_t i, std::string& text) { text += s.keys[i]; }, out);
    } else if (s.groups_of) {
      groups_of_chunk(f, format, c, [&](std::uint64_t i, std::string& text) { text += s.keys[i]; });
      positive += c.positives;
      out.swap(c.output);
    } else {
      query_chunk(f, format, c, group);
      positive += c.positives;
      for (std::uint64_t i = 0; i < c.key_count && !s.count; ++i) {
        if (c.found[i]) {
          out.append(s.keys[i]);
          out += '\n';
        }
      }
    }
    queried += c.key_count;
    write_stdout(out);
  }
  if (!s.inputs.empty()) {
    input_reader reader(s.inputs, format);
    progress_display display(s.progress ? progress_mode::live : progress_mode::quiet, "query",
                             &reader.counters(), reader.total_bytes(), nullptr);
    const bool print_keys = !s.count;
    reader.run(
        0, parse_output::keys, 0,
        [&](input_chunk& c) {
          if (s.values) {
            lookup_chunk(f, format, c);
            append_lookups(
                c, s.absent,
                [&](std::uint64_t i, std::string& text) { append_key_text(c, format, i, text); },
                c.output);
            return;
          }
          if (s.groups_of) {
            groups_of_chunk(f, format, c, [&](std::uint64_t i, std::string& text) {
              append_key_text(c, format, i, text);
            });
            return;
          }
          query_chunk(f, format, c, group);
          if (!print_keys) return;
          for (std::uint64_t i = 0; i < c.key_count; ++i) {
            if (!c.found[i]) continue;
            append_key_text(c, format, i, c.output);
            c.output += '\n';
          }
        },
        [&](input_chunk& c) {
          queried += c.key_count;
          positive += c.positives;
          write_stdout(c.output);
        });
    display.stop(true);
  }
  if (s.count) {
    std::printf("%llu queried, %llu positive\n", static_cast<unsigned long long>(queried),
                static_cast<unsigned long long>(positive));
  }
  finish_stdout();
  return positive > 0 ? 0 : 1;
}

struct verify_settings {
  std::string filter_path;
  std::vector<std::string> inputs;
  std::string format = "lines";
  std::optional<std::string> group;
  bool values = false;
  bool progress = false;
  bool quiet = false;
};

/// `ribbon verify` without keys: loading checks every checksum and the structure.
int verify_file_only(const verify_settings& s) {
  const filter f = filter::load(s.filter_path);
  if (!s.quiet) {
    const std::string what = f.is_set() ? "a filter set of " + std::to_string(f.group_count()) +
                                              " groups, " + std::to_string(f.key_count()) + " pairs"
                                        : std::to_string(f.key_count()) + " keys";
    std::printf(
        "OK: %s: checksums and structure valid (%s, %u layers, %llu bytes, %.3f "
        "bits/key)\n",
        s.filter_path.c_str(), what.c_str(), f.num_layers(),
        static_cast<unsigned long long>(f.size_bytes()), f.bits_per_key());
  }
  finish_stdout();
  return 0;
}

/// Sets c.positives to the keys of the chunk that pass: positive, or (with `values`) looked up
/// to their own value.
void verify_chunk(const filter& f, input_format format, bool values, input_chunk& c,
                  const std::optional<query_group>& group) {
  if (!values) {
    query_chunk(f, format, c, group);
    return;
  }
  lookup_chunk(f, format, c);
  c.positives = 0;
  for (std::uint64_t i = 0; i < c.key_count; ++i) {
    c.positives += c.found[i] && c.looked_up[i] == c.entry_values[i];
  }
}

/// Key `i` of a chunk that failed verification, with where it was read (and its values).
std::string failed_key_description(const input_chunk& c, const input_reader& reader,
                                   input_format format, bool values, std::uint64_t i) {
  if (format == input_format::u64) {
    return std::to_string(c.values[i]) + " (" + reader.name(c.source) + " byte " +
           std::to_string(c.byte_offset + 8 * i) + ")";
  }
  std::string key = quote_for_message(c.texts[i]) + " (" + reader.name(c.source) + ":" +
                    std::to_string(c.first_line + i);
  if (values) {
    key += ": value " + std::to_string(c.entry_values[i]) + ", stored " +
           std::to_string(c.looked_up[i]);
  }
  key += ")";
  return key;
}

/// Prints the verdict on the keys; 0 if none failed, else 1.
int report_verify(const verify_settings& s, std::uint64_t checked, std::uint64_t missing,
                  const std::vector<std::string>& examples) {
  if (missing == 0) {
    if (!s.quiet) {
      std::printf("OK: %s: checksums and structure valid, all %llu keys %s\n",
                  s.filter_path.c_str(), static_cast<unsigned long long>(checked),
                  s.values ? "have their values" : "positive");
    }
    finish_stdout();
    return 0;
  }
  if (!s.quiet) {
    std::string list;
    for (const std::string& key : examples) list += (list.empty() ? "" : ", ") + key;
    if (missing > examples.size()) list += ", ...";
    std::printf("FAILED: %s: %llu of %llu keys %s: %s\n", s.filter_path.c_str(),
                static_cast<unsigned long long>(missing), static_cast<unsigned long long>(checked),
                s.values ? "have other values in the file" : "are not in the filter", list.c_str());
  }
  finish_stdout();
  return 1;
}

int run_verify(const verify_settings& s) {
  const input_format format = parse_input_format(s.format);
  if (s.values && s.inputs.empty()) {
    throw error("--values checks the key<TAB>value lines of -i FILE: give -i");
  }
  if (s.inputs.empty()) return verify_file_only(s);
  filter f = load_for_format(s.filter_path, format, s.values, "verify", s.group.has_value());
  const std::optional<query_group> group = group_for(f, s.group);
  f.set_query_threads(1);
  input_reader reader(s.inputs, format, s.values ? input_records::key_values : input_records::keys);
  progress_display display(s.progress ? progress_mode::live : progress_mode::quiet, "verify",
                           &reader.counters(), reader.total_bytes(), nullptr);
  constexpr std::size_t missing_shown = 10;
  std::uint64_t checked = 0, missing = 0;
  std::vector<std::string> examples;
  reader.run(
      0, parse_output::keys, 0,
      [&](input_chunk& c) { verify_chunk(f, format, s.values, c, group); },
      [&](input_chunk& c) {
        checked += c.key_count;
        missing += c.key_count - c.positives;
        for (std::uint64_t i = 0; i < c.key_count && examples.size() < missing_shown; ++i) {
          if (s.values ? c.looked_up[i] == c.entry_values[i] : c.found[i]) continue;
          examples.push_back(failed_key_description(c, reader, format, s.values, i));
        }
      });
  display.stop(true);
  return report_verify(s, checked, missing, examples);
}

void add_format_option(CLI::App* cmd, std::string& format) {
  cmd->add_option("--format", format,
                  "key format: lines (byte-string filters), u64 or hex64 (integer filters)")
      ->check(CLI::IsMember({"lines", "u64", "hex64"}))
      ->capture_default_str();
}

}  // namespace

std::function<int()> add_query_command(CLI::App& app) {
  auto s = std::make_shared<query_settings>();
  CLI::App* cmd = app.add_subcommand(
      "query", "Print each key that may be in the set (exit 0 if any, 1 if none, 2 on error)");
  cmd->add_option("filter", s->filter_path, "filter file")->required();
  cmd->add_option("keys", s->keys,
                  "keys to query (text; decimal for --format u64, hex for hex64); put -- "
                  "before keys that start with '-'");
  cmd->add_option("-i,--input", s->inputs,
                  "file of keys to query, '-' for stdin; repeatable. Default: stdin when no "
                  "keys are given");
  add_format_option(cmd, s->format);
  CLI::Option* count =
      cmd->add_flag("-c,--count", s->count,
                    "print only '<queried> queried, <positive> positive' instead of the keys");
  CLI::Option* values =
      cmd->add_flag("--values", s->values,
                    "retrieval files (built with values): print key<TAB>value for every key (the "
                    "value is arbitrary for keys not in the set) or, with check bits, for the "
                    "keys found (their check bits match); exit 0 if any key was found");
  values->excludes(count);
  cmd->add_option("--absent", s->absent,
                  "with --values and check bits: print key<TAB>TEXT for the keys not found")
      ->needs(values);
  cmd->add_option("--group", s->group,
                  "filter sets (built with --groups -o): the group the keys are asked about "
                  "(text, or decimal where the set names groups by integers)")
      ->excludes(values);
  cmd->add_flag("--groups-of", s->groups_of,
                "filter sets with group names: print a line per key, the key then each group "
                "that may hold it, TAB-separated (exit 0 if any key has a group)")
      ->excludes(values)
      ->excludes(count)
      ->excludes("--group");
  cmd->add_flag("--progress", s->progress, "live progress line on stderr");
  return [s] { return run_query(*s); };
}

std::function<int()> add_verify_command(CLI::App& app) {
  auto s = std::make_shared<verify_settings>();
  CLI::App* cmd = app.add_subcommand(
      "verify",
      "Check every checksum and the structure of a filter file and, given keys, that every "
      "key is positive (exit 0 OK, 1 keys missing, 2 corrupt or unreadable)");
  cmd->add_option("filter", s->filter_path, "filter file")->required();
  cmd->add_option("-i,--input", s->inputs, "file of keys that must all be positive, '-' for stdin");
  add_format_option(cmd, s->format);
  cmd->add_option("--group", s->group,
                  "filter sets: the group every key of -i must be positive in (text, or "
                  "decimal where the set names groups by integers)")
      ->needs("--input");
  cmd->add_flag("--values", s->values,
                "retrieval files: -i gives key<TAB>value lines (keys as --format lines or hex64) "
                "and every key must have its value");
  CLI::Option* progress = cmd->add_flag("--progress", s->progress, "live progress line on stderr");
  CLI::Option* quiet =
      cmd->add_flag("-q,--quiet", s->quiet, "print nothing; the exit status tells");
  progress->excludes(quiet);
  return [s] { return run_verify(*s); };
}

}  // namespace ribbon::cli
