/* generator.h: variant -> CUDA source text, by running a template in a Lua sandbox. */
#ifndef SCANFORGE_GENERATOR_H
#define SCANFORGE_GENERATOR_H

#include <stddef.h>

#include "scanforge/scanforge.h"

/* The generated kernel's entry point, by op: "sf_scan_fwd" or "sf_scan_bwd". */
const char *sf_kernel_name(sf_op op);
/* The split=state templates' stand-in for it when states are saved at least once a block
 * (docs/design-block-states.md): "sf_scan_fwd_inner_saves" or "sf_scan_bwd_block_states". */
const char *sf_block_states_entry(sf_op op);

/* Whether two variants have the same canonical spec (every key equal). */
bool sf_variant_same(const sf_variant *a, const sf_variant *b);

/* The template a variant's source comes from, by op and split: "scan_fwd.tpl" (op=fwd,
 * split=time), "scan_fwd_states.tpl" (op=fwd, split=state), "scan_bwd.tpl" and
 * "scan_bwd_states.tpl" (op=bwd). It includes others (dtype.tpl, ...). */
const char *sf_template_of(const sf_variant *variant);

/* Generates the CUDA source of a valid variant into a new NUL-terminated buffer (free()
 * it). Deterministic: the same variant and template set give the same bytes. The text
 * starts with comments naming the canonical spec and the template; #line directives name
 * the template file and line each part of the text comes from (sf_template_line_name), so
 * NVRTC's errors and warnings point at templates. Fails with SF_EINVAL when the template
 * rejects a key's value, SF_ETEMPLATE when the template itself fails. */
sf_status sf_generate(const sf_variant *variant, char **source, size_t *length);

struct sf_sandbox_limits; /* generator/sandbox.h */

/* The same from the given text of the main template (named `name` in messages) instead
 * of the file the variant's op and split name; include() and import() still read the
 * active template set. limits NULL: the sandbox's defaults. For experiments and the
 * template fuzzer (fuzz/fuzz_template.c). */
sf_status sf_generate_from_text(const sf_variant *variant, const char *name, const char *text, size_t size,
                                const struct sf_sandbox_limits *limits, char **source, size_t *length);

#endif
