/* test_reference.c: the float64 reference against a closed form, finite differences and itself. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/check/reference.h"
#include "runtime/check/random_inputs.h"
#include "runtime/check/relerr.h"

/* ---- the cases: several shapes times every combination of flags -------------------- */

typedef struct shape {
  int batch, dim, seqlen, dstate, groups;
} shape;

static const shape shapes[] = {
    {1, 1, 1, 1, 1}, /* the smallest problem, L = 1 */
    {2, 6, 5, 3, 3}, /* groups > 1: two channels per group */
    {1, 4, 1, 3, 2}, /* L = 1 with groups */
    {2, 3, 5, 2, 1}, /* one group for all channels */
    {1, 6, 7, 2, 6}, /* one channel per group */
};
enum { SHAPES = sizeof shapes / sizeof shapes[0] };

/* Bits of a flag mask; the last one only matters to the backward. */
enum {
  F_B_VAR = 1 << 0,
  F_C_VAR = 1 << 1,
  F_D = 1 << 2,
  F_Z = 1 << 3,
  F_BIAS = 1 << 4,
  F_SOFTPLUS = 1 << 5,
  F_H0 = 1 << 6,
  F_DLAST = 1 << 7,
  MASKS = 1 << 8,
};

static void make_case(random_problem *rp, int s, int mask) {
  sf_ref_problem want = {
      .batch = shapes[s].batch,
      .dim = shapes[s].dim,
      .seqlen = shapes[s].seqlen,
      .dstate = shapes[s].dstate,
      .groups = shapes[s].groups,
      .B_var = mask & F_B_VAR,
      .C_var = mask & F_C_VAR,
      .has_D = mask & F_D,
      .has_z = mask & F_Z,
      .has_delta_bias = mask & F_BIAS,
      .softplus = mask & F_SOFTPLUS,
      .has_h0 = mask & F_H0,
  };
  random_A_init a_init = (mask + s) % 2 ? RANDOM_A_NEG_INDEX : RANDOM_A_NEG_EXP_UNIFORM;
  cr_assert(random_problem_make(rp, &want, a_init, 1000u * (unsigned)s + (unsigned)mask));
}

static double *alloc_doubles(size_t n) {
  double *x = malloc((n ? n : 1) * sizeof *x);
  cr_assert_not_null(x);
  return x;
}

/* ---- an independent evaluation: the closed form of the recurrence ------------------- *
 * h[t] = exp(A * sum_{r<=t} dt[r]) * h0 + sum_{s<=t} exp(A * sum_{s<r<=t} dt[r]) * dt[s] * B[s] * u[s]
 * written with its own indexing and pointwise functions. */

static double direct_B(const sf_ref_problem *p, const double *X, bool var, int b, int d,
                       int n, int t) {
  if (!var) return X[d * p->dstate + n];
  int channels_per_group = p->dim / p->groups;
  int group = d / channels_per_group;
  return X[((b * p->groups + group) * p->dstate + n) * p->seqlen + t];
}

static double direct_dt(const sf_ref_problem *p, int b, int d, int t) {
  double v = p->delta[(b * p->dim + d) * p->seqlen + t] +
             (p->has_delta_bias ? p->delta_bias[d] : 0.0);
  if (!p->softplus) return v;
  return v > 20.0 ? v : log(1.0 + exp(v));
}

/* h[b, d, t, n] by the closed form. */
static double direct_state(const sf_ref_problem *p, int b, int d, int t, int n) {
  double A = p->A[d * p->dstate + n];
  double from_h0 = 0.0;
  if (p->has_h0) {
    double all = 0.0;
    for (int r = 0; r <= t; r++) all += direct_dt(p, b, d, r);
    from_h0 = exp(A * all) * p->h0[(b * p->dim + d) * p->dstate + n];
  }
  double from_inputs = 0.0;
  for (int s = 0; s <= t; s++) {
    double after = 0.0;
    for (int r = s + 1; r <= t; r++) after += direct_dt(p, b, d, r);
    double us = p->u[(b * p->dim + d) * p->seqlen + s];
    from_inputs += exp(A * after) * direct_dt(p, b, d, s) * direct_B(p, p->B, p->B_var, b, d, n, s) * us;
  }
  return from_h0 + from_inputs;
}

