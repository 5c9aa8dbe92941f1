// `ribbon info`: every parameter of a filter file, its layers and what they cost.
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

#include "commands.hpp"
#include "ribbon/error.hpp"
#include "ribbon/filter.hpp"
#include "ribbon/summary.hpp"
#include "util.hpp"

namespace ribbon::cli {
namespace {

struct info_settings {
  std::string filter_path;
  bool json = false;
};

std::string number(double value, const char* format_spec) {
  char text[64];
  std::snprintf(text, sizeof(text), format_spec, value);
  return text;
}

std::string u(std::uint64_t value) {
  return std::to_string(value);
}

/// A summary field's value as `ribbon info --json` writes it.
struct json_value {
  std::string operator()(std::uint64_t value) const { return u(value); }
  std::string operator()(summary_number n) const { return number(n.value, n.format); }
  std::string operator()(const std::string& text) const { return json_string(text); }
  std::string operator()(std::nullptr_t) const { return "null"; }
};

std::string layer_json(std::size_t l, const layer_summary& layer) {
  std::string out;
  for_each_field(l, layer, [&](const char* name, const auto& value) {
    out += std::string(out.empty() ? "    {\"" : ", \"") + name + "\": " + json_value{}(value);
  });
  return out + "}";
}

std::string info_json(const filter_summary& x, const std::string& path) {
  std::string out = "{\n";
  auto field = [&](const char* name, const auto& value) {
    out += std::string("  \"") + name + "\": " + json_value{}(value) + ",\n";
  };
  field("file", path);
  for_each_field(x, field);
  out += "  \"layers\": [";
  for (std::size_t l = 0; l < x.layers.size(); ++l) {
    out += (l == 0 ? "\n" : ",\n") + layer_json(l, x.layers[l]);
  }
  return out + (x.layers.empty() ? "]\n}\n" : "\n  ]\n}\n");
}

std::string layer_text(const layer_summary& layer) {
  return std::string(layer_kind_name(layer.kind)) + ", " + u(layer.starts) + " starts, " +
         u(layer.shards) + " shards, " + u(layer.input_keys) + " keys in, " + u(layer.bumped_keys) +
         " bumped" + number(100.0 * layer.bumped_fraction, " (%.3f%%)") + ", thresholds " +
         u(layer.threshold_bytes) + " B, solution " + u(layer.solution_bytes) + " B";
}

std::string info_text(const filter_summary& x, const std::string& path) {
  const filter_params& p = x.params;
  std::string out;
  auto line = [&](const std::string& name, const std::string& value) {
    char label[32];
    std::snprintf(label, sizeof(label), "%-16s", name.c_str());
    out += std::string(label) + value + "\n";
  };
  line("file", path);
  line("file bytes", u(x.file_bytes));
  line("format version",
       u(x.format_version) + (x.compact_layout ? " (compact layout)" : " (standard layout)"));
  line("variant", variant_name(p.variant) +
                      (x.retrieval ? " (a static function: lookup returns the stored value)"
                                   : std::string(" filter")));
  line("features", x.features ? format::feature_names(x.features) : std::string("none"));
  if (p.is_set()) {
    line("filter set", u(x.group_count) + " groups with keys, named by " +
                           (p.groups == group_kind::u64 ? "64-bit integers" : "byte strings") +
                           " (query with --group)");
    line("group names", x.has_group_names
                            ? u(x.group_names) + " (query with --groups-of)"
                            : std::string("none (format version 6: --groups-of cannot answer)"));
  }
  if (x.has_metadata) line("metadata", u(x.metadata_bytes) + " bytes");
  line("key kind", p.keys == key_kind::bytes ? "bytes (byte strings, query with --format lines)"
                                             : "u64 (64-bit integers, --format u64 or hex64)");
  line("width", u(p.width));
  line("result bits",
       u(p.result_bits) + (p.extra_bit_fraction != 0 ? number(100 * x.extra_bit_fraction,
                                                              " (+1 in the last %.2f%% of blocks)")
                                                     : std::string()));
  if (x.retrieval) {
    line("check bits", p.check_bits == 0
                           ? std::string("0 (every key gets a value)")
                           : u(p.check_bits) + " (" + u(p.value_bits()) +
                                 " value bits; a non-member is found with probability 2^-" +
                                 u(p.check_bits) + ")");
  }
  line("bucket size", u(p.bucket_size));
  line("thresholds", "light " + u(p.threshold_light) + ", heavy " + u(p.threshold_heavy) + ", " +
                         threshold_encoding_name(x.threshold_codes) + " codes");
  line("shard size", u(p.shard_size));
  line("seed", u(p.seed));
  line(p.is_set() ? "distinct pairs" : "distinct keys", u(x.key_count));
  line("layers", u(x.layers.size()));
  line("bits/key",
       x.key_count > 0
           ? number(x.bits_per_key, "%.4f") + number(x.overhead_pct, " (%.3f%% over ") +
                 (x.retrieval ? std::string("r)") : number(x.ideal_bits_per_key, "%.4f bits)"))
           : std::string("- (no keys)"));
  if (!x.retrieval) {
    line("expected FPR",
         (p.extra_bit_fraction != 0 ? std::string("") : "2^-" + u(p.result_bits) + " = ") +
             number(x.expected_fpr, "%.6g"));
  }
  for (std::size_t l = 0; l < x.layers.size(); ++l) line("layer " + u(l), layer_text(x.layers[l]));
  return out;
}

int run_info(const info_settings& s) {
  // Verifies every checksum; a file of any other format version is rejected.
  const filter_summary x = summarize(filter::load(s.filter_path));
  const std::string out = s.json ? info_json(x, s.filter_path) : info_text(x, s.filter_path);
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
    throw error(std::string("cannot write to stdout: ") + std::strerror(errno));
  }
  return 0;
}

}  // namespace

std::function<int()> add_info_command(CLI::App& app) {
  auto s = std::make_shared<info_settings>();
  CLI::App* cmd = app.add_subcommand(
      "info", "Print a filter file's parameters, layers, space and expected FPR (checks it too)");
  cmd->add_option("filter", s->filter_path, "filter file")->required();
  cmd->add_flag("--json", s->json, "print one JSON object");
  return [s] { return run_info(*s); };
}

}  // namespace ribbon::cli
