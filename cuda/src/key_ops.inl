// Hashing and partition functors of the device pipeline (pipeline.inl): the per-key work of
// its stages, host+device code that runs in CUDA kernels and in TBB tasks alike.
#pragma once

#include <cstdint>

#include "pipeline_backend.inl"
#include "ribbon/config.hpp"
#include "ribbon/detail/records.hpp"
#include "ribbon/hash.hpp"
#include "ribbon/layer.hpp"

namespace ribbon::cuda {
inline namespace RIBBON_GPU_BACKEND {
namespace {

struct hash_u64_op {
  std::uint64_t seed_mixed;
  RIBBON_HD std::uint64_t operator()(std::uint64_t key) const { return hash_u64(key, seed_mixed); }
};

struct hash_bytes_op {
  const unsigned char* bytes;
  const std::uint64_t* offsets;  // key i is bytes[offsets[i], offsets[i + 1])
  std::uint64_t seed;
  RIBBON_HD std::uint64_t operator()(std::uint64_t i) const {
    return hash_bytes(bytes + offsets[i], offsets[i + 1] - offsets[i], seed);
  }
};

struct remix_op {
  std::uint64_t salt;
  template <class Record>
  RIBBON_HD Record operator()(const Record& r) const {
    return with_hash(r, remix(record_hash(r), salt));
  }
};

/// The inverse of remix_op: back to the previous layer's hashes (a standard layer's retry).
struct unmix_op {
  std::uint64_t salt;
  template <class Record>
  RIBBON_HD Record operator()(const Record& r) const {
    return with_hash(r, unmix64(record_hash(r)) ^ salt);
  }
};

struct shard_of_op {
  layer_geometry g;
  template <class Record>
  RIBBON_HD std::uint64_t operator()(const Record& r) const {
    return g.shard_of(record_hash(r));
  }
};

/// Values that pair with keys: hash i with value i, under the key's check bits where the
/// structure has them (filter_params::stored_value).
struct pair_op {
  filter_params params;
  RIBBON_HD keyed_value operator()(std::uint64_t hash, std::uint32_t value) const {
    return {hash, params.stored_value(hash, value)};
  }
};

/// Is sorted-and-solved key i one of its shard's bumped keys (a prefix of the shard's range)?
template <class Record>
struct is_bumped_op {
  layer_geometry g;
  std::uint64_t range_first;
  const Record* hashes;
  const std::uint64_t* offsets;
  const std::uint64_t* bumped_counts;
  RIBBON_HD bool operator()(std::uint64_t i) const {
    const std::uint64_t local = shard_of_op{g}(hashes[i]) - range_first;
    return i - offsets[local] < bumped_counts[local];
  }
};

}  // namespace
}  // namespace RIBBON_GPU_BACKEND
}  // namespace ribbon::cuda
