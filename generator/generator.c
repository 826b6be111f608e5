/* generator.c: (in progress) */
#include "generator/generator.h"
#include "runtime/error.h"
const char *sf_kernel_name(sf_op op) { return op == SF_OP_FWD ? "sf_scan_fwd" : "sf_scan_bwd"; }
sf_status sf_generate(const sf_variant *variant, char **source, size_t *length) {
  return sf_fail(SF_EUNSUPPORTED, "generator not written yet");
}
