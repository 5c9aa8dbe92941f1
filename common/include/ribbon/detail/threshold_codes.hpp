/// @file threshold_codes.hpp
/// How a bumped layer stores its bucket thresholds: the 1+-bit encoding.
///
/// A bucket's threshold is one of four, by its code: 0 (code 0: no key bumped), light (1),
/// heavy (2) or all (3) (filter_params::threshold). With BuRR's cut points about 56 % of
/// buckets take code 0, 40 % code 1, 4 % code 2 and 0.01 % code 3, so two bits per bucket
/// spend 0.8 bit more than the codes' entropy (1.18 bits), and at r = 8 and B = 128 two bits
/// are 0.195 % of the filter. The 1+-bit encoding (after BuRR's paper) stores per shard:
///
/// - a **header** of five fields of index_bits + 1 bits (index_bits = log2 of the buckets of
///   a full shard; one word at the defaults): `count`, the list's length; `all_a` and
///   `all_b`, the shard's first two buckets of code 3 (the bucket count where there is
///   none); and two tails, `heavy_from` and `all_from`;
/// - **bucket bits**, one per bucket: 0 for code 0, 1 for the others;
/// - an **exception list**: `count` ascending bucket indexes of index_bits bits each, the
///   buckets of code 2.
///
/// A bucket with bit 1 has code 3 if it is all_a, all_b or at or after all_from; else code 2
/// if it is listed or at or after heavy_from; else code 1. So a query reads the list only for
/// a key whose offset lies in [light, heavy) (about 8 % of keys), and the header for keys at
/// or above light.
///
/// The list has a fixed capacity, so that every shard's region has a size known from the
/// geometry alone (builders write shard ranges independently: out of core, on executors, on
/// a GPU). When a code 2 finds the list full, the **heavy tail** begins: from that bucket on,
/// every failing bucket takes code 2 at least (heavy instead of light costs a few more bumped
/// keys). A third code 3 begins the **all tail** (every later failing bucket bumps all its
/// keys; about 1 shard in 7,000 at the defaults). The solver asks shard_code_writer which
/// code a failing bucket takes, so the rows it bumps are the ones the query sees bumped.
///
/// At the default S = 2^17 and B = 128 a shard region is a header word, 16 words of bits and 8
/// of list (51 entries against 39 needed on average): 1.5625 bits per bucket.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

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

/// Reads an encoding as options name it (`ribbon build --threshold-codes`, Python's
/// threshold_codes=): "1+-bit" or "2-bit" into `out`, "auto" as none (the builder's default).
/// False, `out` untouched, for any other name.
inline bool threshold_encoding_from_name(std::string_view name,
                                         std::optional<threshold_encoding>* out) {
  for (const auto encoding : {threshold_encoding::one_plus_bit, threshold_encoding::two_bit}) {
    if (name == threshold_encoding_name(encoding)) {
      *out = encoding;
      return true;
    }
  }
  if (name != "auto") return false;
  out->reset();
  return true;
}

