/* check.h: run the forward or the backward on fresh random inputs and measure it against the
 * float64 reference. */
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
  bool d_last_state; /* backward: a cotangent for last_state too (else zero) */
  bool deterministic; /* backward: the bitwise-reproducible mode */
  int64_t state_interval; /* steps between saved states (sf_scan_fwd_args'); 0: the default */
} sf_check_shape;

typedef struct sf_check_result {
  double out_error;         /* relative error of out (docs/math.md's measure) */
  double last_state_error;  /* of last_state */
  double saved_error;       /* of the saved states (the backward's checkpoints) */
  double bar;               /* docs/math.md's forward bar for the dtype */
  bool passed;              /* every error within the bar (NaN or Inf never passes) */
  sf_variant variant;       /* what ran on the device (unset on the host) */
} sf_check_result;

/* docs/math.md's bar for the forward output of a dtype: 1e-5 (fp32) or 5e-3 (fp16, bf16). */
double sf_check_forward_bar(sf_dtype dtype);

/* Draws inputs as docs/math.md recommends (seeded), rounds them to the activation type, poisons
 * every output with NaN, runs sf_scan_fwd as `launch` says (device memory is allocated
 * and freed here), and compares out, last_state and the saved states with the float64
 * reference evaluated on the same rounded inputs. A failed comparison is not an error:
 * it is reported in `result`. */
sf_status sf_check_fwd(sf_context *ctx, const sf_check_shape *shape, const sf_launch *launch,
                       uint64_t seed, sf_check_result *result);

/* ---- the backward --------------------------------------------------------------- */

enum { SF_CHECK_MAX_GRADS = 9 };

typedef struct sf_check_grad {
  const char *name; /* "du", "ddelta", "dz", "dA", "dB", "dC", "dD", "ddelta_bias", "dh0" */
  double error;     /* relative error (docs/math.md's measure) */
} sf_check_grad;

typedef struct sf_check_bwd_result {
  /* The gradients the shape has (dz with z, dD with D, ddelta_bias with delta_bias, dh0
   * with h0; the others always), in the order of the names above. */
  sf_check_grad grads[SF_CHECK_MAX_GRADS];
  int count;
  double bar;  /* docs/math.md's gradient bar for the dtype */
  bool passed; /* every error within the bar (NaN or Inf never passes) */
  uint64_t checksum; /* XXH3 of every gradient's bytes: equal runs give equal checksums */
} sf_check_bwd_result;

/* docs/math.md's bar for every gradient of a dtype: 1e-4 (fp32) or 1e-2 (fp16, bf16). */
double sf_check_backward_bar(sf_dtype dtype);

/* As sf_check_fwd, for the backward: draws inputs and cotangents (dout, and d_last_state
 * when the shape says), rounds them to the activation type, runs sf_scan_fwd on the same
 * path for the saved states, poisons every gradient with NaN, runs sf_scan_bwd and
 * compares each gradient with the float64 reference. A failed comparison is reported in
 * `result`; a status other than SF_OK means the check could not run (the call failed). */
sf_status sf_check_bwd(sf_context *ctx, const sf_check_shape *shape, const sf_launch *launch,
                       uint64_t seed, sf_check_bwd_result *result);

#endif
