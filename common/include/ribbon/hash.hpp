/// @file hash.hpp
/// Key hashing. Every key is hashed once to a 64-bit key hash; each layer of the filter
/// re-mixes the previous layer's hash with a bijection, so distinct hashes stay distinct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "ribbon/config.hpp"
#include "ribbon/detail/bits.hpp"
#include "ribbon/detail/xxhash64.hpp"

namespace ribbon {

/// The kind of key a filter was built from (recorded in the file).
enum class key_kind : std::uint32_t {
  u64 = 0,    ///< 64-bit integers, hashed by a seeded bijective mixer
  bytes = 1,  ///< byte strings, hashed by XXH64
};

/// The kind's name as `ribbon info` and Python spell it: "u64" or "bytes".
inline const char* key_kind_name(key_kind kind) {
  return kind == key_kind::bytes ? "bytes" : "u64";
}

/// Reads a kind by its name ("u64" or "bytes") into `out`; false, `out` untouched, for any
/// other name.
inline bool key_kind_from_name(std::string_view name, key_kind* out) {
  for (const auto kind : {key_kind::u64, key_kind::bytes}) {
    if (name == key_kind_name(kind)) {
      *out = kind;
      return true;
    }
  }
  return false;
}

/// How the groups of a filter set are named (recorded in the file; format version 6). A
/// filter set answers "may group g hold key k?": it is one filter over the pairs' hashes
/// (pair_hash()).
enum class group_kind : std::uint32_t {
  none = 0,   ///< a filter or retrieval structure, not a set
  u64 = 1,    ///< groups named by 64-bit integers
  bytes = 2,  ///< groups named by byte strings
};

/// The kind's name as `ribbon info` and Python spell it: "none", "u64" or "bytes".
inline const char* group_kind_name(group_kind kind) {
  return kind == group_kind::u64 ? "u64" : kind == group_kind::bytes ? "bytes" : "none";
}

/// A bijective 64-bit finalizer (MurmurHash3's fmix64): distinct inputs give distinct outputs.
RIBBON_HD constexpr std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDULL;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ULL;
  x ^= x >> 33;
  return x;
}

/// Per-filter constant derived from the user's seed; computed once, not per key.
RIBBON_HD constexpr std::uint64_t seed_mix(std::uint64_t seed) {
  return mix64(seed ^ 0x5851F42D4C957F2DULL) | 1;
}

/// Key hash of an integer key: a bijection of the key for a fixed seed, so distinct integer
/// keys never collide.
RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t hash_u64(std::uint64_t key, std::uint64_t seed_mixed) {
  return mix64((key + seed_mixed) * 0x9E3779B97F4A7C15ULL);
}

namespace detail {
/// The multiplicative inverse of an odd number modulo 2^64 (Newton's iteration).
RIBBON_HD constexpr std::uint64_t inverse_odd(std::uint64_t a) {
  std::uint64_t x = a;  // correct to 3 bits; each step doubles them
  for (int i = 0; i < 5; ++i) x *= 2 - a * x;
  return x;
}
}  // namespace detail

/// The inverse of mix64.
RIBBON_HD constexpr std::uint64_t unmix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= detail::inverse_odd(0xC4CEB9FE1A85EC53ULL);
  x ^= x >> 33;
  x *= detail::inverse_odd(0xFF51AFD7ED558CCDULL);
  x ^= x >> 33;
  return x;
}

/// The integer key whose hash_u64 is `hash` (hash_u64 is a bijection): lets an error about a
/// key hash name the key.
RIBBON_HD constexpr std::uint64_t unhash_u64(std::uint64_t hash, std::uint64_t seed_mixed) {
  return unmix64(hash) * detail::inverse_odd(0x9E3779B97F4A7C15ULL) - seed_mixed;
}

/// Key hash of a byte-string key: XXH64 with the user's seed.
RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t hash_bytes(const void* data, std::size_t length,
                                                       std::uint64_t seed) {
  return detail::xxh64(data, length, seed);
}