namespace detail {

/// Fields of the header, in order.
enum class exception_field : unsigned { count = 0, all_a, all_b, heavy_from, all_from, fields };

/// Bits of one header field: a bucket index or the bucket count.
RIBBON_HD inline unsigned exception_field_bits(unsigned index_bits) {
  return index_bits + 1;
}

/// Words of a region's header.
RIBBON_HD inline std::uint64_t code_header_words(unsigned index_bits) {
  return divide_round_up(
      std::uint64_t{static_cast<unsigned>(exception_field::fields)} * (index_bits + 1), 64);
}

/// Words of bucket bits of a shard with `buckets` buckets.
RIBBON_HD inline std::uint64_t code_bit_words(std::uint64_t buckets) {
  return divide_round_up(buckets, 64);
}

/// Words of the exception list of a shard with `buckets` buckets: with the header, 9 per
/// 1024 buckets, and one at least.
RIBBON_HD inline std::uint64_t exception_words(std::uint64_t buckets, unsigned index_bits) {
  const std::uint64_t with_header = divide_round_up(buckets * 9, 1024);
  const std::uint64_t header = code_header_words(index_bits);
  return with_header > header ? with_header - header : 1;
}

/// Words of a shard's region (header, bucket bits, exception list).
RIBBON_HD inline std::uint64_t code_region_words(std::uint64_t buckets, unsigned index_bits) {
  return code_header_words(index_bits) + code_bit_words(buckets) +
         exception_words(buckets, index_bits);
}

/// Entries the exception list of a shard with `buckets` buckets holds.
RIBBON_HD inline std::uint64_t exception_capacity(std::uint64_t buckets, unsigned index_bits) {
  return exception_words(buckets, index_bits) * 64 / index_bits;
}

/// The `bits`-bit field at bit `bit` of `words` (bits < 64; it may straddle two words).
RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t read_bit_field(const std::uint64_t* words,
                                                           std::uint64_t bit, unsigned bits) {
  const auto shift = static_cast<unsigned>(bit % 64);
  std::uint64_t value = words[bit / 64] >> shift;
  if (shift + bits > 64) value |= words[bit / 64 + 1] << (64 - shift);
  return value & ((std::uint64_t{1} << bits) - 1);
}

/// Bucket `bucket`'s bit in a shard region.
RIBBON_HD RIBBON_FORCE_INLINE bool bucket_bit(const std::uint64_t* region, unsigned index_bits,
                                              std::uint64_t bucket) {
  const std::uint64_t word = region[code_header_words(index_bits) + bucket / 64];
  return ((word >> (bucket % 64)) & 1) != 0;
}

/// The header and exception list of a shard region, as queries read them.
struct exception_list {
  const std::uint64_t* header;
  const std::uint64_t* entries;
  unsigned index_bits;

  /// The list of a region with `buckets` buckets.
  RIBBON_HD RIBBON_FORCE_INLINE static exception_list of(const std::uint64_t* region,
                                                         std::uint64_t buckets,
                                                         unsigned index_bits) {
    return {region, region + code_header_words(index_bits) + code_bit_words(buckets), index_bits};
  }

  RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t field(exception_field f) const {
    const unsigned bits = exception_field_bits(index_bits);
    const unsigned at = static_cast<unsigned>(f) * bits;
    // One header word (index_bits <= 11, every default) needs no straddling reads.
    if (static_cast<unsigned>(exception_field::fields) * bits <= 64) {
      return (header[0] >> at) & ((std::uint64_t{1} << bits) - 1);
    }
    return read_bit_field(header, at, bits);
  }

  RIBBON_HD RIBBON_FORCE_INLINE std::uint64_t entry(std::uint64_t i) const {
    return read_bit_field(entries, i * index_bits, index_bits);
  }

  /// Is `bucket` among the entries? They are about uniform over the shard's buckets, so the
  /// search starts where the bucket's index would put it (a step or two from its place).
  RIBBON_HD RIBBON_FORCE_INLINE bool lists(std::uint64_t bucket) const {
    const std::uint64_t count = field(exception_field::count);
    if (count == 0) return false;
    std::uint64_t i = (bucket * count) >> index_bits;  // < count, as bucket < 2^index_bits
    if (entry(i) < bucket) {
      do ++i;
      while (i < count && entry(i) < bucket);
    } else {
      while (i > 0 && entry(i - 1) >= bucket) --i;
    }
    return i < count && entry(i) == bucket;
  }

  /// Does `bucket`, whose bit is 1, have code 3?
  RIBBON_HD RIBBON_FORCE_INLINE bool all(std::uint64_t bucket) const {
    return bucket >= field(exception_field::all_from) || bucket == field(exception_field::all_a) ||
           bucket == field(exception_field::all_b);
  }

