/* relerr.c: relative L2 error against a float64 reference, non-finite values failing. */
#include "runtime/check/relerr.h"

#include <math.h>

static double finish(double diff2, double ref2, int bad) {
  if (bad) return INFINITY;
  if (ref2 == 0.0) return diff2 == 0.0 ? 0.0 : INFINITY;
  return sqrt(diff2 / ref2);
}

double relerr(const double *x, const double *ref, size_t n) {
  double diff2 = 0.0, ref2 = 0.0;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(x[i]) || !isfinite(ref[i])) bad = 1;
    double e = x[i] - ref[i];
    diff2 += e * e;
    ref2 += ref[i] * ref[i];
  }
  return finish(diff2, ref2, bad);
}

double relerr_f32(const float *x, const double *ref, size_t n) {
  double diff2 = 0.0, ref2 = 0.0;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(x[i]) || !isfinite(ref[i])) bad = 1;
    double e = (double)x[i] - ref[i];
    diff2 += e * e;
    ref2 += ref[i] * ref[i];
  }
  return finish(diff2, ref2, bad);
}
