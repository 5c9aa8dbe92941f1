// Where the space of a bumped filter goes (bench/RESULTS.md, "Space overhead at w=64, r=8").
//   ribbon_space_report N SEED [WIDTH [BITS [SHARD_SIZE [THREADS]]]]
// Builds a filter of N random 64-bit keys (splitmix64 from SEED, also the hash seed) and
// splits its overhead over r bits per key exactly into its parts:
//   overhead = empty slots / n + threshold bits / (n r) + (file - sections) bits / (n r),
// since every key stored holds one pivot column (random keys: no redundant rows), so a layer's
// columns are its stored keys plus its empty slots. Per layer it also counts the keys bumped
// by rule (the first w starts of shards k > 0) and by thresholds, the 2-bit bucket codes, and
// the empty slots of full shards against those of the layer's last shard (each shard owns its
// columns, so its empty slots are exact). Prints one JSON object.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "ribbon/detail/splitmix.hpp"
#include "ribbon/filter.hpp"

namespace {

using ribbon::detail::splitmix64;

unsigned long long ull(std::uint64_t x) {
  return static_cast<unsigned long long>(x);
}

double dbl(std::uint64_t x) {
  return static_cast<double>(x);
}

struct layer_count {
  std::uint64_t keys_in = 0, rule_bumped = 0, threshold_bumped = 0;
  std::uint64_t codes[4] = {0, 0, 0, 0};
  std::vector<std::uint64_t> stored_per_shard;
  std::vector<std::uint64_t> stored_per_bucket;
};

/// The command line: N SEED [WIDTH [BITS [SHARD_SIZE [THREADS]]]].
ribbon::build_options options_from(int argc, char** argv) {
  ribbon::build_options o;
  o.seed = std::strtoull(argv[2], nullptr, 0);
  if (argc > 3) o.width = static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 0));
  if (argc > 4) o.result_bits = static_cast<std::uint32_t>(std::strtoul(argv[4], nullptr, 0));
  if (argc > 5) o.shard_size = std::strtoull(argv[5], nullptr, 0);
  if (argc > 6) o.threads = static_cast<std::uint32_t>(std::strtoul(argv[6], nullptr, 0));
  return o;
}

/// Walks every key through the layers as a query does, counting why it leaves each layer.
std::vector<layer_count> count_keys(const ribbon::filter_ref& ref,
                                    const std::vector<std::uint64_t>& keys) {
  const ribbon::filter_params& p = ref.params;
  const ribbon::detail::query_plan plan(ref);
  std::vector<layer_count> c(ref.num_layers);
  for (std::uint32_t l = 0; l < ref.num_layers; ++l) {
    const ribbon::layer_geometry& g = ref.layers[l].geometry;
    c[l].stored_per_shard.assign(g.num_shards(), 0);
    if (g.bumping()) c[l].stored_per_bucket.assign(g.num_buckets(p.bucket_size), 0);
  }
  for (std::uint64_t k : keys) {
    std::uint64_t h = plan.first_hash(ref.key_hash(k));
    for (std::uint32_t l = 0; l < ref.num_layers; ++l) {
      const ribbon::layer_geometry& g = ref.layers[l].geometry;
      if (l > 0) h = ribbon::remix(h, ref.layers[l].salt);
      const std::uint64_t start = ribbon::fastrange64(h, g.num_starts);
      ++c[l].keys_in;
      const std::uint64_t in_shard = start & (g.shard_size() - 1);
      if (g.sharded() && start >= g.shard_size() && in_shard < p.width) {
        ++c[l].rule_bumped;
        continue;
      }
      if (plan.layers[l].bumps(start)) {
        ++c[l].threshold_bumped;
        continue;
      }
      ++c[l].stored_per_shard[g.sharded() ? start >> g.shard_bits : 0];
      if (g.bumping()) ++c[l].stored_per_bucket[start / p.bucket_size];
      break;
    }
  }
  for (std::uint32_t l = 0; l < ref.num_layers; ++l) {
    const ribbon::layer_geometry& g = ref.layers[l].geometry;
    for (std::uint64_t b = 0; b < g.num_buckets(p.bucket_size); ++b) {
      ++c[l].codes[g.bucket_code(ref.layers[l].thresholds, b, p.bucket_size)];
    }
  }
  return c;
}

/// Empty slots of the full shards (S columns each, mean), and the last shard's columns and
/// empty slots.
struct shard_empties {
  double full_mean = 0;
  std::uint64_t last_columns = 0, last_empty = 0;
};

shard_empties empties_of(const ribbon::layer_geometry& g, const layer_count& x, std::uint32_t width,
                         std::uint64_t columns, std::uint64_t empty) {
  const std::uint64_t shards = g.num_shards();
  if (!g.sharded() || shards < 2) return {0, columns, empty};
  std::uint64_t sum = 0;
  for (std::uint64_t s = 0; s + 1 < shards; ++s) sum += g.shard_size() - x.stored_per_shard[s];
  sum += width;  // shard 0 owns w more columns than the others; count them with it
  const std::uint64_t last_columns = g.num_starts - g.shard_begin(shards - 1);
  return {static_cast<double>(sum) / static_cast<double>(shards - 1), last_columns,
          last_columns - x.stored_per_shard[shards - 1]};
}

