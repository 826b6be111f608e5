/* test_cpu_scan_bwd.c: the CPU backward against the float64 reference (through sf_check_bwd on
 * the host) for every dtype, length and flag set, and its determinism, layouts and edges. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/check/check.h"
#include "runtime/cpu/cpu_scan.h"
#include "runtime/cpu/cpu_scan_bwd.h"
#include "runtime/check/random_inputs.h"

/* ---- against the reference, through the check harness -------------------------------- */

typedef struct flag_set {
  const char *name;
  bool z, D, delta_bias, softplus, B_fixed, C_fixed, h0, d_last_state;
  int groups, dstate;
} flag_set;

static const flag_set flag_sets[] = {
    {"all, groups 2", true, true, true, true, false, false, true, true, 2, 8},
    {"none", false, false, false, false, false, false, false, false, 1, 1},
    {"fixed B, D, d_last_state", false, true, false, false, true, false, false, true, 1, 16},
    {"fixed C, z, softplus, bias, h0", true, false, true, true, false, true, true, false, 2, 5},
    {"fixed B and C, softplus, bias, h0, d_last_state", false, true, true, true, true, true, true,
     true, 1, 8},
    {"z without softplus, d_last_state, groups 4", true, false, false, false, false, false, false,
     true, 4, 3},
};

static void describe(char *buf, size_t cap, const sf_check_bwd_result *r) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < r->count && used < cap; i++)
    used += (size_t)snprintf(buf + used, cap - used, "%s %.2g ", r->grads[i].name, r->grads[i].error);
}

/* The gradients a shape has, in sf_check_bwd's order. */
static int expected_names(const sf_check_shape *s, const char *names[SF_CHECK_MAX_GRADS]) {
  int n = 0;
  names[n++] = "du";
  names[n++] = "ddelta";
  if (s->z) names[n++] = "dz";
  names[n++] = "dA";
  names[n++] = "dB";
  names[n++] = "dC";
  if (s->D) names[n++] = "dD";
  if (s->delta_bias) names[n++] = "ddelta_bias";
  if (s->h0) names[n++] = "dh0";
  return n;
}

static void check_matrix(sf_dtype dtype) {
  static const int64_t lengths[] = {1, 7, 49, 196, 513, 2049};
  static const int thread_counts[] = {3, 1, 8, 0, 5};
  sf_context *ctx;
  cr_assert_eq(sf_context_create(&(sf_context_options){.cache_memory_only = true}, &ctx), SF_OK);
  uint64_t seed = 300u + 100u * (unsigned)dtype;
  int k = 0;
  for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++)
    for (size_t f = 0; f < sizeof flag_sets / sizeof flag_sets[0]; f++, k++) {
      const flag_set *fs = &flag_sets[f];
      sf_check_shape shape = {
          .batch = 2, .dim = 4, .seqlen = lengths[l], .dstate = fs->dstate, .groups = fs->groups,
          .dtype = dtype, .z = fs->z, .D = fs->D, .delta_bias = fs->delta_bias,
          .softplus = fs->softplus, .B_fixed = fs->B_fixed, .C_fixed = fs->C_fixed, .h0 = fs->h0,
          .d_last_state = fs->d_last_state};
      /* 2 x 4 rows over 3 threads: shares that cross channels and (batch, group) slots. */
      sf_launch launch = {.on_host = true, .host_threads = thread_counts[k % 5]};
      sf_check_bwd_result r;
      sf_status st = sf_check_bwd(ctx, &shape, &launch, seed++, &r);
      cr_assert_eq(st, SF_OK, "%s L=%lld [%s]: %s", sf_dtype_name(dtype), (long long)lengths[l],
                   fs->name, sf_last_error());
      char errors[512];
      describe(errors, sizeof errors, &r);
      cr_expect(r.passed, "%s L=%lld [%s] threads %d: %s(bar %.0e)", sf_dtype_name(dtype),
                (long long)lengths[l], fs->name, launch.host_threads, errors, r.bar);
      cr_expect_eq(r.bar, dtype == SF_FP32 ? 1e-4 : 1e-2);

      const char *names[SF_CHECK_MAX_GRADS];
      const int count = expected_names(&shape, names);
      cr_expect_eq(r.count, count, "[%s]: %d gradients reported, expected %d", fs->name, r.count,
                   count);
      double largest = 0;
      for (int i = 0; i < r.count && i < count; i++) {
        cr_expect_str_eq(r.grads[i].name, names[i]);
        if (r.grads[i].error > largest) largest = r.grads[i].error;
      }
      /* Some gradients can be exact (dA at L = 1 without h0 is 0), never all of them. */
      cr_expect(largest > 0, "[%s] L=%lld: every error is 0: the comparison saw nothing",
                fs->name, (long long)lengths[l]);
    }
  sf_context_destroy(ctx);
}

