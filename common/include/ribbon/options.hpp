/// @file options.hpp
/// Build options and what every builder makes of them (the CPU and GPU builders, the bulk
/// and distributed builders, sets, build_many and retrieval): the one mapping of options to
/// the parameters a file records and to a layer sizing, checked before any key is read.
/// Here, not in a backend's headers, so that every builder reaches it.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "ribbon/params.hpp"

namespace ribbon {

struct build_progress;  // build_progress.hpp (the CPU builders)

/// What to build.
struct build_options {
  filter_variant variant = filter_variant::bumped;  ///< see filter_variant
  std::uint32_t width = 64;                         ///< ribbon width: 32, 64 or 128
  std::uint32_t result_bits = 8;  ///< r, 1..32: false-positive rate 2^-r; value bits (retrieval)
  /// Filters: if > 0, the false-positive rate to reach with fractional bits per key (r and
  /// r + 1 bits in a mix of blocks: --fpr 0.01 costs about 6.7 bits/key, not 7).
  double target_fpr = 0;
  /// Standard and homogeneous variants: eps of layer 0, (1 + eps) n slots. NaN: derived from
  /// success_probability (homogeneous builds never fail, but below that slack their
  /// false-positive rate climbs far above 2^-r). Homogeneous accepts eps <= 0 (overloaded).
  double slack = std::numeric_limits<double>::quiet_NaN();
  /// Standard variants: probability that the first try of layer 0 succeeds (sets the slack).
  double success_probability = 0.95;
  std::uint64_t shard_size = 0;  ///< start positions per shard (power of two); 0: default
  /// How bucket thresholds are stored; none: the default (1+-bit codes, the smaller file,
  /// except at w = 32). two_bit: format version 2, which older readers read, and one word
  /// read per GPU query decision, for about 0.04 % more space. CPU queries are as fast with
  /// either (the query plan decodes 1+-bit codes into 2-bit ones).
  std::optional<threshold_encoding> threshold_codes;
  /// Builds with values: C fingerprint bits of each key stored above its value (r value bits
  /// + C <= 32), so that lookups tell a non-member apart except with probability 2^-C
  /// (filter::find, contains). Format version 4. 0: none.
  std::uint32_t check_bits = 0;
  std::uint64_t seed = 0;     ///< hash seed; the file is a function of keys, params, seed
  std::uint32_t threads = 0;  ///< worker threads; 0: all hardware threads
  /// Filter sets: write the names of the groups given (format version 7), so that the set
  /// answers "which groups may hold this key?" (filter::groups_of); false writes version 6,
  /// which readers of the release before version 7 read.
  bool group_names = true;
  /// Optional (filter::build): progress counters, and the flag that cancels the build.
  build_progress* progress = nullptr;
};

/// The parameters a build with `options` records in its file: r from options.target_fpr
/// where one is given (fractional bits per key), the width's bucket size and thresholds, the
/// shard size, seed and threshold codes. With `with_values`, those of the retrieval form of
/// the variant (bumped -> retrieval, standard -> standard-retrieval; homogeneous has none)
/// with r = options.result_bits + options.check_bits. Throws ribbon::error, naming the
/// problem, for options every builder refuses.
filter_params build_params(const build_options& options, key_kind keys, bool with_values = false);

/// The layer sizing of a build of `key_count` keys with parameters `p` (build_params() of
/// `options`): the standard and homogeneous variants' slack, given or derived from the
/// success probability. Throws ribbon::error for a slack or probability out of range.
layer_sizing build_sizing(const build_options& options, const filter_params& p,
                          std::uint64_t key_count);

/// Throws ribbon::error for options a build of `key_count` keys would refuse: what
/// build_params() and build_sizing() check. Every builder checks the same at its start.
void check_build_options(const build_options& options, key_kind keys, std::uint64_t key_count,
                         bool with_values = false);

/// The value bits of a build with values when none are given (`ribbon build --values`,
/// Python's build(values=), the Spark build): as many as `largest_value` needs, at least 1.
std::uint32_t value_bits_for(std::uint32_t largest_value);

/// Throws ribbon::error naming the first value that does not fit in `value_bits` bits, as
/// the value of key number first_index + i (a batch of a longer input starts at first_index).
void check_values(const std::uint32_t* values, std::uint64_t count, std::uint32_t value_bits,
                  std::uint64_t first_index = 0);

/// The error of check_values(): value `value` of key number `index` needs more than
/// `value_bits` bits.
[[noreturn]] void throw_value_too_wide(std::uint32_t value, std::uint64_t index,
                                       std::uint32_t value_bits);

/// Where a build runs (`ribbon build --backend`, Python's backend=).
enum class build_backend : std::uint32_t {
  cpu = 0,        ///< the oneTBB builders
  gpu = 1,        ///< the CUDA builder (the same bytes); an error where it cannot run
  automatic = 2,  ///< the GPU where one can run, else the CPU
};

/// Every backend, in the order of their values.
inline constexpr build_backend all_backends[] = {build_backend::cpu, build_backend::gpu,
                                                 build_backend::automatic};

/// The backend's name as options spell it: "cpu", "gpu" or "auto".
const char* backend_name(build_backend backend);

/// Reads a backend by its name ("cpu", "gpu" or "auto") into `out`; false, `out` untouched,
/// for any other name.
bool backend_from_name(std::string_view name, build_backend* out);

/// Whether a build asking for `backend` runs on the GPU, where `gpu_ready` says whether a GPU
/// build can run here (the build has CUDA and a device is present) and `why_not` why not.
/// Throws ribbon::error ("the GPU backend cannot run: " + why_not) for build_backend::gpu
/// where none can.
bool runs_on_gpu(build_backend backend, bool gpu_ready, const std::string& why_not);

}  // namespace ribbon
