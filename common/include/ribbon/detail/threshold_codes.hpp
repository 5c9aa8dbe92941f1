/// @file threshold_codes.hpp
/// How a bumped layer stores its bucket thresholds: the 1+-bit encoding.
///
/// A bucket's threshold is one of four, by its code: 0 (code 0: no key bumped), light (1),
/// heavy (2) or all (3) (filter_params::threshold). With BuRR's cut points about 56 % of
/// buckets take code 0, 40 % code 1, 4 % code 2 and 0.01 % code 3, so two bits per bucket
/// spend 0.8 bit more than the codes' entropy (1.18 bits), and at r = 8 and B = 128 two bits
/// are 0.195 % of the filter. The 1+-bit encoding (after BuRR's paper) stores per shard:
///
/// - **bucket bits**, one per bucket: 0 for code 0, 1 for the others;
/// - an **exception list**: the header (count, all_from: index_bits + 1 bits each), then
///   `count` bucket indexes (index_bits = log2 of the buckets per full shard, ascending)
///   naming the buckets of code 2 (listed once) and code 3 (listed twice). A bucket with
///   bit 1 that is not listed has code 1; one at or after `all_from` has code 3.
///
/// The list has a fixed capacity, so that every shard's region has a size known from the
/// geometry alone (builders write shard ranges independently: out of core, on executors, on
/// a GPU). A shard whose list would overflow starts its **tail** at the bucket that found no
/// room: from it on every bucket with bit 1 takes code 3. The solver picks that code when the
/// bucket fails (shard_code_writer::code_for_failure), so the rows it bumps are the ones the
/// query sees bumped. The capacity (about 5.4 % of the buckets against 3.9 % needed on
/// average) makes tails rare and short; they cost empty slots, never correctness.
///
/// At the default S = 2^17 and B = 128 a shard region is 16 words of bits and 9 of list:
/// 1.5625 bits per bucket.
#pragma once

#include <cstdint>

#include "ribbon/config.hpp"
#include "ribbon/detail/bits.hpp"

namespace ribbon {

/// How a layer stores its bucket thresholds (the file header's threshold_encoding).
enum class threshold_encoding : std::uint32_t {
  two_bit = 1,       ///< 2 bits per bucket, 32 buckets per word (format versions 1 and 2)
  one_plus_bit = 2,  ///< bucket bits and an exception list per shard (version 3; above)
};

/// The encoding's name as `ribbon info` prints it: "2-bit" or "1+-bit".
inline const char* threshold_encoding_name(threshold_encoding encoding) {
  return encoding == threshold_encoding::two_bit ? "2-bit" : "1+-bit";
}

namespace detail {

/// Words of bucket bits of a shard with `buckets` buckets.
RIBBON_HD inline std::uint64_t code_bit_words(std::uint64_t buckets) {
  return divide_round_up(buckets, 64);
}

/// Words of the exception list of a shard with `buckets` buckets: 9 per 1024 buckets, at
/// least one.
RIBBON_HD inline std::uint64_t exception_words(std::uint64_t buckets) {
  return divide_round_up(buckets * 9, 1024);
}

/// Words of a shard's region (bucket bits, then the exception list).
RIBBON_HD inline std::uint64_t code_region_words(std::uint64_t buckets) {
  return code_bit_words(buckets) + exception_words(buckets);
}

/// Bits of the exception list's header: count and all_from, index_bits + 1 bits each (both
/// may equal the shard's bucket count).
RIBBON_HD inline unsigned exception_header_bits(unsigned index_bits) {
  return 2 * (index_bits + 1);
}

/// Entries the exception list of a shard with `buckets` buckets holds.
RIBBON_HD inline std::uint64_t exception_capacity(std::uint64_t buckets, unsigned index_bits) {
  return (exception_words(buckets) * 64 - exception_header_bits(index_bits)) / index_bits;
}

/// Entry `i` of an exception list (`list` points at its first word, the header's).
RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t exception_entry(const std::uint64_t* list,
                                                            unsigned index_bits, std::uint64_t i) {
  const std::uint64_t bit = exception_header_bits(index_bits) + i * index_bits;
  const auto shift = static_cast<unsigned>(bit % 64);
  std::uint64_t value = list[bit / 64] >> shift;
  if (shift + index_bits > 64) value |= list[bit / 64 + 1] << (64 - shift);
  return value & ((std::uint64_t{1} << index_bits) - 1);
}

/// The fields of an exception list's header.
struct exception_header {
  std::uint64_t count;     ///< entries in the list
  std::uint64_t all_from;  ///< first bucket of the tail (the bucket count if none)
};

RIBBON_HD RIBBON_FORCE_INLINE exception_header read_exception_header(const std::uint64_t* list,
                                                                     unsigned index_bits) {
  const std::uint64_t mask = (std::uint64_t{2} << index_bits) - 1;
  return {list[0] & mask, (list[0] >> (index_bits + 1)) & mask};
}

/// The code (1, 2 or 3) of bucket `bucket`, whose bit is 1, from the exception list `list`.
RIBBON_HD RIBBON_FORCE_INLINE unsigned listed_code(const std::uint64_t* list, unsigned index_bits,
                                                   std::uint64_t bucket) {
  const exception_header header = read_exception_header(list, index_bits);
  if (bucket >= header.all_from) return 3;
  // Lower bound of the bucket among the ascending entries.
  std::uint64_t first = 0;
  for (std::uint64_t n = header.count; n > 0;) {
    const std::uint64_t half = n / 2;
    if (exception_entry(list, index_bits, first + half) < bucket) {
      first += half + 1;
      n -= half + 1;
    } else {
      n = half;
    }
  }
  if (first == header.count || exception_entry(list, index_bits, first) != bucket) return 1;
  const bool twice =
      first + 1 < header.count && exception_entry(list, index_bits, first + 1) == bucket;
  return twice ? 3 : 2;
}

/// Bucket `bucket`'s bit in a shard region.
RIBBON_HD RIBBON_FORCE_INLINE bool bucket_bit(const std::uint64_t* region, std::uint64_t bucket) {
  return ((region[bucket / 64] >> (bucket % 64)) & 1) != 0;
}

/// The code of bucket `bucket` of a shard region with `buckets` buckets.
RIBBON_HD RIBBON_FORCE_INLINE unsigned bucket_code(const std::uint64_t* region,
                                                   std::uint64_t buckets, unsigned index_bits,
                                                   std::uint64_t bucket) {
  if (!bucket_bit(region, bucket)) return 0;
  return listed_code(region + code_bit_words(buckets), index_bits, bucket);
}

/// Is the key at `offset` in bucket `bucket` of a shard region bumped? Reads the list only
/// for keys at or above the light threshold in buckets with bit 1 (about a third of keys).
RIBBON_HD RIBBON_FORCE_INLINE bool region_bumps(const std::uint64_t* region,
                                                std::uint64_t buckets, unsigned index_bits,
                                                std::uint64_t bucket, std::uint32_t offset,
                                                std::uint32_t light, std::uint32_t heavy) {
  if (!bucket_bit(region, bucket)) return false;
  if (offset < light) return true;
  const unsigned code = listed_code(region + code_bit_words(buckets), index_bits, bucket);
  return code == 3 || (code == 2 && offset < heavy);
}

/// Writes one shard's region, one bucket at a time in ascending order; the region is
/// complete (every word written, unused bits zero) once the last bucket is recorded.
class shard_code_writer {
 public:
  shard_code_writer() = default;

