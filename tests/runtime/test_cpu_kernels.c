/* test_cpu_kernels.c: the CPU scan's blocked paths against the float64 reference: channel counts
 * and groups that leave partial SIMD blocks, every dtype, the per-slot and per-interval ways
 * of sharing B, C, dB and dC, several backward segments, both kernel sets (AVX2 and portable),
 * thread counts splitting slots; determinism, and that a NaN stays in its own channel. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/check/check.h"
#include "runtime/cpu/cpu_kernel.h"
#include "runtime/cpu/cpu_scan.h"
#include "runtime/cpu/cpu_scan_bwd.h"

static const sf_dtype dtypes[] = {SF_FP32, SF_FP16, SF_BF16};

/* The kernels the tests run: the machine's choice, or the portable ones. */
static void use_kernels(bool portable) {
  if (portable)
    setenv("SCANFORGE_CPU_KERNELS", "portable", 1);
  else
    unsetenv("SCANFORGE_CPU_KERNELS");
}

typedef struct shape_case {
  int batch, dim, L, N, groups;
  const char *why;
} shape_case;

/* Lanes are 8 (AVX2): dims and groups that leave partial blocks; L and N that take the
 * per-slot or the per-interval sharing of B and C (forward: L * NP <= 32768; backward:
 * L * NP <= 4096) and one or several backward segments (S = 256 steps at N <= 8, 32 at
 * N = 64). */
static const shape_case shapes[] = {
    {2, 3, 37, 5, 1, "3 channels: one partial block"},
    {2, 13, 70, 8, 1, "13 channels: a full block and a partial one"},
    {1, 15, 49, 4, 3, "groups of 5 channels: partial blocks in every group"},
    {2, 18, 100, 16, 2, "groups of 9: a full block and one channel each"},
    {1, 8, 513, 8, 1, "one full block, backward per interval, two intervals"},
    {1, 9, 600, 8, 1, "backward with two segments in an interval"},
    {1, 10, 300, 64, 2, "N = 64: several backward segments"},
    {1, 5, 4200, 8, 1, "forward per time block (L * NP > 32768)"},
};

static sf_check_shape shape_of(const shape_case *c, sf_dtype dtype, int variant) {
  /* Flags vary with the case: z, D, bias, softplus, h0, fixed B or C. */
  sf_check_shape s = {.batch = c->batch, .dim = c->dim, .seqlen = c->L, .dstate = c->N,
                      .groups = c->groups, .dtype = dtype, .z = variant % 2 == 0, .D = true,
                      .delta_bias = true, .softplus = variant % 3 != 2, .h0 = variant % 2 == 1,
                      .B_fixed = variant == 3, .C_fixed = variant == 4,
                      .d_last_state = variant % 2 == 0};
  return s;
}

static void check_shapes(bool portable, bool backward) {
  use_kernels(portable);
  sf_context *ctx;
  cr_assert_eq(sf_context_create(&(sf_context_options){.cache_memory_only = true}, &ctx), SF_OK);
  uint64_t seed = portable ? 900 : 700;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
      const int variant = (int)((i + t) % 5);
      sf_check_shape s = shape_of(&shapes[i], dtypes[t], variant);
      /* 1, 2 or 3 threads: shares that split the slots' blocks differently. */
      sf_launch launch = {.on_host = true, .host_threads = 1 + (int)((i + t) % 3)};
      if (backward) {
        sf_check_bwd_result r;
        cr_assert_eq(sf_check_bwd(ctx, &s, &launch, seed++, &r), SF_OK, "%s", sf_last_error());
        char errors[512] = "";
        for (int g = 0, used = 0; g < r.count; g++)
          used += snprintf(errors + used, sizeof errors - (size_t)used, "%s %.2g ", r.grads[g].name,
                           r.grads[g].error);
        cr_expect(r.passed, "%s [%s] %s variant %d threads %d: %s", portable ? "portable" : "chosen",
                  shapes[i].why, sf_dtype_name(dtypes[t]), variant, launch.host_threads, errors);
      } else {
        sf_check_result r;
        cr_assert_eq(sf_check_fwd(ctx, &s, &launch, seed++, &r), SF_OK, "%s", sf_last_error());
        cr_expect(r.passed, "%s [%s] %s variant %d threads %d: out %.3g last %.3g saved %.3g",
                  portable ? "portable" : "chosen", shapes[i].why, sf_dtype_name(dtypes[t]),
                  variant, launch.host_threads, r.out_error, r.last_state_error, r.saved_error);
        cr_expect(r.out_error > 0, "a zero error would mean the comparison saw nothing");
      }
    }
  sf_context_destroy(ctx);
}

