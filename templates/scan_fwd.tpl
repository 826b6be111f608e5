@ -- scan_fwd.tpl: the forward selective scan of docs/math.md, specialised for one variant.
@ --
@ -- Work split: a block holds `channels` channels of one batch row; `threads` threads scan
@ -- one channel, each owning `items` consecutive time steps of a chunk of threads*items
@ -- steps. Per state n a thread composes its steps sequentially (one exp2 per (t, n)),
@ -- the channel's threads combine their runs with warp shuffles (and once through shared
@ -- memory when a channel spans several warps), and the state carries across chunks in
@ -- shared memory. The pair (a, x) stands for h -> a*h + x; composing "first p, then q"
@ -- gives (q.a*p.a, q.a*p.x + q.x).
@ local common = import("scan_common")
@ local N, T, I, CH = variant.dstate, variant.threads, variant.items, variant.channels
@ local BLOCK = T * CH
@ local LANES = math.min(T, 32)       -- lanes of one channel within a warp
@ local WARPS = math.max(1, T // 32)  -- warps that scan one channel
@ if I > 32 then
@   reject("items", "the forward template accepts 1..32 time steps per thread, got " .. I)
@ end
@ -- S: states a thread works on at once, the largest divisor of N not above `states`
@ local S = variant.states
@ while N % S ~= 0 do S = S - 1 end
@ local smem_bytes = 3 * CH * N * 4 + (WARPS > 1 and 2 * CH * WARPS * S * 8 or 0)
@ if smem_bytes > 48 * 1024 then
@   reject("channels", string.format("channels=%d x dstate=%d needs %d bytes of shared memory; at most 49152 allowed", CH, N, smem_bytes))
@ end
@ include("kernel_params.h")
@ include("dtype.tpl")

#define SF_LOG2E 1.4426950408889634f

@ if variant.softplus then
@   include("softplus.tpl")
@ end

@ local bounds = variant.min_blocks > 0 and (BLOCK .. ", " .. variant.min_blocks) or tostring(BLOCK)
extern "C" __global__ void __launch_bounds__($(bounds)) $(variant.kernel_name)(const sf_fwd_params p) {
  __shared__ float carry[2][$(CH)][$(N)]; /* state entering the chunk, by chunk parity */
  __shared__ float A_smem[$(CH)][$(N)];     /* A * log2(e), read once per state and step */
@ if WARPS > 1 then
  __shared__ float2 warp_total[2][$(CH * WARPS)][$(S)]; /* (a, x) of each warp, by state-group parity */
@ end
  const int lane = threadIdx.x % $(T);      /* position in the channel's scan */
  const int slot = threadIdx.x / $(T);      /* which of the block's channels */
  const int seg_lane = lane % $(LANES);     /* position among the channel's lanes of this warp */
@ if WARPS > 1 then
  const int warp = lane / 32;               /* which of the channel's warps */
@ end
  const int d_raw = blockIdx.x * $(CH) + slot;
  const bool active = d_raw < p.dim;
  const int d = active ? d_raw : p.dim - 1; /* an idle slot mirrors a real channel, stores nothing */
  const int b = blockIdx.y;
  const int L = p.seqlen;

  const elem_t *u_row = (const elem_t *)p.u + b * p.u_batch_stride + d * p.u_dim_stride;
  const elem_t *delta_row = (const elem_t *)p.delta + b * p.delta_batch_stride + d * p.delta_dim_stride;
  elem_t *out_row = (elem_t *)p.out + b * p.out_batch_stride + d * p.out_dim_stride;
@ if variant.z then
  const elem_t *z_row = (const elem_t *)p.z + b * p.z_batch_stride + d * p.z_dim_stride;
@ end
@ if variant.B_var or variant.C_var then
  const int g = p.groups == 1 ? 0 : d / (p.dim / p.groups); /* one group skips two divisions */
@ end
@ for _, m in ipairs({ "B", "C" }) do
@   if variant[m .. "_var"] then
  const elem_t *$(m)_rows = (const elem_t *)p.$(m) + b * p.$(m)_batch_stride + g * p.$(m)_group_stride;
@   else
  const float *$(m)_fixed = (const float *)p.$(m) + (long long)d * $(N);
@   end
@ end
  const float *A_row = p.A + (long long)d * $(N);
@ if variant.D then
  const float D_d = p.D[d];
@ end
@ if variant.delta_bias then
  const float bias = p.delta_bias[d];
@ end
  const long long state_row = ((long long)b * p.dim + d) * $(N);

  /* Every load of a chunk (u, delta, z, the first states' B and C) is issued before any of
   * them is used, and the first chunk's before the block's h0 and A are read: a call of
   * one chunk (the tiny rows) then waits for memory once, not once per kind of input. The
   * runtime launches no empty call, so there is always a first chunk. */
  const int nchunks = (L + $(T * I) - 1) / $(T * I);
  for (int c = 0; c < nchunks; c++) {
    const int parity = c & 1;
    const int t0 = c * $(T * I) + lane * $(I);
    const int valid = L - t0; /* steps of my run inside the sequence (may be <= 0) */

    float u[$(I)], dt[$(I)], dtu[$(I)], y[$(I)];
    load_run(u_row + t0, valid, 0.f, u);
    load_run(delta_row + t0, valid, 0.f, dt);
@ -- One group of several states (the tiny launches): every load of the chunk goes out before
@ -- h0 and A are read (docs/design-first-fetch.md). Otherwise z loads after the state loop
@ -- and each group's B and C as it starts, so that none holds registers through the scan
@ -- of another (docs/design-time-split-registers.md).
@ local early = S == N and N > 1
@ local function group_loads(indent, first)
@   local out = {}
@   for _, m in ipairs({ "B", "C" }) do
@     if variant[m .. "_var"] then
@       table.insert(out, string.format("%sfloat %s_now[%d][%d];\n#pragma unroll\n%sfor (int k = 0; k < %d; k++) load_run(%s_rows + (%s + k) * p.%s_state_stride + t0, valid, 0.f, %s_now[k]);",
@                                       indent, m, S, I, indent, S, m, first, m, m))
@     end
@   end
@   return table.concat(out, "\n")
@ end
@ if early then
@   if variant.z then
    float zv[$(I)];
    load_run(z_row + t0, valid, 0.f, zv);
@   end
$(group_loads("    ", "0"))
@ end
    if (c == 0) { /* the block's h0 and A, published once */
      for (int n = lane; n < $(N); n += $(T)) {
        carry[0][slot][n] = p.h0 ? p.h0[state_row + n] : 0.f;
        A_smem[slot][n] = A_row[n] * SF_LOG2E;
      }
      __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < $(I); i++) {
@ local v = variant.delta_bias and "dt[i] + bias" or "dt[i]"
@ if variant.softplus then
      const float step = softplus($(v));
@ else
      const float step = $(v);
@ end
      dt[i] = i < valid ? step : 0.f; /* padding steps are the identity: a = 1, x = 0 */
      dtu[i] = dt[i] * u[i];
@ if variant.D then
      y[i] = D_d * u[i]; /* the skip term first: u is not needed after this loop */
@ else
      y[i] = 0.f;
@ end
    }

@ -- a run of a power of two steps starts at a multiple of its length, as every interval does
@ local runs_align = (I & (I - 1)) == 0
    /* The steps of my run after which a state is saved for the backward pass: t < L with
     * (t + 1) % interval == 0. The interval is a power of two; where my run's length is one
     * too, my run starts at a multiple of it, so with an interval of $(I) steps or more only
     * my last step can be one (save_last, stored after the walk). Otherwise a bit a step
     * (saves, checked inside the walk). */
    bool save_last = false;
    unsigned long long saves = 0;
    if (p.saved_states && active) {
      if ($(runs_align and "p.state_interval >= " .. I or "false")) {
        save_last = ((t0 + $(I)) & (p.state_interval - 1)) == 0 && t0 + $(I) <= L;
      } else {
#pragma unroll
        for (int i = 0; i < $(I); i++)
          if (((t0 + i + 1) & (p.state_interval - 1)) == 0 && t0 + i < L) saves |= 1ull << i;
      }
    }
    /* t / interval as a shift (the kernel parameter state_shift holds it too; reading that
     * instead measured 7.8% slower on one launch, docs/perf.md v37) */
    const int interval_log2 = __ffs(p.state_interval) - 1;

    /* States go S at a time: S independent chains for the scheduler to interleave. A
     * group's B and C rows load as it starts (C is first used after the runs are scanned),
     * and nothing of one group is kept for the next: registers, not prefetches, decide
     * how many warps hide the loads (docs/design-time-split-registers.md). */
    auto state_group = [&](int n0) {
@ if not early then
$(group_loads("      ", "n0"))
@ end
      /* a is kept for the second walk over the run; x = dt u B is one multiply, made again */
      float a[$(S)][$(I)];
      float run_a[$(S)], run_x[$(S)];
#pragma unroll
      for (int k = 0; k < $(S); k++) {
        const float A2 = A_smem[slot][n0 + k];
@ if not variant.B_var then
        const float Bn = B_fixed[n0 + k];
@ end
        run_a[k] = 1.f;
        run_x[k] = 0.f;
#pragma unroll
        for (int i = 0; i < $(I); i++) {
          a[k][i] = exp2f(dt[i] * A2);
          run_x[k] = a[k][i] * run_x[k] + dtu[i] * $(variant.B_var and "B_now[k][i]" or "Bn");
          run_a[k] = a[k][i] * run_a[k];
        }
      }
      /* Inclusive scan of the runs over this warp's lanes of the channel. */
#pragma unroll
      for (int offset = 1; offset < $(LANES); offset *= 2) {
#pragma unroll
        for (int k = 0; k < $(S); k++) {
          const float prev_a = __shfl_up_sync(0xffffffffu, run_a[k], offset, $(LANES));
          const float prev_x = __shfl_up_sync(0xffffffffu, run_x[k], offset, $(LANES));
          if (seg_lane >= offset) {
            run_x[k] = run_a[k] * prev_x + run_x[k];
            run_a[k] = run_a[k] * prev_a;
          }
        }
      }
@ if WARPS > 1 then
      /* Combine the channel's warps once through shared memory. */
      if (seg_lane == 31) {
#pragma unroll
        for (int k = 0; k < $(S); k++) warp_total[(n0 / $(S)) & 1][slot * $(WARPS) + warp][k] = make_float2(run_a[k], run_x[k]);
      }
      __syncthreads();
@ end
#pragma unroll
      for (int k = 0; k < $(S); k++) {
        float before_a = __shfl_up_sync(0xffffffffu, run_a[k], 1, $(LANES));
        float before_x = __shfl_up_sync(0xffffffffu, run_x[k], 1, $(LANES));
        if (seg_lane == 0) {
          before_a = 1.f;
          before_x = 0.f;
        }
@ if WARPS > 1 then
        /* The channel's warp totals, scanned by lanes 0..$(WARPS - 1) of every warp with
         * shuffles: lane w ends with warps 0..w composed, so my warp's prefix is lane
         * (warp - 1)'s and the chunk's total lane $(WARPS - 1)'s. */
        float2 part = seg_lane < $(WARPS) ? warp_total[(n0 / $(S)) & 1][slot * $(WARPS) + seg_lane][k] : make_float2(1.f, 0.f);
#pragma unroll
        for (int offset = 1; offset < $(WARPS); offset *= 2) {
          const float prev_a = __shfl_up_sync(0xffffffffu, part.x, offset, $(WARPS));
          const float prev_x = __shfl_up_sync(0xffffffffu, part.y, offset, $(WARPS));
          if (seg_lane % $(WARPS) >= offset) {
            part.y = part.x * prev_x + part.y;
            part.x = part.x * prev_a;
          }
        }
        const float total_a = __shfl_sync(0xffffffffu, part.x, $(WARPS - 1));
        const float total_x = __shfl_sync(0xffffffffu, part.y, $(WARPS - 1));
        const float prefix_a = __shfl_sync(0xffffffffu, part.x, (warp + $(WARPS - 1)) % $(WARPS));
        const float prefix_x = __shfl_sync(0xffffffffu, part.y, (warp + $(WARPS - 1)) % $(WARPS));
        if (warp > 0) {
          before_x = before_a * prefix_x + before_x;
          before_a = before_a * prefix_a;
        }
@ else
        const float total_a = run_a[k], total_x = run_x[k]; /* meaningful in the last lane */
@ end
@ local Ck = variant.C_var and "C_now[k][i]" or "C_fixed[n0 + k]"
@ local Xk = "dtu[i] * " .. (variant.B_var and "B_now[k][i]" or "B_fixed[n0 + k]")
        const float h_in = carry[parity][slot][n0 + k];
        if (lane == $(T - 1)) carry[parity ^ 1][slot][n0 + k] = total_a * h_in + total_x;
        float h = before_a * h_in + before_x;
        if (saves == 0) {
#pragma unroll
          for (int i = 0; i < $(I); i++) {
            h = a[k][i] * h + $(Xk);
            y[i] += $(Ck) * h;
          }
          if (save_last)
            p.saved_states[(state_row / $(N) * p.nsaved + ((t0 + $(I - 1)) >> interval_log2)) * $(N) + n0 + k] = h;
        } else {
#pragma unroll
          for (int i = 0; i < $(I); i++) {
            h = a[k][i] * h + $(Xk);
            y[i] += $(Ck) * h;
            if ((saves >> i) & 1ull)
              p.saved_states[(state_row / $(N) * p.nsaved + ((t0 + i) >> interval_log2)) * $(N) + n0 + k] = h;
          }
        }
      }
    };
#pragma unroll 1
    for (int n0 = 0; n0 < $(N); n0 += $(S)) state_group(n0);
    __syncthreads(); /* publishes the next chunk's carry */

@ if variant.z then
@   if not early then
    float zv[$(I)]; /* loaded only now: it would hold I registers through the scan */
    load_run(z_row + t0, valid, 0.f, zv);
@   end
#pragma unroll
    for (int i = 0; i < $(I); i++) y[i] *= __fdividef(zv[i], 1.f + __expf(-zv[i])); /* silu(z) */
@ end
    if (active) store_run(out_row + t0, valid, y);
  }

  if (active) {
    for (int n = lane; n < $(N); n += $(T)) {
      const float h_last = carry[nchunks & 1][slot][n];
      if (p.last_state) p.last_state[state_row + n] = h_last;
      if (p.saved_states && L > 0) p.saved_states[(state_row / $(N) * p.nsaved + p.nsaved - 1) * $(N) + n] = h_last;
    }
  }
}
