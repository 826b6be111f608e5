@ -- carry_combine.tpl: the device function that turns the carry pass's per-segment maps
@ -- into what each segment starts from (docs/design-segments.md). Included by the
@ -- split=state templates; their combine kernels call it.
@ local N = variant.dstate
/* Segment c's carry is a map x -> P[c] x + V[c] (the forward's state, the backward's
 * adjoint). Applied in order (c = 0, 1, ... or, `reverse`, the last first) from x0, each V[c]
 * that a map is made of is replaced in place by the x that reaches it; a segment past the
 * last map (`maps` < nseg) gets the x after all of them. Entries of one (row, state) lie N
 * apart from `first`. Each (row, state) pair has RUNS threads (sf_combine_runs,
 * kernel_params.h):
 *  - RUNS = 1, when the pairs alone fill the GPU: one thread walks them all, loading eight
 *    maps before it stores any (a store to V between the loads would make each load wait
 *    for the one before);
 *  - RUNS = 32: each thread a run of consecutive maps; the runs are composed in parallel,
 *    chained in shared memory, then walked again from their true start. */
template <int RUNS>
__device__ __forceinline__ void combine_carries(const float *__restrict__ P, float *__restrict__ V, long long first,
                                                int maps, int nseg, bool reverse, float x0, bool active) {
  constexpr int PAIRS = SF_COMBINE_THREADS / RUNS;
  auto at = [&](int k) { return first + (long long)(reverse ? nseg - 1 - k : k) * $(N); };
  if constexpr (RUNS == 1) {
    if (!active) return;
    float x = x0;
    for (int k = 0; k < maps; k += 8) {
      float p8[8], v8[8];
#pragma unroll
      for (int j = 0; j < 8; j++) {
        p8[j] = k + j < maps ? P[at(k + j)] : 1.f;
        v8[j] = k + j < maps ? V[at(k + j)] : 0.f;
      }
#pragma unroll
      for (int j = 0; j < 8; j++)
        if (k + j < maps) V[at(k + j)] = x, x = p8[j] * x + v8[j];
    }
    if (maps < nseg) V[at(maps)] = x;
  } else {
    __shared__ float run_P[RUNS][PAIRS], run_V[RUNS][PAIRS];
    const int pair = threadIdx.x % PAIRS, run = threadIdx.x / PAIRS;
    const int per_run = (maps + RUNS - 1) / RUNS;
    const int k_begin = min(run * per_run, maps), k_end = min(k_begin + per_run, maps);
    float p_run = 1.f, v_run = 0.f; /* this run's maps composed: x -> p_run x + v_run */
    if (active) {
#pragma unroll 4
      for (int k = k_begin; k < k_end; k++) {
        const float p = P[at(k)];
        v_run = p * v_run + V[at(k)];
        p_run *= p;
      }
    }
    run_P[run][pair] = p_run;
    run_V[run][pair] = v_run;
    __syncthreads();
    if (run == 0) { /* the runs chained: what reaches each */
      float x = x0;
      for (int r = 0; r < RUNS; r++) {
        const float p = run_P[r][pair], v = run_V[r][pair];
        run_V[r][pair] = x;
        x = p * x + v;
      }
    }
    __syncthreads();
    if (!active) return;
    float x = run_V[run][pair];
#pragma unroll 4
    for (int k = k_begin; k < k_end; k++) {
      const float p = P[at(k)], v = V[at(k)];
      V[at(k)] = x;
      x = p * x + v;
    }
    if (maps < nseg && k_end == maps && k_begin < k_end) V[at(maps)] = x; /* maps >= 1: segments come two or more */
  }
}

/* A combine kernel's work: the (row, state) pairs of block (x, y), SF_COMBINE_THREADS /
 * RUNS of them, row blockIdx.y; x0 from `start` ((batch, dim, N); NULL: 0). */
template <int RUNS>
__device__ __forceinline__ void combine_block(const float *P, float *V, const float *start, int dim, int maps,
                                              int nseg, bool reverse) {
  const long long dn = (long long)blockIdx.x * (SF_COMBINE_THREADS / RUNS) + threadIdx.x % (SF_COMBINE_THREADS / RUNS);
  const bool active = dn < (long long)dim * $(N);
  const long long state = (long long)blockIdx.y * dim * $(N) + (active ? dn : 0);
  const long long first = (state / $(N) * nseg) * $(N) + state % $(N); /* segment 0's entry */
  combine_carries<RUNS>(P, V, first, maps, nseg, reverse, active && start ? start[state] : 0.f, active);
}
