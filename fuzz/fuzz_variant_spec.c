/* fuzz_variant_spec.c: the variant spec parser (generator/variant.c). A spec it accepts
 * must come back unchanged through the canonical form. */
#include "fuzz/fuzz_support.h"
#include "base/error.h"
#include "scanforge/scanforge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sf_clear_error(); /* the one state the library keeps between calls */
  char *spec = fuzz_text(data, size);
  if (!spec) return 0;
  sf_variant v;
  if (sf_variant_parse(spec, &v) == SF_OK) {
    FUZZ_REQUIRE(sf_variant_validate(&v) == SF_OK, "'%s' parsed to an invalid variant: %s", spec, sf_last_error());
    char canonical[512], again[512];
    int n = sf_variant_format(&v, canonical, sizeof canonical);
    FUZZ_REQUIRE(n > 0 && (size_t)n < sizeof canonical, "canonical form of '%s' does not fit", spec);
    sf_variant back;
    FUZZ_REQUIRE(sf_variant_parse(canonical, &back) == SF_OK, "canonical '%s' rejected: %s", canonical, sf_last_error());
    sf_variant_format(&back, again, sizeof again);
    FUZZ_REQUIRE(strcmp(canonical, again) == 0, "'%s' came back as '%s'", canonical, again);
  }
  /* The same keys on top of a backward variant (sf_variant_apply keeps it on failure). */
  sf_variant base = sf_variant_default();
  base.op = SF_OP_BWD;
  base.deterministic = true;
  char before[512], after[512];
  sf_variant_format(&base, before, sizeof before);
  if (sf_variant_apply(spec, &base) != SF_OK) {
    sf_variant_format(&base, after, sizeof after);
    FUZZ_REQUIRE(strcmp(before, after) == 0, "a failed apply of '%s' changed the variant to %s", spec, after);
  } else {
    FUZZ_REQUIRE(sf_variant_validate(&base) == SF_OK, "'%s' applied to an invalid variant", spec);
  }
  free(spec);
  return 0;
}
