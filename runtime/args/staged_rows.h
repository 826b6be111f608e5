/* staged_rows.h: whether the rows a split=state kernel stages start on 16-byte boundaries. */
#ifndef SCANFORGE_STAGED_ROWS_H
#define SCANFORGE_STAGED_ROWS_H

#include <stdbool.h>
#include <stdint.h>

#include "scanforge/scanforge.h"

/* True when every row the split=state kernels copy into shared memory starts on a 16-byte
 * boundary: the rows of u, delta and z, of variable B and C, and of dout when it is given
 * (a backward call). A row starts at its tensor's base plus whole multiples of its batch,
 * dim (or group and state) strides, so the base and every stride in bytes must be
 * multiples of 16. An L of 196 in bf16 (392-byte rows) or 49 in fp32 is not; the launch
 * then takes the kernels that copy such rows in 4-byte pieces (docs/design-row-alignment.md).
 * `f` has its strides resolved (sf_scan_fwd_resolve). */
bool sf_staged_rows_aligned(const sf_scan_fwd_args *f, const void *dout, int64_t dout_batch_stride,
                            int64_t dout_dim_stride);

#endif