/// The keys stored that start in the last bucket of a full shard, and in an average bucket
/// inside one (a proxy for the sparse shard end); zeros where the layer has no buckets.
std::pair<double, double> last_and_mid_bucket_stored(const ribbon::layer_geometry& g,
                                                     const layer_count& x,
                                                     std::uint32_t bucket_size) {
  const std::uint64_t shards = g.num_shards();
  if (!g.bumping() || shards < 2) return {0, 0};
  const std::uint64_t per_shard = g.shard_size() / bucket_size;
  std::uint64_t lb = 0, mb = 0, mbn = 0;
  for (std::uint64_t s = 0; s + 1 < shards; ++s) {
    lb += x.stored_per_bucket[(s + 1) * per_shard - 1];
    for (std::uint64_t b = s * per_shard + 1; b + 1 < (s + 1) * per_shard; ++b, ++mbn) {
      mb += x.stored_per_bucket[b];
    }
  }
  return {static_cast<double>(lb) / static_cast<double>(shards - 1),
          static_cast<double>(mb) / static_cast<double>(mbn)};
}

/// The whole report's sums over the layers.
struct totals {
  std::uint64_t section_bytes = 0, empty = 0, threshold_bits = 0;
};

/// One layer's JSON object; adds its sections, empty slots and threshold bits to `sum`.
std::string layer_json(const ribbon::filter_ref& ref, std::uint32_t l, const layer_count& x,
                       std::uint64_t n, totals& sum) {
  const ribbon::filter_params& p = ref.params;
  const ribbon::layer_geometry& g = ref.layers[l].geometry;
  const double nr = static_cast<double>(n) * p.result_bits;
  const std::uint64_t tbytes = g.threshold_words(p.bucket_size) * 8;
  sum.section_bytes += tbytes + g.solution_bytes(p.width, p.result_bits);
  sum.threshold_bits += tbytes * 8;
  const std::uint64_t columns = g.num_starts + p.width;
  std::uint64_t stored = 0;
  for (std::uint64_t s : x.stored_per_shard) stored += s;
  const std::uint64_t empty = columns - stored;
  sum.empty += empty;
  const shard_empties e = empties_of(g, x, p.width, columns, empty);
  const auto [last_bucket_stored, mid_bucket_stored] =
      last_and_mid_bucket_stored(g, x, p.bucket_size);
  char buf[1024];
  std::snprintf(
      buf, sizeof(buf),
      "%s    {\"layer\": %u, \"kind\": \"%s\", \"starts\": %llu, \"shards\": %llu, "
      "\"keys_in\": %llu, \"rule_bumped\": %llu, \"threshold_bumped\": %llu, "
      "\"stored\": %llu, \"columns\": %llu, \"empty\": %llu, \"empty_pct_of_n\": %.5f, "
      "\"threshold_bits\": %llu, \"threshold_pct\": %.5f, \"codes\": [%llu, %llu, %llu, %llu], "
      "\"full_shard_empty_mean\": %.2f, \"last_shard_columns\": %llu, "
      "\"last_shard_empty\": %llu, \"last_bucket_stored\": %.2f, \"mid_bucket_stored\": %.2f}",
      l == 0 ? "" : ",\n", l, g.kind == ribbon::layer_kind::bumped ? "bumped" : "plain",
      ull(g.num_starts), ull(g.num_shards()), ull(x.keys_in), ull(x.rule_bumped),
      ull(x.threshold_bumped), ull(stored), ull(columns), ull(empty), 100.0 * dbl(empty) / dbl(n),
      ull(tbytes * 8), 100.0 * dbl(tbytes * 8) / nr, ull(x.codes[0]), ull(x.codes[1]),
      ull(x.codes[2]), ull(x.codes[3]), e.full_mean, ull(e.last_columns), ull(e.last_empty),
      last_bucket_stored, mid_bucket_stored);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s N SEED [WIDTH [BITS [SHARD_SIZE [THREADS]]]]\n", argv[0]);
    return 2;
  }
  const std::uint64_t n = std::strtoull(argv[1], nullptr, 0);
  const ribbon::build_options o = options_from(argc, argv);

  std::vector<std::uint64_t> keys(n);
  std::uint64_t state = o.seed * 0x2545F4914F6CDD1DULL + 1;
  for (auto& k : keys) k = splitmix64(state);
  const auto t0 = std::chrono::steady_clock::now();
  const ribbon::filter f = ribbon::filter::build(keys.data(), n, o);
  const double build_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const ribbon::filter_ref& ref = f.ref();
  const ribbon::filter_params& p = ref.params;
  const std::vector<layer_count> counts = count_keys(ref, keys);
  totals sum;
  std::string layers_json;
  for (std::uint32_t l = 0; l < ref.num_layers; ++l) {
    layers_json += layer_json(ref, l, counts[l], n, sum);
  }
  const double nr = static_cast<double>(n) * p.result_bits;
  const std::uint64_t other_bytes = f.size_bytes() - sum.section_bytes;
  std::printf(
      "{\"n\": %llu, \"seed\": %llu, \"width\": %u, \"r\": %u, \"shard_size\": %llu, "
      "\"threshold_light\": %u, \"threshold_heavy\": %u, \"file_bytes\": %llu, "
      "\"bits_per_key\": %.6f, \"overhead_pct\": %.5f, \"empty_pct\": %.5f, "
      "\"threshold_pct\": %.5f, \"header_pct\": %.5f, \"layout\": \"%s\", "
      "\"standard_layout_bytes\": %llu, \"build_s\": %.3f, \"layers\": [\n%s\n]}\n",
      ull(n), ull(o.seed), p.width, p.result_bits, ull(p.shard_size), p.threshold_light,
      p.threshold_heavy, ull(f.size_bytes()), f.bits_per_key(),
      100.0 * (f.bits_per_key() / p.result_bits - 1), 100.0 * dbl(sum.empty) / dbl(n),
      100.0 * dbl(sum.threshold_bits) / nr, 100.0 * dbl(other_bytes * 8) / nr,
      ribbon::format::is_compact(f.image()) ? "compact" : "standard",
      ull(ribbon::format::image_bytes(f.image(ribbon::format::layout_choice::standard))), build_s,
      layers_json.c_str());
  return 0;
}
