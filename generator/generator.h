/* generator.h: variant -> CUDA source text, by running a template in a Lua sandbox. */
#ifndef SCANFORGE_GENERATOR_H
#define SCANFORGE_GENERATOR_H

#include <stddef.h>

#include "scanforge/scanforge.h"

/* The generated kernel's entry point, by op: "sf_scan_fwd" or "sf_scan_bwd". */
const char *sf_kernel_name(sf_op op);

/* Generates the CUDA source of a valid variant into a new NUL-terminated buffer (free()
 * it). Deterministic: the same variant and template set give the same bytes. The text
 * starts with a comment naming the canonical spec. Fails with SF_EINVAL when the template
 * rejects a key's value, SF_ETEMPLATE when the template itself fails. */
sf_status sf_generate(const sf_variant *variant, char **source, size_t *length);

#endif