  /// Does `bucket`, whose bit is 1 and whose code is not 3, have code 2?
  RIBBON_HD RIBBON_FORCE_INLINE bool heavy(std::uint64_t bucket) const {
    return bucket >= field(exception_field::heavy_from) || lists(bucket);
  }
};

/// The code of bucket `bucket` of a shard region with `buckets` buckets.
RIBBON_HD inline unsigned bucket_code(const std::uint64_t* region, std::uint64_t buckets,
                                      unsigned index_bits, std::uint64_t bucket) {
  if (!bucket_bit(region, index_bits, bucket)) return 0;
  const exception_list list = exception_list::of(region, buckets, index_bits);
  if (list.all(bucket)) return 3;
  return list.heavy(bucket) ? 2 : 1;
}

/// region_bumps() (below) for a bucket whose bit is 1.
RIBBON_HD RIBBON_FORCE_INLINE bool set_bucket_bumps(const std::uint64_t* region,
                                                    std::uint64_t buckets, unsigned index_bits,
                                                    std::uint64_t bucket, std::uint32_t offset,
                                                    std::uint32_t light, std::uint32_t heavy) {
  if (offset < light) return true;
  const exception_list list = exception_list::of(region, buckets, index_bits);
  if (list.all(bucket)) return true;
  return offset < heavy && list.heavy(bucket);
}

/// Is the key at `offset` in bucket `bucket` of a shard region bumped? Keys in buckets with
/// bit 0, or below light, need only the bucket bit; keys at or above heavy the header too;
/// the others (about 8 % of keys) the list. (Deciding without branches from the bit and the
/// header, read for every key, was slower for batched queries too: bench/RESULTS.md.)
RIBBON_HD RIBBON_FORCE_INLINE bool region_bumps(const std::uint64_t* region, std::uint64_t buckets,
                                                unsigned index_bits, std::uint64_t bucket,
                                                std::uint32_t offset, std::uint32_t light,
                                                std::uint32_t heavy) {
  if (!bucket_bit(region, index_bits, bucket)) return false;
  return set_bucket_bumps(region, buckets, index_bits, bucket, offset, light, heavy);
}

/// Where the 1+-bit regions of a bumped layer lie, from constants of the layer worked out
/// once: shard k's region begins at word k * region_words (a full shard's size; only the
/// last shard's may be smaller) and holds the buckets [k * 2^index_bits, ...).
struct code_region_layout {
  unsigned index_bits = 0;               ///< log2 of the buckets of a full shard
  std::uint64_t region_words = 0;        ///< words of a full shard's region
  std::uint64_t last_shard = 0;          ///< the shard of the layer's last bucket
  std::uint64_t last_shard_buckets = 0;  ///< its buckets
  std::uint64_t header_words = 0;        ///< code_header_words(index_bits)

  code_region_layout() = default;
  /// The layout of a layer of `num_buckets` buckets, 2^`bucket_index_bits` a full shard.
  RIBBON_HD code_region_layout(std::uint64_t num_buckets, unsigned bucket_index_bits)
      : index_bits(bucket_index_bits),
        region_words(code_region_words(std::uint64_t{1} << bucket_index_bits, bucket_index_bits)),
        last_shard(num_buckets == 0 ? 0 : (num_buckets - 1) >> bucket_index_bits),
        last_shard_buckets(num_buckets - (last_shard << bucket_index_bits)),
        header_words(code_header_words(bucket_index_bits)) {}

  /// Buckets of shard `shard` (the last shard may hold fewer than 2^index_bits).
  RIBBON_HD std::uint64_t shard_buckets(std::uint64_t shard) const {
    return shard == last_shard ? last_shard_buckets : std::uint64_t{1} << index_bits;
  }
  /// First word of shard `shard`'s region.
  RIBBON_HD std::uint64_t first_word(std::uint64_t shard) const { return shard * region_words; }
  /// Words of all the regions.
  RIBBON_HD std::uint64_t words() const {
    return first_word(last_shard) + code_region_words(last_shard_buckets, index_bits);
  }
  /// The shard of layer bucket `bucket`, and the bucket's index there.
  RIBBON_HD std::uint64_t shard_of(std::uint64_t bucket) const { return bucket >> index_bits; }
  RIBBON_HD std::uint64_t local_bucket(std::uint64_t bucket) const {
    return bucket & ((std::uint64_t{1} << index_bits) - 1);
  }

