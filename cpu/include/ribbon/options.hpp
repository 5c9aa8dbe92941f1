/// @file options.hpp
/// What a build makes of its options, before any key is read: for callers that want option
/// errors up front (the `ribbon` command, the Python package) and the parameters a file
/// will record.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ribbon/filter.hpp"
#include "ribbon/params.hpp"

namespace ribbon {

/// The parameters a build with `options` records in its file: r from options.target_fpr
/// where one is given (fractional bits per key), the width's bucket size and thresholds, the
/// shard size, seed and threshold codes. With `with_values`, those of the retrieval form of
/// the variant (bumped -> retrieval, standard -> standard-retrieval; homogeneous has none)
/// with r = options.result_bits. Throws ribbon::error, naming the problem, for options every
/// builder refuses.
filter_params build_params(const build_options& options, key_kind keys, bool with_values = false);

/// Throws ribbon::error for options a build of `key_count` keys would refuse: what
/// build_params() checks, and the standard and homogeneous variants' slack or success
/// probability. filter::build, bulk_builder and the GPU builder check the same at their start.
void check_build_options(const build_options& options, key_kind keys, std::uint64_t key_count,
                         bool with_values = false);

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
