// The one mapping of build options to parameters and sizing (options.hpp), which every
// builder calls before it reads a key.
#include "ribbon/options.hpp"

#include <cmath>
#include <string>

#include "ribbon/error.hpp"

namespace ribbon {

namespace {

filter_params checked(const filter_params& p) {
  if (const char* problem = check_params(p)) {
    throw error(std::string("invalid build options: ") + problem);
  }
  return p;
}

/// The parameters of a filter (no values): r from the target FPR where one is given.
filter_params filter_params_from(const build_options& o, key_kind keys) {
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

/// The parameters of a build with values: the retrieval form of the variant, with the check
/// bits stored above the value bits.
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
  filter_params p = filter_params_from(r, keys);
  p.check_bits = o.check_bits;
  return checked(p);
}

}  // namespace

filter_params build_params(const build_options& options, key_kind keys, bool with_values) {
  return with_values ? retrieval_params_from(options, keys) : filter_params_from(options, keys);
}

layer_sizing build_sizing(const build_options& o, const filter_params& p, std::uint64_t key_count) {
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
    s.standard_slack = standard_slack_for_success(p, key_count, o.success_probability);
  }
  return s;
}

void check_build_options(const build_options& options, key_kind keys, std::uint64_t key_count,
                         bool with_values) {
  (void)build_sizing(options, build_params(options, keys, with_values), key_count);
}

std::uint32_t value_bits_for(std::uint32_t largest_value) {
  std::uint32_t bits = 1;
  while (bits < 32 && (largest_value >> bits) != 0) ++bits;
  return bits;
}

void check_values(const std::uint32_t* values, std::uint64_t count, std::uint32_t value_bits,
                  std::uint64_t first_index) {
  if (value_bits >= 32) return;
  const std::uint32_t limit = std::uint32_t{1} << value_bits;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (values[i] >= limit) throw_value_too_wide(values[i], first_index + i, value_bits);
  }
}

void throw_value_too_wide(std::uint32_t value, std::uint64_t index, std::uint32_t value_bits) {
  throw error("value " + std::to_string(value) + " of key " + std::to_string(index) +
              " (counting from 0) does not fit in " + std::to_string(value_bits) + " result bits");
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

}  // namespace ribbon