Test(cpu_scan_bwd, fp32_against_the_reference, .timeout = 120) { check_matrix(SF_FP32); }
Test(cpu_scan_bwd, fp16_against_the_reference, .timeout = 120) { check_matrix(SF_FP16); }
Test(cpu_scan_bwd, bf16_against_the_reference, .timeout = 120) { check_matrix(SF_BF16); }

Test(cpu_scan_bwd, the_largest_state_over_two_intervals) {
  sf_context *ctx;
  cr_assert_eq(sf_context_create(&(sf_context_options){.cache_memory_only = true}, &ctx), SF_OK);
  sf_check_shape shape = {.batch = 1, .dim = 3, .seqlen = 600, .dstate = 256, .groups = 3,
                          .dtype = SF_BF16, .z = true, .D = true, .delta_bias = true,
                          .softplus = true, .h0 = true, .d_last_state = true};
  sf_launch launch = {.on_host = true, .host_threads = 2};
  sf_check_bwd_result r;
  cr_assert_eq(sf_check_bwd(ctx, &shape, &launch, 77, &r), SF_OK, "%s", sf_last_error());
  char errors[512];
  describe(errors, sizeof errors, &r);
  cr_expect(r.passed, "%s", errors);
  sf_context_destroy(ctx);
}

/* ---- direct calls on one fp32 problem with every input ------------------------------- */

enum { GRADS = 9 };
static const char *const grad_names[GRADS] = {"du", "ddelta", "dz", "dA", "dB",
                                              "dC", "dD", "ddelta_bias", "dh0"};

typedef struct problem {
  random_problem rp;
  float *in[12]; /* the buffers below, to free them together */
  sf_scan_bwd_args args; /* inputs, saved states and dout set; no gradient */
  size_t sizes[GRADS];   /* elements of each gradient, in grad_names' order */
} problem;

static float *floats_of(const double *x, size_t n) {
  float *f = malloc((n ? n : 1) * sizeof *f);
  cr_assert(f);
  for (size_t i = 0; i < n; i++) f[i] = (float)x[i];
  return f;
}

static float *nan_floats(size_t n) {
  float *f = malloc((n ? n : 1) * sizeof *f);
  cr_assert(f);
  for (size_t i = 0; i < n; i++) f[i] = NAN;
  return f;
}

/* Every flag on, variable B and C; the CPU forward saves the states. */
static void problem_make(problem *p, int batch, int dim, int L, int N, int G, uint64_t seed) {
  memset(p, 0, sizeof *p);
  sf_ref_problem shape = {.batch = batch, .dim = dim, .seqlen = L, .dstate = N, .groups = G,
                          .B_var = true, .C_var = true, .has_D = true, .has_z = true,
                          .has_delta_bias = true, .softplus = true, .has_h0 = true};
  cr_assert(random_problem_make(&p->rp, &shape, RANDOM_A_NEG_EXP_UNIFORM, seed));
  const sf_ref_problem *r = &p->rp.p;
  const size_t nu = sf_ref_size_u(r), ns = sf_ref_size_state(r);
  const size_t nsaved = (size_t)sf_scan_saved_states(L);
  float **in = p->in;
  in[0] = floats_of(p->rp.u, nu), in[1] = floats_of(p->rp.delta, nu);
  in[2] = floats_of(p->rp.z, nu), in[3] = floats_of(p->rp.A, sf_ref_size_A(r));
  in[4] = floats_of(p->rp.B, sf_ref_size_B(r)), in[5] = floats_of(p->rp.C, sf_ref_size_C(r));
  in[6] = floats_of(p->rp.D, (size_t)dim), in[7] = floats_of(p->rp.delta_bias, (size_t)dim);
  in[8] = floats_of(p->rp.h0, ns), in[9] = floats_of(p->rp.dout, nu);
  in[10] = floats_of(p->rp.d_last_state, ns), in[11] = nan_floats(ns * nsaved);
  float *out = nan_floats(nu);
  p->args = (sf_scan_bwd_args){
      .fwd = {.batch = batch, .dim = dim, .seqlen = L, .dstate = N, .groups = G,
              .dtype = SF_FP32, .delta_softplus = true, .u = in[0], .delta = in[1], .z = in[2],
              .A = in[3], .B = in[4], .B_var = true, .C = in[5], .C_var = true, .D = in[6],
              .delta_bias = in[7], .h0 = in[8], .out = out, .saved_states = in[11]},
      .dout = in[9], .d_last_state = in[10]};
  cr_assert_eq(sf_cpu_scan_fwd(&p->args.fwd, 2), SF_OK, "%s", sf_last_error());
  free(out);
  p->args.fwd.out = NULL; /* the backward does not read it */
  const size_t sizes[GRADS] = {nu, nu, nu, sf_ref_size_A(r), sf_ref_size_B(r), sf_ref_size_C(r),
                               (size_t)dim, (size_t)dim, ns};
  memcpy(p->sizes, sizes, sizeof sizes);
}