static void direct_forward(const sf_ref_problem *p, double *out, double *last) {
  for (int b = 0; b < p->batch; b++)
    for (int d = 0; d < p->dim; d++) {
      for (int t = 0; t < p->seqlen; t++) {
        int i = (b * p->dim + d) * p->seqlen + t;
        double y = p->has_D ? p->D[d] * p->u[i] : 0.0;
        for (int n = 0; n < p->dstate; n++)
          y += direct_B(p, p->C, p->C_var, b, d, n, t) * direct_state(p, b, d, t, n);
        if (p->has_z) y = y * p->z[i] / (1.0 + exp(-p->z[i]));
        out[i] = y;
      }
      for (int n = 0; n < p->dstate; n++)
        last[(b * p->dim + d) * p->dstate + n] = direct_state(p, b, d, p->seqlen - 1, n);
    }
}

Test(reference, forward_matches_closed_form) {
  for (int s = 0; s < SHAPES; s++)
    for (int mask = 0; mask < F_DLAST; mask++) { /* F_DLAST is for the backward only */
      random_problem rp;
      make_case(&rp, s, mask);
      size_t nu = sf_ref_size_u(&rp.p), ns = sf_ref_size_state(&rp.p);
      double *out = alloc_doubles(nu), *last = alloc_doubles(ns);
      double *want_out = alloc_doubles(nu), *want_last = alloc_doubles(ns);
      cr_assert_eq(sf_ref_forward(&rp.p, out, last), SF_OK, "%s", sf_last_error());
      direct_forward(&rp.p, want_out, want_last);
      double e_out = relerr(out, want_out, nu), e_last = relerr(last, want_last, ns);
      cr_assert(e_out <= 1e-12, "shape %d flags 0x%x: out rel err %g", s, mask, e_out);
      cr_assert(e_last <= 1e-12, "shape %d flags 0x%x: last_state rel err %g", s, mask, e_last);
      free(out), free(last), free(want_out), free(want_last);
      random_problem_free(&rp);
    }
}

/* ---- the backward against central finite differences -------------------------------- */

/* The scalar whose gradient the backward computes: sum(out * W) + sum(last_state * V). */
static double loss(const sf_ref_problem *p, const double *W, const double *V, double *out,
                   double *last) {
  cr_assert_eq(sf_ref_forward(p, out, last), SF_OK, "%s", sf_last_error());
  double sum = 0.0;
  for (size_t i = 0; i < sf_ref_size_u(p); i++) sum += out[i] * W[i];
  if (V)
    for (size_t i = 0; i < sf_ref_size_state(p); i++) sum += last[i] * V[i];
  return sum;
}

/* d loss / d x[i] for every i, by central differences, perturbing x in place. */
static void finite_differences(const sf_ref_problem *p, double *x, size_t n, const double *W,
                               const double *V, double *grad) {
  double *out = alloc_doubles(sf_ref_size_u(p)), *last = alloc_doubles(sf_ref_size_state(p));
  for (size_t i = 0; i < n; i++) {
    double saved = x[i], step = 1e-5 * fmax(1.0, fabs(saved));
    double hi = saved + step, lo = saved - step;
    x[i] = hi;
    double l_hi = loss(p, W, V, out, last);
    x[i] = lo;
    double l_lo = loss(p, W, V, out, last);
    x[i] = saved;
    grad[i] = (l_hi - l_lo) / (hi - lo); /* the step actually taken after rounding */
  }
  free(out), free(last);
}

/* Checks one gradient of rp's backward against finite differences of its input x. */
static void check_gradient(random_problem *rp, const char *name, double *x, size_t n,
                           const double *analytic, const double *V, const char *where) {
  double *fd = alloc_doubles(n);
  finite_differences(&rp->p, x, n, rp->dout, V, fd);
  double e = relerr(analytic, fd, n);
  cr_assert(e <= 1e-6, "%s: d%s rel err %g", where, name, e);
  free(fd);
}

