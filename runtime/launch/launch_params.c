/* launch_params.c: the kernels' argument blocks for a slice of a call's batch rows. */
#include "runtime/launch/launch_params.h"

const char *sf_advance(const void *p, int64_t elements, int element_size) {
  return p ? (const char *)p + elements * element_size : NULL;
}

/* log2 of a power of two. */
static int log2_of(int64_t power_of_two) {
  int n = 0;
  while (power_of_two > 1) power_of_two >>= 1, n++;
  return n;
}

sf_fwd_params sf_fwd_params_for_rows(const sf_scan_fwd_args *r, int64_t b0, int64_t rows) {
  const int es = sf_dtype_size(r->dtype);
  const int64_t state_offset = b0 * r->dim * r->dstate;
  const int64_t nsaved = sf_scan_saved_count(r->seqlen, r->state_interval);
  const int64_t interval = sf_scan_args_interval(r);
  sf_fwd_params p = {
      .u = sf_advance(r->u, b0 * r->u_batch_stride, es),
      .delta = sf_advance(r->delta, b0 * r->delta_batch_stride, es),
      .z = sf_advance(r->z, b0 * r->z_batch_stride, es),
      .out = (void *)sf_advance(r->out, b0 * r->out_batch_stride, es),
      .u_batch_stride = r->u_batch_stride, .u_dim_stride = r->u_dim_stride,
      .delta_batch_stride = r->delta_batch_stride, .delta_dim_stride = r->delta_dim_stride,
      .z_batch_stride = r->z_batch_stride, .z_dim_stride = r->z_dim_stride,
      .out_batch_stride = r->out_batch_stride, .out_dim_stride = r->out_dim_stride,
      .B = r->B_var ? sf_advance(r->B, b0 * r->B_batch_stride, es) : r->B,
      .C = r->C_var ? sf_advance(r->C, b0 * r->C_batch_stride, es) : r->C,
      .B_batch_stride = r->B_batch_stride, .B_group_stride = r->B_group_stride,
      .B_state_stride = r->B_state_stride,
      .C_batch_stride = r->C_batch_stride, .C_group_stride = r->C_group_stride,
      .C_state_stride = r->C_state_stride,
      .A = r->A, .D = r->D, .delta_bias = r->delta_bias,
      .h0 = r->h0 ? r->h0 + state_offset : NULL,
      .last_state = r->last_state ? r->last_state + state_offset : NULL,
      .saved_states = r->saved_states ? r->saved_states + state_offset * nsaved : NULL,
      .batch = (int)rows, .dim = (int)r->dim, .seqlen = (int)r->seqlen,
      .groups = r->groups, .state_interval = (int)interval,
      .nsaved = (int)nsaved, .state_shift = log2_of(interval),
  };
  return p;
}
