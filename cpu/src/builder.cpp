// filter::build*: the in-memory oneTBB build (layered_builder.hpp).
#include <tbb/blocked_range.h>
#include <tbb/combinable.h>
#include <tbb/parallel_for.h>

#include <cmath>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "layered_builder.hpp"
#include "ribbon/bulk_builder.hpp"
#include "ribbon/options.hpp"

namespace ribbon {

namespace detail {

namespace {

filter_params checked(const filter_params& p) {
  if (const char* problem = check_params(p)) {
    throw error(std::string("invalid build options: ") + problem);
  }
  return p;
}

}  // namespace

filter_params params_from(const build_options& o, key_kind keys) {
  std::uint32_t bits = o.result_bits;
  std::uint32_t fraction = 0;
  if (o.check_bits != 0 && !is_retrieval(o.variant)) {
    throw error("invalid build options: check bits are for builds with values (retrieval)");
  }
  if (o.target_fpr != 0) {
    if (is_retrieval(o.variant)) {
      throw error("invalid build options: a retrieval structure has no false-positive rate");
    }
    const fractional_bits f = fractional_bits_for_fpr(o.target_fpr);
    if (f.result_bits == 0) throw error("invalid build options: target FPR must be in (0, 1)");
    bits = f.result_bits;
    fraction = f.extra_bit_fraction;
  }
  filter_params p = make_params(o.width, bits, o.shard_size, o.seed, keys);
  p.variant = o.variant;
  p.extra_bit_fraction = fraction;
  if (o.threshold_codes) p.threshold_codes = *o.threshold_codes;
  return checked(p);
}

filter_params retrieval_params_from(const build_options& o, key_kind keys) {
  build_options r = o;
  r.check_bits = 0;
  if (o.check_bits != 0) {
    if (o.check_bits >= 32 || o.result_bits + o.check_bits > 32) {
      throw error("invalid build options: value bits + check bits must be at most 32 (" +
                  std::to_string(o.result_bits) + " + " + std::to_string(o.check_bits) + ")");
    }
    r.result_bits = o.result_bits + o.check_bits;
  }
  switch (o.variant) {
    case filter_variant::bumped: r.variant = filter_variant::bumped_retrieval; break;
    case filter_variant::standard: r.variant = filter_variant::standard_retrieval; break;
    case filter_variant::homogeneous:
      throw error("invalid build options: the homogeneous variant stores no values");
    default: break;
  }
  filter_params p = params_from(r, keys);
  p.check_bits = o.check_bits;
  return checked(p);
}

layer_sizing sizing_from(const build_options& o, const filter_params& p, std::uint64_t keys) {
  layer_sizing s = default_sizing(p.width);
  if (uses_bumping(p.variant)) return s;
  if (!std::isnan(o.slack)) {
    const bool homogeneous = p.variant == filter_variant::homogeneous;
    if (!(o.slack <= 4) || !(o.slack > (homogeneous ? -0.5 : 0))) {
      throw error(std::string("invalid build options: slack must be in ") +
                  (homogeneous ? "(-0.5, 4]" : "(0, 4]"));
    }
    s.standard_slack = o.slack;
  } else {
    // Homogeneous filters never fail, but their false-positive rate climbs steeply where a
    // standard build would fail (bench/RESULTS.md): the same slack keeps it near 2^-r.
    if (!(o.success_probability > 0 && o.success_probability < 1)) {
      throw error("invalid build options: success probability must be in (0, 1)");
    }
    s.standard_slack = standard_slack_for_success(p, keys, o.success_probability);
  }
  return s;
}

void check_values(const std::uint32_t* values, std::uint64_t count, std::uint32_t result_bits,
                  std::uint64_t first_index) {
  if (result_bits >= 32) return;
  const std::uint32_t limit = std::uint32_t{1} << result_bits;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (values[i] >= limit) throw_value_too_wide(values[i], first_index + i, result_bits);
  }
}

void throw_value_too_wide(std::uint32_t value, std::uint64_t index, std::uint32_t result_bits) {
  throw error("value " + std::to_string(value) + " of key " + std::to_string(index) +
              " (counting from 0) does not fit in " + std::to_string(result_bits) + " result bits");
}

}  // namespace detail

filter_params build_params(const build_options& options, key_kind keys, bool with_values) {
  return with_values ? detail::retrieval_params_from(options, keys)
                     : detail::params_from(options, keys);
}

