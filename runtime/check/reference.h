/* reference.h: the float64 reference of docs/math.md's forward and backward, the oracle of every test. */
#ifndef SCANFORGE_REFERENCE_H
#define SCANFORGE_REFERENCE_H

#include <stdbool.h>
#include <stddef.h>

#include "scanforge/scanforge.h"

/* One problem, every array contiguous double in docs/math.md's layouts:
 *   u, delta, z       (batch, dim, L)
 *   A                 (dim, N)
 *   B, C              variable: (batch, groups, N, L); fixed: (dim, N)
 *   D, delta_bias     (dim,)
 *   h0                (batch, dim, N)
 * Optional inputs are read only when their flag is set. */
typedef struct sf_ref_problem {
  int batch, dim, seqlen, dstate, groups; /* groups divides dim */
  bool B_var, C_var;
  bool has_D, has_z, has_delta_bias, softplus, has_h0;
  const double *u, *delta;
  const double *A;
  const double *B, *C;
  const double *D, *delta_bias;
  const double *z;
  const double *h0;
} sf_ref_problem;

/* Gradients, each in its input's layout; a NULL pointer skips that gradient. Every
 * requested gradient is overwritten (not accumulated into). dD, ddelta_bias and dh0 may
 * be asked for when their input is absent: they are then the gradient at a zero input. */
typedef struct sf_ref_grads {
  double *du, *ddelta, *dA, *dB, *dC, *dD, *dz, *ddelta_bias, *dh0;
} sf_ref_grads;

/* Element counts of each tensor of a problem. */
size_t sf_ref_size_u(const sf_ref_problem *p);     /* u, delta, z, out, dout */
size_t sf_ref_size_A(const sf_ref_problem *p);     /* A */
size_t sf_ref_size_B(const sf_ref_problem *p);     /* B (variable or fixed) */
size_t sf_ref_size_C(const sf_ref_problem *p);     /* C (variable or fixed) */
size_t sf_ref_size_D(const sf_ref_problem *p);     /* D, delta_bias */
size_t sf_ref_size_state(const sf_ref_problem *p); /* h0, last_state, d_last_state */

/* Checks the shape and that every array the flags ask for is present. */
sf_status sf_ref_validate(const sf_ref_problem *p);

/* out (batch, dim, L) and last_state (batch, dim, N); either may be NULL to skip.
 * SF_EINVAL for a bad problem, SF_ENOMEM when scratch cannot be allocated. */
sf_status sf_ref_forward(const sf_ref_problem *p, double *out, double *last_state);

/* dout (batch, dim, L); d_last_state (batch, dim, N) or NULL (zero). SF_EINVAL also
 * when dz is asked for without a gate. */
sf_status sf_ref_backward(const sf_ref_problem *p, const double *dout,
                          const double *d_last_state, sf_ref_grads *g);

#endif
