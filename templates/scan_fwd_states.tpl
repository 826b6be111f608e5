@ -- scan_fwd_states.tpl: the forward selective scan of math.md, lanes split over states.
@ --
@ -- A channel's `threads` lanes each own N / threads of its states and run through time
@ -- alone, in blocks of `items` steps: no scan across threads at all, the state lives in
@ -- registers from the first step to the last. Per block, each lane computes dt for its
@ -- share of the steps (softplus once per step, not once per lane) and hands it to the
@ -- others with shuffles; every lane then advances its states through the block and
@ -- accumulates its part of y; a butterfly reduce-scatter adds the parts so that each
@ -- lane ends with the full y of its share of the steps, which it gates and stores.
@ -- Best when batch x dim x lanes gives the GPU enough warps (large rows, MambaVision).
@ local common = import("scan_common")
@ local N, LN, TB, CH = variant.dstate, variant.threads, variant.items, variant.channels
@ if LN > 32 or N % LN ~= 0 then
@   reject("threads", string.format("with split=state, threads are the lanes of a channel and must divide dstate (%d) and be at most 32, got %d", N, LN))
@ end
@ if not common.is_power_of_two(TB) or TB < LN or TB > 64 then
@   reject("items", string.format("with split=state, items (the steps of a block) must be a power of two from threads (%d) to 64, got %d", LN, TB))
@ end
@ local S = N // LN           -- states per lane
@ local Q = TB // LN          -- steps per lane in the dt hand-out and the output
@ local BLOCK = LN * CH
@ run_lengths = { TB }
@ if Q ~= TB then run_lengths[2] = Q end
@ include("kernel_params.h")
@ include("dtype.tpl")

#define SF_LOG2E 1.4426950408889634f

@ if variant.softplus then
/* softplus(v) = log1p(exp(v)) for v <= 20, v above (math.md). */
__device__ __forceinline__ float softplus(float v) { return v <= 20.f ? log1pf(__expf(v)) : v; }
@ end

