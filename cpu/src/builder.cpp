// filter::build*: the in-memory oneTBB build (layered_builder.hpp).
#include <string>

#include "layered_builder.hpp"

namespace ribbon {

namespace detail {

filter_params params_from(const build_options& o, key_kind keys) {
  std::uint32_t bits = o.result_bits;
  if (o.target_fpr != 0) {
    bits = result_bits_for_fpr(o.target_fpr);
    if (bits == 0) throw error("invalid build options: target FPR must be in (0, 1)");
  }
  const filter_params p = make_params(o.width, bits, o.shard_size, o.seed, keys);
  if (const char* problem = check_params(p)) {
    throw error(std::string("invalid build options: ") + problem);
  }
  return p;
}

}  // namespace detail

filter filter::build(const std::uint64_t* keys, std::uint64_t count, const build_options& options,
                     build_stats* stats) {
  const filter_params p = detail::params_from(options, key_kind::u64);
  const std::uint64_t mixed = seed_mix(p.seed);
  auto key_hash = [keys, mixed](std::uint64_t i) { return hash_u64(keys[i], mixed); };
  return detail::build_in_memory(p, count, key_hash, options.threads, stats, nullptr);
}

filter filter::build(const std::string_view* keys, std::uint64_t count,
                     const build_options& options, build_stats* stats) {
  const filter_params p = detail::params_from(options, key_kind::bytes);
  const std::uint64_t seed = p.seed;
  auto key_hash = [keys, seed](std::uint64_t i) {
    return hash_bytes(keys[i].data(), keys[i].size(), seed);
  };
  return detail::build_in_memory(p, count, key_hash, options.threads, stats, nullptr);
}

filter filter::build_from_hashes(const std::uint64_t* hashes, std::uint64_t count, key_kind keys,
                                 const build_options& options, build_stats* stats) {
  const filter_params p = detail::params_from(options, keys);
  auto key_hash = [hashes](std::uint64_t i) { return hashes[i]; };
  return detail::build_in_memory(p, count, key_hash, options.threads, stats, nullptr);
}

}  // namespace ribbon
