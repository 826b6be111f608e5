/* relerr.h: relative error ||x - ref||_2 / ||ref||_2 in double, the accuracy measure of docs/math.md. */
#ifndef SCANFORGE_RELERR_H
#define SCANFORGE_RELERR_H

#include <stddef.h>

/* INFINITY when x (or ref) holds any NaN or Inf, so an unwritten (poisoned) element or
 * an overflow always fails a `<= tolerance` check. A zero ref gives 0 only for a zero x. */
double relerr(const double *x, const double *ref, size_t n);
/* The same for a float result measured against the float64 reference. */
double relerr_f32(const float *x, const double *ref, size_t n);

#endif
