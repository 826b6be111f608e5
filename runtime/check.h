/* check.h: run the forward on fresh random inputs and measure it against the float64 reference. */
#ifndef SCANFORGE_CHECK_H
#define SCANFORGE_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "scanforge/scanforge.h"

typedef struct sf_check_shape {
  int64_t batch, dim, seqlen;
  int dstate, groups;
  sf_dtype dtype;
  bool z, D, delta_bias, softplus, B_fixed, C_fixed, h0;
} sf_check_shape;

typedef struct sf_check_result {
  double out_error;         /* relative error of out (math.md's measure) */
  double last_state_error;  /* of last_state */
  double saved_error;       /* of the saved states (the backward's checkpoints) */
  double bar;               /* math.md's forward bar for the dtype */
  bool passed;              /* every error within the bar (NaN or Inf never passes) */
  sf_variant variant;       /* what ran on the device (unset on the host) */
} sf_check_result;

/* math.md's bar for the forward output of a dtype: 1e-5 (fp32) or 5e-3 (fp16, bf16). */
double sf_check_forward_bar(sf_dtype dtype);

/* Draws inputs as math.md recommends (seeded), rounds them to the activation type, poisons
 * every output with NaN, runs sf_scan_fwd as `launch` says (device memory is allocated
 * and freed here), and compares out, last_state and the saved states with the float64
 * reference evaluated on the same rounded inputs. A failed comparison is not an error:
 * it is reported in `result`. */
sf_status sf_check_fwd(sf_context *ctx, const sf_check_shape *shape, const sf_launch *launch,
                       uint64_t seed, sf_check_result *result);

#endif
