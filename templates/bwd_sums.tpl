@ -- bwd_sums.tpl: the two small kernels around the backward's five sums (dA, dB, dC, dD,
@ -- ddelta_bias). The default mode adds into them with atomics, so they start at zero:
@ -- sf_scan_bwd_zero clears all five in one launch (five memsets were five launches, each
@ -- a few microseconds of a short call's time). The deterministic mode stores partial sums
@ -- instead and sf_scan_bwd_finalize adds them up in a fixed order.
@ if variant.deterministic then

/* out[i] = the sum over k of partials[k * size + i], always in the order k = 0, 1, ... */
extern "C" __global__ void __launch_bounds__(256) sf_scan_bwd_finalize(const float *partials, long long slices,
                                                                      long long size, float *out) {
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < size; i += (long long)gridDim.x * 256) {
    float sum = 0.f;
    for (long long k = 0; k < slices; k++) sum += partials[k * size + i];
    out[i] = sum;
  }
}
@ else

/* Every sum of `z` (kernel_params.h) set to 0; a NULL one skipped. */
extern "C" __global__ void __launch_bounds__(SF_ZERO_THREADS) sf_scan_bwd_zero(const sf_bwd_zero_params z) {
  const long long first = blockIdx.x * (long long)SF_ZERO_THREADS + threadIdx.x;
  const long long stride = (long long)gridDim.x * SF_ZERO_THREADS;
#pragma unroll
  for (int k = 0; k < SF_BWD_SUMS; k++) {
    float *sum = z.sums[k];
    if (!sum) continue;
    for (long long i = first; i < z.counts[k]; i += stride) sum[i] = 0.f;
  }
}
@ end
