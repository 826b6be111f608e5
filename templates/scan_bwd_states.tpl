@ -- scan_bwd_states.tpl: the backward selective scan of math.md, lanes split over states.
@ --
@ -- As in the forward's split=state, a channel's `threads` lanes each own dstate / threads
@ -- states and run through time alone; no scan across lanes. The sequence is walked from
@ -- the last state interval to the first. Per interval, a forward pass from the state the
@ -- forward saved keeps the state at the start of every block of `items` steps (a small
@ -- per-thread array, which the compiler keeps in local memory); then the blocks are
@ -- walked backwards: each recomputes its exponentials and states from its checkpoint and
@ -- runs the reverse recurrence e[t] = a[t] * (C[t] g[t] + e[t+1]) for every gradient term.
@ -- Sums over a channel's states (du, ddelta, and y for dz) go through shared memory;
@ -- variable dB and dC are summed over the block's channels (one group) in shared memory
@ -- and added with one atomic per (t, n) and block; dA, fixed dB/dC, dD and ddelta_bias
@ -- are kept per lane in registers for the whole sequence and added once. Deterministic
@ -- variants store partial sums instead of adding them (sf_scan_bwd_finalize adds them).
@ local common = import("scan_common")
@ local N, LN, TB, CH = variant.dstate, variant.threads, variant.items, variant.channels
@ local size = common.element_size(variant.dtype)
@ if LN > 32 or N % LN ~= 0 then
@   reject("threads", string.format("with split=state, threads are the lanes of a channel and must divide dstate (%d) and be at most 32, got %d", N, LN))
@ end
@ if not common.is_power_of_two(TB) or TB < math.max(LN, 4) or TB > 64 then
@   reject("items", string.format("with split=state, items (the steps of a block) must be a power of two from max(threads, 4) = %d to 64, got %d", math.max(LN, 4), TB))
@ end
@ local S = N // LN
@ local Q = TB // LN
@ local BLOCK = LN * CH
@ if BLOCK % 32 ~= 0 then
@   reject("channels", string.format("with split=state, threads x channels must fill whole warps, got %d x %d", LN, CH))
@ end
@ local det = variant.deterministic
@ local MAXB = 512 // TB   -- blocks in the longest state interval
@ local parts = variant.z and 3 or 2
@ local smem_bytes = (parts * LN + 4) * CH * (TB + 4) * 4 + (variant.B_var and CH * N * (TB + 1) * 4 or 0) + (variant.C_var and CH * N * (TB + 1) * 4 or 0)
@ if smem_bytes > 48 * 1024 then
@   reject("channels", string.format("split=state backward with dstate=%d, channels=%d, items=%d needs %d bytes of shared memory; at most 49152 allowed", N, CH, TB, smem_bytes))
@ end
@ run_lengths = { TB }
@ if Q ~= TB then run_lengths[2] = Q end
@ include("kernel_params.h")
@ include("dtype.tpl")

#define SF_LOG2E 1.4426950408889634f

/* v + bias -> dt and, with softplus, d dt / d v (math.md). */
__device__ __forceinline__ void step_of(float v, float &dt, float &dsoft) {
@ if variant.softplus then
  const float e = __expf(v);
  dt = v > 20.f ? v : v < -15.f ? e : __logf(1.f + e);
  dsoft = v > 20.f ? 1.f : __fdividef(e, 1.f + e);
@ else
  dt = v;
  dsoft = 1.f;
@ end
}

