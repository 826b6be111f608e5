/* test_half.c: fp16 and bf16 conversions: exact round trips, ties to even, NaN and Inf. */
#include <criterion/criterion.h>
#include <math.h>

#include "base/half.h"

/* Every finite fp16 value as a double, computed from its fields, independent of half.h. */
static double half_value(uint16_t h) {
  int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  double magnitude = exponent == 0 ? ldexp(mantissa, -24)
                                   : ldexp(1024 + mantissa, exponent - 25);
  return (h & 0x8000) ? -magnitude : magnitude;
}

Test(half, fp16_to_float_matches_the_fields) {
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = sf_half_to_float((uint16_t)h);
    int exponent = (h >> 10) & 0x1f;
    if (exponent == 0x1f && (h & 0x3ff)) {
      cr_expect(isnan(f), "0x%04x should be NaN", h);
    } else if (exponent == 0x1f) {
      cr_expect(isinf(f) && (signbit(f) != 0) == ((h & 0x8000) != 0), "0x%04x should be Inf", h);
    } else {
      cr_expect_eq((double)f, half_value((uint16_t)h), "0x%04x", h);
      cr_expect_eq(signbit(f) != 0, (h & 0x8000) != 0, "sign of 0x%04x", h);
    }
  }
}

Test(half, every_fp16_and_bf16_round_trips) {
  for (uint32_t h = 0; h < 0x10000; h++) {
    uint16_t back = sf_float_to_half(sf_half_to_float((uint16_t)h));
    bool nan_in = ((h >> 10) & 0x1f) == 0x1f && (h & 0x3ff);
    if (nan_in)
      cr_expect(((back >> 10) & 0x1f) == 0x1f && (back & 0x3ff), "fp16 NaN 0x%04x", h);
    else
      cr_expect_eq(back, h, "fp16 0x%04x came back as 0x%04x", h, back);

    uint16_t bback = sf_float_to_bf16(sf_bf16_to_float((uint16_t)h));
    bool bnan_in = ((h >> 7) & 0xff) == 0xff && (h & 0x7f);
    if (bnan_in)
      cr_expect(((bback >> 7) & 0xff) == 0xff && (bback & 0x7f), "bf16 NaN 0x%04x", h);
    else
      cr_expect_eq(bback, h, "bf16 0x%04x came back as 0x%04x", h, bback);
  }
}

/* Between two neighbouring values: the exact midpoint goes to the one with an even
 * mantissa, and one fp32 ulp either side goes to the nearer. */
static void check_midpoints(uint16_t (*to)(float), float (*from)(uint16_t), uint16_t lo,
                            const char *what) {
  uint16_t hi = (uint16_t)(lo + 1);
  float a = from(lo), b = from(hi);
  float mid = (float)(((double)a + (double)b) / 2); /* exact: 12 significant bits */
  uint16_t even = (lo & 1) ? hi : lo;
  cr_expect_eq(to(mid), even, "%s tie between 0x%04x and 0x%04x", what, lo, hi);
  cr_expect_eq(to(nextafterf(mid, a)), lo, "%s below the midpoint of 0x%04x", what, lo);
  cr_expect_eq(to(nextafterf(mid, b)), hi, "%s above the midpoint of 0x%04x", what, lo);
}

Test(half, ties_go_to_even) {
  /* Positive and negative finite values, subnormals included, up to the largest. */
  for (uint32_t h = 0; h < 0x7bff; h++) {
    check_midpoints(sf_float_to_half, sf_half_to_float, (uint16_t)h, "fp16");
    check_midpoints(sf_float_to_half, sf_half_to_float, (uint16_t)(h | 0x8000), "fp16");
  }
  for (uint32_t h = 0; h < 0x7f7f; h++) {
    check_midpoints(sf_float_to_bf16, sf_bf16_to_float, (uint16_t)h, "bf16");
    check_midpoints(sf_float_to_bf16, sf_bf16_to_float, (uint16_t)(h | 0x8000), "bf16");
  }
}

Test(half, overflow_underflow_and_specials) {
  cr_expect_eq(sf_float_to_half(65504.0f), 0x7bff);
  cr_expect_eq(sf_float_to_half(65519.0f), 0x7bff);   /* below the midpoint to Inf */
  cr_expect_eq(sf_float_to_half(65520.0f), 0x7c00);   /* the tie goes to Inf (even) */
  cr_expect_eq(sf_float_to_half(-1e10f), 0xfc00);
  cr_expect_eq(sf_float_to_half(INFINITY), 0x7c00);
  cr_expect_eq(sf_float_to_half(-INFINITY), 0xfc00);
  cr_expect_eq(sf_float_to_half(0x1p-25f), 0x0000);   /* tie with 0 goes to 0 */
  cr_expect_eq(sf_float_to_half(0x1.000002p-25f), 0x0001);
  cr_expect_eq(sf_float_to_half(-0x1p-30f), 0x8000);  /* keeps the sign of zero */
  cr_expect_eq(sf_float_to_half(0x1.ffcp-15f), 0x0400); /* rounds up into the normals */
  cr_expect(isnan(sf_half_to_float(sf_float_to_half(NAN))));
  cr_expect(isnan(sf_half_to_float(sf_float_to_half(-NAN))));

  cr_expect_eq(sf_float_to_bf16(3.3895314e38f), 0x7f7f); /* largest finite bf16 */
  cr_expect_eq(sf_float_to_bf16(3.4028235e38f), 0x7f80); /* FLT_MAX rounds to Inf */
  cr_expect_eq(sf_float_to_bf16(-INFINITY), 0xff80);
  cr_expect(isnan(sf_bf16_to_float(sf_float_to_bf16(NAN))));
  /* A NaN whose payload sits only in the dropped bits must stay NaN, not become Inf. */
  cr_expect(isnan(sf_bf16_to_float(sf_float_to_bf16(sf_bits_float(0x7f800001u)))));
  cr_expect(isnan(sf_half_to_float(sf_float_to_half(sf_bits_float(0x7f800001u)))));
}

Test(half, array_conversions_follow_the_scalar_ones) {
  const float in[5] = {1.0f, -2.5f, 0x1.004p0f, 1e-8f, 70000.0f};
  uint16_t h[5];
  float back[5];
  sf_convert_from_float(SF_FP16, in, 5, h);
  sf_convert_to_float(SF_FP16, h, 5, back);
  for (int i = 0; i < 5; i++) cr_expect_eq(back[i], sf_half_to_float(sf_float_to_half(in[i])));
  sf_convert_from_float(SF_BF16, in, 5, h);
  sf_convert_to_float(SF_BF16, h, 5, back);
  for (int i = 0; i < 5; i++) cr_expect_eq(back[i], sf_bf16_to_float(sf_float_to_bf16(in[i])));
  float copy[5];
  sf_convert_from_float(SF_FP32, in, 5, copy);
  for (int i = 0; i < 5; i++) cr_expect_eq(copy[i], in[i]);
}
