#include "options.hpp"

#include "errors.hpp"

namespace nb = nanobind;

#if defined(RIBBON_PYTHON_WITH_CUDA)
#include "ribbon/cuda/builder.hpp"
#endif

namespace ribbon::python {
namespace {

std::uint32_t checked_u32(std::int64_t value, const char* name, std::int64_t low) {
  if (value < low || value > 0xFFFFFFFFll) {
    raise(failure::options, std::string(name) + " must be at least " + std::to_string(low) +
                                ", not " + std::to_string(value));
  }
  return static_cast<std::uint32_t>(value);
}

}  // namespace

build_options to_build_options(const build_arguments& a) {
  build_options o;
  if (!variant_from_name(a.variant, &o.variant) || is_retrieval(o.variant)) {
    raise(failure::options,
          "variant must be \"bumped\", \"standard\" or \"homogeneous\" (values= makes the "
          "retrieval form), not \"" +
              a.variant + "\"");
  }
  if (a.fpr && a.bits) raise(failure::options, "give fpr or bits, not both");
  if (a.fpr) {
    if (!(*a.fpr > 0 && *a.fpr < 1)) {
      raise(failure::options, "fpr must be in (0, 1), not " + std::to_string(*a.fpr));
    }
    o.target_fpr = *a.fpr;
  }
  if (a.bits) o.result_bits = checked_u32(*a.bits, "bits", 1);
  o.width = checked_u32(a.width, "width", 1);
  o.seed = a.seed;
  if (a.threads) o.threads = checked_u32(*a.threads, "threads", 1);
  if (a.shard_size) o.shard_size = checked_u32(*a.shard_size, "shard_size", 1);
  if (a.slack) o.slack = *a.slack;
  if (a.success_probability) o.success_probability = *a.success_probability;
  if (a.threshold_codes && !threshold_encoding_from_name(*a.threshold_codes, &o.threshold_codes)) {
    raise(failure::options, "threshold_codes must be \"1+-bit\", \"2-bit\" or \"auto\", not \"" +
                                *a.threshold_codes + "\"");
  }
  o.check_bits = checked_u32(a.check_bits, "check_bits", 0);
  return o;
}

build_arguments keywords::build_options(std::initializer_list<const char*> not_taken) {
  auto taken = [&](const char* name) {
    for (const char* other : not_taken) {
      if (std::string(other) == name) return false;
    }
    return true;
  };
  build_arguments a;
  if (taken("fpr")) a.fpr = optional<double>("fpr");
  if (taken("bits")) a.bits = optional<std::int64_t>("bits");
  if (taken("width")) a.width = value<std::int64_t>("width", a.width);
  if (taken("variant")) a.variant = value<std::string>("variant", a.variant);
  if (taken("seed")) a.seed = value<std::uint64_t>("seed", a.seed);
  if (taken("threads")) a.threads = optional<std::int64_t>("threads");
  if (taken("shard_size")) a.shard_size = optional<std::int64_t>("shard_size");
  if (taken("slack")) a.slack = optional<double>("slack");
  if (taken("success_probability")) {
    a.success_probability = optional<double>("success_probability");
  }
  if (taken("threshold_codes")) a.threshold_codes = optional<std::string>("threshold_codes");
  if (taken("check_bits")) a.check_bits = value<std::int64_t>("check_bits", a.check_bits);
  return a;
}

nb::object keywords::object(const char* name) {
  read_.insert(name);
  return given_.contains(name) ? nb::borrow(given_[name]) : nb::none();
}

void keywords::done() const {
  for (auto item : given_) {
    const std::string name = nb::cast<std::string>(item.first);
    if (!read_.count(name)) {
      throw nb::type_error(
          (std::string(function_) + "() got an unexpected keyword argument '" + name + "'")
              .c_str());
    }
  }
}

void keywords::wrong_type(const char* name, nb::handle value) const {
  throw nb::type_error((std::string(function_) + "(): " + name + " cannot be " +
                        nb::cast<std::string>(nb::repr(value)))
                           .c_str());
}

bool use_gpu(const std::string& name) {
  build_backend backend = build_backend::cpu;
  if (!backend_from_name(name, &backend)) {
    raise(failure::options, "backend must be \"cpu\", \"gpu\" or \"auto\", not \"" + name + "\"");
  }
  if (backend == build_backend::cpu) return false;
#if defined(RIBBON_PYTHON_WITH_CUDA)
  std::string why_not;
  const bool ready = cuda::available(&why_not);
#else
  const bool ready = false;
  const std::string why_not = "this ribbon module was built without CUDA (RIBBON_ENABLE_CUDA)";
#endif
  return translating(failure::options, [&] { return runs_on_gpu(backend, ready, why_not); });
}

}  // namespace ribbon::python
