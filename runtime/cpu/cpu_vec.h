/* cpu_vec.h: the CPU scan's vector of channels (vf, VL lanes): AVX2 + FMA with SF_VEC_AVX2,
 * else one plain float; exp, softplus and sigmoid that keep NaN and Inf as libm does. */
#ifndef SCANFORGE_CPU_VEC_H
#define SCANFORGE_CPU_VEC_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#define VEC_INLINE static inline __attribute__((always_inline))

#ifdef SF_VEC_AVX2
#include <immintrin.h>

typedef __m256 vf;
enum { VL = 8 };

VEC_INLINE vf vf_set(float x) { return _mm256_set1_ps(x); }
VEC_INLINE vf vf_zero(void) { return _mm256_setzero_ps(); }
VEC_INLINE vf vf_load(const float *p) { return _mm256_loadu_ps(p); }
VEC_INLINE void vf_store(float *p, vf v) { _mm256_storeu_ps(p, v); }
VEC_INLINE vf vf_bcast(const float *p) { return _mm256_broadcast_ss(p); }
VEC_INLINE vf vf_add(vf a, vf b) { return _mm256_add_ps(a, b); }
VEC_INLINE vf vf_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
VEC_INLINE vf vf_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
VEC_INLINE vf vf_div(vf a, vf b) { return _mm256_div_ps(a, b); }
VEC_INLINE vf vf_fma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); } /* a * b + c */
/* where(v > limit) ? x : y; false for NaN. */
VEC_INLINE vf vf_select_gt(vf v, float limit, vf x, vf y) {
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(v, _mm256_set1_ps(limit), _CMP_GT_OQ));
}

/* p(r) 2^k for r in [-1/2, 1/2], k in the low mantissa bits of j (j = k + 1.5 * 2^23, k in
 * [-127, 128]): p, of degree 6, was fitted to 2^r for least relative error by
 * scripts/fit_exp2.py (3e-9 before rounding); 2^k is built in the exponent bits, 0 for
 * k = -127 and +Inf for k = 128. NaN in r stays NaN (it goes through the multiplies). The
 * polynomial goes by Horner's rule (fewest operations: the scan's decays are
 * throughput-bound) or, with `short_chain`, in pairs (Estrin: a shorter dependency chain for
 * the latency-bound softplus, at one more multiply). */
VEC_INLINE vf pow2_poly(vf r, vf j, const bool short_chain) {
  const vf c1 = _mm256_set1_ps(0x1.62e430p-1f), c2 = _mm256_set1_ps(0x1.ebfbdcp-3f);
  const vf c3 = _mm256_set1_ps(0x1.c6af7cp-5f), c4 = _mm256_set1_ps(0x1.3b2de0p-7f);
  const vf c5 = _mm256_set1_ps(0x1.5f082ep-10f), c6 = _mm256_set1_ps(0x1.416b52p-13f);
  const vf one = _mm256_set1_ps(1.0f);
  vf p;
  if (short_chain) {
    vf r2 = _mm256_mul_ps(r, r);
    vf p01 = _mm256_fmadd_ps(c1, r, one), p23 = _mm256_fmadd_ps(c3, r, c2);
    vf p46 = _mm256_fmadd_ps(c6, r2, _mm256_fmadd_ps(c5, r, c4));
    p = _mm256_fmadd_ps(_mm256_fmadd_ps(p46, r2, p23), r2, p01);
  } else {
    p = _mm256_fmadd_ps(c6, r, c5);
    p = _mm256_fmadd_ps(p, r, c4);
    p = _mm256_fmadd_ps(p, r, c3);
    p = _mm256_fmadd_ps(p, r, c2);
    p = _mm256_fmadd_ps(p, r, c1);
    p = _mm256_fmadd_ps(p, r, one);
  }
  __m256i k_bits = _mm256_slli_epi32(_mm256_castps_si256(j), 23); /* (j's low bits) << 23 */
  vf scale = _mm256_castsi256_ps(_mm256_add_epi32(k_bits, _mm256_set1_epi32(127 << 23)));
  return _mm256_mul_ps(p, scale);
}

/* 2^x within 1 ulp (0.8 measured): x = k + r, r = x - round(x) exact. x is clamped to
 * [-127, 128], so results below about 2^-126.5 are 0 (libm: subnormals) and from 2^127.5
 * (1.7e38) up +Inf. With `nonpositive` the caller promises x <= 0 (or NaN), and only the
 * lower clamp is applied: one operation less per decay in the scan's hottest loop. */