void check_build_options(const build_options& options, key_kind keys, std::uint64_t key_count,
                         bool with_values) {
  (void)detail::sizing_from(options, build_params(options, keys, with_values), key_count);
}

const char* backend_name(build_backend backend) {
  return backend == build_backend::cpu ? "cpu" : backend == build_backend::gpu ? "gpu" : "auto";
}

bool backend_from_name(std::string_view name, build_backend* out) {
  for (const build_backend backend : all_backends) {
    if (name == backend_name(backend)) {
      *out = backend;
      return true;
    }
  }
  return false;
}

bool runs_on_gpu(build_backend backend, bool gpu_ready, const std::string& why_not) {
  if (backend == build_backend::gpu && !gpu_ready) {
    throw error("the GPU backend cannot run: " + why_not);
  }
  return backend != build_backend::cpu && gpu_ready;
}

namespace {

/// Filter builds: the records are the key hashes; make_hash(p) gives key i's hash.
template <class MakeHash>
filter build_filter(key_kind kind, std::uint64_t count, const build_options& options,
                    build_stats* stats, const MakeHash& make_hash) {
  const filter_params p = detail::params_from(options, kind);
  return detail::build_in_memory(p, options, count, make_hash(p), stats, options.progress);
}

/// Retrieval builds: the records are key hashes with their values.
template <class MakeHash>
filter build_retrieval(key_kind kind, const std::uint32_t* values, std::uint64_t count,
                       const build_options& options, build_stats* stats,
                       const MakeHash& make_hash) {
  const filter_params p = detail::retrieval_params_from(options, kind);
  detail::check_values(values, count, p.value_bits());
  const auto key_hash = make_hash(p);
  auto record = [&](std::uint64_t i) {
    const std::uint64_t h = key_hash(i);
    return detail::packed_keyed_value{h, p.stored_value(h, values[i])};
  };
  return detail::build_in_memory(p, options, count, record, stats, options.progress);
}

auto u64_hash(const std::uint64_t* keys) {
  return [keys](const filter_params& p) {
    return [keys, mixed = seed_mix(p.seed)](std::uint64_t i) { return hash_u64(keys[i], mixed); };
  };
}
auto bytes_hash(const std::string_view* keys) {
  return [keys](const filter_params& p) {
    return [keys, seed = p.seed](std::uint64_t i) {
      return hash_bytes(keys[i].data(), keys[i].size(), seed);
    };
  };
}
template <class Offset>
auto offsets_hash(const Offset* offsets, const unsigned char* data) {
  return [offsets, data](const filter_params& p) {
    return offsets_key_hash<Offset>{offsets, data, p.seed};
  };
}
auto given_hash(const std::uint64_t* hashes) {
  return [hashes](const filter_params&) { return [hashes](std::uint64_t i) { return hashes[i]; }; };
}

}  // namespace

filter filter::build(const std::uint64_t* keys, std::uint64_t count, const build_options& options,
                     build_stats* stats) {
  return build_filter(key_kind::u64, count, options, stats, u64_hash(keys));
}

filter filter::build(const std::string_view* keys, std::uint64_t count,
                     const build_options& options, build_stats* stats) {
  return build_filter(key_kind::bytes, count, options, stats, bytes_hash(keys));
}

filter filter::build_from_hashes(const std::uint64_t* hashes, std::uint64_t count, key_kind keys,
                                 const build_options& options, build_stats* stats) {
  return build_filter(keys, count, options, stats, given_hash(hashes));
}

filter filter::build(const std::uint64_t* keys, const std::uint32_t* values, std::uint64_t count,
                     const build_options& options, build_stats* stats) {
  return build_retrieval(key_kind::u64, values, count, options, stats, u64_hash(keys));
}

filter filter::build(const std::string_view* keys, const std::uint32_t* values, std::uint64_t count,
                     const build_options& options, build_stats* stats) {
  return build_retrieval(key_kind::bytes, values, count, options, stats, bytes_hash(keys));
}

filter filter::build_from_hashes(const std::uint64_t* hashes, const std::uint32_t* values,
                                 std::uint64_t count, key_kind keys, const build_options& options,
                                 build_stats* stats) {
  return build_retrieval(keys, values, count, options, stats, given_hash(hashes));
}