Test(cpu_kernels, forward_shapes, .timeout = 300) { check_shapes(false, false); }
Test(cpu_kernels, backward_shapes, .timeout = 300) { check_shapes(false, true); }
Test(cpu_kernels, forward_shapes_portable, .timeout = 300) { check_shapes(true, false); }
Test(cpu_kernels, backward_shapes_portable, .timeout = 300) { check_shapes(true, true); }

Test(cpu_kernels, the_choice_follows_the_machine_and_the_environment) {
  use_kernels(true);
  cr_expect_str_eq(sf_cpu_kernels_select()->name, "portable");
  cr_expect_eq(sf_cpu_kernels_select()->lanes, 1);
  use_kernels(false);
#ifdef SF_CPU_HAVE_AVX2_KERNELS
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    cr_expect_str_eq(sf_cpu_kernels_select()->name, "avx2");
    cr_expect_eq(sf_cpu_kernels_select()->lanes, 8);
    return;
  }
#endif
  cr_expect_str_eq(sf_cpu_kernels_select()->name, "portable");
}

/* ---- direct calls on one fp32 problem ------------------------------------------------ */

enum { BATCH = 3, DIM = 20, L = 77, N = 6, G = 2 }; /* groups of 10: blocks of 8 and 2 */

typedef struct problem {
  float *u, *delta, *A, *B, *C, *D, *bias, *dout;
  float *out, *last, *saved;
  float *du, *ddelta, *dA, *dB, *dC, *dD, *dbias;
  sf_scan_bwd_args args;
} problem;

static float *filled(size_t n, unsigned *seed, float lo, float hi) {
  float *x = malloc(n * sizeof *x);
  cr_assert(x);
  for (size_t i = 0; i < n; i++) {
    *seed = *seed * 1664525u + 1013904223u;
    x[i] = lo + (hi - lo) * (float)(*seed >> 8) * 0x1p-24f;
  }
  return x;
}

static void problem_make(problem *p) {
  unsigned seed = 5;
  const size_t nu = (size_t)BATCH * DIM * L, nbc = (size_t)BATCH * G * N * L;
  const size_t ns = (size_t)BATCH * DIM * N;
  p->u = filled(nu, &seed, -2, 2), p->delta = filled(nu, &seed, -1, 1);
  p->A = filled(DIM * N, &seed, -3, -0.2f), p->B = filled(nbc, &seed, -2, 2);
  p->C = filled(nbc, &seed, -2, 2), p->D = filled(DIM, &seed, -1, 1);
  p->bias = filled(DIM, &seed, -4.5f, -3.5f), p->dout = filled(nu, &seed, -1, 1);
  p->out = filled(nu, &seed, 0, 1), p->last = filled(ns, &seed, 0, 1);
  p->saved = filled(ns * (size_t)sf_scan_saved_states(L), &seed, 0, 1);
  p->du = filled(nu, &seed, 0, 1), p->ddelta = filled(nu, &seed, 0, 1);
  p->dA = filled(DIM * N, &seed, 0, 1), p->dB = filled(nbc, &seed, 0, 1);
  p->dC = filled(nbc, &seed, 0, 1), p->dD = filled(DIM, &seed, 0, 1);
  p->dbias = filled(DIM, &seed, 0, 1);
  p->args = (sf_scan_bwd_args){
      .fwd = {.batch = BATCH, .dim = DIM, .seqlen = L, .dstate = N, .groups = G,
              .dtype = SF_FP32, .delta_softplus = true, .u = p->u, .delta = p->delta,
              .A = p->A, .B = p->B, .B_var = true, .C = p->C, .C_var = true, .D = p->D,
              .delta_bias = p->bias, .out = p->out, .last_state = p->last,
              .saved_states = p->saved},
      .dout = p->dout, .du = p->du, .ddelta = p->ddelta, .dA = p->dA, .dB = p->dB,
      .dC = p->dC, .dD = p->dD, .ddelta_bias = p->dbias};
}

