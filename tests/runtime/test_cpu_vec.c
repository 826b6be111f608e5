/* test_cpu_vec.c: the AVX2 vector math of the CPU scan (exp2, exp, softplus, sigmoid, the 8 x 8
 * transpose, lane sums) against double-precision libm, including NaN, Inf and the range ends;
 * skipped on a CPU without AVX2 and FMA. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Only the helpers below are compiled for AVX2: the tests themselves (and Criterion's
 * registration) must run anywhere, to skip. */
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
#define SF_VEC_AVX2 1
#include "runtime/cpu/cpu_vec.h"

enum { F_EXP2, F_EXP, F_SOFTPLUS, F_SIGMOID, F_EXP2_NONPOSITIVE };

/* y[i] = f(x[i]) for n a multiple of 8. */
static void apply(int f, const float *x, float *y, int n) {
  for (int i = 0; i < n; i += 8) {
    const vf v = vf_load(x + i);
    vf r, sig;
    switch (f) {
      case F_EXP2: r = vf_exp2(v); break;
      case F_EXP2_NONPOSITIVE: r = vf_exp2_nonpositive(v); break;
      case F_EXP: r = vf_exp(v); break;
      case F_SOFTPLUS: r = vf_softplus(v); break;
      default: vf_softplus_sigmoid(v, &sig), r = sig;
    }
    vf_store(y + i, r);
  }
}

static void transpose_tile(const float *src, int64_t src_stride, float *dst, int64_t dst_stride) {
  tile8(src, src_stride, dst, dst_stride);
}

static void lane_sums(const float *v, float *dst) {
  vf_lane_sums4(vf_load(v), vf_load(v + 8), vf_load(v + 16), vf_load(v + 24), dst);
}
#ifdef __clang__
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

static void need_avx2(void) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    cr_skip_test("this CPU has no AVX2 and FMA");
}

static double reference(int f, double x) {
  switch (f) {
    case F_EXP2:
    case F_EXP2_NONPOSITIVE: return exp2(x);
    case F_EXP: return exp(x);
    case F_SOFTPLUS: return x > 20 ? x : log1p(exp(x));
    default: return 1 / (1 + exp(-x));
  }
}

/* |got - want| in units in the last place of want (as a float). */
static double ulps(float got, double want) {
  int e;
  frexp(want, &e);
  return fabs((double)got - want) / ldexp(1.0, e - 24);
}

/* The largest error over n points evenly spread on [lo, hi], skipping results below
 * FLT_MIN (those are flushed to 0, tested separately). */
static double worst_ulps(int f, float lo, float hi, int n) {
  enum { CHUNK = 4096 };
  static float x[CHUNK], y[CHUNK];
  double worst = 0;
  for (int done = 0; done < n; done += CHUNK) {
    for (int i = 0; i < CHUNK; i++) x[i] = lo + (hi - lo) * (float)(done + i) / (float)n;
    apply(f, x, y, CHUNK);
    for (int i = 0; i < CHUNK; i++) {
      const double want = reference(f, x[i]);
      if (want < 0x1p-126) continue;
      const double e = ulps(y[i], want);
      if (e > worst) worst = e;
    }
  }
  return worst;
}

Test(cpu_vec, exp2_within_one_ulp) {
  need_avx2();
  /* Up to 2^127.5: from there the result is +Inf by design (cpu_vec.h). */
  double e = worst_ulps(F_EXP2, -126.0f, 127.45f, 1 << 22);
  cr_expect(e <= 1.0, "exp2: %.3f ulp", e);
  e = worst_ulps(F_EXP2, -0.5f, 0.5f, 1 << 20); /* the polynomial's own interval, densely */
  cr_expect(e <= 1.0, "exp2 on [-1/2, 1/2]: %.3f ulp", e);
  e = worst_ulps(F_EXP2_NONPOSITIVE, -126.0f, 0.0f, 1 << 22); /* the decays' variant */
  cr_expect(e <= 1.0, "exp2 of x <= 0: %.3f ulp", e);
}

