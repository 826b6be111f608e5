/* half.c: whole-array conversions between an activation type and fp32. */
#include "base/half.h"

void sf_convert_to_float(sf_dtype dtype, const void *src, int64_t n, float *dst) {
  const uint16_t *h = src;
  switch (dtype) {
    case SF_FP32: memcpy(dst, src, (size_t)n * sizeof(float)); break;
    case SF_FP16: for (int64_t i = 0; i < n; i++) dst[i] = sf_half_to_float(h[i]); break;
    case SF_BF16: for (int64_t i = 0; i < n; i++) dst[i] = sf_bf16_to_float(h[i]); break;
  }
}

void sf_convert_from_float(sf_dtype dtype, const float *src, int64_t n, void *dst) {
  uint16_t *h = dst;
  switch (dtype) {
    case SF_FP32: memcpy(dst, src, (size_t)n * sizeof(float)); break;
    case SF_FP16: for (int64_t i = 0; i < n; i++) h[i] = sf_float_to_half(src[i]); break;
    case SF_BF16: for (int64_t i = 0; i < n; i++) h[i] = sf_float_to_bf16(src[i]); break;
  }
}