/// Hash of a group of a filter set named by an integer: the key hash of the integer under a
/// seed of its own, so that a pair's group and key hashes are never the same function.
RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t group_hash_u64(std::uint64_t group,
                                                           std::uint64_t seed_mixed) {
  return hash_u64(group, mix64(seed_mixed ^ 0x2545F4914F6CDD1DULL) | 1);
}

/// Hash of a group named by a byte string: XXH64 under a seed of its own.
RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t group_hash_bytes(const void* data, std::size_t length,
                                                             std::uint64_t seed) {
  return hash_bytes(data, length, seed ^ 0x2545F4914F6CDD1DULL);
}

/// The hash a filter set stores for key hash `key_hash` in the group of hash `group_hash`.
/// For one group it is a bijection of the key hash (distinct keys stay distinct); the group
/// enters through a mix of its own, so that (a, b) and (b, a) differ.
/// The group's half of pair_hash(), which a query of many keys in one group computes once.
RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t group_mix(std::uint64_t group_hash) {
  return mix64(group_hash + 0x9E3779B97F4A7C15ULL);
}
/// pair_hash() from the group's half.
RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t mixed_pair_hash(std::uint64_t group_mixed,
                                                            std::uint64_t key_hash) {
  return mix64(key_hash ^ group_mixed);
}
RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t pair_hash(std::uint64_t group_hash,
                                                      std::uint64_t key_hash) {
  return mixed_pair_hash(group_mix(group_hash), key_hash);
}

/// The kind of keys, or of a filter set's groups, given as C++ type T: std::uint64_t (u64) or
/// std::string_view (bytes).
template <class T>
inline constexpr key_kind key_kind_for =
    std::is_same_v<T, std::string_view> ? key_kind::bytes : key_kind::u64;
template <class T>
inline constexpr group_kind group_kind_for =
    std::is_same_v<T, std::string_view> ? group_kind::bytes : group_kind::u64;

/// What a filter set of seed `seed` stores for a group and a key given by their C++ types
/// (std::uint64_t or std::string_view): the one place builders and batched queries hash
/// pairs. seed_mixed is seed_mix(seed).
struct set_hasher {
  std::uint64_t seed = 0;
  std::uint64_t seed_mixed = 0;

  RIBBON_HD std::uint64_t group(std::uint64_t g) const { return group_hash_u64(g, seed_mixed); }
  std::uint64_t group(std::string_view g) const {
    return group_hash_bytes(g.data(), g.size(), seed);
  }
  RIBBON_HD std::uint64_t key(std::uint64_t k) const { return hash_u64(k, seed_mixed); }
  std::uint64_t key(std::string_view k) const { return hash_bytes(k.data(), k.size(), seed); }
  /// Host code only: byte strings are hashed on the host (a set is queried on the CPU).
  template <class Group, class Key>
  std::uint64_t pair(const Group& g, const Key& k) const {
    return pair_hash(group(g), key(k));
  }
};

/// Key hashes of byte-string keys laid out as Arrow lays out string and binary arrays: key i
/// is the bytes [offsets[i], offsets[i + 1]) of `data` (Offset: std::int32_t, std::int64_t,
/// or the C ABI's std::uint64_t). What builds and queries from offsets hash.
template <class Offset>
struct offsets_key_hash {
  const Offset* offsets;
  const unsigned char* data;
  std::uint64_t seed;
  RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t operator()(std::uint64_t i) const {
    return hash_bytes(data + offsets[i], static_cast<std::size_t>(offsets[i + 1] - offsets[i]),
                      seed);
  }
};

/// XXH64 over data given in pieces, the same value as over their concatenation: a file
/// section's checksum (seed 0) where the section is written a range at a time.
using xxh64_stream = detail::xxh64_stream;

/// Hash of a key in the next layer: a bijection of its hash in the previous layer.
RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t remix(std::uint64_t hash, std::uint64_t layer_salt) {
  return mix64(hash ^ layer_salt);
}

/// Maps a uniform 64-bit hash to [0, range), monotonically (sorting hashes sorts positions).
RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t fastrange64(std::uint64_t hash, std::uint64_t range) {
  return detail::mul_high(hash, range);
}

}  // namespace ribbon