VEC_INLINE vf vf_exp2_impl(vf x, const bool nonpositive) {
  /* min/max return their second operand for NaN, so x goes second to carry it through. */
  if (!nonpositive) x = _mm256_min_ps(_mm256_set1_ps(128.0f), x);
  vf xc = _mm256_max_ps(_mm256_set1_ps(-127.0f), x);
  /* Adding 1.5 * 2^23 rounds to an integer and leaves it in the low mantissa bits. */
  const vf magic = _mm256_set1_ps(12582912.0f);
  vf j = _mm256_add_ps(xc, magic);
  return pow2_poly(_mm256_sub_ps(xc, _mm256_sub_ps(j, magic)), j, false);
}

VEC_INLINE vf vf_exp2(vf x) { return vf_exp2_impl(x, false); }
VEC_INLINE vf vf_exp2_nonpositive(vf x) { return vf_exp2_impl(x, true); }

/* e^x within about 1 ulp: k = round(x / ln2) and r = x - k ln2 with ln2 in two parts (Cody
 * and Waite), so that r keeps float precision for large |x|; then 2^(r / ln2) 2^k. Clamped
 * to [-127 ln2, 128 ln2] as vf_exp2 is. */
VEC_INLINE vf vf_exp(vf x) {
  vf xc = _mm256_max_ps(_mm256_set1_ps(-88.0296936f), _mm256_min_ps(_mm256_set1_ps(88.7228394f), x));
  const vf magic = _mm256_set1_ps(12582912.0f), log2e = _mm256_set1_ps(1.44269504088896341f);
  vf j = _mm256_fmadd_ps(xc, log2e, magic), k = _mm256_sub_ps(j, magic);
  vf r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0x1.62e430p-1f), xc);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-0x1.05c610p-29f), r);
  return pow2_poly(_mm256_mul_ps(r, log2e), j, true);
}

/* docs/math.md's softplus, log1p(exp(v)) for v <= 20 and v above, as max(v, 0) + log1p(e) with
 * e = exp(-|v|) in (0, 1], so that nothing overflows; log1p(e) = 2 atanh(s), s = e / (2 + e)
 * in (0, 1/3], by its series to s^13 (the rest is below 2e-8 of the sum). With `sigmoid`,
 * also sigmoid(v) = (v >= 0 ? 1 : e) / (1 + e) from the same e. */
VEC_INLINE vf vf_softplus_sigmoid(vf v, vf *sigmoid) {
  const vf one = _mm256_set1_ps(1.0f);
  const vf minus_abs = _mm256_or_ps(v, _mm256_set1_ps(-0.0f));
  const vf e = vf_exp(minus_abs);
  const vf s = _mm256_div_ps(e, _mm256_add_ps(_mm256_set1_ps(2.0f), e));
  const vf z = _mm256_mul_ps(s, s), z2 = _mm256_mul_ps(z, z);
  /* 2/3 + 2/5 z + ... + 2/13 z^5 in pairs (Estrin's scheme, a short chain). */
  const vf q01 = _mm256_fmadd_ps(_mm256_set1_ps(2.0f / 5), z, _mm256_set1_ps(2.0f / 3));
  const vf q23 = _mm256_fmadd_ps(_mm256_set1_ps(2.0f / 9), z, _mm256_set1_ps(2.0f / 7));
  const vf q45 = _mm256_fmadd_ps(_mm256_set1_ps(2.0f / 13), z, _mm256_set1_ps(2.0f / 11));
  const vf q = _mm256_fmadd_ps(_mm256_fmadd_ps(q45, z2, q23), z2, q01);
  const vf log1p_e = _mm256_fmadd_ps(_mm256_mul_ps(s, z), q, _mm256_add_ps(s, s));
  const vf sp = _mm256_add_ps(_mm256_max_ps(v, _mm256_setzero_ps()), log1p_e);
  if (sigmoid) {
    const vf positive = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GE_OQ);
    *sigmoid = _mm256_div_ps(_mm256_blendv_ps(e, one, positive), _mm256_add_ps(one, e));
  }
  return vf_select_gt(v, 20.0f, v, sp);
}

VEC_INLINE vf vf_softplus(vf v) { return vf_softplus_sigmoid(v, NULL); }

VEC_INLINE vf vf_sigmoid(vf v) {
  const vf one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, vf_exp(_mm256_sub_ps(_mm256_setzero_ps(), v))));
}

/* dst[j * dst_stride + i] = src[i * src_stride + j] for i, j < 8: one 8 x 8 tile transposed
 * (written out: as arrays, -O2 would keep them in memory). */
