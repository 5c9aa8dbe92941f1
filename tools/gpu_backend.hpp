// The GPU side of the ribbon tool: which backend a command uses, the GPU build hook of the
// bulk builder, and `ribbon bench --backend gpu`. Without CUDA in the build, asking for the
// GPU is an error and "auto" means the CPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ribbon/build_many.hpp"
#include "ribbon/bulk_builder.hpp"

namespace ribbon::cli {

/// Resolves --backend ("cpu", "gpu" or "auto": the GPU where this build has CUDA and a device
/// is present). Throws ribbon::error if "gpu" cannot run, saying why.
bool use_gpu(const std::string& backend);

/// Makes a bulk build run on the GPU (call only when use_gpu() said yes): inputs that fit
/// in device memory are built there in one piece; larger ones spill to disk and each shard
/// range is solved on the device. Caps options.memory_limit to what the device holds.
void configure_gpu_build(bulk_options& options);

/// A retrieval build (key hashes with values, in memory) on the GPU; the same file as
/// filter::build_from_hashes with values.
filter build_retrieval_on_gpu(const std::uint64_t* hashes, const std::uint32_t* values,
                              std::uint64_t count, key_kind keys, const build_options& options);

/// A filter per group (key hashes in group order, as ribbon::build_many_from_hashes) built on
/// the GPU, every group in the same launches; the same files as the CPU's build_many.
std::vector<filter> build_many_on_gpu(const std::uint64_t* hashes, std::uint64_t count,
                                      key_kind keys, const key_groups& groups,
                                      const build_options& options);

/// `ribbon bench --backend gpu`: builds `keys` from device memory, checks and times batched
/// GPU queries on device- and host-resident keys, prints a report (or JSON). Returns the exit
/// status.
int run_gpu_bench(const std::vector<std::uint64_t>& keys,
                  const std::vector<std::uint64_t>& negatives, const build_options& options,
                  bool json);

}  // namespace ribbon::cli
