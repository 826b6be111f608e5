/* fuzz_support.h: what every harness of fuzz/ shares: the libFuzzer entry point's
 * prototype, the input as a C string, and property checks that stop the run. */
#ifndef SCANFORGE_FUZZ_SUPPORT_H
#define SCANFORGE_FUZZ_SUPPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a new NUL-terminated string (free() it); parsers of C strings see the
 * bytes up to the first NUL. NULL when out of memory. */
static inline char *fuzz_text(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return NULL;
  if (size) memcpy(text, data, size);
  text[size] = '\0';
  return text;
}

/* A property the parser promises (round trips, ranges): when it does not hold, the
 * harness stops the run so that the fuzzer keeps the input as a crash. */
#define FUZZ_REQUIRE(condition, ...)                                          \
  do {                                                                        \
    if (!(condition)) {                                                       \
      fprintf(stderr, "%s:%d: property failed: %s: ", __FILE__, __LINE__, #condition); \
      fprintf(stderr, __VA_ARGS__);                                           \
      fprintf(stderr, "\n");                                                  \
      abort();                                                                \
    }                                                                         \
  } while (0)

#endif
