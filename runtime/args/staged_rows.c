/* staged_rows.c: whether the rows a split=state kernel stages start on 16-byte boundaries. */
#include "runtime/args/staged_rows.h"

static bool on_16_bytes(const void *base, int64_t element_size, const int64_t *strides, int count) {
  if ((uintptr_t)base % 16 != 0) return false;
  for (int i = 0; i < count; i++)
    if ((strides[i] * element_size) % 16 != 0) return false;
  return true;
}

bool sf_staged_rows_aligned(const sf_scan_fwd_args *f, const void *dout, int64_t dout_batch_stride,
                            int64_t dout_dim_stride) {
  const int64_t size = sf_dtype_size(f->dtype);
  const int64_t u[] = {f->u_batch_stride, f->u_dim_stride};
  const int64_t delta[] = {f->delta_batch_stride, f->delta_dim_stride};
  const int64_t z[] = {f->z_batch_stride, f->z_dim_stride};
  const int64_t B[] = {f->B_batch_stride, f->B_group_stride, f->B_state_stride};
  const int64_t C[] = {f->C_batch_stride, f->C_group_stride, f->C_state_stride};
  const int64_t g[] = {dout_batch_stride, dout_dim_stride};
  return on_16_bytes(f->u, size, u, 2) && on_16_bytes(f->delta, size, delta, 2) &&
         (!f->z || on_16_bytes(f->z, size, z, 2)) && (!f->B_var || on_16_bytes(f->B, size, B, 3)) &&
         (!f->C_var || on_16_bytes(f->C, size, C, 3)) && (!dout || on_16_bytes(dout, size, g, 2));
}
