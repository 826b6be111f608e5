@ -- scan_bwd_states.tpl: the backward selective scan of docs/math.md, lanes split over
@ -- states.
@ --
@ -- As in the forward's split=state, a channel's `threads` lanes each own dstate / threads
@ -- states and run through time alone; no scan across lanes. The block's `channels`
@ -- channels share one group. The sequence is walked from the last state interval to the
@ -- first, each interval in blocks of `items` steps whose inputs (u, delta, dout, z, B, C)
@ -- are staged into shared memory by asynchronous copies one block ahead, once for all the
@ -- block's channels.
@ --
@ -- Per interval: a forward pass from the state the forward saved keeps the state at the
@ -- start of every block (it reads only u, delta and B); then the blocks are walked
@ -- backwards. Each recomputes its exponentials and states from its checkpoint into
@ -- registers, then runs the reverse recurrence e[t] = a[t] (C[t] g[t] + e[t+1]). Per
@ -- (t, n) the reverse step costs eight operations: the sums over a channel's states that
@ -- du and ddelta need share one term, sum_n dh B (du = dt sum_n dh B, ddelta takes
@ -- u sum_n dh B), and e[t] itself is the factor of dA and of ddelta's A term.
@ -- Sums over a channel's states (those two, and y for dz) go through shared memory;
@ -- variable dB and dC are summed over the block's channels (all real: with variable B or
@ -- C, channels divides dim / groups, so no slot idles) in shared memory and added
@ -- with one atomic per (t, n) and block; dA, fixed dB/dC, dD and ddelta_bias are kept
@ -- per lane in registers for the whole sequence and added once. Deterministic variants
@ -- store partial sums instead of adding them (sf_scan_bwd_finalize adds them).
@ local common = import("scan_common")
@ local N, LN, TB, CH = variant.dstate, variant.threads, variant.items, variant.channels
@ local size = common.element_size(variant.dtype)
@ local EPC = math.min(16 // size, variant.items) -- elements per copy (at most 16 bytes)
@ if LN > 32 or N % LN ~= 0 or not common.is_power_of_two(LN) then
@   reject("threads", string.format("with split=state, threads are the lanes of a channel: a power of two that divides dstate (%d), at most 32, got %d", N, LN))
@ end
@ if not common.is_power_of_two(TB) or TB < 4 or TB > 64 then
@   reject("items", string.format("with split=state, items (the steps of a block) must be a power of two from 4 to 64, got %d", TB))
@ end
@ local S = N // LN            -- states per lane
@ local SG = math.min(variant.states, S) -- states interleaved in one pass over a block
@ if S % SG ~= 0 then
@   reject("states", string.format("with split=state, states (interleaved per pass) must divide the %d states of a lane, got %d", S, variant.states))
@ end
@ local Q = math.max(1, TB // LN) -- steps per lane in the per-step values and the outputs
@ -- With more lanes than steps, a team of R lanes shares each step's sums over the lanes'
@ -- parts (each adds LN / R of them, shuffles add the team's), so that no lane reads all LN.
@ local R = math.max(1, LN // TB)
@ local BLOCK = LN * CH
@ if BLOCK % 32 ~= 0 then
@   reject("channels", string.format("with split=state, threads x channels must fill whole warps, got %d x %d", LN, CH))
@ end
@ if SG * TB > 64 then
@   reject("items", string.format("split=state backward keeps states x items (%d x %d) exponentials and states in registers; at most 64", SG, TB))
@ end
@ local det = variant.deterministic
@ local MAXB = 512 // TB   -- blocks in the longest state interval
@ local parts = variant.z and 3 or 2
@ -- Two lanes a channel (neighbouring threads) add their sums over states with a shuffle:
@ -- no shared memory for them, which lets 2-lane launches hold a block more an SM.
@ local lane_pair = LN == 2
@ -- Where two lanes pair, a lane's share of the steps' gradients is complete before the
@ -- block's dB/dC sums; at N = 2 with runs of up to 8 steps it is stored then, with the
@ -- sums' teams below (H200, docs/perf.md v38: (1,256,16384,2,z) fp32 8-15% faster). Runs
@ -- of 16 steps spilled 240 bytes that way (68 after the sums) and ran 11-20% slower; at
@ -- N = 8 and 16 it cost 3-31% ((64,512,49,8) fp32 63.6 -> 83.2 us): after the sums there.
@ local outputs_early = lane_pair and N <= 2 and Q <= 8
@ local TBP = TB + EPC      -- a staged row, padded by one copy against bank conflicts
@ local var_rows = (variant.B_var and N or 0) + (variant.C_var and N or 0)
@ local stage_bytes = (var_rows + CH * (variant.z and 4 or 3)) * TBP * size
@ -- 16-bit B and C are read from the stage as they landed, four steps in one 8-byte load,
@ -- and widened where they are used: half the shared-memory bytes of fp32 rows, and those
@ -- bytes bound this kernel. Blocks of 4 steps widen them once into fp32 rows instead,
@ -- which measured faster there (docs/design-direct-bc.md).
@ local converted = (size == 2 and TB < 8) and ((variant.B_var and 1 or 0) + (variant.C_var and 1 or 0)) or 0
@ -- the lanes' parts: rows written 16 bytes at a time, read back Q steps at a time, in the
@ -- layout that keeps every phase of both in distinct banks (equal strides, or groups of
@ -- slots at chosen offsets: common.part_layout), unless its memory costs a block an SM
@ -- (decided below, once every array is known); else `vector_row_strides`' equal strides
@ local part_plain_row, part_plain_slot = common.vector_row_strides(LN, LN, TB, Q, R)
@ local part_plain = { inner = part_plain_row, group = 1, group_words = part_plain_slot, offsets = { 0 } }
@ local part_layout = common.part_layout(LN, TB, Q, R, part_plain)
@ local function part_words(layout) return (CH + layout.group - 1) // layout.group * layout.group_words end
@ -- From N = 32 on, the dB and dC terms of 16-bit calls are exchanged as bf16, two steps a
@ -- word: half the shared-memory bytes of the terms and their sums, which bound this kernel
@ -- (5-23% faster at N = 32 to 256; at N = 8 and 16 the widening costs what the bytes save,
@ -- so those keep fp32 terms). docs/design-packed-terms.md.
@ local packed = size == 2 and N >= 32
@ local term_t = packed and "unsigned" or "float"
@ local TW = packed and TB // 2 or TB -- words of a row of terms
@ local red_row, red_slot = common.spread_strides(LN, 1, N, TW, packed and 2 or 4) -- rows of whole 4-step reads for the sums
@ -- pairs: neighbouring channels (slots 2k, 2k + 1) add their dB and dC terms with one
@ -- shuffle before the store; slot 2k keeps the pair's dB, slot 2k + 1 its dC, so one array
@ -- of the sums' size holds both (half their shared memory, for more blocks an SM).
@ local pairs = variant.pairs
@ if pairs and not (variant.B_var and variant.C_var) then
@   reject("pairs", "pairs=1 adds neighbouring channels' dB and dC terms: it needs B=var and C=var")
@ end
@ if pairs and (CH % 2 ~= 0 or LN >= 32) then
@   reject("pairs", string.format("pairs=1 needs an even number of channels with two or more in a warp, got channels=%d of %d lanes", CH, LN))
@ end
@ -- The block's shared arrays, in the order they are declared: the staging (stages, step
@ -- values, fp32 B and C, and stage_tasks.tpl's copy table, which declares itself), which
@ -- the carry pass uses too, and the sums.
@ local tasks_per_thread = ((var_rows + CH * (variant.z and 4 or 3)) * (TB // EPC) + BLOCK - 1) // BLOCK
@ local shared_layout = import("shared_layout")
@ local shared_arrays = shared_layout.new()
@ local function array(type, name, dims, bytes, staging, what)
@   shared_layout.add(shared_arrays, { type = type, name = name, dims = dims, bytes = bytes, staging = staging, what = what })
@ end
@ array("stage_t", "stages", "[2]", 2 * stage_bytes, true, "the staged inputs, two time blocks")
@ array("float", "steps", string.format("[3][%d][%d]", CH, TB + 4), 3 * CH * (TB + 4) * 4, true, "the channel's per-step values, each computed once by the lane that owns the step: dt, dt*u, g (dout times the gate)")
@ if not lane_pair then array("float", "part", string.format("[%d][%d]", parts, part_words(part_layout)), parts * part_words(part_layout) * 4, false, "each lane's part of the sums over states: sum dh B, sum A dh a h[t-1] (and y)") end
@ if pairs then array(term_t, "red_BC", string.format("[%d]", CH * red_slot), CH * red_slot * 4, false, "a pair's dB terms in its even slot, dC in its odd one") end
@ if not pairs and variant.B_var then array(term_t, "red_B", string.format("[%d]", CH * red_slot), CH * red_slot * 4, false, "each channel's dB terms, summed over the block") end
@ if not pairs and variant.C_var then array(term_t, "red_C", string.format("[%d]", CH * red_slot), CH * red_slot * 4, false, "each channel's dC terms, summed over the block") end
@ if converted > 0 then array("float", "BC_f32", string.format("[%d][%d][%d]", converted, N, TB + 4), converted * N * (TB + 4) * 4, true, "B and C of the block converted to fp32 once, for every channel of the block") end
@ array("const elem_t *", "task_src", string.format("[%d][%d]", tasks_per_thread, BLOCK), tasks_per_thread * BLOCK * 8, true, "stage_tasks.tpl's copy table")
@ local body_bytes = shared_layout.bytes(shared_arrays)
@ if part_layout ~= part_plain and not lane_pair then
@   local part = shared_layout.find(shared_arrays, "part")
@   local plain_bytes = body_bytes - part.bytes + parts * part_words(part_plain) * 4
@   if shared_layout.blocks_an_sm(body_bytes) < shared_layout.blocks_an_sm(plain_bytes) then
@     part_layout = part_plain
@     part.dims, part.bytes = string.format("[%d][%d]", parts, part_words(part_plain)), parts * part_words(part_plain) * 4
@     body_bytes = plain_bytes
@   end
@ end
@ local part_row, part_group = part_layout.inner, part_layout.group
@ local part_at = part_group == 1 and common.part_base(part_layout, "slot") or "part_base" -- where my slot's rows start
@ local staging_bytes = shared_layout.bytes(shared_arrays, function(a) return a.staging end)
@ local smem_bytes = math.max(body_bytes, 2 * staging_bytes) -- sf_scan_bwd_carry holds the body twice (with and without a segment's state), each with its own static arrays
@ -- Above 48 KB of static shared memory the arrays move to dynamic shared memory, in one
@ -- layout that every entry point shares (so the carry pass needs one body's arrays), and
@ -- the module tells the runtime its size (docs/design-dynamic-shared.md).
@ local dynamic = smem_bytes > shared_layout.STATIC_MAX
@ if dynamic and body_bytes > shared_layout.DYNAMIC_MAX then
@   reject("channels", string.format("split=state backward with dstate=%d, channels=%d, items=%d needs %d bytes of shared memory; at most %d allowed", N, CH, TB, body_bytes, shared_layout.DYNAMIC_MAX))
@ end
@ run_lengths = { Q }
@ include("kernel_params.h")
@ include("dtype.tpl")
@ step_io = { steps = Q }
@ include("step_io.tpl")
@ include("carry_combine.tpl")
@ -- the copies that fill a stage (stage_copy.tpl, stage_tasks.tpl): B, u and delta first
@ -- Small states (N <= 4) take the fast fetch (stage_tasks.tpl) in the plain kernels: their passes
@ -- over a block are short, and the checked copies were a sixth of what the N = 2 kernel runs
@ -- (docs/perf.md v32). Larger states keep the checked path, which their registers were tuned on
@ -- (docs/design-fast-fetch.md).
@ stage = { items = TB, padded = TBP, block = BLOCK, copy_bytes = EPC * size, rows = {},
@           fast_fetch = N <= 4 and "!WORDS && !CARRY" or nil }
@ local function channel_row(name, ptr, stride)
@   return { name = name, count = CH, early = (name == "u" or name == "delta"),
@            base = string.format("(const elem_t *)%s + b * %s_batch_stride + min(d_block + i, f.dim - 1) * %s_dim_stride", ptr, stride, stride) }
@ end
@ if variant.B_var then
@   table.insert(stage.rows, { name = "B", count = N, early = true, base = "B_rows + i * f.B_state_stride" })
@ end
@ table.insert(stage.rows, channel_row("u", "f.u", "f.u"))
@ -- the rows so far (B, u) feed only the state: the carry pass without one skips them
@ stage.state_rows = 0
@ for _, r in ipairs(stage.rows) do stage.state_rows = stage.state_rows + r.count end
@ table.insert(stage.rows, channel_row("delta", "f.delta", "f.delta"))
@ if variant.C_var then
@   table.insert(stage.rows, { name = "C", count = N, base = "C_rows + i * f.C_state_stride" })
@ end
@ table.insert(stage.rows, channel_row("dout", "p.dout", "p.dout"))
@ if variant.z then
@   table.insert(stage.rows, channel_row("z", "f.z", "f.z"))
@ end
@ include("stage_copy.tpl")

#define SF_LOG2E 1.4426950408889634f

@ if variant.softplus then
@   include("softplus.tpl")
@ end
/* v + bias -> dt and, with softplus, d dt / d v (docs/math.md), with no branch. */
__device__ __forceinline__ void step_of(float v, float &dt, float &dsoft) {
@ if variant.softplus then
  softplus_with_slope(v, dt, dsoft);
@ else
  dt = v;
  dsoft = 1.f;
@ end
}

/* Four consecutive values of shared memory (fp32, or 16-bit elements widened: dtype.tpl's
 * load4_f32), as an array the unrolled loops index. */
struct four { float v[4]; };
template <typename T> __device__ __forceinline__ four load4(const T *p) {
  const float4 x = load4_f32(p);
  return four{{x.x, x.y, x.z, x.w}};
}

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
  elem_t dout[$(CH)][$(TBP)];
@ if variant.z then
  elem_t z[$(CH)][$(TBP)];
@ end
};

/* Adds four consecutive sums into out[0..3]: one 16-byte atomic on sm_90 when `whole`
 * (16-byte aligned, all four in the sequence), else one atomic per valid step. */
__device__ __forceinline__ void add4(float *out, float4 v, bool whole, int valid) {
@ if variant.deterministic then
  if (whole) { *reinterpret_cast<float4 *>(out) = v; return; }
  if (valid > 0) out[0] = v.x;
  if (valid > 1) out[1] = v.y;
  if (valid > 2) out[2] = v.z;
  if (valid > 3) out[3] = v.w;
@ else
#if __CUDA_ARCH__ >= 900
  if (whole) { atomicAdd(reinterpret_cast<float4 *>(out), v); return; }
#endif
  if (valid > 0) atomicAdd(out, v.x);
  if (valid > 1) atomicAdd(out + 1, v.y);
  if (valid > 2) atomicAdd(out + 2, v.z);
  if (valid > 3) atomicAdd(out + 3, v.w);
@ end
}

/* Four steps' dB or dC terms of a row: fp32, or bf16 pairs (the earlier step in the low
 * half) widened. */
__device__ __forceinline__ float4 terms4(const float *p) { return *reinterpret_cast<const float4 *>(p); }
__device__ __forceinline__ float4 terms4(const unsigned *p) {
  const uint2 w = *reinterpret_cast<const uint2 *>(p);
  return make_float4(__uint_as_float(w.x << 16), __uint_as_float(w.x & 0xffff0000u),
                     __uint_as_float(w.y << 16), __uint_as_float(w.y & 0xffff0000u));
}
@ if packed then
/* Two steps' terms as one word of bf16 (lo: the earlier step), rounded to nearest even. */
__device__ __forceinline__ unsigned pack_terms(float lo, float hi) {
#if __CUDA_ARCH__ >= 800
  unsigned w;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
  return w;
#else
  unsigned l = __float_as_uint(lo), h = __float_as_uint(hi);
  l += 0x7fffu + ((l >> 16) & 1u), h += 0x7fffu + ((h >> 16) & 1u);
  return (l >> 16) | (h & 0xffff0000u);
#endif
}
@ end

@ if dynamic then
$(shared_layout.module_declarations(shared_arrays, "bwd_shared_t"))

@ end
@ local bounds = variant.min_blocks > 0 and (BLOCK .. ", " .. variant.min_blocks) or tostring(BLOCK)
/* The kernel's body: CARRY = false walks intervals backwards for every gradient (with
 * BLOCK_STATES, sf_scan_bwd_block_states: every block's starting state was saved, so no
 * interval is walked forwards first);
 * CARRY = true (sf_scan_bwd_carry) only measures what each segment hands on to the next
 * (its decays and, with CARRY_STATE, its state from 0: needed when segments are shorter
 * than a state interval) and back to the one before it (its adjoint from 0), so that the
 * main pass can walk all segments at once. WORDS (the variant's words=1): rows that do
 * not all start on a 16-byte boundary are staged in 4-byte pieces where they can be
 * (stage_copy.tpl, docs/design-row-alignment.md). */
template <bool CARRY, bool CARRY_STATE, bool BLOCK_STATES, bool WORDS> __device__ __forceinline__ void scan_bwd_body(const sf_bwd_params &p) {
@ -- (stage_tasks.tpl declares or binds the copy table, task_src)
$(shared_layout.body_declarations(shared_arrays, "bwd_shared_t", dynamic, { task_src = true }, "  "))
  const sf_fwd_params &f = p.f;
  const int lane = threadIdx.x % $(LN);
  const int slot = threadIdx.x / $(LN);
  const int d_raw = blockIdx.x * $(CH) + slot;
  const bool active = d_raw < f.dim;
@ if pairs then
  const bool odd_slot = slot & 1; /* of a pair of channels: keeps the pair's dC terms */
@ end
  const int d = active ? d_raw : f.dim - 1; /* an idle slot mirrors a real channel, stores nothing */
  const int b = blockIdx.y;
  const int L = f.seqlen;
  /* my states: lane, lane + $(LN), ... (interleaved: the lanes' B and C rows in different banks) */
@ if R == 1 then
  const int mine = lane * $(Q); /* my steps of a block for the per-step values and outputs */
  const bool owner = true;
@ else
  const int mine = lane / $(R); /* my step of a block: its sums over lanes (with my team), its outputs if I lead the team */
  const bool owner = lane % $(R) == 0;
@ end
  const int d_block = min((int)blockIdx.x * $(CH), f.dim - 1);
@ if part_group > 1 and not lane_pair then
  const int part_base = $(common.part_base(part_layout, "slot")); /* where my slot's rows of the lanes' parts start */
@ end

  elem_t *du_row = (elem_t *)p.du + b * p.du_batch_stride + d * p.du_dim_stride;
  elem_t *ddelta_row = (elem_t *)p.ddelta + b * p.ddelta_batch_stride + d * p.ddelta_dim_stride;
@ if variant.z then
  elem_t *dz_row = (elem_t *)p.dz + b * p.dz_batch_stride + d * p.dz_dim_stride;
@ end
@ if variant.B_var or variant.C_var then
  const int g = d_block / (f.dim / f.groups);
@ end
@ for _, m in ipairs({ "B", "C" }) do
@   if variant[m .. "_var"] then
  const elem_t *$(m)_rows = (const elem_t *)f.$(m) + b * f.$(m)_batch_stride + g * f.$(m)_group_stride;
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
@ if variant.B_var or variant.C_var then
  /* 16-byte sums need rows of whole 16-byte runs */
  const bool rows_of_four = (L & 3) == 0$(variant.B_var and " && ((unsigned long long)dB_rows & 15) == 0" or "")$(variant.C_var and " && ((unsigned long long)dC_rows & 15) == 0" or "");
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
    A_n[s] = f.A[(long long)d * $(N) + lane + s * $(LN)];
    A2[s] = A_n[s] * SF_LOG2E;
    e[s] = p.d_last_state ? p.d_last_state[state_row + lane + s * $(LN)] : 0.f; /* e past the end */
    dA_sum[s] = 0.f;
@ for _, m in ipairs({ "B", "C" }) do
@   if not variant[m .. "_var"] then
    $(m)_fixed[s] = ((const float *)f.$(m))[(long long)d * $(N) + lane + s * $(LN)];
    d$(m)_sum[s] = 0.f;
@   end
@ end
  }
  float dD_sum = 0.f, dbias_sum = 0.f;
  float checkpoint[$(MAXB)][$(S)]; /* state at each block's start within an interval */

  /* This thread's share of the 16-byte copies that fill a stage; the forward pass of an
   * interval fetches only the early rows (B, u, delta). */
@ stage.shared_tasks = dynamic and "shared.task_src" or nil
@ include("stage_tasks.tpl")

  /* 16-bit B (and C) of a landed stage to fp32, once for all the block's channels. */
  auto convert = [&](const stage_t &st, bool with_C) {
@ if converted > 0 then
@   local list = {}
@   for _, m in ipairs({ "B", "C" }) do
@     if variant[m .. "_var"] then
@       list[#list + 1] = { from = "st." .. m, to = "BC_f32[" .. #list .. "]", when = m == "C" and "with_C" or nil }
@     end
@   end
$(common.widen_rows(list, N, TB, BLOCK, "    "))
@ end
  };
@ local function row_of(m)
@   if converted > 0 then return string.format("&BC_f32[%d][lane + s * %d][0]", (m == "C" and variant.B_var) and 1 or 0, LN) end
@   return string.format("&st.%s[lane + s * %d][0]", m, LN)
@ end

  /* The per-step values of my share of a block (dt, dt*u; with dout, also g), published
   * for the channel's other lanes; what the output stage needs is kept. */
  float u_m[$(Q)], ds_m[$(Q)], g_m[$(Q)], gate_m[$(Q)];
  auto my_steps = [&](const stage_t &st, int t0, bool with_dout) {
    if (!owner) return;
    /* every load first, then the steps side by side (no branch between them) */
    float v[$(Q)], dt_q[$(Q)], dtu_q[$(Q)], dout_q[$(Q)];
@ if variant.z then
    float z_q[$(Q)];
@ end
    load_run_aligned(&st.u[slot][mine], u_m);
    load_run_aligned(&st.delta[slot][mine], v);
    if (with_dout) {
      load_run_aligned(&st.dout[slot][mine], dout_q);
@ if variant.z then
      load_run_aligned(&st.z[slot][mine], z_q);
@ end
    }
#pragma unroll
    for (int i = 0; i < $(Q); i++) {
      float dt_i;
      step_of(v[i]$(variant.delta_bias and " + bias" or ""), dt_i, ds_m[i]);
      dt_q[i] = t0 + mine + i < L ? dt_i : 0.f; /* padding steps: a = 1, x = 0 */
      dtu_q[i] = dt_q[i] * u_m[i];
    }
    store_steps(&steps[0][slot][mine], dt_q);
    store_steps(&steps[1][slot][mine], dtu_q);
    if (with_dout) {
#pragma unroll
      for (int i = 0; i < $(Q); i++) {
@ if variant.z then
        const float sz = __fdividef(1.f, 1.f + __expf(-z_q[i]));
        g_m[i] = dout_q[i] * z_q[i] * sz;                        /* g = dout * silu(z) */
        gate_m[i] = dout_q[i] * sz * (1.f + z_q[i] * (1.f - sz)); /* dz = y * gate */
@ else
        g_m[i] = dout_q[i];
        gate_m[i] = 0.f;
@ end
      }
      store_steps(&steps[2][slot][mine], g_m);
    }
  };

  const int K = f.state_interval;
  if (CARRY) {
    /* Segment blockIdx.z from a state of 0 at its start and an adjoint of 0 past its end:
     * its state at its end, e[start] = sum over its steps t of (a[start] ... a[t]) C[t] g[t],
     * and the product of all its decays, which multiplies the state before it and the
     * adjoint past its end (docs/design-segments.md). */
    const int c = blockIdx.z, i0 = c * f.segment;
    const int blocks = (min(i0 + f.segment, L) - i0 + $(TB - 1)) / $(TB);
    float decay[$(S)], adjoint[$(S)], state[$(S)];
#pragma unroll
    for (int s = 0; s < $(S); s++) decay[s] = 1.f, adjoint[s] = 0.f, state[s] = 0.f;
    /* B and u feed only the state: without one, their rows are not copied (and the
     * step values made from them are not read) */
    auto fetch_carried = [&](int t0, int which) {
      if (CARRY_STATE) fetch(t0, which, true);
      else fetch_without_state_rows(t0, which);
    };
    fetch_carried(i0, 0);
    copies_commit();
    for (int k = 0; k < blocks; k++) {
      const int t0 = i0 + k * $(TB);
      if (k + 1 < blocks) fetch_carried(t0 + $(TB), (k + 1) & 1);
      copies_commit();
      copies_wait_previous();
      __syncthreads();
      const stage_t &st = stages[k & 1];
      convert(st, true);
      my_steps(st, t0, true);
      __syncthreads();
#pragma unroll
      for (int i4 = 0; i4 < $(TB); i4 += 4) {
        const four dt = load4(&steps[0][slot][i4]), dtu = load4(&steps[1][slot][i4]);
        const four gv = load4(&steps[2][slot][i4]);
#pragma unroll
        for (int s = 0; s < $(S); s++) {
@ if variant.B_var then
          const four Bq = load4($(row_of("B")) + i4);
@ end
@ if variant.C_var then
          const four Cq = load4($(row_of("C")) + i4);
@ end
#pragma unroll
          for (int j = 0; j < 4; j++) {
            const float a = exp2f(dt.v[j] * A2[s]);
            decay[s] *= a;
            if (CARRY_STATE) state[s] = a * state[s] + dtu.v[j] * $(variant.B_var and "Bq.v[j]" or "B_fixed[s]");
            adjoint[s] += decay[s] * $(variant.C_var and "Cq.v[j]" or "C_fixed[s]") * gv.v[j];
          }
        }
      }
      __syncthreads(); /* the stage and the step values are refilled next */
    }
    if (active) {
#pragma unroll
      for (int s = 0; s < $(S); s++) {
        const long long at = (state_row / $(N) * f.nsegments + c) * $(N) + lane + s * $(LN);
        f.carry_decay[at] = decay[s];
        if (CARRY_STATE) f.carry_state[at] = state[s];
        p.carry_adjoint[at] = adjoint[s];
      }
    }
    return;
  }
  /* Chunks of steps walked last to first, each from a saved state: the state intervals,
   * or, once the carries were measured, this block's segment alone. Its adjoint past its
   * end is then what the later segments hand back (sf_scan_bwd_combine left it). */
  const bool parallel = f.carry_decay != 0;
  /* With BLOCK_STATES (an interval of at most items steps: docs/design-block-states.md)
   * the blocks run last to first in one pass over the sequence or the segment, each from
   * its saved state, the next one's inputs fetched while one runs. */
  const int chunk = parallel ? f.segment : BLOCK_STATES ? L : K;
  const int c_last = parallel ? (int)blockIdx.z : BLOCK_STATES ? 0 : f.nsaved - 1, c_first = parallel ? (int)blockIdx.z : 0;
  if (parallel) {
#pragma unroll
    for (int s = 0; s < $(S); s++) e[s] = p.carry_adjoint[(state_row / $(N) * f.nsegments + c_last) * $(N) + lane + s * $(LN)];
  }
  for (int c = c_last; c >= c_first; c--) {
    const int i0 = c * chunk;
    const int blocks = (min(i0 + chunk, L) - i0 + $(TB - 1)) / $(TB);
    if (!BLOCK_STATES) { /* the interval's start, then a forward pass through it for each block's start */
      const int interval = i0 / K; /* the saved state before it ends interval - 1 */
      float h[$(S)];
#pragma unroll
      for (int s = 0; s < $(S); s++)
        h[s] = interval > 0 ? f.saved_states[(state_row / $(N) * f.nsaved + interval - 1) * $(N) + lane + s * $(LN)]
                            : (f.h0 ? f.h0[state_row + lane + s * $(LN)] : 0.f);
      if (parallel) { /* then the earlier segments of the interval hand it on (7 at most with segments of 64 or more: not unrolled) */
#pragma unroll 1
        for (int j = interval * K / chunk; j < c; j++) {
#pragma unroll
          for (int s = 0; s < $(S); s++) {
            const long long at = (state_row / $(N) * f.nsegments + j) * $(N) + lane + s * $(LN);
            h[s] = f.carry_decay[at] * h[s] + f.carry_state[at];
          }
        }
      }

      /* Forward through the interval: the state at each block's start. */
      if (blocks > 1) fetch(i0, 0, false);
      copies_commit();
      for (int k = 0; k < blocks - 1; k++) {
#pragma unroll
        for (int s = 0; s < $(S); s++) checkpoint[k][s] = h[s];
        const int t0 = i0 + k * $(TB);
        if (k + 2 < blocks) fetch(t0 + $(TB), (k + 1) & 1, false);
        copies_commit();
        copies_wait_previous();
        __syncthreads();
        const stage_t &st = stages[k & 1];
        convert(st, false);
        my_steps(st, t0, false);
        __syncthreads();
#pragma unroll
        for (int i4 = 0; i4 < $(TB); i4 += 4) {
          const four dt = load4(&steps[0][slot][i4]), dtu = load4(&steps[1][slot][i4]);
#pragma unroll
          for (int s = 0; s < $(S); s++) {
@ if variant.B_var then
            const four Bq = load4($(row_of("B")) + i4);
@ end
#pragma unroll
            for (int j = 0; j < 4; j++)
              h[s] = exp2f(dt.v[j] * A2[s]) * h[s] + dtu.v[j] * $(variant.B_var and "Bq.v[j]" or "B_fixed[s]");
          }
        }
        __syncthreads(); /* the stage and the step values are refilled next */
      }
#pragma unroll
      for (int s = 0; s < $(S); s++) checkpoint[blocks - 1][s] = h[s];
    }

    /* Backward through the interval's blocks, last first. */
    fetch(i0 + (blocks - 1) * $(TB), 0, true);
    copies_commit();
    for (int k = blocks - 1; k >= 0; k--) {
      const int t0 = i0 + k * $(TB);
      const int which = (blocks - 1 - k) & 1;
      float h_start[$(S)]; /* the block's checkpoint (local memory) or saved state, read before the wait below hides its latency */
      if (BLOCK_STATES) {
        const float *saved = t0 > 0 ? f.saved_states + (state_row / $(N) * f.nsaved + (t0 >> f.state_shift) - 1) * $(N) + lane
                                    : f.h0 ? f.h0 + state_row + lane : 0;
#pragma unroll
        for (int s = 0; s < $(S); s++) h_start[s] = saved ? saved[s * $(LN)] : 0.f;
      } else {
#pragma unroll
        for (int s = 0; s < $(S); s++) h_start[s] = checkpoint[k][s];
      }
      if (k > 0) fetch(t0 - $(TB), which ^ 1, true);
      copies_commit();
      copies_wait_previous();
      __syncthreads();
      const stage_t &st = stages[which];
      convert(st, true);
      my_steps(st, t0, true);
      __syncthreads();

      /* Per group of $(SG) states: this block's exponentials and states again, from the
       * checkpoint (hs[s][i] is the state before step i, hs[s][i + 1] after it), then the
       * reverse recurrence, step by step with the group's states interleaved. */
      float dhB[$(TB)], dhAh[$(TB)];
@ if variant.z then
      float y_p[$(TB)];
@ end
#pragma unroll
      for (int sg = 0; sg < $(S); sg += $(SG)) {
        float a[$(SG)][$(TB)], hs[$(SG)][$(TB + 1)];
#pragma unroll
        for (int r = 0; r < $(SG); r++) hs[r][0] = h_start[sg + r];
#pragma unroll
        for (int i4 = 0; i4 < $(TB); i4 += 4) {
          const four dt = load4(&steps[0][slot][i4]), dtu = load4(&steps[1][slot][i4]);
#pragma unroll
          for (int r = 0; r < $(SG); r++) {
            const int s = sg + r;
@ if variant.B_var then
            const four Bq = load4($(row_of("B")) + i4);
@ end
@ if variant.z and variant.C_var then
            const four Cq = load4($(row_of("C")) + i4);
@ end
#pragma unroll
            for (int j = 0; j < 4; j++) {
              a[r][i4 + j] = exp2f(dt.v[j] * A2[s]);
              hs[r][i4 + j + 1] = a[r][i4 + j] * hs[r][i4 + j] + dtu.v[j] * $(variant.B_var and "Bq.v[j]" or "B_fixed[s]");
@ if variant.z then
              const float c_h = $(variant.C_var and "Cq.v[j]" or "C_fixed[s]") * hs[r][i4 + j + 1];
              y_p[i4 + j] = s == 0 ? c_h : y_p[i4 + j] + c_h;
@ end
            }
          }
        }
#pragma unroll
        for (int i4 = $(TB - 4); i4 >= 0; i4 -= 4) {
          const four dt = load4(&steps[0][slot][i4]), dtu = load4(&steps[1][slot][i4]);
          const four gv = load4(&steps[2][slot][i4]);
          four Bq[$(SG)], Cq[$(SG)];
#pragma unroll
          for (int r = 0; r < $(SG); r++) {
            const int s = sg + r;
@ if variant.B_var then
            Bq[r] = load4($(row_of("B")) + i4);
@ else
            Bq[r] = four{{B_fixed[s], B_fixed[s], B_fixed[s], B_fixed[s]}};
@ end
@ if variant.C_var then
            Cq[r] = load4($(row_of("C")) + i4);
@ else
            Cq[r] = four{{C_fixed[s], C_fixed[s], C_fixed[s], C_fixed[s]}};
@ end
          }
@ if packed then
          float held_B[$(SG)], held_C[$(SG)]; /* an odd step's terms, stored with the even step's */
@ end
#pragma unroll
          for (int j = 3; j >= 0; j--) {
            const int i = i4 + j;
#pragma unroll
            for (int r = 0; r < $(SG); r++) {
              const int s = sg + r;
              const float dh = Cq[r].v[j] * gv.v[j] + e[s];
              dhB[i] = sg == 0 && r == 0 ? dh * Bq[r].v[j] : dhB[i] + dh * Bq[r].v[j];
              e[s] = dh * a[r][i];             /* the adjoint handed to step i - 1 */
              const float q = e[s] * hs[r][i]; /* dh a h[t-1]: d a / d A = dt a */
              dhAh[i] = sg == 0 && r == 0 ? A_n[s] * q : dhAh[i] + A_n[s] * q;
              dA_sum[s] += dt.v[j] * q;
              const float dB_t = dh * dtu.v[j];
              const float dC_t = gv.v[j] * hs[r][i + 1];
@ -- a term into its array: with packed terms, an odd step's waits for the even step before it
@ local function put_term(array, value, held)
@   local at = string.format("%s[slot * %d + (lane + s * %d) * %d + i", array, red_slot, LN, red_row)
@   if not packed then return string.format("%s] = %s;", at, value) end
@   return string.format("if (j & 1) %s[r] = %s; else %s / 2] = pack_terms(%s, %s[r]);", held, value, at, value, held)
@ end
@ if pairs then
              { /* the pair's other channel: same lane, $(LN) threads away */
                const float other = __shfl_xor_sync(0xffffffffu, odd_slot ? dB_t : dC_t, $(LN));
                $(put_term("red_BC", "(odd_slot ? dC_t : dB_t) + other", "held_B"))
              }
@ elseif variant.B_var then
              $(put_term("red_B", "dB_t", "held_B"))
@ else
              dB_sum[s] += dB_t;
@ end
@ if pairs then
@ elseif variant.C_var then
              $(put_term("red_C", "dC_t", "held_C"))
@ else
              dC_sum[s] += dC_t;
@ end
            }
          }
        }
      }
      /* My share of the steps' gradients (mine = lane * $(Q)), from the sums over the
       * channel's lanes: stored before the barrier where two lanes add theirs with a
       * shuffle and a lane has at most 8 steps (outputs_early), else after it. */
      float dhB_m[$(Q)], dhAh_m[$(Q)], y_m[$(Q)];
      auto store_outputs = [&]() {
        if (owner) {
          float du_m[$(Q)], ddelta_m[$(Q)];
@ if variant.z then
          float dz_m[$(Q)];
@ end
#pragma unroll
          for (int i = 0; i < $(Q); i++) {
            const float dhB = dhB_m[i], dhAh = dhAh_m[i];
@ if variant.z then
            float y = y_m[i];
@ end
            const float dt_i = steps[0][slot][mine + i];
@ if variant.z then
@   if variant.D then
            y += D_d * u_m[i];
@   end
            dz_m[i] = y * gate_m[i];
@ end
            du_m[i] = dt_i * dhB$(variant.D and " + D_d * g_m[i]" or "");
            ddelta_m[i] = (u_m[i] * dhB + dhAh) * ds_m[i];
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
      };
@ if lane_pair then
      /* The two lanes swap the halves the other keeps, each adding its own part of its
       * half to the other lane's. */
#pragma unroll
      for (int i = 0; i < $(Q); i++) {
        dhB_m[i] = (lane ? dhB[$(Q) + i] : dhB[i]) + __shfl_xor_sync(0xffffffffu, lane ? dhB[i] : dhB[$(Q) + i], 1);
        dhAh_m[i] = (lane ? dhAh[$(Q) + i] : dhAh[i]) + __shfl_xor_sync(0xffffffffu, lane ? dhAh[i] : dhAh[$(Q) + i], 1);
@   if variant.z then
        y_m[i] = (lane ? y_p[$(Q) + i] : y_p[i]) + __shfl_xor_sync(0xffffffffu, lane ? y_p[i] : y_p[$(Q) + i], 1);
@   else
        y_m[i] = 0.f;
@   end
      }
@   if outputs_early then
      store_outputs();
@   end
@ else
#pragma unroll
      for (int i = 0; i < $(TB); i++) {
        part[0][$(part_at) + lane * $(part_row) + i] = dhB[i];
        part[1][$(part_at) + lane * $(part_row) + i] = dhAh[i];
@ if variant.z then
        part[2][$(part_at) + lane * $(part_row) + i] = y_p[i];
@ end
      }
@ end
      if (t0 == 0 && active && p.dh0) {
#pragma unroll
        for (int s = 0; s < $(S); s++) p.dh0[state_row + lane + s * $(LN)] = e[s]; /* a[0] dh[0] */
      }
      __syncthreads();
@ if variant.B_var or variant.C_var then
      /* Variable dB, dC: the block's channels added, four steps of a state at a time, one
       * 16-byte atomic (or store) each where the rows allow it. The dB tasks come first,
       * then the dC tasks, spread over every thread: a block of two warps gives one warp
       * the dB sums and the other the dC sums, so neither waits at the next barrier while
       * the other adds both. */
@   local per_array = N * TB // 4
@   local tasks = {}
@   for _, m in ipairs({ "B", "C" }) do
@     if variant[m .. "_var"] then tasks[#tasks + 1] = m end
@   end
@   -- With fewer tasks than threads at N = 1 and 2 (half or more of the threads idle, the
@   -- others adding every channel in one chain) a team of neighbouring lanes shares each
@   -- task: every lane adds its share of the channels, shuffles add the team's (H200,
@   -- docs/perf.md v38). At N = 8 the same teams cost registers (158 -> 167 for the vision
@   -- launch 4/8/16, 32 bytes spilled under its cap of 8 blocks): a thread's task alone there.
@   local total = #tasks * per_array
@   local count = pairs and CH // 2 or CH -- the channel slots each task adds
@   local team = BLOCK % total == 0 and BLOCK // total or 1
@   if N > 2 or team < 2 or team > 32 or not common.is_power_of_two(team) or count % team ~= 0 then team = 1 end
@   if team > 1 then
      { /* teams of $(team) lanes, one task each: a lane adds $(count // team) of the $(count) channel slots */
        const int w = threadIdx.x / $(team), member = threadIdx.x % $(team);
@     if #tasks == 2 then
        const bool second = w >= $(per_array); /* the d$(tasks[2]) tasks */
        const int task = second ? w - $(per_array) : w;
@     else
        const int task = w;
@     end
        const int n = task / $(TB // 4), i4 = 4 * (task % $(TB // 4)), t = t0 + i4;
@     local col = packed and "i4 / 2" or "i4"
@     local base, stride
@     if pairs then
@       base, stride = string.format("red_BC + (second ? %d : 0)", red_slot), 2 * red_slot
@     elseif #tasks == 2 then
@       base, stride = string.format("(second ? red_%s : red_%s)", tasks[2], tasks[1]), red_slot
@     else
@       base, stride = "red_" .. tasks[1], red_slot
@     end
        const $(term_t) *terms = $(base) + n * $(red_row) + $(col);
        float4 sum = terms4(terms + member * $(stride));
#pragma unroll
        for (int j = 1; j < $(count // team); j++) {
          const float4 x = terms4(terms + (member + j * $(team)) * $(stride));
          sum.x += x.x, sum.y += x.y, sum.z += x.z, sum.w += x.w;
        }
#pragma unroll
        for (int offset = $(team // 2); offset > 0; offset /= 2) {
          sum.x += __shfl_xor_sync(0xffffffffu, sum.x, offset);
          sum.y += __shfl_xor_sync(0xffffffffu, sum.y, offset);
          sum.z += __shfl_xor_sync(0xffffffffu, sum.z, offset);
          sum.w += __shfl_xor_sync(0xffffffffu, sum.w, offset);
        }
@     local rows = #tasks == 2 and string.format("(second ? d%s_rows : d%s_rows)", tasks[2], tasks[1]) or ("d" .. tasks[1] .. "_rows")
        float *const rows = $(rows);
        if (member == 0 && t < L && rows) add4(rows + (long long)n * L + t, sum, rows_of_four, L - t);
      }
@   else
#pragma unroll
      for (int w = threadIdx.x; w < $(#tasks * per_array); w += $(BLOCK)) {
@   for k, m in ipairs(tasks) do
@     -- with pairs, dB's sums are in the even slots of red_BC and dC's in the odd ones
@     local array = pairs and "red_BC" or ("red_" .. m)
@     local first = (pairs and m == "C") and (red_slot .. " + ") or ""
@     local loop = pairs and string.format("int s = %d; s < %d; s += 2", m == "B" and 2 or 3, CH) or string.format("int s = 1; s < %d; s++", CH)
@     local guard = #tasks == 1 and "true" or (k == 1 and ("w < " .. per_array) or ("w >= " .. per_array))
        if ($(guard)) { /* the d$(m) tasks */
          const int task = w$(k == 2 and (" - " .. per_array) or "");
          const int n = task / $(TB // 4), i4 = 4 * (task % $(TB // 4)), t = t0 + i4;
          if (t < L && d$(m)_rows) {
@     local col = packed and "i4 / 2" or "i4"
            float4 sum = terms4(&$(array)[$(first)n * $(red_row) + $(col)]);
#pragma unroll
            for ($(loop)) {
              const float4 x = terms4(&$(array)[s * $(red_slot) + n * $(red_row) + $(col)]);
              sum.x += x.x, sum.y += x.y, sum.z += x.z, sum.w += x.w;
            }
            add4(d$(m)_rows + (long long)n * L + t, sum, rows_of_four, L - t);
          }
        }
@     end
      }
@   end
@ end
@ if not lane_pair then
      /* My share of the steps: the lanes' parts added, the per-step gradients stored. */
#pragma unroll
      for (int i = 0; i < $(Q); i++) {
        dhB_m[i] = 0.f, dhAh_m[i] = 0.f, y_m[i] = 0.f;
#pragma unroll
        for (int m = 0; m < $(LN // R); m++) {
          const int l = $(R == 1 and "m" or ("lane % " .. R .. " + m * " .. R)); /* my team's lanes take turns */
          dhB_m[i] += part[0][$(part_at) + l * $(part_row) + mine + i];
          dhAh_m[i] += part[1][$(part_at) + l * $(part_row) + mine + i];
@ if variant.z then
          y_m[i] += part[2][$(part_at) + l * $(part_row) + mine + i];
@ end
        }
@ if R > 1 then
#pragma unroll
        for (int offset = $(R // 2); offset > 0; offset /= 2) { /* the team: $(R) neighbouring lanes */
          dhB_m[i] += __shfl_xor_sync(0xffffffffu, dhB_m[i], offset);
          dhAh_m[i] += __shfl_xor_sync(0xffffffffu, dhAh_m[i], offset);
@   if variant.z then
          y_m[i] += __shfl_xor_sync(0xffffffffu, y_m[i], offset);
@   end
        }
@ end
      }
@ end
@ if not outputs_early then
      store_outputs();
@ end
      /* No barrier here: the next block's first one comes before anything this one reads
       * is rewritten (its copies go to the stage this block last read before the barrier
       * after the reverse pass; the step values, the lanes' parts and the dB/dC terms are
       * rewritten only after the next block's first barrier), and lets the warps that
       * finish first start the next block's copies while the others add the sums. */
    }
  }

  /* Sums over time of this batch row: one atomic (or partial store) per value. */
@ -- deterministic partial slots: (interval of a parallel walk, batch row, channel)
@ local row = det and "((long long)blockIdx.z * f.batch + b) * f.dim + d" or "(long long)d"
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
    const long long at = ($(row)) * $(N) + lane + s * $(LN);
    if (p.dA) $(add("p.dA + at", "dA_sum[s]"));
@ for _, m in ipairs({ "B", "C" }) do
@   if not variant[m .. "_var"] then
    if (p.d$(m)) $(add("p.d" .. m .. " + at", "d" .. m .. "_sum[s]"));
@   end
@ end
  }
}

@ local WORDS = variant.words and "true" or "false" -- rows off 16-byte alignment (docs/design-row-alignment.md)
extern "C" __global__ void __launch_bounds__($(bounds)) $(variant.kernel_name)(const sf_bwd_params p) {
  scan_bwd_body<false, false, false, $(WORDS)>(p);
}

/* The same when the forward saved every block's starting state (docs/design-block-states.md). */
extern "C" __global__ void __launch_bounds__($(bounds)) sf_scan_bwd_block_states(const sf_bwd_params p) {
  scan_bwd_body<false, false, true, $(WORDS)>(p);
}

extern "C" __global__ void __launch_bounds__($(bounds)) sf_scan_bwd_carry(const sf_bwd_params p) {
  /* a segment's state from 0 is needed only when segments are shorter than an interval */
  if (p.f.segment < p.f.state_interval) scan_bwd_body<true, true, false, $(WORDS)>(p);
  else scan_bwd_body<true, false, false, $(WORDS)>(p);
}

/* Between the carry pass and the main pass: each segment's R becomes the adjoint past its
 * end, from d_last_state through the later segments (e = P e + R, the last first). */
extern "C" __global__ void __launch_bounds__(SF_COMBINE_THREADS) sf_scan_bwd_combine(const sf_bwd_params p) {
  const sf_fwd_params &f = p.f;
  combine_block(f.carry_decay, p.carry_adjoint, p.d_last_state, f.dim, f.nsegments, f.nsegments, true);
}
@ include("bwd_sums.tpl")
