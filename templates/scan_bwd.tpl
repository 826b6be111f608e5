@ -- scan_bwd.tpl: the backward selective scan of docs/math.md, specialised for one variant.
@ --
@ -- Work split as in the forward: a block holds `channels` channels of one batch row,
@ -- `threads` threads scan one channel with `items` steps each, and a chunk is exactly the
@ -- forward's state interval (threads * items), so every chunk starts from a state the
@ -- forward saved. Chunks run from the last to the first. Per state n a chunk recomputes
@ -- a = exp2(dt*A*log2e) once, scans forward for the states h, then scans in reverse for
@ -- e[t] = a[t]*dh[t] (dh[t] = C[t]*g[t] + e[t+1]; e past the end is d_last_state), and
@ -- accumulates every gradient. Sums over channels (variable dB, dC) are first taken over
@ -- the block's channels in shared memory; sums over time and batch (dA, fixed dB/dC,
@ -- dD, ddelta_bias) are taken per warp, then once per block with atomics.
@ -- Deterministic variants replace every atomic with a store to a partial sum of its own
@ -- (per batch row, or per block of a group's channels), which sf_scan_bwd_finalize then
@ -- adds up in a fixed order.
@ local common = import("scan_common")
@ local N, T, I, CH = variant.dstate, variant.threads, variant.items, variant.channels
@ local BLOCK = T * CH
@ local K = T * I                      -- chunk = the forward's state interval
@ local LANES = math.min(T, 32)
@ local WARPS = math.max(1, T // 32)
@ if I > 32 then
@   reject("items", "the backward template accepts 1..32 time steps per thread, got " .. I)
@ end
@ if not common.is_power_of_two(K) or K < 64 or K > 512 then
@   reject("threads", string.format("threads x items must be a state interval (64, 128, 256 or 512), got %d x %d = %d", T, I, K))
@ end
@ local det = variant.deterministic
@ local reduce_B = variant.B_var and CH > 1
@ local reduce_C = variant.C_var and CH > 1
@ local smem_bytes = 2 * CH * N * 4 + (WARPS > 1 and 4 * CH * WARPS * 8 or 0) + CH * WARPS * N * 4 * 3
@   + (reduce_B and CH * K * 4 or 0) + (reduce_C and CH * K * 4 or 0)
@ if smem_bytes > 48 * 1024 then
@   reject("channels", string.format("channels=%d x dstate=%d needs %d bytes of shared memory; at most 49152 allowed", CH, N, smem_bytes))
@ end
@ local n_unroll = (N * I <= 64) and "" or " 1"
@ include("kernel_params.h")
@ include("dtype.tpl")

#define SF_LOG2E 1.4426950408889634f

@ if variant.softplus then
@   include("softplus.tpl")
@ end

/* Sum over the channel's lanes of this warp. */
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = $(LANES // 2); offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset, $(LANES));
  return v;
}

@ local bounds = variant.min_blocks > 0 and (BLOCK .. ", " .. variant.min_blocks) or tostring(BLOCK)
extern "C" __global__ void __launch_bounds__($(bounds)) $(variant.kernel_name)(const sf_bwd_params p) {
  __shared__ float e_carry[2][$(CH)][$(N)]; /* e entering the chunk from its end, by parity */
  /* per warp of each channel: sums over time of dA and fixed dB, dC terms */
  __shared__ float acc_A[$(CH * WARPS)][$(N)];
@ if not variant.B_var then
  __shared__ float acc_B[$(CH * WARPS)][$(N)];
@ end
@ if not variant.C_var then
  __shared__ float acc_C[$(CH * WARPS)][$(N)];
@ end
@ if WARPS > 1 then
  __shared__ float2 fwd_total[2][$(CH * WARPS)];
  __shared__ float2 rev_total[2][$(CH * WARPS)];
@ end
@ if reduce_B then
  __shared__ float red_B[$(CH)][$(K)];
@ end
@ if reduce_C then
  __shared__ float red_C[$(CH)][$(K)];
@ end
  const sf_fwd_params &f = p.f;
  const int lane = threadIdx.x % $(T);
  const int slot = threadIdx.x / $(T);
  const int seg_lane = lane % $(LANES);
  const int warp = lane / 32; /* 0 when a channel fits in a warp */
  const int acc_row = slot * $(WARPS) + warp;
  const int d_raw = blockIdx.x * $(CH) + slot;
  const bool active = d_raw < f.dim;
  const int d = active ? d_raw : f.dim - 1;
  const int b = blockIdx.y;
  const int L = f.seqlen;

  const elem_t *u_row = (const elem_t *)f.u + b * f.u_batch_stride + d * f.u_dim_stride;
  const elem_t *delta_row = (const elem_t *)f.delta + b * f.delta_batch_stride + d * f.delta_dim_stride;
  const elem_t *dout_row = (const elem_t *)p.dout + b * p.dout_batch_stride + d * p.dout_dim_stride;
  elem_t *du_row = (elem_t *)p.du + b * p.du_batch_stride + d * p.du_dim_stride;
  elem_t *ddelta_row = (elem_t *)p.ddelta + b * p.ddelta_batch_stride + d * p.ddelta_dim_stride;
@ if variant.z then
  const elem_t *z_row = (const elem_t *)f.z + b * f.z_batch_stride + d * f.z_dim_stride;
  elem_t *dz_row = (elem_t *)p.dz + b * p.dz_batch_stride + d * p.dz_dim_stride;
@ end
@ if variant.B_var or variant.C_var then
  const int g = d / (f.dim / f.groups);
@ end
@ for _, m in ipairs({ "B", "C" }) do
@   if variant[m .. "_var"] then
  const elem_t *$(m)_rows = (const elem_t *)f.$(m) + b * f.$(m)_batch_stride + g * f.$(m)_group_stride;
  /* gradient rows: fp32, contiguous (batch, G, N, L) */
@     if det then
  /* partial sums of this block's channels: (blocks per group, batch, G, N, L) */
  float *d$(m)_rows = p.d$(m) ? p.d$(m) + ((((long long)(d % (f.dim / f.groups)) / $(CH)) * f.batch + b) * f.groups + g) * $(N) * L : 0;
@     else
  float *d$(m)_rows = p.d$(m) ? p.d$(m) + ((long long)b * f.groups + g) * $(N) * L : 0;
@     end
@   else
  const float *$(m)_fixed = (const float *)f.$(m) + (long long)d * $(N);
@   end
@ end
  const float *A_row = f.A + (long long)d * $(N);
@ if variant.D then
  const float D_d = f.D[d];
@ end
@ if variant.delta_bias then
  const float bias = f.delta_bias[d];
@ end
  const long long state_row = ((long long)b * f.dim + d) * $(N);
  const float *saved_row = f.saved_states + state_row * f.nsaved; /* (nsaved, N) */
  /* saved states a chunk: the state before chunk c is saved state c * saved_per_chunk - 1 */
  const int saved_per_chunk = $(K) / f.state_interval;

  for (int n = lane; n < $(N); n += $(T)) e_carry[0][slot][n] = p.d_last_state ? p.d_last_state[state_row + n] : 0.f;
  for (int n = seg_lane; n < $(N); n += $(LANES)) {
    acc_A[acc_row][n] = 0.f;
@ if not variant.B_var then
    acc_B[acc_row][n] = 0.f;
@ end
@ if not variant.C_var then
    acc_C[acc_row][n] = 0.f;
@ end
  }
  __syncthreads();
  float dD_sum = 0.f, dbias_sum = 0.f;

  const int nchunks = (L + $(K - 1)) / $(K);
  for (int c = nchunks - 1; c >= 0; c--) {
    const int parity = (nchunks - 1 - c) & 1;
    const int t0 = c * $(K) + lane * $(I);
    const int valid = L - t0;

    float u[$(I)], dt[$(I)], dtu[$(I)], gv[$(I)], ddt[$(I)], du[$(I)];
@ if variant.softplus then
    float dsoft[$(I)]; /* d softplus / dv */
@ end
@ if variant.z then
    float gate[$(I)], y[$(I)]; /* dz = y * gate */
@ end
    load_run(u_row + t0, valid, 0.f, u);
    load_run(delta_row + t0, valid, 0.f, dt);
    load_run(dout_row + t0, valid, 0.f, gv);
@ if variant.z then
    {
      float zv[$(I)];
      load_run(z_row + t0, valid, 0.f, zv);
#pragma unroll
      for (int i = 0; i < $(I); i++) {
        const float s = __fdividef(1.f, 1.f + __expf(-zv[i]));
        gate[i] = gv[i] * s * (1.f + zv[i] * (1.f - s));
        gv[i] = gv[i] * zv[i] * s; /* g = dout * silu(z) */
        y[i] = 0.f;
      }
    }
@ end
#pragma unroll
    for (int i = 0; i < $(I); i++) {
@ local v = variant.delta_bias and "dt[i] + bias" or "dt[i]"
      const float v = $(v);
@ if variant.softplus then
      float step;
      softplus_with_slope(v, step, dsoft[i]);
@ else
      const float step = v;
@ end
      dt[i] = i < valid ? step : 0.f; /* padding steps: a = 1, x = 0, g = 0 */
      dtu[i] = dt[i] * u[i];
      ddt[i] = 0.f;
      du[i] = 0.f;
    }

#pragma unroll$(n_unroll)
    for (int n = 0; n < $(N); n++) {
      const float A_n = A_row[n];
      const float A2 = A_n * SF_LOG2E;
@ if variant.B_var then
      float Bn[$(I)];
      load_run(B_rows + n * f.B_state_stride + t0, valid, 0.f, Bn);
@ else
      const float Bn = B_fixed[n];
@ end
@ if variant.C_var then
      float Cn[$(I)];
      load_run(C_rows + n * f.C_state_stride + t0, valid, 0.f, Cn);
@ else
      const float Cn = C_fixed[n];
@ end
@ local Bi = variant.B_var and "Bn[i]" or "Bn"
@ local Ci = variant.C_var and "Cn[i]" or "Cn"
      float a[$(I)], hp[$(I)];
      /* forward: the state before each of my steps */
      float run_a = 1.f, run_x = 0.f;
#pragma unroll
      for (int i = 0; i < $(I); i++) {
        a[i] = exp2f(dt[i] * A2);
        run_x = a[i] * run_x + dtu[i] * $(Bi);
        run_a = a[i] * run_a;
      }
#pragma unroll
      for (int offset = 1; offset < $(LANES); offset *= 2) {
        const float prev_a = __shfl_up_sync(0xffffffffu, run_a, offset, $(LANES));
        const float prev_x = __shfl_up_sync(0xffffffffu, run_x, offset, $(LANES));
        if (seg_lane >= offset) {
          run_x = run_a * prev_x + run_x;
          run_a = run_a * prev_a;
        }
      }
      float before_a = __shfl_up_sync(0xffffffffu, run_a, 1, $(LANES));
      float before_x = __shfl_up_sync(0xffffffffu, run_x, 1, $(LANES));
      if (seg_lane == 0) {
        before_a = 1.f;
        before_x = 0.f;
      }
@ if WARPS > 1 then
      if (seg_lane == 31) fwd_total[n & 1][acc_row] = make_float2(run_a, run_x);
      __syncthreads();
      {
        float pre_a = 1.f, pre_x = 0.f;
#pragma unroll
        for (int w = 0; w < $(WARPS - 1); w++) {
          if (w < warp) {
            const float2 t = fwd_total[n & 1][slot * $(WARPS) + w];
            pre_x = t.x * pre_x + t.y;
            pre_a = t.x * pre_a;
          }
        }
        before_x = before_a * pre_x + before_x;
        before_a = before_a * pre_a;
      }
@ end
      const float h_start = c > 0 ? saved_row[(long long)(c * saved_per_chunk - 1) * $(N) + n] : (f.h0 ? f.h0[state_row + n] : 0.f);
      {
        float h = before_a * h_start + before_x;
#pragma unroll
        for (int i = 0; i < $(I); i++) {
          hp[i] = h;
          h = a[i] * h + dtu[i] * $(Bi);
@ if variant.z then
          y[i] += $(Ci) * h;
@ end
        }
      }

      /* reverse: e leaving my first step, as a function of e entering after my last */
      float rev_a = 1.f, rev_x = 0.f;
#pragma unroll
      for (int i = $(I - 1); i >= 0; i--) {
        rev_x = a[i] * (rev_x + $(Ci) * gv[i]);
        rev_a = a[i] * rev_a;
      }
#pragma unroll
      for (int offset = 1; offset < $(LANES); offset *= 2) {
        const float next_a = __shfl_down_sync(0xffffffffu, rev_a, offset, $(LANES));
        const float next_x = __shfl_down_sync(0xffffffffu, rev_x, offset, $(LANES));
        if (seg_lane + offset < $(LANES)) {
          rev_x = rev_a * next_x + rev_x;
          rev_a = rev_a * next_a;
        }
      }
      float after_a = __shfl_down_sync(0xffffffffu, rev_a, 1, $(LANES));
      float after_x = __shfl_down_sync(0xffffffffu, rev_x, 1, $(LANES));
      if (seg_lane == $(LANES - 1)) {
        after_a = 1.f;
        after_x = 0.f;
      }
@ if WARPS > 1 then
      if (seg_lane == 0) rev_total[n & 1][acc_row] = make_float2(rev_a, rev_x);
      __syncthreads();
      float total_a = 1.f, total_x = 0.f; /* the whole channel, for the carry */
      {
        float post_a = 1.f, post_x = 0.f;
#pragma unroll
        for (int w = $(WARPS - 1); w >= 0; w--) {
          const float2 t = rev_total[n & 1][slot * $(WARPS) + w];
          if (w > warp) {
            post_x = t.x * post_x + t.y;
            post_a = t.x * post_a;
          }
          total_x = t.x * total_x + t.y;
          total_a = t.x * total_a;
        }
        after_x = after_a * post_x + after_x;
        after_a = after_a * post_a;
      }
@ else
      const float total_a = rev_a, total_x = rev_x; /* meaningful in lane 0 */
@ end
      const float e_end = e_carry[parity][slot][n];
      if (lane == 0) e_carry[parity ^ 1][slot][n] = total_a * e_end + total_x;
      float e = after_a * e_end + after_x;
      float dA_part = 0.f;
@ if not variant.B_var then
      float dB_part = 0.f;
@ end
@ if not variant.C_var then
      float dC_part = 0.f;
@ end
#pragma unroll
      for (int i = $(I - 1); i >= 0; i--) {
        const float dh = $(Ci) * gv[i] + e;
        const float dh_a_hp = dh * a[i] * hp[i];
        e = dh * a[i];
        du[i] += dh * dt[i] * $(Bi);
        ddt[i] += dh * $(Bi) * u[i] + A_n * dh_a_hp;
        dA_part += dt[i] * dh_a_hp;
        const float dB_t = dh * dtu[i];
        const float dC_t = gv[i] * (a[i] * hp[i] + dtu[i] * $(Bi));
@ if variant.B_var then
@   if reduce_B then
        red_B[slot][lane * $(I) + i] = active ? dB_t : 0.f;
@   else
@     if det then
        if (active && i < valid && dB_rows) dB_rows[(long long)n * L + t0 + i] = dB_t;
@     else
        if (active && i < valid && dB_rows) atomicAdd(dB_rows + (long long)n * L + t0 + i, dB_t);
@     end
@   end
@ else
        dB_part += dB_t;
@ end
@ if variant.C_var then
@   if reduce_C then
        red_C[slot][lane * $(I) + i] = active ? dC_t : 0.f;
@   else
@     if det then
        if (active && i < valid && dC_rows) dC_rows[(long long)n * L + t0 + i] = dC_t;
@     else
        if (active && i < valid && dC_rows) atomicAdd(dC_rows + (long long)n * L + t0 + i, dC_t);
@     end
@   end
@ else
        dC_part += dC_t;
@ end
      }
      if (c == 0 && lane == 0 && active && p.dh0) p.dh0[state_row + n] = e; /* a[0] * dh[0] */
      dA_part = warp_sum(dA_part);
@ if not variant.B_var then
      dB_part = warp_sum(dB_part);
@ end
@ if not variant.C_var then
      dC_part = warp_sum(dC_part);
@ end
      if (seg_lane == 0) {
        acc_A[acc_row][n] += dA_part;
@ if not variant.B_var then
        acc_B[acc_row][n] += dB_part;
@ end
@ if not variant.C_var then
        acc_C[acc_row][n] += dC_part;
@ end
      }
@ if reduce_B or reduce_C then
      /* Sum the block's channels (all of one group) once, then one atomic per step. */
      __syncthreads();
      for (int k = threadIdx.x; k < $(K); k += $(BLOCK)) {
        const int t = c * $(K) + k;
        if (t < L) {
@   for _, m in ipairs({ "B", "C" }) do
@     if (m == "B" and reduce_B) or (m == "C" and reduce_C) then
          if (d$(m)_rows) {
            float sum = 0.f;
#pragma unroll
            for (int s = 0; s < $(CH); s++) sum += red_$(m)[s][k];
@       if det then
            d$(m)_rows[(long long)n * L + t] = sum;
@       else
            atomicAdd(d$(m)_rows + (long long)n * L + t, sum);
@       end
          }
@     end
@   end
        }
      }
      __syncthreads();
@ end
    }

#pragma unroll
    for (int i = 0; i < $(I); i++) {
@ if variant.D then
      du[i] += D_d * gv[i];
@ end
@ if variant.softplus then
      ddt[i] *= dsoft[i]; /* now d delta */
@ end
      if (i < valid) {
        dbias_sum += ddt[i];
        dD_sum += gv[i] * u[i];
      }
@ if variant.z then
@   if variant.D then
      y[i] = (y[i] + D_d * u[i]) * gate[i]; /* now dz */
@   else
      y[i] = y[i] * gate[i]; /* now dz */
@   end
@ end
    }
    if (active) {
      if (p.du) store_run(du_row + t0, valid, du);
      if (p.ddelta) store_run(ddelta_row + t0, valid, ddt);
@ if variant.z then
      if (p.dz) store_run(dz_row + t0, valid, y);
@ end
    }
    __syncthreads(); /* publishes the next chunk's e */
  }

  /* Per-channel sums over this batch row: one atomic per block and value. */
  dD_sum = warp_sum(dD_sum);
  dbias_sum = warp_sum(dbias_sum);
  __shared__ float2 row_sums[$(CH * WARPS)];
  if (seg_lane == 0) row_sums[acc_row] = make_float2(dD_sum, dbias_sum);
  __syncthreads();
  if (active && lane == 0) {
    float2 total = make_float2(0.f, 0.f);
    for (int w = 0; w < $(WARPS); w++) {
      total.x += row_sums[slot * $(WARPS) + w].x;
      total.y += row_sums[slot * $(WARPS) + w].y;
    }
@ local row = det and "(long long)b * f.dim + d" or "d"
@ local add = det and function(ptr, value) return ptr .. "[0] = " .. value end or function(ptr, value) return "atomicAdd(" .. ptr .. ", " .. value .. ")" end
@ if variant.D then
    if (p.dD) $(add("(p.dD + " .. row .. ")", "total.x"));
@ end
@ if variant.delta_bias then
    if (p.ddelta_bias) $(add("(p.ddelta_bias + " .. row .. ")", "total.y"));
@ end
  }
  if (active) {
    for (int n = lane; n < $(N); n += $(T)) {
      float sA = 0.f;
@ if not variant.B_var then
      float sB = 0.f;
@ end
@ if not variant.C_var then
      float sC = 0.f;
@ end
      for (int w = 0; w < $(WARPS); w++) {
        sA += acc_A[slot * $(WARPS) + w][n];
@ if not variant.B_var then
        sB += acc_B[slot * $(WARPS) + w][n];
@ end
@ if not variant.C_var then
        sC += acc_C[slot * $(WARPS) + w][n];
@ end
      }
      const long long at = ($(row)) * $(N) + n;
      if (p.dA) $(add("(p.dA + at)", "sA"));
@ if not variant.B_var then
      if (p.dB) $(add("(p.dB + at)", "sB"));
@ end
@ if not variant.C_var then
      if (p.dC) $(add("(p.dC + at)", "sC"));
@ end
    }
  }
}
@ include("bwd_sums.tpl")
