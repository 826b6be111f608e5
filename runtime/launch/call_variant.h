/* call_variant.h: the variant a call runs: its function from the arguments, its knobs from tuning. */
#ifndef SCANFORGE_CALL_VARIANT_H
#define SCANFORGE_CALL_VARIANT_H

#include <stdbool.h>

#include "scanforge/scanforge.h"

/* The variant of a forward or backward call: op, dtype, dstate and flags from `args`;
 * the launch knobs from the tuning database (its block-states entries for a backward
 * with `block_states`), else the heuristics (runtime/launch_config/select.h); then
 * launch->spec, which may change the knobs (split, threads, items, channels, states,
 * minblocks, pairs) but never the function computed (SF_EINVAL naming the key). */
sf_status sf_call_variant(const sf_scan_fwd_args *args, sf_op op, bool deterministic, bool block_states,
                          const sf_launch *launch, sf_variant *out);

#endif