extern "C" __global__ void __launch_bounds__($(BLOCK)) $(variant.kernel_name)(const sf_fwd_params p) {
  const int lane = threadIdx.x % $(LN);  /* which share of the states, and of each block's steps */
  const int slot = threadIdx.x / $(LN);
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
  const int g = d / (p.dim / p.groups);
@ end
  const int n_first = lane * $(S); /* my states: n_first .. n_first + $(S - 1) */
@ for _, m in ipairs({ "B", "C" }) do
@   if variant[m .. "_var"] then
  const elem_t *$(m)_rows = (const elem_t *)p.$(m) + b * p.$(m)_batch_stride + g * p.$(m)_group_stride + n_first * p.$(m)_state_stride;
@   else
  float $(m)_fixed[$(S)];
@   end
@ end
@ if variant.D then
  const float D_d = p.D[d];
@ end
@ if variant.delta_bias then
  const float bias = p.delta_bias[d];
@ end
  const long long state_row = ((long long)b * p.dim + d) * $(N);
  float A2[$(S)], h[$(S)];
#pragma unroll
  for (int s = 0; s < $(S); s++) {
    A2[s] = p.A[(long long)d * $(N) + n_first + s] * SF_LOG2E;
    h[s] = p.h0 ? p.h0[state_row + n_first + s] : 0.f;
@ if not variant.B_var then
    B_fixed[s] = ((const float *)p.B)[(long long)d * $(N) + n_first + s];
@ end
@ if not variant.C_var then
    C_fixed[s] = ((const float *)p.C)[(long long)d * $(N) + n_first + s];
@ end
  }

  for (int t0 = 0; t0 < L; t0 += $(TB)) {
    const int valid = L - t0;             /* steps of this block inside the sequence */
    const int mine = t0 + lane * $(Q);    /* the first of my $(Q) steps */
    /* dt and dt*u of my share of the steps, then of all $(TB) from the lanes that own them */
    float u_mine[$(Q)], dt_mine[$(Q)], dtu_mine[$(Q)];
    load_run(u_row + mine, L - mine, 0.f, u_mine);
    load_run(delta_row + mine, L - mine, 0.f, dt_mine);
#pragma unroll
    for (int i = 0; i < $(Q); i++) {
@ local v = variant.delta_bias and "dt_mine[i] + bias" or "dt_mine[i]"
@ if variant.softplus then
      const float step = softplus($(v));
@ else
      const float step = $(v);
@ end
      dt_mine[i] = mine + i < L ? step : 0.f; /* padding steps are the identity */
      dtu_mine[i] = dt_mine[i] * u_mine[i];
    }
    float dt[$(TB)], dtu[$(TB)], y[$(TB)];
@ for i = 0, TB - 1 do
@   if LN == 1 then
    dt[$(i)] = dt_mine[$(i)];
    dtu[$(i)] = dtu_mine[$(i)];
@   else
    dt[$(i)] = __shfl_sync(0xffffffffu, dt_mine[$(i % Q)], $(i // Q), $(LN));
    dtu[$(i)] = __shfl_sync(0xffffffffu, dtu_mine[$(i % Q)], $(i // Q), $(LN));
@   end
@ end

    /* My states through the block; y collects my states' part of the output. */
#pragma unroll
    for (int s = 0; s < $(S); s++) {
@ if variant.B_var then
      float Bn[$(TB)];
      load_run(B_rows + s * p.B_state_stride + t0, valid, 0.f, Bn);
@ end
@ if variant.C_var then
      float Cn[$(TB)];
      load_run(C_rows + s * p.C_state_stride + t0, valid, 0.f, Cn);
@ end
#pragma unroll
      for (int i = 0; i < $(TB); i++) {
        const float a = exp2f(dt[i] * A2[s]);
        h[s] = a * h[s] + dtu[i] * $(variant.B_var and "Bn[i]" or "B_fixed[s]");
        const float c_h = $(variant.C_var and "Cn[i]" or "C_fixed[s]") * h[s];
        y[i] = s == 0 ? c_h : y[i] + c_h;
      }
    }
    /* The backward's checkpoint: blocks never straddle an interval (items divides it). */
    if (p.saved_states && active && ((t0 + $(TB)) & (p.state_interval - 1)) == 0 && t0 + $(TB) < L) {
#pragma unroll
      for (int s = 0; s < $(S); s++)
        p.saved_states[(state_row / $(N) * p.nsaved + (t0 + $(TB)) / p.state_interval - 1) * $(N) + n_first + s] = h[s];
    }

    /* Reduce-scatter over the channel's lanes: lane j ends with y of steps j*$(Q) .. +$(Q - 1). */
@ local width = TB
@ local m = LN // 2
@ while m >= 1 do
@   local half = width // 2
    {
      const bool upper = (lane & $(m)) != 0;
@   for k = 0, half - 1 do
      {
        const float send = upper ? y[$(k)] : y[$(k + half)];
        const float keep = upper ? y[$(k + half)] : y[$(k)];
        y[$(k)] = keep + __shfl_xor_sync(0xffffffffu, send, $(m), $(LN));
      }
@   end
    }
@   width = half
@   m = m // 2
@ end
    float out_mine[$(Q)];
@ if variant.z then
    float z_mine[$(Q)];
    load_run(z_row + mine, L - mine, 0.f, z_mine);
@ end
#pragma unroll
    for (int i = 0; i < $(Q); i++) {
      float v = y[i];
@ if variant.D then
      v += D_d * u_mine[i];
@ end
@ if variant.z then
      v *= __fdividef(z_mine[i], 1.f + __expf(-z_mine[i])); /* silu(z) */
@ end
      out_mine[i] = v;
    }
    if (active) store_run(out_row + mine, L - mine, out_mine);
  }

  if (active) {
#pragma unroll
    for (int s = 0; s < $(S); s++) {
      if (p.last_state) p.last_state[state_row + n_first + s] = h[s];
      if (p.saved_states && L > 0) p.saved_states[(state_row / $(N) * p.nsaved + p.nsaved - 1) * $(N) + n_first + s] = h[s];
    }
  }
}