namespace {

/// Distinct groups among `count` given ones, counted in parallel; a group repeated in a run
/// is compared, not hashed again.
template <class Group>
std::uint64_t count_groups(const Group* groups, std::uint64_t count, const set_hasher& hash) {
  tbb::combinable<group_counter> found;
  tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, count, std::uint64_t{1} << 14),
                    [&](const tbb::blocked_range<std::uint64_t>& r) {
                      group_counter& mine = found.local();
                      for (std::uint64_t i = r.begin(); i < r.end(); ++i) {
                        if (i == r.begin() || !(groups[i] == groups[i - 1])) {
                          mine.add(hash.group(groups[i]));
                        }
                      }
                    });
  group_counter all;
  found.combine_each([&](const group_counter& some) { all.merge(some); });
  return all.count();
}

/// The names of the groups among `count` given ones (group_names sorts and drops repeats); a
/// group repeated in a run is taken once.
template <class Group>
group_names collect_group_names(const Group* groups, std::uint64_t count) {
  using name = std::conditional_t<std::is_same_v<Group, std::uint64_t>, std::uint64_t, std::string>;
  tbb::combinable<std::vector<name>> found;
  tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, count, std::uint64_t{1} << 14),
                    [&](const tbb::blocked_range<std::uint64_t>& r) {
                      std::vector<name>& mine = found.local();
                      for (std::uint64_t i = r.begin(); i < r.end(); ++i) {
                        if (i == r.begin() || !(groups[i] == groups[i - 1]))
                          mine.emplace_back(groups[i]);
                      }
                    });
  std::vector<name> all;
  found.combine_each([&](std::vector<name>& some) {
    all.insert(all.end(), std::make_move_iterator(some.begin()),
               std::make_move_iterator(some.end()));
  });
  return group_names::of(std::move(all));
}

}  // namespace

template <class Group, class Key>
filter filter::build_set(const Group* groups, const Key* keys, std::uint64_t count,
                         const build_options& options, build_stats* stats) {
  filter_params p = detail::params_from(options, key_kind_for<Key>);
  p.groups = group_kind_for<Group>;
  if (const char* problem = check_params(p)) {
    throw error(std::string("invalid build options: ") + problem);
  }
  const set_hasher hash{p.seed, seed_mix(p.seed)};
  auto pair = [&](std::uint64_t i) { return hash.pair(groups[i], keys[i]); };
  filter f = detail::build_in_memory(p, options, count, pair, stats, options.progress);
  builder_access::set_group_count(f, count_groups(groups, count, hash));
  if (options.group_names) {
    builder_access::set_group_names(
        f, std::make_shared<const group_names>(collect_group_names(groups, count)));
  }
  return f;
}

template filter filter::build_set(const std::uint64_t*, const std::uint64_t*, std::uint64_t,
                                  const build_options&, build_stats*);
template filter filter::build_set(const std::uint64_t*, const std::string_view*, std::uint64_t,
                                  const build_options&, build_stats*);
template filter filter::build_set(const std::string_view*, const std::uint64_t*, std::uint64_t,
                                  const build_options&, build_stats*);
template filter filter::build_set(const std::string_view*, const std::string_view*, std::uint64_t,
                                  const build_options&, build_stats*);

template <class Offset>
filter filter::build_offsets(const Offset* offsets, const unsigned char* data, std::uint64_t count,
                             const build_options& options, build_stats* stats) {
  return build_filter(key_kind::bytes, count, options, stats, offsets_hash(offsets, data));
}

template <class Offset>
filter filter::build_offsets(const Offset* offsets, const unsigned char* data,
                             const std::uint32_t* values, std::uint64_t count,
                             const build_options& options, build_stats* stats) {
  return build_retrieval(key_kind::bytes, values, count, options, stats,
                         offsets_hash(offsets, data));
}

template filter filter::build_offsets(const std::int32_t*, const unsigned char*, std::uint64_t,
                                      const build_options&, build_stats*);
template filter filter::build_offsets(const std::int64_t*, const unsigned char*, std::uint64_t,
                                      const build_options&, build_stats*);
template filter filter::build_offsets(const std::int32_t*, const unsigned char*,
                                      const std::uint32_t*, std::uint64_t, const build_options&,
                                      build_stats*);
template filter filter::build_offsets(const std::int64_t*, const unsigned char*,
                                      const std::uint32_t*, std::uint64_t, const build_options&,
                                      build_stats*);

}  // namespace ribbon
