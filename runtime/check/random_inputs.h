/* random_inputs.h: a seeded RNG and whole random scan problems with docs/math.md's recommended inputs. */
#ifndef SCANFORGE_RANDOM_INPUTS_H
#define SCANFORGE_RANDOM_INPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/check/reference.h"

/* splitmix64: the same seed gives the same stream on every machine. */
typedef struct rng {
  uint64_t state;
} rng;

rng rng_seeded(uint64_t seed);
uint64_t rng_next(rng *r);
/* Uniform in [lo, hi). */
double rng_uniform(rng *r, double lo, double hi);
/* Standard normal (Box-Muller). */
double rng_normal(rng *r);
void rng_fill_uniform(rng *r, double *x, size_t n, double lo, double hi);
void rng_fill_normal(rng *r, double *x, size_t n);

/* The two initialisations of A that docs/math.md recommends. */
typedef enum random_A_init {
  RANDOM_A_NEG_EXP_UNIFORM, /* A = -exp(U(0, 1)) */
  RANDOM_A_NEG_INDEX,       /* A[d, n] = -(n + 1), the usual S4D-real start */
} random_A_init;

/* A problem and the arrays it points into, all owned. Inputs whose flag is off are NULL. */
typedef struct random_problem {
  sf_ref_problem p; /* shape and flags as asked; pointers set to the arrays below */
  double *u, *delta, *A, *B, *C, *D, *delta_bias, *z, *h0;
  double *dout, *d_last_state; /* cotangents for a backward: always filled */
} random_problem;

/* Allocates and fills every array for the shape and flags of `shape` (its pointers are
 * ignored): u, B, C, z, D, h0, dout, d_last_state standard normal; A as `a_init`;
 * with softplus, delta U(-1, 1) and delta_bias -4 + U(-0.5, 0.5) (dt of a few
 * hundredths); without it, dt must stay positive, so delta U(0.01, 0.1) and delta_bias
 * U(0, 0.05). Returns false (having freed everything) when memory runs out. */
bool random_problem_make(random_problem *rp, const sf_ref_problem *shape,
                         random_A_init a_init, uint64_t seed);
void random_problem_free(random_problem *rp);

#endif