@ local bounds = variant.min_blocks > 0 and (BLOCK .. ", " .. variant.min_blocks) or tostring(BLOCK)
extern "C" __global__ void __launch_bounds__($(bounds)) $(variant.kernel_name)(const sf_bwd_params p) {
  /* each lane's part of du, ddt (and y) for the block's steps */
  __shared__ __align__(16) float part[$(parts)][$(CH)][$(LN)][$(TB + 4)];
@ if variant.B_var then
  __shared__ float red_B[$(CH)][$(N)][$(TB + 1)]; /* each channel's dB terms, summed over the block */
@ end
@ if variant.C_var then
  __shared__ float red_C[$(CH)][$(N)][$(TB + 1)];
@ end
  /* the channel's per-step values, each computed once by the lane that owns the step */
  __shared__ __align__(16) float steps[4][$(CH)][$(TB + 4)]; /* dt, dt*u, u, g */
  const sf_fwd_params &f = p.f;
  const int lane = threadIdx.x % $(LN);
  const int slot = threadIdx.x / $(LN);
  const int d_raw = blockIdx.x * $(CH) + slot;
  const bool active = d_raw < f.dim;
  const int d = active ? d_raw : f.dim - 1;
  const int b = blockIdx.y;
  const int L = f.seqlen;
  const int n_first = lane * $(S);
  const int mine = lane * $(Q); /* my share of a block's steps for the per-step outputs */

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
  /* the block's channels share one group (channels divides dim / groups) */
  const int d_block = min((int)blockIdx.x * $(CH), f.dim - 1);
  const int g = d_block / (f.dim / f.groups);
@ end
@ for _, m in ipairs({ "B", "C" }) do
@   if variant[m .. "_var"] then
  const elem_t *$(m)_rows = (const elem_t *)f.$(m) + b * f.$(m)_batch_stride + g * f.$(m)_group_stride + n_first * f.$(m)_state_stride;
@     if det then
  /* partial sums of this block: (blocks per group, batch, G, N, L) */
  float *d$(m)_rows = p.d$(m) ? p.d$(m) + ((((long long)(d_block % (f.dim / f.groups)) / $(CH)) * f.batch + b) * f.groups + g) * $(N) * L : 0;
@     else
  float *d$(m)_rows = p.d$(m) ? p.d$(m) + ((long long)b * f.groups + g) * $(N) * L : 0;
@     end
@   else
  float $(m)_fixed[$(S)], d$(m)_sum[$(S)];
@   end
@ end
@ if variant.D then
  const float D_d = f.D[d];
@ end
@ if variant.delta_bias then
  const float bias = f.delta_bias[d];
@ end
  const long long state_row = ((long long)b * f.dim + d) * $(N);
  float A_n[$(S)], A2[$(S)], e[$(S)], dA_sum[$(S)];
#pragma unroll
  for (int s = 0; s < $(S); s++) {
    A_n[s] = f.A[(long long)d * $(N) + n_first + s];
    A2[s] = A_n[s] * SF_LOG2E;
    e[s] = p.d_last_state ? p.d_last_state[state_row + n_first + s] : 0.f; /* e past the end */
    dA_sum[s] = 0.f;
@ for _, m in ipairs({ "B", "C" }) do
@   if not variant[m .. "_var"] then
    $(m)_fixed[s] = ((const float *)f.$(m))[(long long)d * $(N) + n_first + s];
    d$(m)_sum[s] = 0.f;
@   end
@ end
  }
  float dD_sum = 0.f, dbias_sum = 0.f;
  float checkpoint[$(MAXB)][$(S)]; /* state at each block's start within an interval */

  /* My share of a block's steps: dt (and d dt / d v), u, g, published for the channel's
   * other lanes; the gate's factor for dz kept for the output stage. */
  float u_m[$(Q)], ds_m[$(Q)], g_m[$(Q)], gate_m[$(Q)];
  auto my_steps = [&](int t0, bool with_dout) {
    float dt_m[$(Q)], dout_m[$(Q)];
    load_run(u_row + t0 + mine, L - t0 - mine, 0.f, u_m);
    load_run(delta_row + t0 + mine, L - t0 - mine, 0.f, dt_m);
    if (with_dout) load_run(dout_row + t0 + mine, L - t0 - mine, 0.f, dout_m);
@ if variant.z then
    float z_m[$(Q)];
    if (with_dout) load_run(z_row + t0 + mine, L - t0 - mine, 0.f, z_m);
@ end
    __syncwarp(); /* the lanes have read the previous block's values */
#pragma unroll
    for (int i = 0; i < $(Q); i++) {
      float dt_i;
      step_of($(variant.delta_bias and "dt_m[i] + bias" or "dt_m[i]"), dt_i, ds_m[i]);
      dt_i = t0 + mine + i < L ? dt_i : 0.f; /* padding steps: a = 1, x = 0 */
      g_m[i] = 0.f;
      gate_m[i] = 0.f;
      if (with_dout) {
@ if variant.z then
        const float sz = __fdividef(1.f, 1.f + __expf(-z_m[i]));
        g_m[i] = dout_m[i] * z_m[i] * sz;                   /* g = dout * silu(z) */
        gate_m[i] = dout_m[i] * sz * (1.f + z_m[i] * (1.f - sz)); /* dz = y * gate */
@ else
        g_m[i] = dout_m[i];
@ end
      }
      steps[0][slot][mine + i] = dt_i;
      steps[1][slot][mine + i] = dt_i * u_m[i];
      steps[2][slot][mine + i] = u_m[i];
      steps[3][slot][mine + i] = g_m[i];
    }
    __syncwarp();
  };
  /* All the block's steps, from the lanes that own them. */
  auto read_steps = [&](int which, float (&x)[$(TB)]) {
#pragma unroll
    for (int i = 0; i < $(TB); i += 4) {
      const float4 v4 = *reinterpret_cast<const float4 *>(&steps[which][slot][i]);
      x[i] = v4.x, x[i + 1] = v4.y, x[i + 2] = v4.z, x[i + 3] = v4.w;
    }
  };

  const int K = f.state_interval;
  for (int c = f.nsaved - 1; c >= 0; c--) {
    const int i0 = c * K;
    const int blocks = (min(i0 + K, L) - i0 + $(TB - 1)) / $(TB);
    float h[$(S)];
#pragma unroll
    for (int s = 0; s < $(S); s++)
      h[s] = c > 0 ? f.saved_states[(state_row / $(N) * f.nsaved + c - 1) * $(N) + n_first + s]
                   : (f.h0 ? f.h0[state_row + n_first + s] : 0.f);

    /* Forward through the interval: the state at each block's start. */
    for (int k = 0; k < blocks; k++) {
#pragma unroll
      for (int s = 0; s < $(S); s++) checkpoint[k][s] = h[s];
      if (k == blocks - 1) break;
      const int t0 = i0 + k * $(TB);
      my_steps(t0, false);
      float dt[$(TB)], dtu[$(TB)];
      read_steps(0, dt);
      read_steps(1, dtu);
#pragma unroll
      for (int s = 0; s < $(S); s++) {
@ if variant.B_var then
        float Bs[$(TB)];
        load_run(B_rows + s * f.B_state_stride + t0, L - t0, 0.f, Bs);
@ end
#pragma unroll
        for (int i = 0; i < $(TB); i++)
          h[s] = exp2f(dt[i] * A2[s]) * h[s] + dtu[i] * $(variant.B_var and "Bs[i]" or "B_fixed[s]");
      }
    }

    /* Backward through the interval's blocks, last first. */
    for (int k = blocks - 1; k >= 0; k--) {
      const int t0 = i0 + k * $(TB);
      my_steps(t0, true);
      float u[$(TB)], dt[$(TB)], dtu[$(TB)], gv[$(TB)];
      read_steps(0, dt);
      read_steps(1, dtu);
      read_steps(2, u);
      read_steps(3, gv);
      float du_p[$(TB)], ddt_p[$(TB)];
@ if variant.z then
      float y_p[$(TB)];
@ end
#pragma unroll
      for (int i = 0; i < $(TB); i++) {
        du_p[i] = 0.f;
        ddt_p[i] = 0.f;
@ if variant.z then
        y_p[i] = 0.f;
@ end
      }
#pragma unroll
      for (int s = 0; s < $(S); s++) {
@ for _, m in ipairs({ "B", "C" }) do
@   if variant[m .. "_var"] then
        float $(m)s[$(TB)];
        load_run($(m)_rows + s * f.$(m)_state_stride + t0, L - t0, 0.f, $(m)s);
@   end
@ end
@ local Bi = variant.B_var and "Bs[i]" or "B_fixed[s]"
@ local Ci = variant.C_var and "Cs[i]" or "C_fixed[s]"
        /* this block's exponentials and states again, from the checkpoint */
        float a[$(TB)], hp[$(TB)];
        float hh = checkpoint[k][s];
#pragma unroll
        for (int i = 0; i < $(TB); i++) {
          a[i] = exp2f(dt[i] * A2[s]);
          hp[i] = hh;
          hh = a[i] * hh + dtu[i] * $(Bi);
@ if variant.z then
          y_p[i] += $(Ci) * hh;
@ end
        }
        float e_s = e[s];
#pragma unroll
        for (int i = $(TB - 1); i >= 0; i--) {
          const float dh = $(Ci) * gv[i] + e_s;
          const float dh_a_hp = dh * a[i] * hp[i];
          du_p[i] += dh * dt[i] * $(Bi);
          ddt_p[i] += dh * $(Bi) * u[i] + A_n[s] * dh_a_hp;
          dA_sum[s] += dt[i] * dh_a_hp;
          const float dB_t = dh * dtu[i];
          const float dC_t = gv[i] * (a[i] * hp[i] + dtu[i] * $(Bi));
@ if variant.B_var then
          red_B[slot][n_first + s][i] = active ? dB_t : 0.f;
@ else
          dB_sum[s] += dB_t;
@ end
@ if variant.C_var then
          red_C[slot][n_first + s][i] = active ? dC_t : 0.f;
@ else
          dC_sum[s] += dC_t;
@ end
          e_s = dh * a[i];
        }
        e[s] = e_s;
        if (c == 0 && k == 0 && active && p.dh0) p.dh0[state_row + n_first + s] = e_s; /* a[0] dh[0] */
      }
#pragma unroll
      for (int i = 0; i < $(TB); i += 4) {
        *reinterpret_cast<float4 *>(&part[0][slot][lane][i]) = make_float4(du_p[i], du_p[i + 1], du_p[i + 2], du_p[i + 3]);
        *reinterpret_cast<float4 *>(&part[1][slot][lane][i]) = make_float4(ddt_p[i], ddt_p[i + 1], ddt_p[i + 2], ddt_p[i + 3]);
@ if variant.z then
        *reinterpret_cast<float4 *>(&part[2][slot][lane][i]) = make_float4(y_p[i], y_p[i + 1], y_p[i + 2], y_p[i + 3]);
@ end
      }
      __syncthreads();
@ if variant.B_var or variant.C_var then
      /* Variable dB, dC: the block's channels added, one atomic (or store) per (n, t). */
      for (int w = threadIdx.x; w < $(N * TB); w += $(BLOCK)) {
        const int n = w / $(TB), i = w % $(TB), t = t0 + i;
        if (t < L) {
@   for _, m in ipairs({ "B", "C" }) do
@     if variant[m .. "_var"] then
          if (d$(m)_rows) {
            float sum = 0.f;
#pragma unroll
            for (int s = 0; s < $(CH); s++) sum += red_$(m)[s][n][i];
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
@ end
      /* My share of the steps: the lanes' parts added, the per-step gradients stored. */
      {
        float du_m[$(Q)], ddelta_m[$(Q)];
@ if variant.z then
        float dz_m[$(Q)];
@ end
#pragma unroll
        for (int i = 0; i < $(Q); i++) {
          float du_s = 0.f, ddt_s = 0.f;
@ if variant.z then
          float y_s = 0.f;
@ end
#pragma unroll
          for (int l = 0; l < $(LN); l++) {
            du_s += part[0][slot][l][mine + i];
            ddt_s += part[1][slot][l][mine + i];
@ if variant.z then
            y_s += part[2][slot][l][mine + i];
@ end
          }
@ if variant.z then
@   if variant.D then
          y_s += D_d * u_m[i];
@   end
          dz_m[i] = y_s * gate_m[i];
@ end
@ if variant.D then
          du_m[i] = du_s + D_d * g_m[i];
@ else
          du_m[i] = du_s;
@ end
          ddelta_m[i] = ddt_s * ds_m[i];
          if (t0 + mine + i < L) {
            dD_sum += g_m[i] * u_m[i];
            dbias_sum += ddelta_m[i];
          }
        }
        if (active) {
          if (p.du) store_run(du_row + t0 + mine, L - t0 - mine, du_m);
          if (p.ddelta) store_run(ddelta_row + t0 + mine, L - t0 - mine, ddelta_m);
@ if variant.z then
          if (p.dz) store_run(dz_row + t0 + mine, L - t0 - mine, dz_m);
@ end
        }
      }
      __syncthreads(); /* part and the reduction buffers are rewritten next */
    }
  }

  /* Sums over time of this batch row: one atomic (or partial store) per value. */
@ local row = det and "(long long)b * f.dim + d" or "(long long)d"
#pragma unroll
  for (int offset = $(LN // 2); offset > 0; offset /= 2) {
    dD_sum += __shfl_xor_sync(0xffffffffu, dD_sum, offset, $(LN));
    dbias_sum += __shfl_xor_sync(0xffffffffu, dbias_sum, offset, $(LN));
  }
  if (!active) return;
@ local function add(ptr, value)
@   if det then return "*(" .. ptr .. ") = " .. value end
@   return "atomicAdd(" .. ptr .. ", " .. value .. ")"
@ end
@ if variant.D then
  if (lane == 0 && p.dD) $(add("p.dD + " .. row, "dD_sum"));
@ end
@ if variant.delta_bias then
  if (lane == 0 && p.ddelta_bias) $(add("p.ddelta_bias + " .. row, "dbias_sum"));
@ end
#pragma unroll
  for (int s = 0; s < $(S); s++) {
    const long long at = ($(row)) * $(N) + n_first + s;
    if (p.dA) $(add("p.dA + at", "dA_sum[s]"));
@ for _, m in ipairs({ "B", "C" }) do
@   if not variant[m .. "_var"] then
    if (p.d$(m)) $(add("p.d" .. m .. " + at", "d" .. m .. "_sum[s]"));
@   end
@ end
  }
}
@ if det then

/* out[i] = the sum over k of partials[k * size + i], always in the order k = 0, 1, ... */
extern "C" __global__ void __launch_bounds__(256) sf_scan_bwd_finalize(const float *partials, long long slices,
                                                                      long long size, float *out) {
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < size; i += (long long)gridDim.x * 256) {
    float sum = 0.f;
    for (long long k = 0; k < slices; k++) sum += partials[k * size + i];
    out[i] = sum;
  }
}
@ end