/* Runs the backward of rp and checks every gradient of an input the problem has. */
static void check_backward(random_problem *rp, bool with_dlast, const char *where) {
  const sf_ref_problem *p = &rp->p;
  size_t nu = sf_ref_size_u(p), nA = sf_ref_size_A(p), nB = sf_ref_size_B(p),
         nC = sf_ref_size_C(p), nD = sf_ref_size_D(p), ns = sf_ref_size_state(p);
  sf_ref_grads g = {
      .du = alloc_doubles(nu),
      .ddelta = alloc_doubles(nu),
      .dA = alloc_doubles(nA),
      .dB = alloc_doubles(nB),
      .dC = alloc_doubles(nC),
      .dD = p->has_D ? alloc_doubles(nD) : NULL,
      .dz = p->has_z ? alloc_doubles(nu) : NULL,
      .ddelta_bias = p->has_delta_bias ? alloc_doubles(nD) : NULL,
      .dh0 = p->has_h0 ? alloc_doubles(ns) : NULL,
  };
  const double *V = with_dlast ? rp->d_last_state : NULL;
  cr_assert_eq(sf_ref_backward(p, rp->dout, V, &g), SF_OK, "%s", sf_last_error());

  check_gradient(rp, "u", rp->u, nu, g.du, V, where);
  check_gradient(rp, "delta", rp->delta, nu, g.ddelta, V, where);
  check_gradient(rp, "A", rp->A, nA, g.dA, V, where);
  check_gradient(rp, "B", rp->B, nB, g.dB, V, where);
  check_gradient(rp, "C", rp->C, nC, g.dC, V, where);
  if (p->has_D) check_gradient(rp, "D", rp->D, nD, g.dD, V, where);
  if (p->has_z) check_gradient(rp, "z", rp->z, nu, g.dz, V, where);
  if (p->has_delta_bias) check_gradient(rp, "delta_bias", rp->delta_bias, nD, g.ddelta_bias, V, where);
  if (p->has_h0) check_gradient(rp, "h0", rp->h0, ns, g.dh0, V, where);

  double *all[] = {g.du, g.ddelta, g.dA, g.dB, g.dC, g.dD, g.dz, g.ddelta_bias, g.dh0};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

/* Every flag combination, with and without d_last_state, on one shape. */
static void backward_all_flags(int s) {
  for (int mask = 0; mask < MASKS; mask++) {
    random_problem rp;
    make_case(&rp, s, mask);
    char where[64];
    snprintf(where, sizeof where, "shape %d flags 0x%x", s, mask);
    check_backward(&rp, mask & F_DLAST, where);
    random_problem_free(&rp);
  }
}

/* One test per shape, so that they run in parallel and a failure names its shape. */
Test(reference, backward_matches_finite_differences_shape0) { backward_all_flags(0); }
Test(reference, backward_matches_finite_differences_shape1) { backward_all_flags(1); }
Test(reference, backward_matches_finite_differences_shape2) { backward_all_flags(2); }
Test(reference, backward_matches_finite_differences_shape3) { backward_all_flags(3); }
Test(reference, backward_matches_finite_differences_shape4) { backward_all_flags(4); }

/* softplus is linear above 20: dt = v there and ddelta = ddt. */
Test(reference, softplus_above_20) {
  sf_ref_problem want = {.batch = 2, .dim = 4, .seqlen = 6, .dstate = 3, .groups = 2,
                         .B_var = true, .C_var = true, .has_D = true, .has_z = true,
                         .has_delta_bias = true, .softplus = true, .has_h0 = true};
  random_problem rp;
  cr_assert(random_problem_make(&rp, &want, RANDOM_A_NEG_EXP_UNIFORM, 77));
  /* Push every odd step well above 20 (bias is about -4) so the step of the finite
   * difference never crosses the switch. Step 0 stays small: a huge dt there would make
   * h0's effect (and so its finite difference) vanish below rounding. */
  rng r = rng_seeded(78);
  for (size_t i = 1; i < sf_ref_size_u(&rp.p); i += 2) rp.delta[i] = rng_uniform(&r, 25.0, 30.0);

  size_t nu = sf_ref_size_u(&rp.p), ns = sf_ref_size_state(&rp.p);
  double *out = alloc_doubles(nu), *last = alloc_doubles(ns);
  double *want_out = alloc_doubles(nu), *want_last = alloc_doubles(ns);
  cr_assert_eq(sf_ref_forward(&rp.p, out, last), SF_OK);
  direct_forward(&rp.p, want_out, want_last);
  cr_assert(relerr(out, want_out, nu) <= 1e-12);
  cr_assert(relerr(last, want_last, ns) <= 1e-12);
  check_backward(&rp, true, "softplus above 20");
  free(out), free(last), free(want_out), free(want_last);
  random_problem_free(&rp);
}

/* ---- last_state, and the outputs not depending on each other ------------------------ */

/* The steps [t0, t0 + len) of an array whose last axis is time (length L). */
static double *slice_time(const double *x, size_t rows, int L, int t0, int len) {
  double *y = alloc_doubles(rows * (size_t)len);
  for (size_t r = 0; r < rows; r++) memcpy(y + r * len, x + r * L + t0, (size_t)len * sizeof *y);
  return y;
}

/* The problem restricted to the steps [t0, t0 + len), starting from state h0. Arrays it
 * allocates are put in owned[] for the caller to free. */
static sf_ref_problem time_window(const sf_ref_problem *p, int t0, int len, const double *h0,
                                  double *owned[5]) {
  sf_ref_problem q = *p;
  q.seqlen = len;
  size_t rows = (size_t)p->batch * p->dim, bc_rows = (size_t)p->batch * p->groups * p->dstate;
  q.u = owned[0] = slice_time(p->u, rows, p->seqlen, t0, len);
  q.delta = owned[1] = slice_time(p->delta, rows, p->seqlen, t0, len);
  owned[2] = owned[3] = owned[4] = NULL;
  if (p->has_z) q.z = owned[2] = slice_time(p->z, rows, p->seqlen, t0, len);
  if (p->B_var) q.B = owned[3] = slice_time(p->B, bc_rows, p->seqlen, t0, len);
  if (p->C_var) q.C = owned[4] = slice_time(p->C, bc_rows, p->seqlen, t0, len);
  q.has_h0 = h0 != NULL;
  q.h0 = h0;
  return q;
}

Test(reference, last_state_is_the_final_state) {
  for (int s = 0; s < SHAPES; s++)
    for (int mask = 0; mask < F_DLAST; mask++) {
      random_problem rp;
      make_case(&rp, s, mask);
      const sf_ref_problem *p = &rp.p;
      size_t nu = sf_ref_size_u(p), ns = sf_ref_size_state(p);
      double *out = alloc_doubles(nu), *last = alloc_doubles(ns);
      double *out_alone = alloc_doubles(nu), *last_alone = alloc_doubles(ns);
      cr_assert_eq(sf_ref_forward(p, out, last), SF_OK);

      /* Each output is the same whether or not the other is asked for. */
      cr_assert_eq(sf_ref_forward(p, out_alone, NULL), SF_OK);
      cr_assert_eq(sf_ref_forward(p, NULL, last_alone), SF_OK);
      cr_assert(memcmp(out, out_alone, nu * sizeof *out) == 0, "shape %d flags 0x%x", s, mask);
      cr_assert(memcmp(last, last_alone, ns * sizeof *last) == 0, "shape %d flags 0x%x", s, mask);

      /* last_state is h at L - 1. */
      for (int b = 0; b < p->batch; b++)
        for (int d = 0; d < p->dim; d++)
          for (int n = 0; n < p->dstate; n++) {
            double h = direct_state(p, b, d, p->seqlen - 1, n);
            double got = last[((size_t)b * p->dim + d) * p->dstate + n];
            cr_assert(fabs(got - h) <= 1e-12 * fmax(1.0, fabs(h)),
                      "shape %d flags 0x%x: last_state %g, h[L-1] %g", s, mask, got, h);
          }

      /* Running the first k steps, then the rest from their last_state, is the same scan. */
      if (p->seqlen >= 2) {
        int k = p->seqlen / 2;
        double *first_owned[5], *rest_owned[5];
        double *out1 = alloc_doubles(nu), *last1 = alloc_doubles(ns);
        double *out2 = alloc_doubles(nu), *last2 = alloc_doubles(ns);
        sf_ref_problem first = time_window(p, 0, k, p->has_h0 ? p->h0 : NULL, first_owned);
        cr_assert_eq(sf_ref_forward(&first, out1, last1), SF_OK);
        sf_ref_problem rest = time_window(p, k, p->seqlen - k, last1, rest_owned);
        cr_assert_eq(sf_ref_forward(&rest, out2, last2), SF_OK);
        cr_assert(relerr(last2, last, ns) <= 1e-14, "shape %d flags 0x%x", s, mask);
        for (size_t row = 0; row < (size_t)p->batch * p->dim; row++)
          for (int t = 0; t < p->seqlen; t++) {
            double got = t < k ? out1[row * k + t] : out2[row * (p->seqlen - k) + t - k];
            double ref = out[row * p->seqlen + t];
            cr_assert(fabs(got - ref) <= 1e-14 * fmax(1.0, fabs(ref)),
                      "shape %d flags 0x%x: split out %g, whole %g", s, mask, got, ref);
          }
        for (int i = 0; i < 5; i++) free(first_owned[i]), free(rest_owned[i]);
        free(out1), free(last1), free(out2), free(last2);
      }
      free(out), free(last), free(out_alone), free(last_alone);
      random_problem_free(&rp);
    }
}

/* ---- gradients of absent inputs, and bad problems ----------------------------------- */

/* dD, ddelta_bias and dh0 of a problem without them equal those of the problem with
 * them present and zero. */
Test(reference, absent_inputs_have_the_gradient_at_zero) {
  sf_ref_problem want = {.batch = 2, .dim = 6, .seqlen = 5, .dstate = 4, .groups = 3,
                         .B_var = true, .C_var = false, .has_z = true, .softplus = true};
  random_problem rp;
  cr_assert(random_problem_make(&rp, &want, RANDOM_A_NEG_INDEX, 5));
  size_t nD = sf_ref_size_D(&rp.p), ns = sf_ref_size_state(&rp.p);
  double *dD = alloc_doubles(nD), *dbias = alloc_doubles(nD), *dh0 = alloc_doubles(ns);
  sf_ref_grads absent = {.dD = dD, .ddelta_bias = dbias, .dh0 = dh0};
  cr_assert_eq(sf_ref_backward(&rp.p, rp.dout, rp.d_last_state, &absent), SF_OK);

  double *zeros = calloc(ns + nD, sizeof *zeros);
  cr_assert_not_null(zeros);
  sf_ref_problem zeroed = rp.p;
  zeroed.has_D = zeroed.has_delta_bias = zeroed.has_h0 = true;
  zeroed.D = zeroed.delta_bias = zeros;
  zeroed.h0 = zeros;
  double *dD0 = alloc_doubles(nD), *dbias0 = alloc_doubles(nD), *dh00 = alloc_doubles(ns);
  sf_ref_grads present = {.dD = dD0, .ddelta_bias = dbias0, .dh0 = dh00};
  cr_assert_eq(sf_ref_backward(&zeroed, rp.dout, rp.d_last_state, &present), SF_OK);

  cr_assert(relerr(dD, dD0, nD) <= 1e-15);
  cr_assert(relerr(dbias, dbias0, nD) <= 1e-15);
  cr_assert(relerr(dh0, dh00, ns) <= 1e-15);
  /* And they are not trivially zero. */
  cr_assert(relerr(dD, zeros, nD) == INFINITY);
  free(dD), free(dbias), free(dh0), free(dD0), free(dbias0), free(dh00), free(zeros);
  random_problem_free(&rp);
}

Test(reference, rejects_bad_problems) {
  sf_ref_problem want = {.batch = 1, .dim = 6, .seqlen = 3, .dstate = 2, .groups = 3};
  random_problem rp;
  cr_assert(random_problem_make(&rp, &want, RANDOM_A_NEG_INDEX, 9));
  double out[18], dz[18];

  sf_ref_problem bad = rp.p;
  bad.groups = 4; /* does not divide 6 */
  cr_assert_eq(sf_ref_forward(&bad, out, NULL), SF_EINVAL);
  cr_assert_not_null(strstr(sf_last_error(), "groups"), "%s", sf_last_error());

  bad = rp.p;
  bad.has_D = true; /* but D is NULL */
  cr_assert_eq(sf_ref_forward(&bad, out, NULL), SF_EINVAL);
  cr_assert_not_null(strstr(sf_last_error(), "D"), "%s", sf_last_error());

  sf_ref_grads g = {.dz = dz}; /* no gate to differentiate */
  cr_assert_eq(sf_ref_backward(&rp.p, rp.dout, NULL, &g), SF_EINVAL);
  cr_assert_eq(sf_ref_backward(&rp.p, NULL, NULL, &g), SF_EINVAL);
  random_problem_free(&rp);
}

/* ---- the error measure itself --------------------------------------------------------- */

Test(reference, relerr_measures_and_fails_non_finite) {
  double ref[2] = {3.0, 4.0}, x[2] = {3.0, 4.5};
  cr_assert_float_eq(relerr(x, ref, 2), 0.1, 1e-15);
  cr_assert_eq(relerr(ref, ref, 2), 0.0);
  x[1] = NAN;
  cr_assert_eq(relerr(x, ref, 2), INFINITY);
  x[1] = INFINITY;
  cr_assert_eq(relerr(x, ref, 2), INFINITY);
  float xf[2] = {3.0f, NAN};
  cr_assert_eq(relerr_f32(xf, ref, 2), INFINITY);
  xf[1] = 4.0f;
  cr_assert_eq(relerr_f32(xf, ref, 2), 0.0);
}