static void problem_free(problem *p) {
  for (int i = 0; i < 12; i++) free(p->in[i]);
  random_problem_free(&p->rp);
}

/* NaN-filled gradients, those with want[i] true; the others NULL. */
static void grads_alloc(const problem *p, const bool want[GRADS], float *g[GRADS]) {
  for (int i = 0; i < GRADS; i++) g[i] = want[i] ? nan_floats(p->sizes[i]) : NULL;
}

static void grads_free(float *g[GRADS]) {
  for (int i = 0; i < GRADS; i++) free(g[i]);
}

static sf_scan_bwd_args with_grads(const problem *p, float *g[GRADS]) {
  sf_scan_bwd_args a = p->args;
  a.du = g[0], a.ddelta = g[1], a.dz = g[2], a.dA = g[3], a.dB = g[4], a.dC = g[5];
  a.dD = g[6], a.ddelta_bias = g[7], a.dh0 = g[8];
  return a;
}

static const bool ALL[GRADS] = {true, true, true, true, true, true, true, true, true};

static void run_all(const problem *p, int threads, float *g[GRADS]) {
  grads_alloc(p, ALL, g);
  sf_scan_bwd_args a = with_grads(p, g);
  cr_assert_eq(sf_cpu_scan_bwd(&a, threads), SF_OK, "%s", sf_last_error());
}

static bool same_bits(const float *x, const float *y, size_t n) {
  return memcmp(x, y, n * sizeof *x) == 0;
}

/* The reductions are summed in a fixed order: one thread count, one result, to the bit. */
Test(cpu_scan_bwd, the_same_thread_count_gives_the_same_bits) {
  problem p;
  problem_make(&p, 3, 6, 700, 16, 2, 11); /* 18 rows, two intervals, 3 channels per group */
  const int counts[] = {4, 7, 1};
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    float *first[GRADS], *again[GRADS];
    run_all(&p, counts[c], first);
    run_all(&p, counts[c], again);
    for (int i = 0; i < GRADS; i++)
      cr_expect(same_bits(first[i], again[i], p.sizes[i]), "%d threads: %s differs between runs",
                counts[c], grad_names[i]);
    grads_free(first), grads_free(again);
  }
  problem_free(&p);
}

/* Another thread count only reorders fp32 sums; per-row gradients do not change at all. */
Test(cpu_scan_bwd, thread_counts_agree) {
  problem p;
  problem_make(&p, 3, 6, 700, 16, 2, 12);
  float *one[GRADS], *many[GRADS];
  run_all(&p, 1, one);
  run_all(&p, 5, many);
  for (int i = 0; i < GRADS; i++) {
    double diff = 0, norm = 0;
    for (size_t k = 0; k < p.sizes[i]; k++) {
      diff += ((double)one[i][k] - many[i][k]) * ((double)one[i][k] - many[i][k]);
      norm += (double)one[i][k] * one[i][k];
    }
    cr_expect(sqrt(diff) <= 1e-6 * sqrt(norm), "%s: 1 and 5 threads differ by %.3g relative",
              grad_names[i], sqrt(diff / norm));
  }
  /* du, ddelta, dz and dh0 belong to one row each: no sum crosses threads. */
  const int per_row[] = {0, 1, 2, 8};
  for (int i = 0; i < 4; i++)
    cr_expect(same_bits(one[per_row[i]], many[per_row[i]], p.sizes[per_row[i]]), "%s differs",
              grad_names[per_row[i]]);
  grads_free(one), grads_free(many);
  problem_free(&p);
}

