/* A C program using the installed query-only reader (ribbon::reader, ribbon/c.h): opens the
 * file ribbon_consumer wrote (5000 integer keys 0x9E3779B97F4A7C15 * (i + 1)), checks that
 * every key is positive, scalar and batched, that non-members are mostly negative, that
 * errors come back as text, and that oneTBB was not loaded with the library. Exits non-zero
 * on any failure. Usage: ribbon_c_reader FILE */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ribbon/c.h"

#define KEYS 5000

/* Whether a shared library whose path contains `name` is mapped into this process. */
static int library_loaded(const char* name) {
  FILE* maps = fopen("/proc/self/maps", "r");
  char line[4096];
  int found = 0;
  if (maps == NULL) return 0;
  while (!found && fgets(line, sizeof line, maps) != NULL) found = strstr(line, name) != NULL;
  fclose(maps);
  return found;
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  ribbon_reader* reader = NULL;
  if (ribbon_open_file(argv[1], 1, &reader) != RIBBON_OK) {
    fprintf(stderr, "FAIL: %s\n", ribbon_last_error());
    return 1;
  }
  static uint64_t keys[KEYS];
  static uint8_t found[KEYS];
  for (uint64_t i = 0; i < KEYS; ++i) keys[i] = 0x9E3779B97F4A7C15ULL * (i + 1);
  int failures = 0;
  if (ribbon_contains_u64_batch(reader, keys, KEYS, found) != RIBBON_OK) failures++;
  for (uint64_t i = 0; i < KEYS; ++i) {
    if (!found[i] || ribbon_contains_u64(reader, keys[i]) != 1) failures++;
  }
  uint64_t false_positives = 0;
  for (uint64_t k = 1; k <= 100000; ++k) false_positives += ribbon_contains_u64(reader, k) == 1;
  ribbon_info info;
  if (ribbon_get_info(reader, &info) != RIBBON_OK || info.key_count != KEYS ||
      info.key_kind != RIBBON_KEYS_U64) {
    failures++;
  }
  /* r = 8: about 390 of 100000 non-members are positive. */
  if (false_positives > 1000) failures++;
  if (ribbon_contains_bytes(reader, "x", 1) != RIBBON_ERROR ||
      strstr(ribbon_last_error(), "64-bit integer") == NULL) {
    failures++;
  }
  ribbon_close(reader);
  if (ribbon_open_file("/nonexistent/x.ribbon", 1, &reader) != RIBBON_ERROR || reader != NULL) {
    failures++;
  }
  if (library_loaded("libtbb")) {
    fprintf(stderr, "FAIL: oneTBB is loaded with the query-only reader\n");
    failures++;
  }
  if (failures != 0) {
    fprintf(stderr, "FAIL: %d checks failed\n", failures);
    return 1;
  }
  printf("ok: C reader, %d keys positive, %llu of 100000 non-members positive, %.2f bits/key\n",
         KEYS, (unsigned long long)false_positives, info.bits_per_key);
  return 0;
}
