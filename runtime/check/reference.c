/* reference.c: docs/math.md's forward and backward in float64, plain sequential loops. */
#include "runtime/check/reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

/* ---- sizes and indexing ------------------------------------------------------------ */

size_t sf_ref_size_u(const sf_ref_problem *p) {
  return (size_t)p->batch * (size_t)p->dim * (size_t)p->seqlen;
}

size_t sf_ref_size_A(const sf_ref_problem *p) { return (size_t)p->dim * (size_t)p->dstate; }

static size_t size_BC(const sf_ref_problem *p, bool var) {
  if (var) return (size_t)p->batch * (size_t)p->groups * (size_t)p->dstate * (size_t)p->seqlen;
  return (size_t)p->dim * (size_t)p->dstate;
}

size_t sf_ref_size_B(const sf_ref_problem *p) { return size_BC(p, p->B_var); }
size_t sf_ref_size_C(const sf_ref_problem *p) { return size_BC(p, p->C_var); }
size_t sf_ref_size_D(const sf_ref_problem *p) { return (size_t)p->dim; }

size_t sf_ref_size_state(const sf_ref_problem *p) {
  return (size_t)p->batch * (size_t)p->dim * (size_t)p->dstate;
}

/* (batch, dim, L): u, delta, z, out, dout. */
static size_t at_bdt(const sf_ref_problem *p, int b, int d, int t) {
  return ((size_t)b * (size_t)p->dim + (size_t)d) * (size_t)p->seqlen + (size_t)t;
}

/* (batch, dim, N): h0, last_state, d_last_state. */
static size_t at_bdn(const sf_ref_problem *p, int b, int d, int n) {
  return ((size_t)b * (size_t)p->dim + (size_t)d) * (size_t)p->dstate + (size_t)n;
}

/* B or C: variable (batch, G, N, L) read through channel d's group, or fixed (dim, N). */
static size_t at_BC(const sf_ref_problem *p, bool var, int b, int d, int n, int t) {
  if (!var) return (size_t)d * (size_t)p->dstate + (size_t)n;
  int g = d / (p->dim / p->groups);
  return (((size_t)b * (size_t)p->groups + (size_t)g) * (size_t)p->dstate + (size_t)n) *
             (size_t)p->seqlen +
         (size_t)t;
}

/* ---- the pointwise pieces ----------------------------------------------------------- */

static double sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }

/* dt for one (b, d, t); *dt_dv receives d(dt)/d(delta), the factor ddelta = ddt * it. */
static double time_step(const sf_ref_problem *p, int b, int d, int t, double *dt_dv) {
  double v = p->delta[at_bdt(p, b, d, t)];
  if (p->has_delta_bias) v += p->delta_bias[d];
  if (p->softplus && v <= 20.0) {
    *dt_dv = sigmoid(v);
    return log1p(exp(v));
  }
  *dt_dv = 1.0; /* no softplus, or its linear part above 20 */
  return v;
}

/* ---- validation --------------------------------------------------------------------- */

sf_status sf_ref_validate(const sf_ref_problem *p) {
  if (!p) return sf_fail(SF_EINVAL, "reference: problem is NULL");
  if (p->batch < 1 || p->dim < 1 || p->seqlen < 1 || p->dstate < 1 || p->groups < 1)
    return sf_fail(SF_EINVAL,
                   "reference: batch, dim, seqlen, dstate, groups must be >= 1, got "
                   "%d, %d, %d, %d, %d",
                   p->batch, p->dim, p->seqlen, p->dstate, p->groups);
  if (p->dim % p->groups != 0)
    return sf_fail(SF_EINVAL, "reference: groups (%d) must divide dim (%d)", p->groups,
                   p->dim);
  const struct {
    const char *name;
    bool needed;
    const double *ptr;
  } arrays[] = {
      {"u", true, p->u},
      {"delta", true, p->delta},
      {"A", true, p->A},
      {"B", true, p->B},
      {"C", true, p->C},
      {"D", p->has_D, p->D},
      {"z", p->has_z, p->z},
      {"delta_bias", p->has_delta_bias, p->delta_bias},
      {"h0", p->has_h0, p->h0},
  };
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
    if (arrays[i].needed && !arrays[i].ptr)
      return sf_fail(SF_EINVAL, "reference: %s is NULL but the problem uses it",
                     arrays[i].name);
  return SF_OK;
}

/* ---- forward ------------------------------------------------------------------------ */

sf_status sf_ref_forward(const sf_ref_problem *p, double *out, double *last_state) {
  sf_status st = sf_ref_validate(p);
  if (st != SF_OK) return st;
  const int N = p->dstate;
  double *h = malloc((size_t)N * sizeof *h);
  if (!h) return sf_fail(SF_ENOMEM, "reference: no memory for %d states", N);

  for (int b = 0; b < p->batch; b++) {
    for (int d = 0; d < p->dim; d++) {
      for (int n = 0; n < N; n++) h[n] = p->has_h0 ? p->h0[at_bdn(p, b, d, n)] : 0.0;
      for (int t = 0; t < p->seqlen; t++) {
        double dt_dv;
        double dt = time_step(p, b, d, t, &dt_dv);
        double u = p->u[at_bdt(p, b, d, t)];
        double y = 0.0;
        for (int n = 0; n < N; n++) {
          double a = exp(dt * p->A[(size_t)d * N + n]);
          h[n] = a * h[n] + dt * p->B[at_BC(p, p->B_var, b, d, n, t)] * u;
          y += p->C[at_BC(p, p->C_var, b, d, n, t)] * h[n];
        }
        if (p->has_D) y += p->D[d] * u;
        if (out) {
          double z = p->has_z ? p->z[at_bdt(p, b, d, t)] : 0.0;
          out[at_bdt(p, b, d, t)] = p->has_z ? y * z * sigmoid(z) : y;
        }
      }
      if (last_state)
        for (int n = 0; n < N; n++) last_state[at_bdn(p, b, d, n)] = h[n];
    }
  }
  free(h);
  return SF_OK;
}

