/* fuzz_tune_entries.c: the --entries file reader of `scanforge tune`
 * (sf_tune_parse_requests, tuning/requests.c). Each entry it accepts must read back the same
 * from the line sf_tune_request_format writes for it. */
#include "fuzz/fuzz_support.h"
#include "base/error.h"
#include "tuning/tuner.h"

static void require_same(const sf_tune_request *a, const sf_tune_request *b, const char *line) {
  char spec_a[512], spec_b[512];
  sf_variant_format(&a->variant, spec_a, sizeof spec_a);
  sf_variant_format(&b->variant, spec_b, sizeof spec_b);
  FUZZ_REQUIRE(strcmp(spec_a, spec_b) == 0, "'%s' read back as %s, not %s", line, spec_b, spec_a);
  FUZZ_REQUIRE(a->shape.batch == b->shape.batch && a->shape.dim == b->shape.dim &&
                   a->shape.seqlen == b->shape.seqlen && a->shape.groups == b->shape.groups,
               "'%s' read back with another shape", line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sf_clear_error(); /* the one state the library keeps between calls */
  char *text = fuzz_text(data, size);
  if (!text) return 0;
  sf_tune_request *requests = NULL;
  int count = 0;
  if (sf_tune_parse_requests(text, "fuzz.txt", &requests, &count) == SF_OK) {
    FUZZ_REQUIRE(count > 0 && requests, "accepted a file with no entries");
    for (int i = 0; i < count; i++) {
      FUZZ_REQUIRE(sf_variant_validate(&requests[i].variant) == SF_OK, "entry %d is not a valid variant", i);
      char line[600];
      sf_tune_request_format(&requests[i], line, sizeof line);
      sf_tune_request *back = NULL;
      int n = 0;
      FUZZ_REQUIRE(sf_tune_parse_requests(line, "line", &back, &n) == SF_OK && n == 1, "'%s' rejected: %s", line,
                   sf_last_error());
      require_same(&requests[i], &back[0], line);
      free(back);
    }
  } else {
    FUZZ_REQUIRE(!requests && count == 0, "a rejected file left entries behind");
  }
  free(requests);
  free(text);
  return 0;
}
