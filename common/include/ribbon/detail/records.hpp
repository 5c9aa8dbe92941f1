/// @file records.hpp
/// What the builders carry per key: its layer hash (filters), or its layer hash and the value
/// to store (retrieval). The solver reads both through the functions here, so one pipeline
/// serves both.
#pragma once

#include <cstdint>

#include "ribbon/config.hpp"
#include "ribbon/detail/rows.hpp"
#include "ribbon/layer.hpp"
#include "ribbon/params.hpp"

namespace ribbon::detail {

/// A key of a retrieval build: its layer hash and its r-bit value.
struct keyed_value {
  std::uint64_t hash;
  std::uint64_t value;  ///< fits in r bits (checked when the build starts)
};

/// The CPU builder's keyed_value: 12 bytes instead of 16 (r <= 32), so that the records it
/// sorts and partitions take a quarter less memory and bandwidth. Unaligned 8-byte loads cost
/// nothing on the CPUs it runs on; the GPU keeps the aligned keyed_value.
struct packed_keyed_value {
  std::uint64_t hash;
  std::uint32_t value;
} __attribute__((packed));
static_assert(sizeof(packed_keyed_value) == 12, "a packed record");

RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t record_hash(std::uint64_t hash) {
  return hash;
}
RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t record_hash(const keyed_value& r) {
  return r.hash;
}
inline std::uint64_t record_hash(const packed_keyed_value& r) {
  return r.hash;
}

/// The record with its hash replaced (the next layer's hash), its value kept.
RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t with_hash(std::uint64_t, std::uint64_t hash) {
  return hash;
}
RIBBON_HD RIBBON_FORCE_INLINE keyed_value with_hash(const keyed_value& r, std::uint64_t hash) {
  return {hash, r.value};
}
inline packed_keyed_value with_hash(const packed_keyed_value& r, std::uint64_t hash) {
  return {hash, r.value};
}

/// Orders records by hash (the order every builder solves a shard in).
struct record_less {
  template <class Record>
  RIBBON_HD bool operator()(const Record& a, const Record& b) const {
    return record_hash(a) < record_hash(b);
  }
};

/// Are two records the same key with the same value? Every builder keeps one record of each
/// such run (equal 64-bit key hashes are one key: one row), so that a multiset of keys gives
/// the file of its set. Equal hashes with two values are a conflict (find_conflict).
struct record_equal {
  RIBBON_HD bool operator()(std::uint64_t a, std::uint64_t b) const { return a == b; }
  RIBBON_HD bool operator()(const keyed_value& a, const keyed_value& b) const {
    return a.hash == b.hash && a.value == b.value;
  }
  bool operator()(const packed_keyed_value& a, const packed_keyed_value& b) const {
    return a.hash == b.hash && a.value == b.value;
  }
};

/// The right side of a key's equation with `bits` result bits (r, or r + 1 in the upper
/// blocks of a layer with fractional bits): its fingerprint, 0 in a homogeneous filter, its
/// value in retrieval.
RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t record_rhs(const filter_params& p, std::uint32_t bits,
                                                       std::uint64_t hash) {
  return p.variant == filter_variant::homogeneous ? 0u : fingerprint(hash, bits);
}
RIBBON_HD RIBBON_FORCE_INLINE std::uint32_t record_rhs(const filter_params&, std::uint32_t,
                                                       const keyed_value& r) {
  return static_cast<std::uint32_t>(r.value);
}
inline std::uint32_t record_rhs(const filter_params&, std::uint32_t, const packed_keyed_value& r) {
  return r.value;
}

/// In records sorted by hash, the first pair of equal hashes with different values (a key
/// given twice with two values, or two keys sharing a 64-bit hash): its index, or `count`.
RIBBON_HD inline std::uint64_t find_conflict(const std::uint64_t*, std::uint64_t count) {
  return count;  // filters: equal hashes are duplicate keys, which are allowed
}
/// Does sorted record i (i > 0) repeat its predecessor's hash with another value?
template <class Record>
RIBBON_HD bool conflicts_with_previous(const Record* records, std::uint64_t i) {
  return records[i].hash == records[i - 1].hash && records[i].value != records[i - 1].value;
}
template <class Record>  // keyed_value, packed_keyed_value
RIBBON_HD std::uint64_t find_conflict(const Record* records, std::uint64_t count) {
  for (std::uint64_t i = 1; i < count; ++i) {
    if (conflicts_with_previous(records, i)) return i;
  }
  return count;
}

}  // namespace ribbon::detail