/* A gradient left out changes no other; each one asked for alone is the same. */
Test(cpu_scan_bwd, skipped_gradients_change_nothing_else) {
  problem p;
  problem_make(&p, 2, 4, 100, 8, 2, 13);
  float *all[GRADS];
  run_all(&p, 3, all);
  for (int only = 0; only < GRADS; only++) {
    bool want[GRADS] = {false};
    want[only] = true;
    float *g[GRADS];
    grads_alloc(&p, want, g);
    sf_scan_bwd_args a = with_grads(&p, g);
    cr_assert_eq(sf_cpu_scan_bwd(&a, 3), SF_OK, "%s", sf_last_error());
    cr_expect(same_bits(g[only], all[only], p.sizes[only]), "%s alone differs", grad_names[only]);
    grads_free(g);
  }
  /* No gradient at all is a valid call that writes nothing. */
  float *none[GRADS] = {0};
  sf_scan_bwd_args a = with_grads(&p, none);
  cr_expect_eq(sf_cpu_scan_bwd(&a, 3), SF_OK, "%s", sf_last_error());
  grads_free(all);
  problem_free(&p);
}

/* Gradients are written, not accumulated: a second call into the same buffers gives the same. */
Test(cpu_scan_bwd, gradients_are_written_not_accumulated) {
  problem p;
  problem_make(&p, 2, 4, 70, 4, 1, 14);
  float *g[GRADS], *fresh[GRADS];
  run_all(&p, 2, fresh);
  grads_alloc(&p, ALL, g);
  for (int i = 0; i < GRADS; i++)
    for (size_t k = 0; k < p.sizes[i]; k++) g[i][k] = 1000.0f; /* stale values */
  sf_scan_bwd_args a = with_grads(&p, g);
  cr_assert_eq(sf_cpu_scan_bwd(&a, 2), SF_OK, "%s", sf_last_error());
  for (int i = 0; i < GRADS; i++)
    cr_expect(same_bits(g[i], fresh[i], p.sizes[i]), "%s kept something of the old values",
              grad_names[i]);
  grads_free(g), grads_free(fresh);
  problem_free(&p);
}

/* Each interval starts from the forward's saved state: changing saved state 0 changes what
 * depends on the states after step 511 (ddelta there), and nothing before it. */
Test(cpu_scan_bwd, intervals_start_from_the_saved_states) {
  problem p;
  enum { L = 700, W = 512 };
  problem_make(&p, 1, 2, L, 4, 1, 15);
  cr_assert_eq(sf_scan_state_interval(L), W);
  float *before[GRADS], *after[GRADS];
  run_all(&p, 1, before);
  float *saved = p.in[11];
  const size_t nsaved = (size_t)sf_scan_saved_states(L);
  for (int row = 0; row < 2; row++)
    for (int n = 0; n < 4; n++) saved[(row * nsaved + 0) * 4 + n] += 1.0f;
  run_all(&p, 1, after);
  const float *dd0 = before[1], *dd1 = after[1];
  for (int row = 0; row < 2; row++) {
    cr_expect(same_bits(dd0 + row * L, dd1 + row * L, W), "row %d: ddelta before step %d changed",
              row, W);
    cr_expect(!same_bits(dd0 + row * L + W, dd1 + row * L + W, L - W),
              "row %d: ddelta after step %d ignores the saved state", row, W);
  }
  grads_free(before), grads_free(after);
  problem_free(&p);
}