static void problem_free(problem *p) {
  float *all[] = {p->u, p->delta, p->A, p->B, p->C, p->D, p->bias, p->dout, p->out, p->last,
                  p->saved, p->du, p->ddelta, p->dA, p->dB, p->dC, p->dD, p->dbias};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

static float *copy(const float *x, size_t n) {
  float *c = malloc(n * sizeof *c);
  cr_assert(c);
  memcpy(c, x, n * sizeof *c);
  return c;
}

/* Every forward output and gradient of one run, one after another. */
static float *run_all(problem *p, int threads, size_t *count) {
  const size_t nu = (size_t)BATCH * DIM * L, nbc = (size_t)BATCH * G * N * L;
  cr_assert_eq(sf_cpu_scan_fwd(&p->args.fwd, threads), SF_OK, "%s", sf_last_error());
  cr_assert_eq(sf_cpu_scan_bwd(&p->args, threads), SF_OK, "%s", sf_last_error());
  const float *parts[] = {p->out, p->du, p->ddelta, p->dA, p->dB, p->dC, p->dD, p->dbias};
  const size_t sizes[] = {nu, nu, nu, DIM * N, nbc, nbc, DIM, DIM};
  size_t total = 0;
  for (int i = 0; i < 8; i++) total += sizes[i];
  float *all = malloc(total * sizeof *all), *next = all;
  cr_assert(all);
  for (int i = 0; i < 8; i++) memcpy(next, parts[i], sizes[i] * sizeof *all), next += sizes[i];
  *count = total;
  return all;
}

/* One thread count, one result to the bit, however many times; and the forward and the
 * per-row gradients do not depend on the thread count at all (each lane is its own). */
Test(cpu_kernels, deterministic_and_rows_independent_of_threads) {
  problem p;
  problem_make(&p);
  const size_t nu = (size_t)BATCH * DIM * L;
  const int counts[] = {1, 2, 3, 7};
  float *first[4];
  size_t n = 0;
  for (int i = 0; i < 4; i++) {
    first[i] = run_all(&p, counts[i], &n);
    float *again = run_all(&p, counts[i], &n);
    cr_expect(memcmp(first[i], again, n * sizeof(float)) == 0, "%d threads: runs differ", counts[i]);
    free(again);
    /* out, du, ddelta: the first 3 nu floats */
    cr_expect(memcmp(first[i], first[0], 3 * nu * sizeof(float)) == 0,
              "%d threads: out, du or ddelta differ from 1 thread", counts[i]);
  }
  for (int i = 0; i < 4; i++) free(first[i]);
  problem_free(&p);
}

/* A NaN in one channel's delta reaches that channel's out from its step on, and no other
 * channel of its block or batch: lanes never mix in the forward. */
Test(cpu_kernels, a_nan_stays_in_its_channel) {
  problem p;
  problem_make(&p);
  const size_t nu = (size_t)BATCH * DIM * L;
  cr_assert_eq(sf_cpu_scan_fwd(&p.args.fwd, 2), SF_OK, "%s", sf_last_error());
  float *clean = copy(p.out, nu);
  const int b = 1, d = 13, t = 40; /* the second block of group 1 (channels 10..17) */
  p.delta[((size_t)b * DIM + d) * L + t] = NAN;
  cr_assert_eq(sf_cpu_scan_fwd(&p.args.fwd, 2), SF_OK, "%s", sf_last_error());
  for (int bb = 0; bb < BATCH; bb++)
    for (int dd = 0; dd < DIM; dd++)
      for (int tt = 0; tt < L; tt++) {
        const size_t i = ((size_t)bb * DIM + dd) * L + tt;
        if (bb == b && dd == d && tt >= t)
          cr_expect(isnan(p.out[i]), "out[%d, %d, %d] = %g, expected NaN", bb, dd, tt, p.out[i]);
        else
          cr_expect(p.out[i] == clean[i] || (isnan(p.out[i]) && isnan(clean[i])),
                    "out[%d, %d, %d] changed: %g, was %g", bb, dd, tt, p.out[i], clean[i]);
      }
  free(clean);
  problem_free(&p);
}