VEC_INLINE void tile8(const float *src, int64_t src_stride, float *dst, int64_t dst_stride) {
  const vf r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + src_stride);
  const vf r2 = _mm256_loadu_ps(src + 2 * src_stride), r3 = _mm256_loadu_ps(src + 3 * src_stride);
  const vf r4 = _mm256_loadu_ps(src + 4 * src_stride), r5 = _mm256_loadu_ps(src + 5 * src_stride);
  const vf r6 = _mm256_loadu_ps(src + 6 * src_stride), r7 = _mm256_loadu_ps(src + 7 * src_stride);
  /* Rows i, i+1 interleaved: columns (0, 1, 4, 5) and (2, 3, 6, 7). */
  const vf t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  const vf t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  const vf t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  const vf t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  /* Four rows of columns (0, 4), (1, 5), (2, 6), (3, 7). */
  const vf s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee);
  const vf s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee);
  const vf s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee);
  const vf s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);
  /* The 128-bit halves of rows 0-3 and 4-7 joined. */
  _mm256_storeu_ps(dst, _mm256_permute2f128_ps(s0, s4, 0x20));
  _mm256_storeu_ps(dst + dst_stride, _mm256_permute2f128_ps(s1, s5, 0x20));
  _mm256_storeu_ps(dst + 2 * dst_stride, _mm256_permute2f128_ps(s2, s6, 0x20));
  _mm256_storeu_ps(dst + 3 * dst_stride, _mm256_permute2f128_ps(s3, s7, 0x20));
  _mm256_storeu_ps(dst + 4 * dst_stride, _mm256_permute2f128_ps(s0, s4, 0x31));
  _mm256_storeu_ps(dst + 5 * dst_stride, _mm256_permute2f128_ps(s1, s5, 0x31));
  _mm256_storeu_ps(dst + 6 * dst_stride, _mm256_permute2f128_ps(s2, s6, 0x31));
  _mm256_storeu_ps(dst + 7 * dst_stride, _mm256_permute2f128_ps(s3, s7, 0x31));
}

/* dst[j] = the sum of v[j]'s lanes, j < 4, in a fixed order (pairs, then halves). */
VEC_INLINE void vf_lane_sums4(vf v0, vf v1, vf v2, vf v3, float *dst) {
  vf s = _mm256_hadd_ps(_mm256_hadd_ps(v0, v1), _mm256_hadd_ps(v2, v3));
  _mm_storeu_ps(dst, _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1)));
}

#else /* one float: the portable path, libm's functions */

typedef float vf;
enum { VL = 1 };

VEC_INLINE vf vf_set(float x) { return x; }
VEC_INLINE vf vf_zero(void) { return 0.0f; }
VEC_INLINE vf vf_load(const float *p) { return *p; }
VEC_INLINE void vf_store(float *p, vf v) { *p = v; }
VEC_INLINE vf vf_bcast(const float *p) { return *p; }
VEC_INLINE vf vf_add(vf a, vf b) { return a + b; }
VEC_INLINE vf vf_sub(vf a, vf b) { return a - b; }
VEC_INLINE vf vf_mul(vf a, vf b) { return a * b; }
VEC_INLINE vf vf_div(vf a, vf b) { return a / b; }
VEC_INLINE vf vf_fma(vf a, vf b, vf c) { return a * b + c; } /* fmaf is a slow call without FMA */
VEC_INLINE vf vf_select_gt(vf v, float limit, vf x, vf y) { return v > limit ? x : y; }
VEC_INLINE vf vf_exp2(vf x) { return exp2f(x); }
VEC_INLINE vf vf_exp2_nonpositive(vf x) { return exp2f(x); }
VEC_INLINE vf vf_exp(vf x) { return expf(x); }
VEC_INLINE vf vf_softplus(vf v) { return v <= 20.0f ? log1pf(expf(v)) : v; }
VEC_INLINE vf vf_sigmoid(vf v) { return 1.0f / (1.0f + expf(-v)); }
VEC_INLINE vf vf_softplus_sigmoid(vf v, vf *sigmoid) {
  if (sigmoid) *sigmoid = vf_sigmoid(v);
  return vf_softplus(v);
}
VEC_INLINE void vf_lane_sums4(vf v0, vf v1, vf v2, vf v3, float *dst) {
  dst[0] = v0, dst[1] = v1, dst[2] = v2, dst[3] = v3;
}
VEC_INLINE void tile8(const float *src, int64_t src_stride, float *dst, int64_t dst_stride) {
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++) dst[j * dst_stride + i] = src[i * src_stride + j];
}

#endif
#endif
