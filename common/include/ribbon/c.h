/* ribbon/c.h: the stable C ABI of ribbon's query-only reader (library ribbon_reader, CMake
 * target ribbon::reader; no oneTBB, no CUDA). Opens any filter file (CPU-, GPU-, CLI- or
 * Python-built) from a path (mmap) or a buffer, and answers membership and retrieval queries
 * for integer and byte-string keys. For services in C and, through their FFIs, Java, Go, Rust
 * and Python (ctypes).
 *
 * Errors: functions that can fail return RIBBON_OK (0) or RIBBON_ERROR (-1); then
 * ribbon_last_error() gives the message (the C++ library's: which file, what is wrong) for
 * the calling thread. A reader is immutable: queries may run concurrently from any threads.
 */
#ifndef RIBBON_C_H
#define RIBBON_C_H

#include <stddef.h>
#include <stdint.h>

#if defined(RIBBON_C_API_BUILD)
#define RIBBON_C_API __attribute__((visibility("default")))
#else
#define RIBBON_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Bumped on incompatible changes of this header. */
#define RIBBON_C_API_VERSION 3

#define RIBBON_OK 0
#define RIBBON_ERROR (-1)

/** Key kinds (ribbon_info.key_kind). */
#define RIBBON_KEYS_U64 0   /**< 64-bit integers (built from u64/hex64 files, integer arrays) */
#define RIBBON_KEYS_BYTES 1 /**< byte strings (built from lines files, strings) */

/** An open filter file. */
typedef struct ribbon_reader ribbon_reader;

/** What a file stores (the fields of `ribbon info`). */
typedef struct ribbon_info {
  uint32_t format_version;
  uint32_t variant;  /**< 0 bumped, 1 standard, 2 homogeneous, 3 retrieval, 4 standard-retrieval */
  uint32_t key_kind; /**< RIBBON_KEYS_U64 or RIBBON_KEYS_BYTES */
  uint32_t width;    /**< ribbon width w */
  uint32_t result_bits; /**< r: FPR about 2^-r; bits per key of retrieval structures (value
                           bits + check_bits) */
  uint32_t num_layers;
  uint32_t is_retrieval; /**< 1: query with ribbon_lookup_* (and, with check bits,
                            ribbon_find_* and ribbon_contains_*), 0: ribbon_contains_* */
  uint32_t check_bits;   /**< retrieval: fingerprint bits stored above each value (format version
                            4; a field reserved as 0 before, so added without a version bump) */
  uint64_t key_count;
  uint64_t file_bytes;
  uint64_t seed;
  uint64_t shard_size;
  double bits_per_key;
  double expected_fpr; /**< 0 for retrieval structures */
} ribbon_info;

/** The version of this ABI the library implements (RIBBON_C_API_VERSION). */
RIBBON_C_API int ribbon_c_api_version(void);

/** The library's release, "MAJOR.MINOR.PATCH" (RIBBON_VERSION_STRING of ribbon/version.hpp,
 * what `ribbon --version` prints). Since RIBBON_C_API_VERSION 3. */
RIBBON_C_API const char* ribbon_version(void);

/** The file format versions the library reads (oldest_read to newest_read) and writes
 * (oldest_written to newest_written: a writer writes the oldest version that can hold a file).
 * Any pointer may be NULL. Since RIBBON_C_API_VERSION 3. */
RIBBON_C_API void ribbon_format_versions(uint32_t* oldest_read, uint32_t* newest_read,
                                         uint32_t* oldest_written, uint32_t* newest_written);

/** The message of the last failed call on this thread ("" if none). Valid until the next
 * call on this thread. */
RIBBON_C_API const char* ribbon_last_error(void);

/** Opens a filter file: mapped (mmap) and validated; verify_checksums != 0 also checks every
 * section's checksum (reads the whole file). On success *out is the reader. */
RIBBON_C_API int ribbon_open_file(const char* path, int verify_checksums, ribbon_reader** out);

/** Opens a file image held in memory (copied; the buffer may be freed afterwards). */
RIBBON_C_API int ribbon_open_buffer(const void* data, uint64_t size, int verify_checksums,
                                    ribbon_reader** out);

/** Closes a reader (NULL is allowed). */
RIBBON_C_API void ribbon_close(ribbon_reader* reader);

RIBBON_C_API int ribbon_get_info(const ribbon_reader* reader, ribbon_info* out);

/** Membership of one key: 1 (maybe in the set; always for members), 0 (not in the set), or
 * RIBBON_ERROR (a key of the other kind, or a retrieval structure without check bits; one with
 * check bits answers 1 where the key's check bits match). */
RIBBON_C_API int ribbon_contains_u64(const ribbon_reader* reader, uint64_t key);

/** Filter sets (format version 6; ribbon_contains_* refuse them): *group_kind 1 (groups named
 * by integers), 2 (by byte strings), or 0 for any other file, and *group_count the distinct
 * groups. Since RIBBON_C_API_VERSION 2. */
RIBBON_C_API int ribbon_get_set_info(const ribbon_reader* reader, uint32_t* group_kind,
                                     uint64_t* group_count);
