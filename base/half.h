/* half.h: fp16 and bf16 <-> fp32 conversions, round to nearest even, NaN and Inf kept. */
#ifndef SCANFORGE_HALF_H
#define SCANFORGE_HALF_H

#include <stdint.h>
#include <string.h>

#include "scanforge/scanforge.h"

/* Inline: the CPU scan converts every element it loads and stores. */

static inline uint32_t sf_float_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  return x;
}

static inline float sf_bits_float(uint32_t x) {
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

static inline float sf_bf16_to_float(uint16_t h) { return sf_bits_float((uint32_t)h << 16); }

static inline uint16_t sf_float_to_bf16(float f) {
  uint32_t x = sf_float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x0040u); /* quiet NaN */
  /* Adding 0x7fff plus the lowest kept bit rounds half to even; a carry out of the
   * mantissa bumps the exponent, and past the largest finite value it yields Inf. */
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

static inline float sf_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return sf_bits_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) { /* zero or subnormal: mantissa * 2^-24, exact in fp32 */
    float magnitude = (float)mantissa * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return sf_bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

static inline uint16_t sf_float_to_half(float f) {
  uint32_t x = sf_float_bits(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu)); /* NaN */
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to Inf */
  if (ax < 0x33000000u) return sign;                        /* < 2^-25 rounds to zero */

  uint32_t exponent = ax >> 23, mantissa = ax & 0x7fffffu;
  uint32_t q, rest, halfway;
  if (exponent < 113) { /* below 2^-14: a subnormal half counting units of 2^-24 */
    uint32_t shift = 126 - exponent; /* 14..24 */
    mantissa |= 0x800000u;
    q = mantissa >> shift;
    rest = mantissa & ((1u << shift) - 1);
    halfway = 1u << (shift - 1);
  } else {
    q = ((exponent - 112) << 10) | (mantissa >> 13);
    rest = mantissa & 0x1fffu;
    halfway = 0x1000u;
  }
  /* A carry out of the mantissa moves to the next exponent, which is the right answer. */
  if (rest > halfway || (rest == halfway && (q & 1u))) q++;
  return (uint16_t)(sign | q);
}

/* Whole arrays: n elements of `dtype` at src to floats, and back with rounding. */
void sf_convert_to_float(sf_dtype dtype, const void *src, int64_t n, float *dst);
void sf_convert_from_float(sf_dtype dtype, const float *src, int64_t n, void *dst);

#endif
