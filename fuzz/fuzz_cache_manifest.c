/* fuzz_cache_manifest.c: the cache manifest reader: `scanforge cache ls` reads each
 * entry's <key>.json (written by runtime/cache_entry.c) into a one-line summary
 * (cli/manifest_summary.c), into buffers of any size. */
#include "cli/manifest_summary.h"
#include "fuzz/fuzz_support.h"
#include "base/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sf_clear_error(); /* the one state the library keeps between calls */
  char *manifest = fuzz_text(data, size);
  if (!manifest) return 0;
  static const size_t caps[] = {1, 2, 17, 1024};
  for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
    char buf[1024 + 1];
    buf[caps[i]] = 'X'; /* the byte past the buffer must stay untouched */
    manifest_summary(manifest, buf, caps[i]);
    FUZZ_REQUIRE(strlen(buf) < caps[i], "the summary overruns a %zu-byte buffer", caps[i]);
    FUZZ_REQUIRE(buf[caps[i]] == 'X', "the summary wrote past a %zu-byte buffer", caps[i]);
  }
  free(manifest);
  return 0;
}
