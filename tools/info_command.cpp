// `ribbon info`: every parameter of a filter file, its layers and what they cost.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "commands.hpp"
#include "ribbon/error.hpp"
#include "ribbon/filter.hpp"
#include "ribbon/format.hpp"
#include "util.hpp"

namespace ribbon::cli {
namespace {

struct info_settings {
  std::string filter_path;
  bool json = false;
};

const char* key_kind_name(key_kind kind) {
  return kind == key_kind::bytes ? "bytes" : "u64";
}

std::string number(double value, const char* format_spec) {
  char text[64];
  std::snprintf(text, sizeof(text), format_spec, value);
  return text;
}

std::string u(std::uint64_t value) {
  return std::to_string(value);
}

const char* layer_kind_name(const layer_geometry& g) {
  return g.kind == layer_kind::bumped     ? "bumped"
         : g.kind == layer_kind::standard ? "standard"
                                          : "plain";
}

/// The space and accuracy figures of a filter, as both outputs print them.
struct space_figures {
  bool retrieval;
  double bits_per_key;
  double fpr;
  /// Filters: -log2(FPR) (r, or about r + f with fractional bits); retrieval: r, the value
  /// bits. The overhead is measured against it.
  double ideal_bits;
  double overhead_pct;
  double extra_fraction;  ///< of blocks with r + 1 bits
};

space_figures figures_of(const filter& f) {
  const filter_params& p = f.params();
  space_figures x;
  x.retrieval = f.is_retrieval();
  x.bits_per_key = f.bits_per_key();
  x.fpr = expected_fpr(p);
  x.ideal_bits = x.retrieval ? p.result_bits : -std::log2(x.fpr);
  x.overhead_pct = f.key_count() > 0 ? 100.0 * (x.bits_per_key / x.ideal_bits - 1.0) : 0.0;
  x.extra_fraction = p.extra_bit_fraction / static_cast<double>(extra_bit_one);
  return x;
}

/// Keys bumped out of a layer, as a fraction of its keys.
double bumped_fraction(const format::layer_image& layer) {
  return layer.input_keys > 0
             ? static_cast<double>(layer.bumped_keys) / static_cast<double>(layer.input_keys)
             : 0.0;
}

std::string layer_json(const filter_params& p, std::size_t l, const format::layer_image& layer) {
  const layer_geometry& g = layer.geometry;
  return "    {\"index\": " + u(l) + ", \"kind\": \"" + layer_kind_name(g) +
         "\", \"starts\": " + u(g.num_starts) + ", \"shards\": " + u(g.num_shards()) +
         ", \"buckets\": " + u(g.num_buckets(p.bucket_size)) + ", \"salt\": " + u(layer.salt) +
         ", \"input_keys\": " + u(layer.input_keys) + ", \"bumped_keys\": " + u(layer.bumped_keys) +
         ", \"bumped_fraction\": " + number(bumped_fraction(layer), "%.6f") +
         ", \"threshold_bytes\": " + u(g.threshold_words(p.bucket_size) * 8) +
         ", \"solution_bytes\": " + u(g.solution_bytes(p.width, p.result_bits)) + "}";
}

std::string info_json(const filter& f, const std::string& path) {
  const filter_params& p = f.params();
  const space_figures x = figures_of(f);
  std::string out = "{\n";
  auto field = [&](const char* name, const std::string& value) {
    out += std::string("  \"") + name + "\": " + value + ",\n";
  };
  field("file", json_string(path));
  field("file_bytes", u(f.size_bytes()));
  field("format_version", u(f.format_version()));
  field("variant", json_string(variant_name(p.variant)));
  field("key_kind", json_string(key_kind_name(p.keys)));
  field("width", u(p.width));
  field("result_bits", u(p.result_bits));
  field("extra_bit_fraction", number(x.extra_fraction, "%.6f"));
  field("bucket_size", u(p.bucket_size));
  field("threshold_light", u(p.threshold_light));
  field("threshold_heavy", u(p.threshold_heavy));
  field("threshold_encoding", json_string(threshold_encoding_name(f.threshold_codes())));
  field("shard_size", u(p.shard_size));
  field("seed", u(p.seed));
  field("key_count", u(f.key_count()));
  field("num_layers", u(f.num_layers()));
  field("bits_per_key", number(x.bits_per_key, "%.6f"));
  field("ideal_bits_per_key", number(x.ideal_bits, "%.6f"));
  field("overhead_pct", number(x.overhead_pct, "%.4f"));
  field("expected_fpr", x.retrieval ? std::string("null") : number(x.fpr, "%.10g"));
  out += "  \"layers\": [";
  for (std::size_t l = 0; l < f.layers().size(); ++l) {
    out += (l == 0 ? "\n" : ",\n") + layer_json(p, l, f.layers()[l]);
  }
  return out + (f.layers().empty() ? "]\n}\n" : "\n  ]\n}\n");
}

std::string layer_text(const filter_params& p, const format::layer_image& layer) {
  const layer_geometry& g = layer.geometry;
  return std::string(layer_kind_name(g)) + ", " + u(g.num_starts) + " starts, " +
         u(g.num_shards()) + " shards, " + u(layer.input_keys) + " keys in, " +
         u(layer.bumped_keys) + " bumped" + number(100.0 * bumped_fraction(layer), " (%.3f%%)") +
         ", thresholds " + u(g.threshold_words(p.bucket_size) * 8) + " B, solution " +
         u(g.solution_bytes(p.width, p.result_bits)) + " B";
}

std::string info_text(const filter& f, const std::string& path) {
  const filter_params& p = f.params();
  const space_figures x = figures_of(f);
  std::string out;
  auto line = [&](const std::string& name, const std::string& value) {
    char label[32];
    std::snprintf(label, sizeof(label), "%-16s", name.c_str());
    out += std::string(label) + value + "\n";
  };
  line("file", path);
  line("file bytes", u(f.size_bytes()));
  line("format version", u(f.format_version()));
  line("variant", variant_name(p.variant) +
                      (x.retrieval ? " (a static function: lookup returns the stored value)"
                                   : std::string(" filter")));
  line("key kind", p.keys == key_kind::bytes ? "bytes (byte strings, query with --format lines)"
                                             : "u64 (64-bit integers, --format u64 or hex64)");
  line("width", u(p.width));
  line("result bits",
       u(p.result_bits) + (p.extra_bit_fraction != 0 ? number(100 * x.extra_fraction,
                                                              " (+1 in the last %.2f%% of blocks)")
                                                     : std::string()));
  line("bucket size", u(p.bucket_size));
  line("thresholds", "light " + u(p.threshold_light) + ", heavy " + u(p.threshold_heavy) + ", " +
                         threshold_encoding_name(f.threshold_codes()) + " codes");
  line("shard size", u(p.shard_size));
  line("seed", u(p.seed));
  line("distinct keys", u(f.key_count()));
  line("layers", u(f.num_layers()));
  line("bits/key", f.key_count() > 0
                       ? number(x.bits_per_key, "%.4f") + number(x.overhead_pct, " (%.3f%% over ") +
                             (x.retrieval ? std::string("r)") : number(x.ideal_bits, "%.4f bits)"))
                       : std::string("- (no keys)"));
  if (!x.retrieval) {
    line("expected FPR",
         (p.extra_bit_fraction != 0 ? std::string("") : "2^-" + u(p.result_bits) + " = ") +
             number(x.fpr, "%.6g"));
  }
  for (std::size_t l = 0; l < f.layers().size(); ++l) {
    line("layer " + u(l), layer_text(p, f.layers()[l]));
  }
  return out;
}

int run_info(const info_settings& s) {
  // Verifies every checksum; a file of any other format version is rejected.
  const filter f = filter::load(s.filter_path);
  const std::string out = s.json ? info_json(f, s.filter_path) : info_text(f, s.filter_path);
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