Test(cpu_vec, exp_softplus_and_sigmoid_within_a_few_ulps) {
  need_avx2();
  double e = worst_ulps(F_EXP, -87.0f, 88.0f, 1 << 22);
  cr_expect(e <= 2.0, "exp: %.3f ulp", e);
  e = worst_ulps(F_SOFTPLUS, -80.0f, 80.0f, 1 << 22);
  cr_expect(e <= 4.0, "softplus: %.3f ulp", e);
  e = worst_ulps(F_SOFTPLUS, -1.0f, 1.0f, 1 << 20);
  cr_expect(e <= 4.0, "softplus near 0: %.3f ulp", e);
  e = worst_ulps(F_SIGMOID, -80.0f, 80.0f, 1 << 22);
  cr_expect(e <= 4.0, "sigmoid: %.3f ulp", e);
}

/* Each case: input, function, expected (NAN: expect NaN). */
Test(cpu_vec, special_values) {
  need_avx2();
  const struct {
    int f;
    float x, want;
  } cases[] = {
      {F_EXP2, NAN, NAN},          {F_EXP2, INFINITY, INFINITY}, {F_EXP2, -INFINITY, 0.0f},
      {F_EXP2, 128.0f, INFINITY},  {F_EXP2, 1000.0f, INFINITY},  {F_EXP2, -127.5f, 0.0f},
      {F_EXP2, 127.75f, INFINITY}, /* above 2^127.5, documented */
      {F_EXP2, -1000.0f, 0.0f},    {F_EXP2, 0.0f, 1.0f},         {F_EXP2, 10.0f, 1024.0f},
      {F_EXP2, -126.0f, 0x1p-126f}, {F_EXP2, 127.0f, 0x1p127f},
      {F_EXP2_NONPOSITIVE, NAN, NAN}, {F_EXP2_NONPOSITIVE, -INFINITY, 0.0f},
      {F_EXP2_NONPOSITIVE, -1000.0f, 0.0f}, {F_EXP2_NONPOSITIVE, -0.0f, 1.0f},
      {F_EXP, NAN, NAN},           {F_EXP, INFINITY, INFINITY},  {F_EXP, -INFINITY, 0.0f},
      {F_EXP, -200.0f, 0.0f},      {F_EXP, 0.0f, 1.0f},
      {F_SOFTPLUS, NAN, NAN},      {F_SOFTPLUS, INFINITY, INFINITY},
      {F_SOFTPLUS, -INFINITY, 0.0f}, {F_SOFTPLUS, 20.5f, 20.5f}, {F_SOFTPLUS, 1e30f, 1e30f},
      {F_SIGMOID, NAN, NAN},       {F_SIGMOID, INFINITY, 1.0f},  {F_SIGMOID, -INFINITY, 0.0f},
      {F_SIGMOID, 0.0f, 0.5f},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    float x[8], y[8];
    for (int k = 0; k < 8; k++) x[k] = k == 3 ? cases[i].x : 1.0f; /* one lane of eight */
    apply(cases[i].f, x, y, 8);
    if (isnan(cases[i].want))
      cr_expect(isnan(y[3]), "case %zu: f%d(%g) = %g, expected NaN", i, cases[i].f, cases[i].x, y[3]);
    else
      cr_expect(y[3] == cases[i].want, "case %zu: f%d(%g) = %a, expected %a", i, cases[i].f,
                cases[i].x, y[3], cases[i].want);
    /* The other lanes see 1.0 and must not notice. */
    cr_expect(y[0] == y[7] && !isnan(y[0]), "case %zu: another lane changed", i);
  }
}

Test(cpu_vec, tile_transpose_and_lane_sums) {
  need_avx2();
  float src[8 * 11], dst[8 * 13];
  for (int i = 0; i < 8 * 11; i++) src[i] = (float)i;
  for (int i = 0; i < 8 * 13; i++) dst[i] = -1.0f;
  transpose_tile(src, 11, dst, 13); /* strides wider than the tile */
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++)
      cr_expect(dst[j * 13 + i] == src[i * 11 + j], "tile (%d, %d): %g", i, j, dst[j * 13 + i]);
  for (int j = 0; j < 8; j++)
    for (int i = 8; i < 13; i++) cr_expect(dst[j * 13 + i] == -1.0f, "outside the tile written");

  float v[32], sums[4];
  for (int i = 0; i < 32; i++) v[i] = (float)(i * i % 17) - 3.5f;
  lane_sums(v, sums);
  for (int j = 0; j < 4; j++) {
    float want = 0;
    for (int k = 0; k < 8; k++) want += v[j * 8 + k];
    cr_expect(fabsf(sums[j] - want) <= 1e-5f * (1 + fabsf(want)), "lane sum %d: %g, expected %g",
              j, sums[j], want);
  }
}
