@ -- carry_combine.tpl: the device functions that turn the carry pass's per-segment maps
@ -- into what each segment starts from (docs/design-segments.md). Included by the
@ -- split=state templates; their combine kernels call combine_block.
@ local N = variant.dstate
/* Segment c's carry is a map x -> P[c] x + V[c] (the forward's state, the backward's
 * adjoint). Applied in order (c = 0, 1, ... or, `reverse`, the last first) from x0, each V[c]
 * that a map is made of is replaced in place by the x that reaches it; a segment past the
 * last map (`maps` < nseg) gets the x after all of them. Entries of one (row, state) lie N
 * apart from `first`. Each (row, state) pair has `runs` threads (sf_combine_runs,
 * kernel_params.h), each with a run of consecutive maps:
 *  - runs = 1: the thread walks all the maps, loading eight before it stores any (a store
 *    to V between the loads would make each load wait for the one before);
 *  - 2 to SF_COMBINE_LANE_RUNS: neighbouring lanes of one warp. Each loads its run's
 *    first SF_COMBINE_RUN_MAPS maps at once and composes its run; a scan over the pair's
 *    lanes with shuffles gives each run the x that reaches it; each walks its run from
 *    there, the kept maps from registers;
 *  - SF_COMBINE_SHARED_RUNS: the pair's runs in different warps, so that a warp's loads
 *    cover neighbouring states (a warp of one pair's runs would read 32 scattered words);
 *    the runs are composed in parallel, chained in shared memory by one thread, then walked
 *    again from their true start. */
__device__ __forceinline__ void combine_carries(const float *__restrict__ P, float *__restrict__ V, long long first,
                                                int maps, int nseg, bool reverse, float x0, int runs, bool active) {
  auto at = [&](int k) { return first + (long long)(reverse ? nseg - 1 - k : k) * $(N); };
  if (runs == 1) {
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
    return;
  }
  if (runs == SF_COMBINE_SHARED_RUNS) {
    constexpr int RUNS = SF_COMBINE_SHARED_RUNS, PAIRS = SF_COMBINE_THREADS / RUNS;
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
    return;
  }
  constexpr int KEPT = SF_COMBINE_RUN_MAPS;
  const int run = threadIdx.x % runs;
  const int per_run = (maps + runs - 1) / runs;
  const int k_begin = active ? min(run * per_run, maps) : 0, k_end = active ? min(k_begin + per_run, maps) : 0;
  float p_kept[KEPT], v_kept[KEPT];
  float p_run = 1.f, v_run = 0.f; /* this run's maps composed: x -> p_run x + v_run */
#pragma unroll
  for (int j = 0; j < KEPT; j++) {
    p_kept[j] = k_begin + j < k_end ? P[at(k_begin + j)] : 1.f;
    v_kept[j] = k_begin + j < k_end ? V[at(k_begin + j)] : 0.f;
  }
#pragma unroll
  for (int j = 0; j < KEPT; j++) v_run = p_kept[j] * v_run + v_kept[j], p_run *= p_kept[j];
  /* No run is longer than the kept maps: sf_combine_runs gives this shape only when
   * runs x SF_COMBINE_RUN_MAPS >= maps (tests/runtime/test_segments.c checks the rule). */
  /* Inclusive scan of the runs over the pair's lanes, then the x that reaches my run. */
  for (int offset = 1; offset < runs; offset *= 2) {
    const float prev_p = __shfl_up_sync(0xffffffffu, p_run, offset, runs);
    const float prev_v = __shfl_up_sync(0xffffffffu, v_run, offset, runs);
    if (run >= offset) v_run = p_run * prev_v + v_run, p_run *= prev_p;
  }
  float before_p = __shfl_up_sync(0xffffffffu, p_run, 1, runs);
  float before_v = __shfl_up_sync(0xffffffffu, v_run, 1, runs);
  if (run == 0) before_p = 1.f, before_v = 0.f;
  if (!active) return;
  float x = before_p * x0 + before_v;
#pragma unroll
  for (int j = 0; j < KEPT; j++)
    if (k_begin + j < k_end) V[at(k_begin + j)] = x, x = p_kept[j] * x + v_kept[j];
  if (maps < nseg && k_end == maps && k_begin < k_end) V[at(maps)] = x; /* maps >= 1: segments come two or more */
}

/* A combine kernel's work: the (row, state) pairs of block (x, y), SF_COMBINE_THREADS /
 * runs of them, row blockIdx.y; x0 from `start` ((batch, dim, N); NULL: 0). */
__device__ __forceinline__ void combine_block(const float *P, float *V, const float *start, int dim, int maps,
                                              int nseg, bool reverse) {
  const int runs = sf_combine_runs((long long)gridDim.y * dim * $(N), maps); /* as the host launched it */
  const int pairs = SF_COMBINE_THREADS / runs;
  const int pair = runs == SF_COMBINE_SHARED_RUNS ? threadIdx.x % pairs : threadIdx.x / runs;
  const long long dn = (long long)blockIdx.x * pairs + pair;
  const bool active = dn < (long long)dim * $(N);
  const long long state = (long long)blockIdx.y * dim * $(N) + (active ? dn : 0);
  const long long first = (state / $(N) * nseg) * $(N) + state % $(N); /* segment 0's entry */
  combine_carries(P, V, first, maps, nseg, reverse, active && start ? start[state] : 0.f, runs, active);
}