/* ---- backward ----------------------------------------------------------------------- */

static void zero(double *x, size_t n) {
  if (x) memset(x, 0, n * sizeof *x);
}

sf_status sf_ref_backward(const sf_ref_problem *p, const double *dout,
                          const double *d_last_state, sf_ref_grads *g) {
  sf_status st = sf_ref_validate(p);
  if (st != SF_OK) return st;
  if (!dout) return sf_fail(SF_EINVAL, "reference: dout is NULL");
  if (!g) return sf_fail(SF_EINVAL, "reference: grads is NULL");
  if (g->dz && !p->has_z)
    return sf_fail(SF_EINVAL, "reference: dz asked for but the problem has no gate z");

  const int N = p->dstate, L = p->seqlen;
  /* hs[(t + 1) * N + n] is h[t, n]; row 0 is the initial state h[-1]. */
  double *hs = malloc(((size_t)L + 1) * (size_t)N * sizeof *hs);
  double *carry = malloc((size_t)N * sizeof *carry);
  if (!hs || !carry) {
    free(hs);
    free(carry);
    return sf_fail(SF_ENOMEM, "reference: no memory for %d x %d states", L + 1, N);
  }

  /* Reductions over channels, batch or time accumulate, so start them at zero. */
  zero(g->dA, sf_ref_size_A(p));
  zero(g->dB, sf_ref_size_B(p));
  zero(g->dC, sf_ref_size_C(p));
  zero(g->dD, sf_ref_size_D(p));
  zero(g->ddelta_bias, sf_ref_size_D(p));

  for (int b = 0; b < p->batch; b++) {
    for (int d = 0; d < p->dim; d++) {
      /* Forward again, keeping every state. */
      for (int n = 0; n < N; n++) hs[n] = p->has_h0 ? p->h0[at_bdn(p, b, d, n)] : 0.0;
      for (int t = 0; t < L; t++) {
        double dt_dv;
        double dt = time_step(p, b, d, t, &dt_dv);
        double u = p->u[at_bdt(p, b, d, t)];
        for (int n = 0; n < N; n++) {
          double a = exp(dt * p->A[(size_t)d * N + n]);
          hs[(size_t)(t + 1) * N + n] =
              a * hs[(size_t)t * N + n] + dt * p->B[at_BC(p, p->B_var, b, d, n, t)] * u;
        }
      }

      /* Reverse scan: carry[n] holds a[t+1, n] * dh[t+1, n], starting from d_last_state. */
      for (int n = 0; n < N; n++)
        carry[n] = d_last_state ? d_last_state[at_bdn(p, b, d, n)] : 0.0;
      for (int t = L - 1; t >= 0; t--) {
        size_t i = at_bdt(p, b, d, t);
        double dt_dv;
        double dt = time_step(p, b, d, t, &dt_dv);
        double u = p->u[i];
        double Dd = p->has_D ? p->D[d] : 0.0;

        /* The gate: g = dout * silu(z), and dz needs y. */
        double gy = dout[i];
        if (p->has_z) {
          double y = Dd * u;
          for (int n = 0; n < N; n++)
            y += p->C[at_BC(p, p->C_var, b, d, n, t)] * hs[(size_t)(t + 1) * N + n];
          double z = p->z[i], s = sigmoid(z);
          if (g->dz) g->dz[i] = dout[i] * y * s * (1.0 + z * (1.0 - s));
          gy = dout[i] * z * s;
        }

        double du = Dd * gy, ddt = 0.0;
        for (int n = 0; n < N; n++) {
          size_t iB = at_BC(p, p->B_var, b, d, n, t), iC = at_BC(p, p->C_var, b, d, n, t);
          double A = p->A[(size_t)d * N + n], Bv = p->B[iB];
          double a = exp(dt * A);
          double h_prev = hs[(size_t)t * N + n], h = hs[(size_t)(t + 1) * N + n];
          double dh = p->C[iC] * gy + carry[n];
          du += dh * dt * Bv;
          ddt += dh * (Bv * u + A * a * h_prev);
          if (g->dA) g->dA[(size_t)d * N + n] += dh * dt * a * h_prev;
          if (g->dB) g->dB[iB] += dh * dt * u;
          if (g->dC) g->dC[iC] += gy * h;
          carry[n] = a * dh;
        }
        if (g->du) g->du[i] = du;
        if (g->dD) g->dD[d] += gy * u;
        double ddelta = ddt * dt_dv;
        if (g->ddelta) g->ddelta[i] = ddelta;
        if (g->ddelta_bias) g->ddelta_bias[d] += ddelta;
      }
      /* After t = 0 the carry is a[0] * dh[0], the gradient of the initial state. */
      if (g->dh0)
        for (int n = 0; n < N; n++) g->dh0[at_bdn(p, b, d, n)] = carry[n];
    }
  }
  free(hs);
  free(carry);
  return SF_OK;
}
