/* launch_params.h: the kernels' argument blocks for a slice of a call's batch rows. */
#ifndef SCANFORGE_LAUNCH_PARAMS_H
#define SCANFORGE_LAUNCH_PARAMS_H

#include <stdint.h>

#include "runtime/launch/kernel_params.h"
#include "scanforge/scanforge.h"

/* The grid's y extent is the batch; longer batches are launched in slices of this many. */
#define SF_MAX_BATCH_PER_LAUNCH 65535

/* p advanced by `elements` elements of `element_size` bytes; NULL stays NULL. */
const char *sf_advance(const void *p, int64_t elements, int element_size);

/* The forward kernel's arguments for batch rows b0 .. b0 + rows - 1 of a call whose
 * strides are resolved (sf_scan_fwd_prepare). The backward passes the same block. */
sf_fwd_params sf_fwd_params_for_rows(const sf_scan_fwd_args *r, int64_t b0, int64_t rows);

#endif
