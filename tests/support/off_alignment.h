/* off_alignment.h: the calls of the GPU suites' rows_off_alignment tests. */
#ifndef SCANFORGE_TESTS_OFF_ALIGNMENT_H
#define SCANFORGE_TESTS_OFF_ALIGNMENT_H

#include "runtime/check/check.h"

/* Calls whose rows do not all start on a 16-byte boundary: L = 49, 98, 196 and 1001 in
 * fp32, fp16 and bf16 (docs/design-row-alignment.md), batch 2, d_state 8, two groups,
 * every flag, h0 and (for a backward) d_last_state. */
enum { OFF_ALIGNMENT_CALLS = 12 };

/* Call `i` (0 .. OFF_ALIGNMENT_CALLS - 1) over `dim` channels: enough channels put rows at
 * every offset its length gives. */
sf_check_shape off_alignment_shape(int i, int64_t dim);

#endif
