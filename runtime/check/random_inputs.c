/* random_inputs.c: splitmix64, uniform and normal draws, and random scan problems. */
#include "runtime/check/random_inputs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

rng rng_seeded(uint64_t seed) {
  rng r = {seed};
  return r;
}

uint64_t rng_next(rng *r) {
  uint64_t x = (r->state += 0x9E3779B97F4A7C15ull);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double rng_uniform(rng *r, double lo, double hi) {
  double unit = (double)(rng_next(r) >> 11) * 0x1p-53; /* 53 random bits in [0, 1) */
  return lo + (hi - lo) * unit;
}

double rng_normal(rng *r) {
  double u1 = 1.0 - rng_uniform(r, 0.0, 1.0); /* (0, 1]: log stays finite */
  double u2 = rng_uniform(r, 0.0, 1.0);
  const double two_pi = 6.283185307179586;
  return sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
}

void rng_fill_uniform(rng *r, double *x, size_t n, double lo, double hi) {
  for (size_t i = 0; i < n; i++) x[i] = rng_uniform(r, lo, hi);
}

void rng_fill_normal(rng *r, double *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = rng_normal(r);
}

void random_problem_free(random_problem *rp) {
  double **arrays[] = {&rp->u, &rp->delta, &rp->A,  &rp->B,    &rp->C,           &rp->D,
                       &rp->delta_bias, &rp->z, &rp->h0, &rp->dout, &rp->d_last_state};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
    free(*arrays[i]);
    *arrays[i] = NULL;
  }
}

/* NULL when not wanted; sets *failed when wanted and malloc fails. */
static double *alloc_if(bool wanted, size_t n, bool *failed) {
  if (!wanted) return NULL;
  double *x = malloc(n * sizeof *x);
  if (!x) *failed = true;
  return x;
}

bool random_problem_make(random_problem *rp, const sf_ref_problem *shape,
                         random_A_init a_init, uint64_t seed) {
  memset(rp, 0, sizeof *rp);
  rp->p = *shape;
  const sf_ref_problem *p = &rp->p;
  size_t nu = sf_ref_size_u(p), nA = sf_ref_size_A(p), nB = sf_ref_size_B(p),
         nC = sf_ref_size_C(p), nD = sf_ref_size_D(p), ns = sf_ref_size_state(p);
  bool failed = false;
  rp->u = alloc_if(true, nu, &failed);
  rp->delta = alloc_if(true, nu, &failed);
  rp->A = alloc_if(true, nA, &failed);
  rp->B = alloc_if(true, nB, &failed);
  rp->C = alloc_if(true, nC, &failed);
  rp->D = alloc_if(p->has_D, nD, &failed);
  rp->delta_bias = alloc_if(p->has_delta_bias, nD, &failed);
  rp->z = alloc_if(p->has_z, nu, &failed);
  rp->h0 = alloc_if(p->has_h0, ns, &failed);
  rp->dout = alloc_if(true, nu, &failed);
  rp->d_last_state = alloc_if(true, ns, &failed);
  if (failed) {
    random_problem_free(rp);
    return false;
  }

  rng r = rng_seeded(seed);
  rng_fill_normal(&r, rp->u, nu);
  if (p->softplus)
    rng_fill_uniform(&r, rp->delta, nu, -1.0, 1.0);
  else
    rng_fill_uniform(&r, rp->delta, nu, 0.01, 0.1);
  for (int d = 0; d < p->dim; d++)
    for (int n = 0; n < p->dstate; n++)
      rp->A[(size_t)d * p->dstate + n] =
          a_init == RANDOM_A_NEG_INDEX ? -(double)(n + 1) : -exp(rng_uniform(&r, 0.0, 1.0));
  rng_fill_normal(&r, rp->B, nB);
  rng_fill_normal(&r, rp->C, nC);
  if (rp->D) rng_fill_normal(&r, rp->D, nD);
  if (rp->delta_bias) {
    if (p->softplus)
      for (size_t i = 0; i < nD; i++) rp->delta_bias[i] = -4.0 + rng_uniform(&r, -0.5, 0.5);
    else
      rng_fill_uniform(&r, rp->delta_bias, nD, 0.0, 0.05);
  }
  if (rp->z) rng_fill_normal(&r, rp->z, nu);
  if (rp->h0) rng_fill_normal(&r, rp->h0, ns);
  rng_fill_normal(&r, rp->dout, nu);
  rng_fill_normal(&r, rp->d_last_state, ns);

  rp->p.u = rp->u;
  rp->p.delta = rp->delta;
  rp->p.A = rp->A;
  rp->p.B = rp->B;
  rp->p.C = rp->C;
  rp->p.D = rp->D;
  rp->p.delta_bias = rp->delta_bias;
  rp->p.z = rp->z;
  rp->p.h0 = rp->h0;
  return true;
}
