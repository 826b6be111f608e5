@ -- carry_combine.tpl: the device function that turns the carry pass's per-segment maps
@ -- into what each segment starts from (docs/design-segments.md). Included by the
@ -- split=state templates; their combine kernels call it.
@ local N = variant.dstate
/* Segment c's carry is a map x -> P[c] x + V[c] (the forward's state, the backward's
 * adjoint). Applied in order (c = 0, 1, ... or, `reverse`, the last first) from x0, each V[c]
 * that a map is made of is replaced in place by the x that reaches it; a segment past the
 * last map (`maps` < nseg) gets the x after all of them. Entries of one (row, state) lie N
 * apart from `first`. Each (row, state) pair has `runs` threads (sf_combine_runs,
 * kernel_params.h), each a run of consecutive maps; with more than one, the runs are
 * composed in parallel, chained in shared memory, then walked again from their true
 * start. Work is linear in the segments. */
__device__ __forceinline__ void combine_carries(const float *__restrict__ P, float *__restrict__ V, long long first,
                                                int maps, int nseg, int runs, bool reverse, float x0, bool active) {
  __shared__ float run_P[SF_COMBINE_THREADS], run_V[SF_COMBINE_THREADS]; /* [run * pairs + pair] */
  const int pairs = SF_COMBINE_THREADS / runs, pair = threadIdx.x % pairs, run = threadIdx.x / pairs;
  const int per_run = (maps + runs - 1) / runs;
  const int k_begin = min(run * per_run, maps), k_end = min(k_begin + per_run, maps);
  auto at = [&](int k) { return first + (long long)(reverse ? nseg - 1 - k : k) * $(N); };
  float x = x0; /* what reaches this run's first map */
  if (runs > 1) { /* the same for the whole block */
    float p_run = 1.f, v_run = 0.f; /* this run's maps composed: x -> p_run x + v_run */
    if (active) {
#pragma unroll 4
      for (int k = k_begin; k < k_end; k++) {
        const float p = P[at(k)];
        v_run = p * v_run + V[at(k)];
        p_run *= p;
      }
    }
    run_P[threadIdx.x] = p_run;
    run_V[threadIdx.x] = v_run;
    __syncthreads();
    if (run == 0) { /* the runs chained: what reaches each */
      float chained = x0;
      for (int r = 0; r < runs; r++) {
        const float p = run_P[r * pairs + pair], v = run_V[r * pairs + pair];
        run_V[r * pairs + pair] = chained;
        chained = p * chained + v;
      }
    }
    __syncthreads();
    x = run_V[threadIdx.x];
  }
  if (!active) return;
#pragma unroll 4
  for (int k = k_begin; k < k_end; k++) {
    const float p = P[at(k)], v = V[at(k)];
    V[at(k)] = x;
    x = p * x + v;
  }
  if (maps < nseg && k_end == maps && k_begin < k_end) V[at(maps)] = x; /* maps >= 1: segments come two or more */
}