/** Filter sets: may `group` hold `key`? 1 (always for the set's pairs), 0, or RIBBON_ERROR
 * (not a set, or a group or key of the other kind). One function per kind of group and key:
 * _u64 (integer group and key), _u64_bytes (integer group, byte-string key), _bytes_u64,
 * _bytes. A group never given answers as an empty one. Since RIBBON_C_API_VERSION 2. */
RIBBON_C_API int ribbon_contains_in_u64(const ribbon_reader* reader, uint64_t group, uint64_t key);
RIBBON_C_API int ribbon_contains_in_u64_bytes(const ribbon_reader* reader, uint64_t group,
                                              const void* key, uint64_t key_size);
RIBBON_C_API int ribbon_contains_in_bytes_u64(const ribbon_reader* reader, const void* group,
                                              uint64_t group_size, uint64_t key);
RIBBON_C_API int ribbon_contains_in_bytes(const ribbon_reader* reader, const void* group,
                                          uint64_t group_size, const void* key, uint64_t key_size);
RIBBON_C_API int ribbon_contains_bytes(const ribbon_reader* reader, const void* key, uint64_t size);

/** Batched membership: out[i] = 1 or 0 for keys[i]. Byte-string keys in Arrow layout: key i
 * is data[offsets[i] .. offsets[i + 1]) (count + 1 offsets, not decreasing). Runs on the
 * calling thread, hashing keys ahead and prefetching their rows (the C++ batched pipeline). */
RIBBON_C_API int ribbon_contains_u64_batch(const ribbon_reader* reader, const uint64_t* keys,
                                           uint64_t count, uint8_t* out);
RIBBON_C_API int ribbon_contains_bytes_batch(const ribbon_reader* reader, const void* data,
                                             const uint64_t* offsets, uint64_t count, uint8_t* out);

/** The batched calls on `threads` threads (0: every hardware thread; 1: the calling thread,
 * as the calls without _threads; at most 8 per hardware thread). Batches under about 32,768 keys
 * per thread use fewer threads. Same answers as the scalar calls. (Added without a version bump:
 * the calls above keep their signatures.) */
RIBBON_C_API int ribbon_contains_u64_batch_threads(const ribbon_reader* reader,
                                                   const uint64_t* keys, uint64_t count,
                                                   uint8_t* out, uint32_t threads);
RIBBON_C_API int ribbon_contains_bytes_batch_threads(const ribbon_reader* reader, const void* data,
                                                     const uint64_t* offsets, uint64_t count,
                                                     uint8_t* out, uint32_t threads);

/** Retrieval structures: the value stored for a key (an arbitrary value for others; its value
 * bits only where the structure has check bits). */
RIBBON_C_API int ribbon_lookup_u64(const ribbon_reader* reader, uint64_t key, uint32_t* value);
RIBBON_C_API int ribbon_lookup_bytes(const ribbon_reader* reader, const void* key, uint64_t size,
                                     uint32_t* value);
RIBBON_C_API int ribbon_lookup_u64_batch(const ribbon_reader* reader, const uint64_t* keys,
                                         uint64_t count, uint32_t* out);
RIBBON_C_API int ribbon_lookup_bytes_batch(const ribbon_reader* reader, const void* data,
                                           const uint64_t* offsets, uint64_t count, uint32_t* out);
/** The batched lookups on `threads` threads (as ribbon_contains_u64_batch_threads). */
RIBBON_C_API int ribbon_lookup_u64_batch_threads(const ribbon_reader* reader, const uint64_t* keys,
                                                 uint64_t count, uint32_t* out, uint32_t threads);
RIBBON_C_API int ribbon_lookup_bytes_batch_threads(const ribbon_reader* reader, const void* data,
                                                   const uint64_t* offsets, uint64_t count,
                                                   uint32_t* out, uint32_t threads);

/** Retrieval with check bits: 1 with *value set where the key's check bits match (every member;
 * a non-member with probability 2^-check_bits), 0 where they do not (*value untouched), or
 * RIBBON_ERROR. Without check bits every key is found, as by ribbon_lookup_*. (Added without a
 * version bump.) */
RIBBON_C_API int ribbon_find_u64(const ribbon_reader* reader, uint64_t key, uint32_t* value);
RIBBON_C_API int ribbon_find_bytes(const ribbon_reader* reader, const void* key, uint64_t size,
                                   uint32_t* value);
/** Batched: out[i] the value bits of keys[i] and found[i] = 1 or 0, on `threads` threads (as
 * ribbon_contains_u64_batch_threads). */
RIBBON_C_API int ribbon_find_u64_batch_threads(const ribbon_reader* reader, const uint64_t* keys,
                                               uint64_t count, uint32_t* out, uint8_t* found,
                                               uint32_t threads);
RIBBON_C_API int ribbon_find_bytes_batch_threads(const ribbon_reader* reader, const void* data,
                                                 const uint64_t* offsets, uint64_t count,
                                                 uint32_t* out, uint8_t* found, uint32_t threads);

#ifdef __cplusplus
}
#endif

#endif /* RIBBON_C_H */
