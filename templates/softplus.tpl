@ -- softplus.tpl: dt = softplus(v) without a branch (docs/math.md), and its slope for the backward.
/* softplus(v) = log1p(exp(v)) for v <= 20, v above (docs/math.md); below -15, 1 + exp(v)
 * rounds to 1 in fp32, so exp(v) itself is the correctly rounded value there. Both sides
 * are computed and one selected: a branch would cut a thread's unrolled steps into separate
 * blocks, each waiting out its own load and exp latencies, and log1pf's own branches and
 * range reduction cost about 36 instructions a step (docs/design-time-split-overheads.md).
 * The slope d dt / dv = e / (1 + e) comes from the same exponential. */
__device__ __forceinline__ void softplus_with_slope(float v, float &dt, float &slope) {
  const float e = __expf(fminf(v, 20.f));
  const float l = __logf(1.f + e);
  dt = v > 20.f ? v : v < -15.f ? e : l;
  slope = v > 20.f ? 1.f : __fdividef(e, 1.f + e);
}

/* The forward's dt alone (the slope is left unused, and so not computed). */
__device__ __forceinline__ float softplus(float v) {
  float dt, slope;
  softplus_with_slope(v, dt, slope);
  return dt;
}
