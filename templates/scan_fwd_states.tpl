@ -- scan_fwd_states.tpl: the forward selective scan of docs/math.md, lanes split over states.
@ --
@ -- A channel's `threads` lanes each own N / threads of its states and run through time
@ -- alone, in blocks of `items` steps: no scan across threads at all, the state lives in
@ -- registers from the first step to the last. The block's `channels` channels share one
@ -- group, so each time block of B and C is fetched once for all of them, together with
@ -- the channels' u, delta and z, into shared memory by asynchronous copies (cp.async)
@ -- one block ahead of the computation. Per block each lane computes dt for its share of
@ -- the steps (softplus once per step, not once per lane) and publishes it in shared
@ -- memory; every lane advances its states through the block and accumulates its part of
@ -- y, which it writes to shared memory; each lane then adds the lanes' parts of its
@ -- share of the steps, gates them and stores them.
@ -- Best when batch x dim x lanes gives the GPU enough warps (large rows, MambaVision).
@ local common = import("scan_common")
@ local N, LN, TB, CH = variant.dstate, variant.threads, variant.items, variant.channels
@ local size = common.element_size(variant.dtype)
@ if LN > 32 or N % LN ~= 0 then
@   reject("threads", string.format("with split=state, threads are the lanes of a channel and must divide dstate (%d) and be at most 32, got %d", N, LN))
@ end
@ if not common.is_power_of_two(TB) or TB > 64 or (TB * size) % 16 ~= 0 then
@   reject("items", string.format("with split=state, items (the steps of a block) must be a power of two from %d to 64, got %d", 16 // size, TB))
@ end
@ local S = N // LN            -- states per lane
@ local Q = math.max(1, TB // LN) -- steps per lane in the dt hand-out and the output
@ -- (with fewer steps than lanes, lanes from `items` on own none)
@ local BLOCK = LN * CH
@ local EPC = 16 // size       -- elements per 16-byte copy
@ local PAD = EPC              -- one copy of padding per row: no bank conflicts
@ local TBP = TB + PAD
@ local var_rows = (variant.B_var and N or 0) + (variant.C_var and N or 0)
@ local seq_rows = CH * (variant.z and 3 or 2)
@ local stage_bytes = (var_rows + seq_rows) * TBP * size
@ -- The block's shared arrays, in the order they are declared. Above 48 KB they move to
@ -- dynamic shared memory, one layout for every entry point (docs/design-dynamic-shared.md).
@ local shared_layout = import("shared_layout")
@ local shared_arrays = shared_layout.new()
@ local function array(type, name, dims, bytes, what)
@   shared_layout.add(shared_arrays, { type = type, name = name, dims = dims, bytes = bytes, what = what })
@ end
@ local tasks_per_thread = ((var_rows + seq_rows) * (TB // EPC) + BLOCK - 1) // BLOCK
@ array("stage_t", "stages", "[2]", 2 * stage_bytes, "the staged inputs, two time blocks")
@ array("float", "dt_smem", string.format("[%d][%d]", CH, TB + 4), CH * (TB + 4) * 4, "each step's dt, computed once by the lane that owns the step")
@ array("float", "dtu_smem", string.format("[%d][%d]", CH, TB + 4), CH * (TB + 4) * 4, "each step's dt * u")
@ array("float", "y_part", string.format("[%d][%d][%d]", CH, LN, TB + 4), CH * LN * (TB + 4) * 4, "each lane's part of y")
@ array("const elem_t *", "task_src", string.format("[%d][%d]", tasks_per_thread, BLOCK), tasks_per_thread * BLOCK * 8, "stage_tasks.tpl's copy table")
@ local smem_bytes = shared_layout.bytes(shared_arrays)
@ local dynamic = smem_bytes > shared_layout.STATIC_MAX
@ if smem_bytes > shared_layout.DYNAMIC_MAX then
@   reject("channels", string.format("split=state with dstate=%d, channels=%d, items=%d needs %d bytes of shared memory; at most %d allowed", N, CH, TB, smem_bytes, shared_layout.DYNAMIC_MAX))
@ end
@ if (BLOCK % 32) ~= 0 then
@   reject("channels", string.format("with split=state, threads x channels must fill whole warps, got %d x %d", LN, CH))
@ end
@ run_lengths = { TB }
@ if Q ~= TB then run_lengths[2] = Q end
@ include("kernel_params.h")
@ include("dtype.tpl")
@ step_io = { steps = Q }
@ include("step_io.tpl")
@ include("carry_combine.tpl")

#define SF_LOG2E 1.4426950408889634f

@ if variant.softplus then
@   include("softplus.tpl")
@ end

/* One time block's inputs in shared memory, as stored in memory (type T). */
struct stage_t {
@ if variant.B_var then
  elem_t B[$(N)][$(TBP)];
@ end
  elem_t u[$(CH)][$(TBP)];
  elem_t delta[$(CH)][$(TBP)];
@ if variant.C_var then
  elem_t C[$(N)][$(TBP)];
@ end
@ if variant.z then
  elem_t z[$(CH)][$(TBP)];
@ end
};

@ -- the 16-byte copies that fill a stage (stage_copy.tpl, stage_tasks.tpl): B, u and
@ -- delta first (early: all the carry pass reads), then C and z
@ -- the fast fetch (stage_tasks.tpl) in the plain kernels only: the words kernels' rows are
@ -- mostly off alignment, in the inner-saves kernels the extra path spilled at a register
@ -- cap, and the carry kernels ran 1-2% slower with it (docs/design-fast-fetch.md)
@ stage = { items = TB, padded = TBP, block = BLOCK, copy_bytes = 16, rows = {}, fast_fetch = "!WORDS && !INNER_SAVES && !CARRY" }
@ local function matrix_row(m)
@   return { name = m, count = N, early = (m == "B"), base = m .. "_rows + i * p." .. m .. "_state_stride" }
@ end
@ local function channel_row(m)
@   return { name = m, count = CH, early = (m ~= "z"), base = string.format("(const elem_t *)p.%s + b * p.%s_batch_stride + min(d_block + i, p.dim - 1) * p.%s_dim_stride", m, m, m) }
@ end
@ if variant.B_var then table.insert(stage.rows, matrix_row("B")) end
@ table.insert(stage.rows, channel_row("u"))
@ table.insert(stage.rows, channel_row("delta"))
@ if variant.C_var then table.insert(stage.rows, matrix_row("C")) end
@ if variant.z then table.insert(stage.rows, channel_row("z")) end
@ include("stage_copy.tpl")

@ if dynamic then
$(shared_layout.module_declarations(shared_arrays, "fwd_shared_t"))

@ end
@ local bounds = variant.min_blocks > 0 and (BLOCK .. ", " .. variant.min_blocks) or tostring(BLOCK)
/* The carry pass leaves each time block early: the output half of the loop is
 * unreachable in that instantiation, as meant. */
#pragma nv_diag_suppress 128

/* The kernel's body: CARRY = false scans (with p.carry_decay set, block z scans segment
 * z alone from the state sf_scan_fwd_combine left for it); CARRY = true (sf_scan_fwd_carry)
 * only measures, per segment, the product of its decays and its state at its end from a
 * state of 0 at its start. INNER_SAVES (sf_scan_fwd_inner_saves): states are saved more
 * often than once a block (docs/design-block-states.md), so inside it too. WORDS (the
 * variant's words=1): rows that do not all start on a 16-byte boundary are staged in
 * 4-byte pieces where they can be (stage_copy.tpl, docs/design-row-alignment.md). */
template <bool CARRY, bool INNER_SAVES, bool WORDS> __device__ __forceinline__ void scan_fwd_body(const sf_fwd_params &p) {
@ -- (stage_tasks.tpl declares or binds the copy table, task_src)
$(shared_layout.body_declarations(shared_arrays, "fwd_shared_t", dynamic, { task_src = true }, "  "))
  const int lane = threadIdx.x % $(LN);  /* which share of the states, and of each block's steps */
  const int slot = threadIdx.x / $(LN);
  const int d_raw = blockIdx.x * $(CH) + slot;
  const bool active = d_raw < p.dim;
  const int d = active ? d_raw : p.dim - 1; /* an idle slot mirrors a real channel, stores nothing */
  const int b = blockIdx.y;
  const int L = p.seqlen;
  const int d_block = blockIdx.x * $(CH); /* the block's first channel: its group is the block's */
@ if variant.B_var or variant.C_var then
  /* my group. In the words kernels one group (the usual call) skips the two integer
   * divisions, a chain of about 60 dependent instructions that the first copies of B and C
   * wait for; in the plain kernels that moved ptxas's register allocation and cost large
   * rows up to 2%, so they keep the division (docs/design-first-fetch.md) */
  const int g = WORDS && p.groups == 1 ? 0 : min(d_block, p.dim - 1) / (p.dim / p.groups);
@ end
@ for _, m in ipairs({ "B", "C" }) do
@   if variant[m .. "_var"] then
  const elem_t *$(m)_rows = (const elem_t *)p.$(m) + b * p.$(m)_batch_stride + g * p.$(m)_group_stride;
@   end
@ end

  /* This thread's share of the 16-byte copies that fill a stage; the words kernels issue
   * their first block's copies as they build it (stage_tasks.tpl). */
@ stage.shared_tasks = dynamic and "shared.task_src" or nil
@ stage.first_fetch = { t0 = "(CARRY || p.carry_decay != 0 ? (int)blockIdx.z * p.segment : 0)", all = "!CARRY", kernels = "WORDS" }
@ include("stage_tasks.tpl")

  elem_t *out_row = (elem_t *)p.out + b * p.out_batch_stride + d * p.out_dim_stride;
  /* My states: lane, lane + $(LN), ...: interleaved, so that the lanes' rows of B and C
   * (read together, four steps at a time) lie in different shared-memory banks. */
@ for _, m in ipairs({ "B", "C" }) do
@   if not variant[m .. "_var"] then
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
    A2[s] = p.A[(long long)d * $(N) + lane + s * $(LN)] * SF_LOG2E;
    h[s] = p.h0 ? p.h0[state_row + lane + s * $(LN)] : 0.f;
@ if not variant.B_var then
    B_fixed[s] = ((const float *)p.B)[(long long)d * $(N) + lane + s * $(LN)];
@ end
@ if not variant.C_var then
    C_fixed[s] = ((const float *)p.C)[(long long)d * $(N) + lane + s * $(LN)];
@ end
  }

  /* The steps this block scans: every one, or one segment (items divides it). */
  const bool parallel = CARRY || p.carry_decay != 0;
  const int t_begin = parallel ? (int)blockIdx.z * p.segment : 0;
  const int t_end = parallel ? min(t_begin + p.segment, L) : L;
  float decay[$(S)]; /* the carry pass: the product of the segment's decays */
#pragma unroll
  for (int s = 0; s < $(S); s++) {
    decay[s] = 1.f;
    if (CARRY) h[s] = 0.f;
  }
  if (!CARRY && parallel) { /* the state at t_begin, from h0 through the earlier segments (sf_scan_fwd_combine) */
#pragma unroll
    for (int s = 0; s < $(S); s++) h[s] = p.carry_state[(state_row / $(N) * p.nsegments + blockIdx.z) * $(N) + lane + s * $(LN)];
  }
  const int nblocks = (t_end - t_begin + $(TB - 1)) / $(TB);
  if (!first_fetched) fetch(t_begin, 0, !CARRY);
  copies_commit();
  for (int k = 0; k < nblocks; k++) {
    const int t0 = t_begin + k * $(TB);
    if (k + 1 < nblocks) fetch(t0 + $(TB), (k + 1) & 1, !CARRY);
    copies_commit();
    copies_wait_previous();
    __syncthreads();
    const stage_t &st = stages[k & 1];

    /* dt and dt*u of my share of the steps, published for the channel's other lanes */
    const int mine = lane * $(Q); /* my steps within the block */
    const bool owner = mine < $(TB);
    float u_mine[$(Q)];
    if (owner) { /* the loads first, then the steps side by side */
      float v[$(Q)], dt_q[$(Q)], dtu_q[$(Q)];
      load_run_aligned(&st.u[slot][mine], u_mine);
      load_run_aligned(&st.delta[slot][mine], v);
#pragma unroll
      for (int i = 0; i < $(Q); i++) {
@ local v = variant.delta_bias and "v[i] + bias" or "v[i]"
@ if variant.softplus then
        const float step = softplus($(v));
@ else
        const float step = $(v);
@ end
        dt_q[i] = t0 + mine + i < L ? step : 0.f; /* padding steps are the identity */
        dtu_q[i] = dt_q[i] * u_mine[i];
      }
      store_steps(&dt_smem[slot][mine], dt_q);
      store_steps(&dtu_smem[slot][mine], dtu_q);
    }
    __syncwarp();
@ -- Four steps of my row of B or C, as a float4: 16-bit rows are read from the stage as they
@ -- landed and widened here (half the shared-memory bytes of fp32 rows; docs/design-direct-bc.md).
@ local function load_bc4(m)
@   return string.format("load4_f32(&st.%s[lane + s * %d][i4])", m, LN)
@ end
    if (CARRY) { /* the decays and the state, nothing else */
#pragma unroll
      for (int i4 = 0; i4 < $(TB); i4 += 4) {
        const float4 dt4 = *reinterpret_cast<const float4 *>(&dt_smem[slot][i4]);
        const float4 dtu4 = *reinterpret_cast<const float4 *>(&dtu_smem[slot][i4]);
#pragma unroll
        for (int s = 0; s < $(S); s++) {
@ if variant.B_var then
          const float4 Bq = $(load_bc4("B"));
@ end
@ for _, comp in ipairs({ "x", "y", "z", "w" }) do
          {
            const float a = exp2f(dt4.$(comp) * A2[s]);
            decay[s] *= a;
            h[s] = a * h[s] + dtu4.$(comp) * $(variant.B_var and ("Bq." .. comp) or "B_fixed[s]");
          }
@ end
        }
      }
      __syncthreads(); /* the stage and dt_smem are refilled next */
      continue;
    }
    /* My states through the block, step by step with the S states interleaved (S
     * independent chains of exponentials and multiply-adds); y collects my states' part
     * of the output. B and C come from shared memory four steps at a time. */
#pragma unroll
    for (int i4 = 0; i4 < $(TB); i4 += 4) {
      const float4 dt4 = *reinterpret_cast<const float4 *>(&dt_smem[slot][i4]);
      const float4 dtu4 = *reinterpret_cast<const float4 *>(&dtu_smem[slot][i4]);
      float4 y4;
@ if variant.B_var then
      float4 Bq[$(S)];
@ end
@ if variant.C_var then
      float4 Cq[$(S)];
@ end
#pragma unroll
      for (int s = 0; s < $(S); s++) {
@ if variant.B_var then
        Bq[s] = $(load_bc4("B"));
@ end
@ if variant.C_var then
        Cq[s] = $(load_bc4("C"));
@ end
      }
@ for ii, comp in ipairs({ "x", "y", "z", "w" }) do
#pragma unroll
      for (int s = 0; s < $(S); s++) {
        const float a = exp2f(dt4.$(comp) * A2[s]);
        h[s] = a * h[s] + dtu4.$(comp) * $(variant.B_var and ("Bq[s]." .. comp) or "B_fixed[s]");
        const float c_h = $(variant.C_var and ("Cq[s]." .. comp) or "C_fixed[s]") * h[s];
        y4.$(comp) = s == 0 ? c_h : y4.$(comp) + c_h;
      }
@ end
      *reinterpret_cast<float4 *>(&y_part[slot][lane][i4]) = y4;
@ if TB > 4 then
      /* an interval that ends inside the block (t0 is a multiple of the interval) */
      if (INNER_SAVES && i4 + 4 < $(TB) && active && ((i4 + 4) & (p.state_interval - 1)) == 0 && t0 + i4 + 4 < L) {
#pragma unroll
        for (int s = 0; s < $(S); s++)
          p.saved_states[(state_row / $(N) * p.nsaved + ((t0 + i4 + 4) >> p.state_shift) - 1) * $(N) + lane + s * $(LN)] = h[s];
      }
@ end
    }
    /* The backward's checkpoint at the block's end (an interval divides items or items
     * divides the interval). */
    if (p.saved_states && active && ((t0 + $(TB)) & (p.state_interval - 1)) == 0 && t0 + $(TB) < L) {
#pragma unroll
      for (int s = 0; s < $(S); s++)
        p.saved_states[(state_row / $(N) * p.nsaved + ((t0 + $(TB)) >> p.state_shift) - 1) * $(N) + lane + s * $(LN)] = h[s];
    }

    /* Add the lanes' parts: lane j sums the y of its steps j*$(Q) .. +$(Q - 1). */
    __syncwarp();
    if (owner) {
      float y[$(Q)];
#pragma unroll
      for (int i = 0; i < $(Q); i++) y[i] = 0.f;
#pragma unroll
      for (int l = 0; l < $(LN); l++) {
#pragma unroll
        for (int i = 0; i < $(Q); i++) y[i] += y_part[slot][l][mine + i];
      }
      float out_mine[$(Q)];
#pragma unroll
      for (int i = 0; i < $(Q); i++) {
        float v = y[i];
@ if variant.D then
        v += D_d * u_mine[i];
@ end
@ if variant.z then
        const float zi = to_float(st.z[slot][mine + i]);
        v *= __fdividef(zi, 1.f + __expf(-zi)); /* silu(z) */
@ end
        out_mine[i] = v;
      }
      if (active) store_run(out_row + t0 + mine, L - t0 - mine, out_mine);
    }
    __syncthreads(); /* the stage, dt_smem and y_part are refilled next */
  }

  if (CARRY) {
    if (active) {
#pragma unroll
      for (int s = 0; s < $(S); s++) {
        const long long at = (state_row / $(N) * p.nsegments + blockIdx.z) * $(N) + lane + s * $(LN);
        p.carry_decay[at] = decay[s];
        p.carry_state[at] = h[s];
      }
    }
    return;
  }
  if (active && (!parallel || (int)blockIdx.z + 1 == p.nsegments)) { /* the last segment's block */
#pragma unroll
    for (int s = 0; s < $(S); s++) {
      if (p.last_state) p.last_state[state_row + lane + s * $(LN)] = h[s];
      if (p.saved_states && L > 0) p.saved_states[(state_row / $(N) * p.nsaved + p.nsaved - 1) * $(N) + lane + s * $(LN)] = h[s];
    }
  }
}

@ local WORDS = variant.words and "true" or "false" -- rows off 16-byte alignment (docs/design-row-alignment.md)
extern "C" __global__ void __launch_bounds__($(bounds)) $(variant.kernel_name)(const sf_fwd_params p) {
  scan_fwd_body<false, false, $(WORDS)>(p);
}

/* The same when states are saved more often than once a block (docs/design-block-states.md). */
extern "C" __global__ void __launch_bounds__($(bounds)) sf_scan_fwd_inner_saves(const sf_fwd_params p) {
  scan_fwd_body<false, true, $(WORDS)>(p);
}

extern "C" __global__ void __launch_bounds__($(bounds)) sf_scan_fwd_carry(const sf_fwd_params p) {
  scan_fwd_body<true, false, $(WORDS)>(p);
}

/* Between the carry pass and the scan: each segment's F becomes the state before it, from
 * h0 through the earlier segments (h = P h + F; the last segment's carry is never measured). */
extern "C" __global__ void __launch_bounds__(SF_COMBINE_THREADS) sf_scan_fwd_combine(const sf_fwd_params p) {
  combine_block(p.carry_decay, p.carry_state, p.h0, p.dim, p.nsegments - 1, p.nsegments, false);
}
