@ -- softplus.tpl: dt = softplus(v) for the forward templates (docs/math.md), without a branch.
/* softplus(v) = log1p(exp(v)) for v <= 20, v above (docs/math.md); below -15, 1 + exp(v)
 * rounds to 1 in fp32, so exp(v) itself is the correctly rounded value there. Both sides
 * are computed and one selected: a branch would cut a thread's unrolled steps into separate
 * blocks, each waiting out its own load and exp latencies, and log1pf's own branches and
 * range reduction cost about 36 instructions a step (docs/design-time-split-overheads.md). */
__device__ __forceinline__ float softplus(float v) {
  const float e = __expf(fminf(v, 20.f));
  const float l = __logf(1.f + e);
  return v > 20.f ? v : v < -15.f ? e : l;
}