  /// `region`: the shard's code_region_words(buckets) words; `index_bits`: log2 of the
  /// buckets of a full shard.
  RIBBON_HD shard_code_writer(std::uint64_t* region, std::uint64_t buckets, unsigned index_bits)
      : region_(region),
        buckets_(buckets),
        index_bits_(index_bits),
        capacity_(exception_capacity(buckets, index_bits)),
        all_from_(buckets) {}

  /// The code bucket `bucket` takes when it first fails with code `wanted` (the smallest
  /// threshold above the failing row): code 3 where the list has no room for it.
  RIBBON_HD unsigned code_for_failure(std::uint64_t bucket, unsigned wanted) const {
    if (bucket >= all_from_) return 3;
    return used_ + entries_for(wanted) > capacity_ ? 3 : wanted;
  }

  /// Records the code of bucket `bucket` (the next one); a code above 0 must come from
  /// code_for_failure().
  RIBBON_HD void record(std::uint64_t bucket, unsigned code) {
    if (code != 0) bit_word_ |= std::uint64_t{1} << (bucket % 64);
    if (bucket % 64 == 63 || bucket + 1 == buckets_) {
      region_[bucket / 64] = bit_word_;
      bit_word_ = 0;
    }
    if (bucket < all_from_ && used_ + entries_for(code) > capacity_) all_from_ = bucket;
    if (bucket < all_from_) {
      for (unsigned i = entries_for(code); i > 0; --i) append(bucket);
    }
    if (bucket + 1 == buckets_) finish();
  }

 private:
  RIBBON_HD static unsigned entries_for(unsigned code) { return code == 2 ? 1 : code == 3 ? 2 : 0; }

  RIBBON_HD std::uint64_t* list() const { return region_ + code_bit_words(buckets_); }

  RIBBON_HD std::uint64_t next_bit() const {
    return exception_header_bits(index_bits_) + used_ * index_bits_;
  }

  /// Stores the list word being filled (word 0, which the header joins, is kept until then).
  RIBBON_HD void store_pending(std::uint64_t word) {
    if (word == 0) {
      first_word_ = pending_;
    } else {
      list()[word] = pending_;
    }
  }

  RIBBON_HD void append(std::uint64_t bucket) {
    const std::uint64_t bit = next_bit();
    const auto shift = static_cast<unsigned>(bit % 64);
    pending_ |= bucket << shift;
    if (shift + index_bits_ >= 64) {  // the word is full: store it, carry the rest
      store_pending(bit / 64);
      pending_ = shift + index_bits_ > 64 ? bucket >> (64 - shift) : 0;
    }
    ++used_;
  }

  RIBBON_HD void finish() {
    const std::uint64_t words = exception_words(buckets_);
    const std::uint64_t current = next_bit() / 64;
    if (current < words) store_pending(current);
    for (std::uint64_t w = current + 1; w < words; ++w) list()[w] = 0;
    list()[0] = first_word_ | used_ | (all_from_ << (index_bits_ + 1));
  }

  std::uint64_t* region_ = nullptr;
  std::uint64_t buckets_ = 0;
  unsigned index_bits_ = 0;
  std::uint64_t capacity_ = 0;
  std::uint64_t used_ = 0;
  std::uint64_t all_from_ = 0;
  std::uint64_t bit_word_ = 0;
  std::uint64_t pending_ = 0;     // list word being filled
  std::uint64_t first_word_ = 0;  // list word 0 once filled
};

}  // namespace detail
}  // namespace ribbon