/* dout and the activation gradients at their own strides give the contiguous result. */
Test(cpu_scan_bwd, strided_gradients_match_contiguous) {
  enum { BATCH = 2, DIM = 3, L = 90 };
  problem p;
  problem_make(&p, BATCH, DIM, L, 8, 1, 16);
  float *ref[GRADS];
  run_all(&p, 2, ref);

  /* dout padded; du as a slice of (dim, batch, L); ddelta and dz padded differently. */
  const int64_t strides[4][2] = {/* batch, dim */
                                 {DIM * (L + 3) + 1, L + 3},
                                 {L + 2, BATCH * (L + 2)},
                                 {DIM * 2 * L, 2 * L},
                                 {DIM * (L + 1), L + 1}};
  float *buf[4];
  size_t span[4];
  for (int k = 0; k < 4; k++) {
    span[k] = (size_t)((BATCH - 1) * strides[k][0] + (DIM - 1) * strides[k][1] + L);
    buf[k] = nan_floats(span[k]);
  }
  for (int b = 0; b < BATCH; b++)
    for (int d = 0; d < DIM; d++)
      memcpy(buf[0] + b * strides[0][0] + d * strides[0][1], p.in[9] + (b * DIM + d) * L,
             L * sizeof(float));

  bool want[GRADS] = {false, false, false, true, true, true, true, true, true};
  float *g[GRADS];
  grads_alloc(&p, want, g);
  sf_scan_bwd_args a = with_grads(&p, g);
  a.dout = buf[0], a.du = buf[1], a.ddelta = buf[2], a.dz = buf[3];
  a.dout_batch_stride = strides[0][0], a.dout_dim_stride = strides[0][1];
  a.du_batch_stride = strides[1][0], a.du_dim_stride = strides[1][1];
  a.ddelta_batch_stride = strides[2][0], a.ddelta_dim_stride = strides[2][1];
  a.dz_batch_stride = strides[3][0], a.dz_dim_stride = strides[3][1];
  cr_assert_eq(sf_cpu_scan_bwd(&a, 2), SF_OK, "%s", sf_last_error());

  for (int k = 1; k < 4; k++) {
    size_t written = 0;
    for (size_t i = 0; i < span[k]; i++) written += !isnan(buf[k][i]);
    cr_expect_eq(written, (size_t)BATCH * DIM * L, "%s: %zu elements written (gaps touched?)",
                 grad_names[k - 1], written);
    for (int b = 0; b < BATCH; b++)
      for (int d = 0; d < DIM; d++)
        cr_expect(same_bits(buf[k] + b * strides[k][0] + d * strides[k][1],
                            ref[k - 1] + (b * DIM + d) * L, L),
                  "%s row (%d, %d) differs from the contiguous call", grad_names[k - 1], b, d);
  }
  for (int i = 3; i < GRADS; i++)
    cr_expect(same_bits(g[i], ref[i], p.sizes[i]), "%s differs", grad_names[i]);
  for (int k = 0; k < 4; k++) free(buf[k]);
  grads_free(g), grads_free(ref);
  problem_free(&p);
}

Test(cpu_scan_bwd, nothing_to_do_touches_nothing) {
  float grads[9][8];
  for (int i = 0; i < 9; i++)
    for (int k = 0; k < 8; k++) grads[i][k] = NAN;
  const float in[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  sf_scan_bwd_args a = {
      .fwd = {.batch = 0, .dim = 2, .seqlen = 2, .dstate = 2, .groups = 1, .dtype = SF_FP32,
              .u = in, .delta = in, .A = in, .B = in, .C = in, .saved_states = grads[8]},
      .dout = in, .d_last_state = in, .du = grads[0], .ddelta = grads[1], .dA = grads[2],
      .dB = grads[3], .dC = grads[4]};
  cr_expect_eq(sf_cpu_scan_bwd(&a, 0), SF_OK, "%s", sf_last_error());
  a.fwd.batch = 1, a.fwd.seqlen = 0;
  cr_expect_eq(sf_cpu_scan_bwd(&a, 0), SF_OK, "%s", sf_last_error());
  a.fwd.seqlen = 2, a.fwd.dim = 0;
  cr_expect_eq(sf_cpu_scan_bwd(&a, 0), SF_OK, "%s", sf_last_error());
  for (int i = 0; i < 9; i++)
    for (int k = 0; k < 8; k++) cr_expect(isnan(grads[i][k]), "gradient %d element %d written", i, k);
}

Test(cpu_scan_bwd, bad_arguments_are_refused_before_anything_is_written) {
  float du[8], dA[8];
  for (int i = 0; i < 8; i++) du[i] = dA[i] = NAN;
  const float in[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  float saved[8] = {0};
  sf_scan_bwd_args a = {
      .fwd = {.batch = 1, .dim = 2, .seqlen = 4, .dstate = 2, .groups = 1, .dtype = SF_FP32,
              .u = in, .delta = in, .A = in, .B = in, .C = in, .saved_states = saved},
      .dout = in, .du = du, .du_dim_stride = 3, .dA = dA};
  cr_expect_eq(sf_cpu_scan_bwd(&a, 1), SF_EINVAL);
  cr_expect(strstr(sf_last_error(), "sf_cpu_scan_bwd: du_dim_stride") != NULL, "%s",
            sf_last_error());
  for (int i = 0; i < 8; i++) cr_expect(isnan(du[i]) && isnan(dA[i]), "element %d was written", i);
}
