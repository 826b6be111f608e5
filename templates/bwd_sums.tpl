@ -- bwd_sums.tpl: the two small kernels around the backward's five sums (dA, dB, dC, dD,
@ -- ddelta_bias). The default mode adds into them with atomics, so they start at zero:
@ -- sf_scan_bwd_zero clears all five in one launch (five memsets were five launches, each
@ -- a few microseconds of a short call's time). The deterministic mode stores partial sums
@ -- instead and sf_scan_bwd_finalize adds them up in a fixed order, all five in one launch too.
@ if variant.deterministic then

/* Every sum of `f` (kernel_params.h) from its partials: out[i] = the sum over k of
 * partials[k * size + i], always in the order k = 0, 1, ... All five in one launch. */
extern "C" __global__ void __launch_bounds__(SF_SUMS_THREADS) sf_scan_bwd_finalize(const sf_bwd_finalize_params f) {
  const long long first = blockIdx.x * (long long)SF_SUMS_THREADS + threadIdx.x;
  const long long stride = (long long)gridDim.x * SF_SUMS_THREADS;
#pragma unroll 1 /* one copy of the summing loop for the five sums */
  for (int k = 0; k < SF_BWD_SUMS; k++) {
    const float *partials = f.partials[k];
    float *out = f.sums[k];
    if (!out) continue;
    const long long size = f.sizes[k], slices = f.slices[k];
    for (long long i = first; i < size; i += stride) {
      float sum = 0.f;
      long long j = 0;
      for (; j + SF_SUMS_LOADS <= slices; j += SF_SUMS_LOADS) { /* the loads in flight together, then added in order */
        float part[SF_SUMS_LOADS];
#pragma unroll
        for (int q = 0; q < SF_SUMS_LOADS; q++) part[q] = partials[(j + q) * size + i];
#pragma unroll
        for (int q = 0; q < SF_SUMS_LOADS; q++) sum += part[q];
      }
      for (; j < slices; j++) sum += partials[j * size + i];
      out[i] = sum;
    }
  }
}
@ else

/* Every sum of `z` (kernel_params.h) set to 0; a NULL one skipped. */
extern "C" __global__ void __launch_bounds__(SF_SUMS_THREADS) sf_scan_bwd_zero(const sf_bwd_zero_params z) {
  const long long first = blockIdx.x * (long long)SF_SUMS_THREADS + threadIdx.x;
  const long long stride = (long long)gridDim.x * SF_SUMS_THREADS;
#pragma unroll
  for (int k = 0; k < SF_BWD_SUMS; k++) {
    float *sum = z.sums[k];
    if (!sum) continue;
    for (long long i = first; i < z.counts[k]; i += stride) sum[i] = 0.f;
  }
}
@ end