  /// Words of bucket `bucket`'s region in the layer's threshold section `thresholds`.
  RIBBON_HD const std::uint64_t* region_of(const std::uint64_t* thresholds,
                                           std::uint64_t bucket) const {
    return thresholds + first_word(shard_of(bucket));
  }
  /// The word of bucket `bucket`'s bit.
  RIBBON_HD const std::uint64_t* bit_word_of(const std::uint64_t* thresholds,
                                             std::uint64_t bucket) const {
    return region_of(thresholds, bucket) + header_words + local_bucket(bucket) / 64;
  }

  /// The code (0 to 3) of layer bucket `bucket`.
  RIBBON_HD unsigned code(const std::uint64_t* thresholds, std::uint64_t bucket) const {
    return bucket_code(region_of(thresholds, bucket), shard_buckets(shard_of(bucket)), index_bits,
                       local_bucket(bucket));
  }
  /// Buckets of the layer.
  RIBBON_HD std::uint64_t num_buckets() const {
    return (last_shard << index_bits) + last_shard_buckets;
  }
  /// Words of the same codes as 2-bit codes (32 buckets a word): two_bit_words().
  RIBBON_HD std::uint64_t two_bit_words() const { return divide_round_up(num_buckets(), 32); }
  /// Writes every bucket's code as a 2-bit code into `out` (two_bit_words() words): queries
  /// then decide with one word read, no header or list (about 0.7x the time of a query
  /// reading the regions; bench/RESULTS.md), for 2 bits of memory per bucket.
  void decode_to_two_bit(const std::uint64_t* thresholds, std::uint64_t* out) const {
    const std::uint64_t buckets = num_buckets();
    for (std::uint64_t word = 0; word < two_bit_words(); ++word) {
      std::uint64_t codes = 0;
      for (std::uint64_t b = word * 32; b < buckets && b < word * 32 + 32; ++b) {
        codes |= std::uint64_t{code(thresholds, b)} << (2 * (b % 32));
      }
      out[word] = codes;
    }
  }
  /// region_bumps() for the key at `offset` in layer bucket `bucket`.
  RIBBON_HD RIBBON_FORCE_INLINE bool bumps(const std::uint64_t* thresholds, std::uint64_t bucket,
                                           std::uint32_t offset, std::uint32_t light,
                                           std::uint32_t heavy) const {
    // Most keys need only the bucket's bit: its word first, from constants of the layer.
    const std::uint64_t local = local_bucket(bucket);
    if (((*bit_word_of(thresholds, bucket) >> (local % 64)) & 1) == 0) return false;
    return set_bucket_bumps(region_of(thresholds, bucket), shard_buckets(shard_of(bucket)),
                            index_bits, local, offset, light, heavy);
  }
};

/// Appends bit fields to words, storing each word once it is full.
class word_stream {
 public:
  word_stream() = default;
  RIBBON_HD explicit word_stream(std::uint64_t* words) : words_(words) {}

  /// Appends `value` (`bits` < 64 bits).
  RIBBON_HD void put(std::uint64_t value, unsigned bits) {
    const auto shift = static_cast<unsigned>(next_bit_ % 64);
    pending_ |= value << shift;
    if (shift + bits >= 64) {
      words_[next_bit_ / 64] = pending_;
      pending_ = shift + bits > 64 ? value >> (64 - shift) : 0;
    }
    next_bit_ += bits;
  }

  /// Zero bits up to `end_word` words.
  RIBBON_HD void finish(std::uint64_t end_word) {
    while (next_bit_ < end_word * 64) {
      const std::uint64_t gap = end_word * 64 - next_bit_;
      put(0, static_cast<unsigned>(gap < 63 ? gap : 63));
    }
  }

 private:
  std::uint64_t* words_ = nullptr;
  std::uint64_t next_bit_ = 0;
  std::uint64_t pending_ = 0;
};

/// Writes one shard's codes, one bucket at a time in ascending order: a region of 1+-bit
/// codes, or the shard's words of 2-bit codes. The words are complete (every word written,
/// unused bits zero) once the last bucket is recorded. Stores whole words only, so the lanes
/// of a tile may all run it.
class shard_code_writer {
 public:
  shard_code_writer() = default;

  /// `region`: the shard's code_region_words(buckets, index_bits) words; `index_bits`: log2
  /// of the buckets of a full shard.
  RIBBON_HD shard_code_writer(std::uint64_t* region, std::uint64_t buckets, unsigned index_bits)
      : region_(region),
        buckets_(buckets),
        index_bits_(index_bits),
        capacity_(exception_capacity(buckets, index_bits)),
        entries_(region + code_header_words(index_bits) + code_bit_words(buckets)),
        all_a_(buckets),
        all_b_(buckets),
        heavy_from_(buckets),
        all_from_(buckets) {}

  /// A writer of 2-bit codes (32 buckets a word) to the shard's words `words`.
  RIBBON_HD static shard_code_writer two_bit(std::uint64_t* words, std::uint64_t buckets) {
    shard_code_writer w;
    w.region_ = words;
    w.buckets_ = buckets;
    w.two_bit_ = true;
    return w;
  }

  /// The code bucket `bucket` takes when it first fails with code `wanted` (the smallest
  /// threshold above the failing row): raised in the tails.
  RIBBON_HD unsigned code_for_failure(std::uint64_t bucket, unsigned wanted) const {
    if (two_bit_) return wanted;
    if (bucket >= all_from_ || wanted == 3) return 3;
    return bucket >= heavy_from_ ? 2 : wanted;
  }

  /// Records the code of bucket `bucket` (the next one); a code above 0 must come from
  /// code_for_failure().
  RIBBON_HD void record(std::uint64_t bucket, unsigned code) {
    if (two_bit_) {
      bit_word_ |= std::uint64_t{code} << (2 * (bucket % 32));
      if (bucket % 32 == 31 || bucket + 1 == buckets_) {
        region_[bucket / 32] = bit_word_;
        bit_word_ = 0;
      }
      return;
    }
    if (code != 0) bit_word_ |= std::uint64_t{1} << (bucket % 64);
    if (bucket % 64 == 63 || bucket + 1 == buckets_) {
      region_[code_header_words(index_bits_) + bucket / 64] = bit_word_;
      bit_word_ = 0;
    }
    if (code == 3 && bucket < all_from_) {
      if (all_a_ == buckets_) {
        all_a_ = bucket;
      } else if (all_b_ == buckets_) {
        all_b_ = bucket;
      } else {
        all_from_ = bucket;
      }
    } else if (code == 2 && bucket < heavy_from_) {
      if (used_ < capacity_) {
        entries_.put(bucket, index_bits_);
        ++used_;
      } else {
        heavy_from_ = bucket;
      }
    }
    if (bucket + 1 == buckets_) finish();
  }

 private:
  /// Zero bits after the entries, then the header.
  RIBBON_HD void finish() {
    entries_.finish(exception_words(buckets_, index_bits_));
    word_stream header(region_);
    for (const std::uint64_t field : {used_, all_a_, all_b_, heavy_from_, all_from_}) {
      header.put(field, exception_field_bits(index_bits_));
    }
    header.finish(code_header_words(index_bits_));
  }

  std::uint64_t* region_ = nullptr;
  std::uint64_t buckets_ = 0;
  unsigned index_bits_ = 0;
  std::uint64_t capacity_ = 0;
  word_stream entries_;
  std::uint64_t used_ = 0;
  std::uint64_t all_a_ = 0, all_b_ = 0;          // the shard's first two buckets of code 3
  std::uint64_t heavy_from_ = 0, all_from_ = 0;  // where the tails begin
  bool two_bit_ = false;
  std::uint64_t bit_word_ = 0;  // bucket bits (2-bit codes) being filled
};

}  // namespace detail
}  // namespace ribbon
