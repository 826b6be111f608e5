/* cpu_kernel_impl.h: the CPU scan's forward and backward over one block of channels, written
 * once on cpu_vec.h's vectors; cpu_kernel_avx2.c and cpu_kernel_portable.c include it with
 * SF_CPU_KERNELS (the table's name) and SF_CPU_KERNELS_LABEL defined.
 *
 * Layout: a block's channels are the lanes of a vector, so the loop over time steps is a
 * vector loop over channels, with a chunk of states held in registers. Per-channel inputs
 * are copied into channel-minor scratch ([t][lane]), variable B and C into time-major
 * scratch ([t][state], one value shared by every lane). States are padded to a multiple of
 * SC with A = B = C = 0 (h stays 0) and lanes past the block's end with zeros, so that
 * every loop runs whole vectors and whole chunks.
 *
 * Blocks come in order, and those of one (batch, group) slot one after the other: the slot's
 * first block converts its B and C for the whole sequence and later blocks reuse them, and
 * in the backward dB and dC collect per lane over the slot's blocks and are summed over the
 * lanes once, at its last block (when those fit the L2-sized limits below; else per block). */
#include <stdbool.h>
#include <string.h>

#include "runtime/cpu/cpu_kernel.h"
#include "runtime/cpu/cpu_vec.h"
#include "base/half.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

enum {
  TB = 64,            /* forward time block; divides every state interval */
  SC = 8,             /* states per register chunk in the forward; N is padded to it */
  SCB = 4,            /* states per chunk in the reverse scan, which holds more per state */
  SEG_FLOATS = 32768, /* backward: stored states and decays of one segment (128 KiB) */
  /* A slot's variable B and C for the whole sequence are kept from its first block to its
   * last when L * NP is at most this (forward) ... */
  FWD_SLOT_STEPS_STATES = 32768,
  /* ... and, in the backward, so are per-lane sums of dB and dC (2 L NP VL floats). */
  BWD_SLOT_STEPS_STATES = 4096,
};

static const float LOG2E = 1.44269504088896341f;

static int padded_states(int N) { return (N + SC - 1) / SC * SC; }

static const void *at(const void *base, sf_dtype T, int64_t offset) {
  return (const char *)base + offset * sf_dtype_size(T);
}

/* dst[j * dst_stride + i] = src[i * src_stride + j] for i < rows, j < cols: whole 8 x 8
 * tiles, then the edges one element at a time. */
static void transpose(const float *src, int64_t src_stride, int rows, int cols, float *dst,
                      int64_t dst_stride) {
  int i0 = 0;
  for (; i0 + 8 <= rows; i0 += 8) {
    int j0 = 0;
    for (; j0 + 8 <= cols; j0 += 8)
      tile8(src + i0 * src_stride + j0, src_stride, dst + j0 * dst_stride + i0, dst_stride);
    for (; j0 < cols; j0++)
      for (int i = i0; i < i0 + 8; i++) dst[j0 * dst_stride + i] = src[i * src_stride + j0];
  }
  for (; i0 < rows; i0++)
    for (int j = 0; j < cols; j++) dst[j * dst_stride + i0] = src[i0 * src_stride + j];
}

/* dst[t * VL + c] = element t of row c (rows dim_stride elements apart) as fp32, for
 * c < count; later lanes 0. Rows of fp16/bf16 are converted into tmp (VL * steps) first. */
static void gather_rows(sf_dtype T, const void *first, int64_t dim_stride, int count, int steps,
                        float *dst, float *tmp) {
  const float *rows = first;
  int64_t stride = dim_stride;
  if (T != SF_FP32) {
    for (int c = 0; c < count; c++) sf_convert_to_float(T, at(first, T, c * dim_stride), steps, tmp + c * steps);
    rows = tmp, stride = steps;
  }
  transpose(rows, stride, count, steps, dst, VL);
  for (int c = count; c < VL; c++)
    for (int t = 0; t < steps; t++) dst[t * VL + c] = 0.0f;
}

/* Row c, element t = src[t * VL + c] rounded to T, for c < count (tmp: VL * steps). */
static void scatter_rows(sf_dtype T, void *first, int64_t dim_stride, int count, int steps,
                         const float *src, float *tmp) {
  if (T == SF_FP32) {
    transpose(src, VL, steps, count, first, dim_stride);
    return;
  }
  transpose(src, VL, steps, count, tmp, steps);
  for (int c = 0; c < count; c++)
    sf_convert_from_float(T, tmp + c * steps, steps, (char *)first + c * dim_stride * sf_dtype_size(T));
}

/* dst[t * NP + n] = B[n * state_stride + t] as fp32, n < N: a variable B or C block, eight
 * states at a time (tmp: 8 * steps). */
static void gather_states_time_major(sf_dtype T, const void *first, int64_t state_stride, int N,
                                     int steps, int NP, float *dst, float *tmp) {
  for (int n0 = 0; n0 < N; n0 += 8) {
    const int rows = N - n0 < 8 ? N - n0 : 8;
    const void *src = at(first, T, n0 * state_stride);
    if (T == SF_FP32) {
      transpose(src, state_stride, rows, steps, dst + n0, NP);
    } else {
      for (int i = 0; i < rows; i++) sf_convert_to_float(T, at(src, T, i * state_stride), steps, tmp + i * steps);
      transpose(tmp, steps, rows, steps, dst + n0, NP);
    }
  }
}

/* Cache lines asked for ahead of their use (the next block's inputs), a few at a time:
 * issued all at once they would stall on the core's outstanding misses; spread over the
 * softplus loops, which wait on their own dependency chains, they come free. */
typedef struct prefetcher {
  const char *row[6 * VL]; /* the first byte of each row's range */
  bool write[6 * VL];      /* rows about to be written */
  int rows, next_row;
  int64_t bytes, next_byte; /* per row */
} prefetcher;

/* Adds elements [from, from + n) of `rows` rows `stride` elements apart. */
static void prefetch_add(prefetcher *p, sf_dtype T, const void *first, int64_t stride, int rows,
                         int64_t from, int64_t n) {
  const int64_t es = sf_dtype_size(T);
  for (int c = 0; c < rows && p->rows < 6 * VL; c++)
    p->write[p->rows] = false, p->row[p->rows++] = (const char *)first + (c * stride + from) * es;
  p->bytes = n * es;
}

/* The same for rows the block writes: their lines come in for writing meanwhile. */
static void prefetch_add_for_write(prefetcher *p, sf_dtype T, const void *first, int64_t stride,
                                   int rows, int64_t from, int64_t n) {
  const int start = p->rows;
  prefetch_add(p, T, first, stride, rows, from, n);
  for (int i = start; i < p->rows; i++) p->write[i] = true;
}

/* The same for up to `rows` rows of a (batch, dim, L) tensor from row `row` (b * dim + d),
 * within that batch: the next block's first inputs. */
static void prefetch_add_activation(prefetcher *p, sf_dtype T, const void *base,
                                    int64_t batch_stride, int64_t dim_stride,
                                    const sf_scan_fwd_args *a, int64_t row, int rows,
                                    int64_t from, int64_t n) {
  const int64_t b = row / a->dim, d = row % a->dim;
  if (b >= a->batch) return;
  if (rows > a->dim - d) rows = (int)(a->dim - d);
  prefetch_add(p, T, at(base, T, b * batch_stride + d * dim_stride), dim_stride, rows, from, n);
}

/* Asks for the next `lines` lines (every one left with lines < 0). */
static inline void prefetch_some(prefetcher *p, int lines) {
  for (; lines != 0 && p->next_row < p->rows; lines--) {
    if (p->write[p->next_row])
      __builtin_prefetch(p->row[p->next_row] + p->next_byte, 1);
    else
      __builtin_prefetch(p->row[p->next_row] + p->next_byte);
    p->next_byte += 64;
    if (p->next_byte >= p->bytes + 63) p->next_byte = 0, p->next_row++; /* + 63: the last partial line */
  }
}

/* dst[n * VL + c] = src[c * row_stride + n] for n < N, c < count; 0 elsewhere up to NP
 * (all 0 when src is NULL): per-channel (N,) rows of A, fixed B/C, or states. */
static void gather_lanes(const float *src, int64_t row_stride, int N, int count, int NP,
                         float *dst) {
  for (int n = 0; n < NP; n++)
    for (int c = 0; c < VL; c++)
      dst[n * VL + c] = src && n < N && c < count ? src[c * row_stride + n] : 0.0f;
}

static void scale(float *x, int n, float by) {
  for (int i = 0; i < n; i++) x[i] *= by;
}

static void scatter_lanes(const float *src, int N, int count, int64_t row_stride, float *dst) {
  for (int c = 0; c < count; c++)
    for (int n = 0; n < N; n++) dst[c * row_stride + n] = src[n * VL + c];
}

/* B or C of one slot, steps [t0, t0 + steps), time-major into dst ([steps][NP], padded
 * states 0), `chunk` steps at a time (tmp: 8 * chunk floats). */
static void gather_slot_states(sf_dtype T, const void *states, int64_t state_stride, int N,
                               int64_t t0, int64_t steps, int NP, int chunk, float *dst,
                               float *tmp) {
  memset(dst, 0, sizeof(float) * (size_t)(steps * NP));
  for (int64_t c0 = 0; c0 < steps; c0 += chunk) {
    const int n = (int)(steps - c0 < chunk ? steps - c0 : chunk);
    gather_states_time_major(T, at(states, T, t0 + c0), state_stride, N, n, NP, dst + c0 * NP, tmp);
  }
}

/* ---- forward ------------------------------------------------------------------------- */

static bool fwd_slot_cached(const sf_scan_fwd_args *a) {
  return (a->B_var || a->C_var) && a->seqlen * padded_states(a->dstate) <= FWD_SLOT_STEPS_STATES;
}

static size_t fwd_scratch(const sf_scan_fwd_args *a) {
  const size_t NP = (size_t)padded_states(a->dstate);
  const size_t bc_steps = fwd_slot_cached(a) ? (size_t)a->seqlen : TB;
  return 4 * NP * VL + 2 * VL + 4 * TB * VL + 8 * TB + 2 * bc_steps * NP;
}

/* exp(dt A) = 2^(dt A2), A2 = A log2(e); `le0` when dt A <= 0 for sure. */
ALWAYS_INLINE vf decay_of(vf dt, vf A2, const bool le0) {
  return le0 ? vf_exp2_nonpositive(vf_mul(dt, A2)) : vf_exp2(vf_mul(dt, A2));
}

/* Whether every decay of the block is exp of something <= 0: softplus makes dt >= 0, and
 * A <= 0 (as Mamba's A = -exp(A_log) is); NaN goes through either way. */
static bool decays_le0(const sf_scan_fwd_args *a, const float *A2, int NP) {
  if (!a->delta_softplus) return false;
  for (int i = 0; i < NP * VL; i++)
    if (A2[i] > 0.0f) return false;
  return true;
}

/* SC states from n0 over `steps` steps: h = exp(dt A) h + dt u B, y += C h. A2 (A log2(e),
 * so that the decay is one exp2), Bf, Cf, h are the chunk's lane arrays, Bt and Ct its
 * column of the time-major blocks. */
ALWAYS_INLINE void fwd_chunk(int steps, int NP, const float *A2, float *h, const float *dt,
                             const float *u, float *y, const float *Bt, const float *Bf,
                             const float *Ct, const float *Cf, const bool B_var,
                             const bool C_var, const bool le0, prefetcher *pf) {
  vf hv[SC], Av[SC], Bv[SC], Cv[SC];
  for (int j = 0; j < SC; j++) {
    hv[j] = vf_load(h + j * VL), Av[j] = vf_load(A2 + j * VL);
    Bv[j] = B_var ? vf_zero() : vf_load(Bf + j * VL);
    Cv[j] = C_var ? vf_zero() : vf_load(Cf + j * VL);
  }
  for (int t = 0; t < steps; t++) {
    const vf d = vf_load(dt + t * VL), du = vf_mul(d, vf_load(u + t * VL));
    vf yv = vf_load(y + t * VL);
    for (int j = 0; j < SC; j++) {
      const vf decay = decay_of(d, Av[j], le0);
      const vf Bj = B_var ? vf_bcast(Bt + t * NP + j) : Bv[j];
      hv[j] = vf_fma(decay, hv[j], vf_mul(du, Bj));
      const vf Cj = C_var ? vf_bcast(Ct + t * NP + j) : Cv[j];
      yv = vf_fma(Cj, hv[j], yv);
    }
    vf_store(y + t * VL, yv);
    if (pf) prefetch_some(pf, 2); /* the loop waits on the FMA units; loads are idle */
  }
  for (int j = 0; j < SC; j++) vf_store(h + j * VL, hv[j]);
}

/* v = delta + bias, dt = softplus(v) when asked, in place over `steps` steps. */
static void make_dt(float *dt, const float *bias, int steps, bool softplus) {
  const vf bv = vf_load(bias);
  for (int t = 0; t < steps; t++) {
    vf v = vf_add(vf_load(dt + t * VL), bv);
    vf_store(dt + t * VL, softplus ? vf_softplus(v) : v);
  }
}

ALWAYS_INLINE void fwd_block_impl(const sf_scan_fwd_args *a, int64_t b, int64_t d0, int count,
                                  float *scratch, bool slot_begins, const bool B_var,
                                  const bool C_var) {
  const int N = a->dstate, NP = padded_states(N);
  const sf_dtype T = a->dtype;
  const int64_t L = a->seqlen, interval = sf_scan_args_interval(a);
  const int64_t nsaved = sf_scan_saved_count(L, a->state_interval), row0 = b * a->dim + d0;
  const int64_t block = interval < TB ? interval : TB; /* a saved state at every block end it falls on */
  const int64_t g = (B_var || C_var) ? d0 / (a->dim / a->groups) : 0;
  const bool cached = fwd_slot_cached(a);
  const int64_t bc_steps = cached ? L : TB;

  float *A2 = scratch, *Bf = A2 + NP * VL, *Cf = Bf + NP * VL, *h = Cf + NP * VL;
  float *bias = h + NP * VL, *D = bias + VL, *u = D + VL, *dt = u + TB * VL;
  float *z = dt + TB * VL, *y = z + TB * VL, *tmp = y + TB * VL;
  float *Bt = tmp + 8 * TB, *Ct = Bt + bc_steps * NP; /* [bc_steps][NP] */

  gather_lanes(a->A + d0 * N, N, N, count, NP, A2);
  scale(A2, NP * VL, LOG2E);
  const bool le0 = decays_le0(a, A2, NP);
  if (!B_var) gather_lanes((const float *)a->B + d0 * N, N, N, count, NP, Bf);
  if (!C_var) gather_lanes((const float *)a->C + d0 * N, N, N, count, NP, Cf);
  gather_lanes(a->h0 ? a->h0 + row0 * N : NULL, N, N, count, NP, h);
  for (int c = 0; c < VL; c++) {
    bias[c] = a->delta_bias && c < count ? a->delta_bias[d0 + c] : 0.0f;
    D[c] = a->D && c < count ? a->D[d0 + c] : 0.0f;
  }

  const void *u_rows = at(a->u, T, b * a->u_batch_stride + d0 * a->u_dim_stride);
  const void *delta_rows = at(a->delta, T, b * a->delta_batch_stride + d0 * a->delta_dim_stride);
  const void *z_rows = a->z ? at(a->z, T, b * a->z_batch_stride + d0 * a->z_dim_stride) : NULL;
  void *out_rows = (char *)a->out + (b * a->out_batch_stride + d0 * a->out_dim_stride) * sf_dtype_size(T);
  const void *B_states = B_var ? at(a->B, T, b * a->B_batch_stride + g * a->B_group_stride) : NULL;
  const void *C_states = C_var ? at(a->C, T, b * a->C_batch_stride + g * a->C_group_stride) : NULL;
  if (cached && slot_begins) {
    if (B_var) gather_slot_states(T, B_states, a->B_state_stride, N, 0, L, NP, TB, Bt, tmp);
    if (C_var) gather_slot_states(T, C_states, a->C_state_stride, N, 0, L, NP, TB, Ct, tmp);
  }

  for (int64_t t0 = 0; t0 < L; t0 += block) {
    const int steps = (int)(L - t0 < block ? L - t0 : block);
    gather_rows(T, at(u_rows, T, t0), a->u_dim_stride, count, steps, u, tmp);
    gather_rows(T, at(delta_rows, T, t0), a->delta_dim_stride, count, steps, dt, tmp);
    if (z_rows) gather_rows(T, at(z_rows, T, t0), a->z_dim_stride, count, steps, z, tmp);
    const int64_t bc0 = cached ? t0 : 0; /* this block's first step in Bt and Ct */
    if (B_var && !cached) gather_slot_states(T, B_states, a->B_state_stride, N, t0, steps, NP, TB, Bt, tmp);
    if (C_var && !cached) gather_slot_states(T, C_states, a->C_state_stride, N, t0, steps, NP, TB, Ct, tmp);
    /* Meanwhile this time block's out rows, written at its end, and the next time block's
     * input rows, or after the last the next block's first. */
    prefetcher pf = {.rows = 0};
    prefetch_add_for_write(&pf, T, out_rows, a->out_dim_stride, count, t0, steps);
    if (t0 + block < L) {
      const int64_t next = L - t0 - block < block ? L - t0 - block : block;
      prefetch_add(&pf, T, u_rows, a->u_dim_stride, count, t0 + block, next);
      prefetch_add(&pf, T, delta_rows, a->delta_dim_stride, count, t0 + block, next);
      if (z_rows) prefetch_add(&pf, T, z_rows, a->z_dim_stride, count, t0 + block, next);
    } else {
      const int64_t next = row0 + count, n = L < TB ? L : TB;
      prefetch_add_activation(&pf, T, a->u, a->u_batch_stride, a->u_dim_stride, a, next, VL, 0, n);
      prefetch_add_activation(&pf, T, a->delta, a->delta_batch_stride, a->delta_dim_stride, a, next, VL, 0, n);
      if (z_rows) prefetch_add_activation(&pf, T, a->z, a->z_batch_stride, a->z_dim_stride, a, next, VL, 0, n);
    }
    make_dt(dt, bias, steps, a->delta_softplus);

    for (int t = 0; t < steps; t++) vf_store(y + t * VL, vf_zero());
    for (int n0 = 0; n0 < NP; n0 += SC) {
      const float *Bc = Bt + bc0 * NP + n0, *Cc = Ct + bc0 * NP + n0;
      prefetcher *chunk_pf = n0 == 0 ? &pf : NULL;
      if (le0) /* two copies of the loop: with and without the upper clamp */
        fwd_chunk(steps, NP, A2 + n0 * VL, h + n0 * VL, dt, u, y, Bc, Bf + n0 * VL, Cc,
                  Cf + n0 * VL, B_var, C_var, true, chunk_pf);
      else
        fwd_chunk(steps, NP, A2 + n0 * VL, h + n0 * VL, dt, u, y, Bc, Bf + n0 * VL, Cc,
                  Cf + n0 * VL, B_var, C_var, false, chunk_pf);
    }
    prefetch_some(&pf, -1);

    const vf Dv = vf_load(D);
    for (int t = 0; t < steps; t++) {
      vf yv = vf_fma(Dv, vf_load(u + t * VL), vf_load(y + t * VL));
      if (z_rows) { /* y * silu(z) */
        const vf zv = vf_load(z + t * VL);
        yv = vf_mul(yv, vf_mul(zv, vf_sigmoid(zv)));
      }
      vf_store(y + t * VL, yv);
    }
    scatter_rows(T, (char *)out_rows + t0 * sf_dtype_size(T), a->out_dim_stride, count, steps, y, tmp);

    /* Saved state k is the state after step min((k + 1) * interval, L) - 1. */
    const int64_t end = t0 + steps;
    if (a->saved_states && (end % interval == 0 || end == L))
      scatter_lanes(h, N, count, nsaved * N, a->saved_states + (row0 * nsaved + (end - 1) / interval) * N);
  }
  if (a->last_state) scatter_lanes(h, N, count, N, a->last_state + row0 * N);
}

/* One copy of the block loop per (B variable, C variable): the flags are constants inside. */
static void fwd_block(const sf_scan_fwd_args *a, int64_t b, int64_t d0, int count,
                      float *scratch, bool slot_begins) {
  if (a->B_var && a->C_var)
    fwd_block_impl(a, b, d0, count, scratch, slot_begins, true, true);
  else if (a->B_var)
    fwd_block_impl(a, b, d0, count, scratch, slot_begins, true, false);
  else if (a->C_var)
    fwd_block_impl(a, b, d0, count, scratch, slot_begins, false, true);
  else
    fwd_block_impl(a, b, d0, count, scratch, slot_begins, false, false);
}

/* ---- backward ------------------------------------------------------------------------ */

/* Steps per backward segment: its states and decays, (S + 1) * NP * VL * 2 floats, stay
 * within SEG_FLOATS, so that they are in the core's L2 during the reverse scan. */
static int64_t segment_steps(const sf_scan_fwd_args *a) {
  const int64_t W = sf_scan_state_interval(a->seqlen);
  int64_t S = SEG_FLOATS / ((int64_t)padded_states(a->dstate) * VL * 2);
  if (S < 1) S = 1;
  return S < W ? S : W;
}

static bool bwd_slot_cached(const sf_scan_fwd_args *a) {
  return (a->B_var || a->C_var) && a->seqlen * padded_states(a->dstate) <= BWD_SLOT_STEPS_STATES;
}

/* Per-step lane arrays of an interval: u, dt, d dt / d delta, z, g (dout, then the gated
 * gradient), y, dz, sum dh B (then du), sum dh A a h (then ddelta). */
enum { S_U, S_DT, S_DTDV, S_Z, S_G, S_Y, S_DZ, S_DHB, S_DDTA, STEP_ARRAYS };

/* The backward's scratch: sizes, then the pointers carved from it in this order. */
typedef struct bwd_layout {
  int64_t W, S, segments, bc_steps, acc_steps;
  size_t floats;
} bwd_layout;

static bwd_layout bwd_layout_of(const sf_scan_fwd_args *a) {
  bwd_layout k;
  const int64_t NP = padded_states(a->dstate);
  const bool cached = bwd_slot_cached(a);
  k.W = sf_scan_state_interval(a->seqlen), k.S = segment_steps(a);
  k.segments = (k.W + k.S - 1) / k.S;
  k.bc_steps = cached ? a->seqlen : k.W;   /* time-major B and C */
  k.acc_steps = cached ? a->seqlen : k.S; /* per-lane dB and dC */
  k.floats = (size_t)(8 * NP * VL + 4 * VL + STEP_ARRAYS * k.W * VL + 2 * k.W * NP + 8 * k.W +
                      k.segments * NP * VL + (2 * k.S + 1) * NP * VL + 2 * k.bc_steps * NP +
                      2 * k.acc_steps * NP * VL);
  return k;
}

static size_t bwd_scratch(const sf_scan_fwd_args *a) { return bwd_layout_of(a).floats; }

/* The forward again over steps [tb, tb + tl) of the interval for SC states, from h_in to
 * h_out (unless NULL); with `keep` the states before and after each step go to hs
 * ([t][NP][VL], t = 0 is the start) and the decays to as, and with `gate` y += C h as well. */
ALWAYS_INLINE void recompute_chunk(int tb, int tl, int NP, const float *A2, const float *h_in,
                                   float *h_out, const float *dt, const float *u, float *y,
                                   const float *Bt, const float *Bf, const float *Ct,
                                   const float *Cf, float *hs, float *as, const bool B_var,
                                   const bool C_var, const bool keep, const bool gate,
                                   const bool le0, prefetcher *pf) {
  vf hv[SC], Av[SC], Bv[SC], Cv[SC];
  for (int j = 0; j < SC; j++) {
    hv[j] = vf_load(h_in + j * VL), Av[j] = vf_load(A2 + j * VL);
    Bv[j] = B_var ? vf_zero() : vf_load(Bf + j * VL);
    Cv[j] = C_var ? vf_zero() : vf_load(Cf + j * VL);
    if (keep) vf_store(hs + j * VL, hv[j]);
  }
  for (int t = 0; t < tl; t++) {
    const int ti = tb + t;
    const vf d = vf_load(dt + ti * VL), du = vf_mul(d, vf_load(u + ti * VL));
    vf yv = keep && gate ? vf_load(y + ti * VL) : vf_zero();
    for (int j = 0; j < SC; j++) {
      const vf decay = decay_of(d, Av[j], le0);
      const vf Bj = B_var ? vf_bcast(Bt + ti * NP + j) : Bv[j];
      hv[j] = vf_fma(decay, hv[j], vf_mul(du, Bj));
      if (keep) {
        vf_store(as + (t * NP + j) * VL, decay);
        vf_store(hs + ((t + 1) * NP + j) * VL, hv[j]);
      }
      if (keep && gate) yv = vf_fma(C_var ? vf_bcast(Ct + ti * NP + j) : Cv[j], hv[j], yv);
    }
    if (keep && gate) vf_store(y + ti * VL, yv);
    if (pf) prefetch_some(pf, 4); /* the loop waits on the FMA units; loads are idle */
  }
  if (h_out)
    for (int j = 0; j < SC; j++) vf_store(h_out + j * VL, hv[j]);
}

/* The reverse scan over steps [tb, tb + tl) for SCB states from n0 (every pointer is the
 * chunk's): dh = C g + carry, carry = a dh, and what each gradient takes of dh. dB and dC
 * of variable B and C are added per lane to accB, accC ([t][NP][VL], t from tb); those of
 * fixed ones summed over time into dBf, dCf. */
ALWAYS_INLINE void reverse_chunk(int tb, int tl, int NP, const float *A, const float *Bt,
                                 const float *Bf, const float *Ct, const float *Cf,
                                 const float *hs, const float *as, float *carry, float *dA,
                                 float *dBf, float *dCf, float *accB, float *accC,
                                 float *const *s, const bool B_var, const bool C_var) {
  vf cv[SCB], dAv[SCB], Av[SCB], Bv[SCB], Cv[SCB], dBv[SCB], dCv[SCB], hv[SCB];
  for (int j = 0; j < SCB; j++) {
    hv[j] = vf_load(hs + (tl * NP + j) * VL); /* the state after the last step */
    cv[j] = vf_load(carry + j * VL), dAv[j] = vf_load(dA + j * VL), Av[j] = vf_load(A + j * VL);
    Bv[j] = B_var ? vf_zero() : vf_load(Bf + j * VL);
    Cv[j] = C_var ? vf_zero() : vf_load(Cf + j * VL);
    dBv[j] = B_var ? vf_zero() : vf_load(dBf + j * VL);
    dCv[j] = C_var ? vf_zero() : vf_load(dCf + j * VL);
  }
  for (int t = tl - 1; t >= 0; t--) {
    const int ti = tb + t;
    const vf gy = vf_load(s[S_G] + ti * VL), d = vf_load(s[S_DT] + ti * VL);
    const vf du = vf_mul(d, vf_load(s[S_U] + ti * VL));
    vf sum_dhB = vf_zero(), sum_dhAw = vf_zero();
    for (int j = 0; j < SCB; j++) {
      const vf decay = vf_load(as + (t * NP + j) * VL);
      const vf h_prev = vf_load(hs + (t * NP + j) * VL), h = hv[j];
      hv[j] = h_prev;
      const vf Bj = B_var ? vf_bcast(Bt + ti * NP + j) : Bv[j];
      const vf Cj = C_var ? vf_bcast(Ct + ti * NP + j) : Cv[j];
      const vf dh = vf_fma(Cj, gy, cv[j]);
      sum_dhB = vf_fma(dh, Bj, sum_dhB);
      const vf q = vf_mul(dh, vf_mul(decay, h_prev)); /* dh a h[t-1] */
      sum_dhAw = vf_fma(Av[j], q, sum_dhAw);
      dAv[j] = vf_fma(d, q, dAv[j]);
      cv[j] = vf_mul(decay, dh);
      if (B_var) {
        float *acc = accB + (t * NP + j) * VL;
        vf_store(acc, vf_fma(dh, du, vf_load(acc)));
      } else {
        dBv[j] = vf_fma(dh, du, dBv[j]);
      }
      if (C_var) {
        float *acc = accC + (t * NP + j) * VL;
        vf_store(acc, vf_fma(gy, h, vf_load(acc)));
      } else {
        dCv[j] = vf_fma(gy, h, dCv[j]);
      }
    }
    vf_store(s[S_DHB] + ti * VL, vf_add(vf_load(s[S_DHB] + ti * VL), sum_dhB));
    vf_store(s[S_DDTA] + ti * VL, vf_add(vf_load(s[S_DDTA] + ti * VL), sum_dhAw));
  }
  for (int j = 0; j < SCB; j++) {
    vf_store(carry + j * VL, cv[j]), vf_store(dA + j * VL, dAv[j]);
    if (!B_var) vf_store(dBf + j * VL, dBv[j]);
    if (!C_var) vf_store(dCf + j * VL, dCv[j]);
  }
}

/* dst[n * L + t] += src[t * NP + n]: a time-major block into a (N, L) gradient, eight
 * states at a time transposed into tmp (8 * steps). */
static void add_time_major(const float *src, int NP, int N, int steps, int64_t L, float *dst,
                           float *tmp) {
  for (int n0 = 0; n0 < N; n0 += 8) {
    const int rows = N - n0 < 8 ? N - n0 : 8;
    transpose(src + n0, NP, steps, rows, tmp, steps);
    for (int i = 0; i < rows; i++) {
      float *d = dst + (n0 + i) * L;
      const float *x = tmp + i * steps;
      for (int t = 0; t < steps; t++) d[t] += x[t];
    }
  }
}

/* dst[t * NP + n] = the sum of acc[t][n]'s lanes, t < steps; acc is zeroed after. */
static void sum_lanes(float *acc, int steps, int NP, float *dst) {
  for (int t = 0; t < steps; t++)
    for (int n = 0; n < NP; n += 4) {
      float *x = acc + (t * NP + n) * VL;
      vf_lane_sums4(vf_load(x), vf_load(x + VL), vf_load(x + 2 * VL), vf_load(x + 3 * VL),
                    dst + t * NP + n);
    }
  memset(acc, 0, sizeof(float) * (size_t)steps * NP * VL);
}

/* Per-lane sums acc ([t][NP][VL], steps [t0, t0 + steps) of the sequence) summed over the
 * lanes and added into a slot's (N, L) gradient, W steps at a time through sums ([W][NP]). */
static void flush_lanes(float *acc, int64_t t0, int64_t steps, int NP, int N, int64_t L,
                        int64_t W, float *sums, float *tmp, float *dst) {
  for (int64_t c0 = 0; c0 < steps; c0 += W) {
    const int n = (int)(steps - c0 < W ? steps - c0 : W);
    sum_lanes(acc + c0 * NP * VL, n, NP, sums);
    add_time_major(sums, NP, N, n, L, dst + t0 + c0, tmp);
  }
}

ALWAYS_INLINE void bwd_block_impl(const sf_scan_bwd_args *g, const sf_cpu_bwd_sink *sink,
                                  int64_t b, int64_t d0, int count, float *scratch,
                                  bool slot_begins, bool slot_ends, const bool B_var,
                                  const bool C_var, const bool gate) {
  const sf_scan_fwd_args *a = &g->fwd;
  const int N = a->dstate, NP = padded_states(N);
  const sf_dtype T = a->dtype;
  const int64_t L = a->seqlen, row0 = b * a->dim + d0;
  const bwd_layout k = bwd_layout_of(a);
  const int64_t W = k.W, S = k.S;
  /* intervals of W steps; the forward saved a state every `every` steps, W / every a interval */
  const int64_t intervals = sf_scan_saved_states(L), nsaved = sf_scan_saved_count(L, a->state_interval);
  const int64_t per = W / sf_scan_args_interval(a);
  const bool cached = bwd_slot_cached(a);
  const int64_t grp = (B_var || C_var) ? d0 / (a->dim / a->groups) : 0;
  const int64_t slot = b * a->groups + grp - sink->slot_first;

  float *A = scratch, *A2 = A + NP * VL, *Bf = A2 + NP * VL, *Cf = Bf + NP * VL;
  float *carry = Cf + NP * VL, *dA = carry + NP * VL, *dBf = dA + NP * VL, *dCf = dBf + NP * VL;
  float *bias = dCf + NP * VL, *D = bias + VL, *dD = D + VL, *dbias = dD + VL;
  float *s[STEP_ARRAYS];
  s[0] = dbias + VL;
  for (int i = 1; i < STEP_ARRAYS; i++) s[i] = s[i - 1] + W * VL;
  float *dBt = s[STEP_ARRAYS - 1] + W * VL, *dCt = dBt + W * NP, *tmp = dCt + W * NP;
  float *hk = tmp + 8 * W, *hs = hk + k.segments * NP * VL, *as = hs + (S + 1) * NP * VL;
  float *Bt = as + S * NP * VL, *Ct = Bt + k.bc_steps * NP;        /* [bc_steps][NP] */
  float *accB = Ct + k.bc_steps * NP, *accC = accB + k.acc_steps * NP * VL; /* [acc_steps][NP][VL] */

  gather_lanes(a->A + d0 * N, N, N, count, NP, A);
  memcpy(A2, A, sizeof(float) * NP * VL);
  scale(A2, NP * VL, LOG2E);
  const bool le0 = decays_le0(a, A2, NP);
  if (!B_var) gather_lanes((const float *)a->B + d0 * N, N, N, count, NP, Bf);
  if (!C_var) gather_lanes((const float *)a->C + d0 * N, N, N, count, NP, Cf);
  gather_lanes(g->d_last_state ? g->d_last_state + row0 * N : NULL, N, N, count, NP, carry);
  memset(dA, 0, sizeof(float) * 3 * NP * VL); /* dA, dBf, dCf */
  for (int c = 0; c < VL; c++) {
    bias[c] = a->delta_bias && c < count ? a->delta_bias[d0 + c] : 0.0f;
    D[c] = a->D && c < count ? a->D[d0 + c] : 0.0f;
    dD[c] = dbias[c] = 0.0f;
  }

  const size_t es = sf_dtype_size(T);
  const void *u_rows = at(a->u, T, b * a->u_batch_stride + d0 * a->u_dim_stride);
  const void *delta_rows = at(a->delta, T, b * a->delta_batch_stride + d0 * a->delta_dim_stride);
  const void *z_rows = gate ? at(a->z, T, b * a->z_batch_stride + d0 * a->z_dim_stride) : NULL;
  const void *dout_rows = at(g->dout, T, b * g->dout_batch_stride + d0 * g->dout_dim_stride);
  const void *B_states = B_var ? at(a->B, T, b * a->B_batch_stride + grp * a->B_group_stride) : NULL;
  const void *C_states = C_var ? at(a->C, T, b * a->C_batch_stride + grp * a->C_group_stride) : NULL;
  const vf one = vf_set(1.0f);
  if (slot_begins || !cached) { /* per-lane sums start from 0 (sum_lanes re-zeroes them) */
    memset(accB, 0, sizeof(float) * 2 * (size_t)(k.acc_steps * NP * VL));
  }
  if (cached && slot_begins) {
    if (B_var) gather_slot_states(T, B_states, a->B_state_stride, N, 0, L, NP, (int)W, Bt, tmp);
    if (C_var) gather_slot_states(T, C_states, a->C_state_stride, N, 0, L, NP, (int)W, Ct, tmp);
  }

  for (int64_t kk = intervals - 1; kk >= 0; kk--) {
    const int64_t t0 = kk * W;
    const int steps = (int)(L - t0 < W ? L - t0 : W);
    gather_rows(T, at(u_rows, T, t0), a->u_dim_stride, count, steps, s[S_U], tmp);
    gather_rows(T, at(delta_rows, T, t0), a->delta_dim_stride, count, steps, s[S_DT], tmp);
    gather_rows(T, at(dout_rows, T, t0), g->dout_dim_stride, count, steps, s[S_G], tmp);
    if (gate) gather_rows(T, at(z_rows, T, t0), a->z_dim_stride, count, steps, s[S_Z], tmp);
    const int64_t bc0 = cached ? t0 : 0; /* the interval's first step in Bt and Ct */
    if (B_var && !cached) gather_slot_states(T, B_states, a->B_state_stride, N, t0, steps, NP, (int)W, Bt, tmp);
    if (C_var && !cached) gather_slot_states(T, C_states, a->C_state_stride, N, t0, steps, NP, (int)W, Ct, tmp);
    prefetcher pf = {.rows = 0};
    /* This interval's du and ddelta, written at its end. */
    if (g->du) prefetch_add_for_write(&pf, T, at(g->du, T, b * g->du_batch_stride + d0 * g->du_dim_stride), g->du_dim_stride, count, t0, steps);
    if (g->ddelta) prefetch_add_for_write(&pf, T, at(g->ddelta, T, b * g->ddelta_batch_stride + d0 * g->ddelta_dim_stride), g->ddelta_dim_stride, count, t0, steps);
    if (kk == 0) { /* the next block starts with its last interval */
      const int64_t next = row0 + count, from = (intervals - 1) * W;
      prefetch_add_activation(&pf, T, a->u, a->u_batch_stride, a->u_dim_stride, a, next, VL, from, L - from);
      prefetch_add_activation(&pf, T, a->delta, a->delta_batch_stride, a->delta_dim_stride, a, next, VL, from, L - from);
      prefetch_add_activation(&pf, T, g->dout, g->dout_batch_stride, g->dout_dim_stride, a, next, VL, from, L - from);
      if (gate) prefetch_add_activation(&pf, T, a->z, a->z_batch_stride, a->z_dim_stride, a, next, VL, from, L - from);
    }
    const vf bv = vf_load(bias);
    for (int t = 0; t < steps; t++) {
      const vf v = vf_add(vf_load(s[S_DT] + t * VL), bv);
      vf dt = v, dtdv = one;
      if (a->delta_softplus) /* d softplus(v) / dv = sigmoid(v), 1 above 20 */
        dt = vf_softplus_sigmoid(v, &dtdv), dtdv = vf_select_gt(v, 20.0f, one, dtdv);
      vf_store(s[S_DT] + t * VL, dt), vf_store(s[S_DTDV] + t * VL, dtdv);
    }

    /* The interval's start: the state saved after the interval before, or h0. Then, when
     * it has several segments, a forward pass for the state at each segment's start. */
    const float *start = kk > 0 ? a->saved_states + (row0 * nsaved + kk * per - 1) * N
                                : (a->h0 ? a->h0 + row0 * N : NULL);
    gather_lanes(start, kk > 0 ? nsaved * N : N, N, count, NP, hk);
    const float *Bk = Bt + bc0 * NP, *Ck = Ct + bc0 * NP;
    const int segments = (int)((steps + S - 1) / S);
    for (int n0 = 0; n0 < NP; n0 += SC)
      for (int sg = 0; sg + 1 < segments; sg++) {
        const float *h_in = hk + (sg * NP + n0) * VL;
        float *h_out = hk + ((sg + 1) * NP + n0) * VL;
        if (le0)
          recompute_chunk((int)(sg * S), (int)S, NP, A2 + n0 * VL, h_in, h_out, s[S_DT], s[S_U],
                          NULL, Bk + n0, Bf + n0 * VL, Ck + n0, Cf + n0 * VL, NULL, NULL, B_var,
                          C_var, false, false, true, NULL);
        else
          recompute_chunk((int)(sg * S), (int)S, NP, A2 + n0 * VL, h_in, h_out, s[S_DT], s[S_U],
                          NULL, Bk + n0, Bf + n0 * VL, Ck + n0, Cf + n0 * VL, NULL, NULL, B_var,
                          C_var, false, false, false, NULL);
      }

    for (int sg = segments - 1; sg >= 0; sg--) {
      const int tb = (int)(sg * S), tl = (int)(steps - tb < S ? steps - tb : S);
      if (gate)
        for (int t = tb; t < tb + tl; t++) vf_store(s[S_Y] + t * VL, vf_zero());
      for (int n0 = 0; n0 < NP; n0 += SC) {
        /* The first pass over the interval's last segment issues the prefetches. */
        prefetcher *chunk_pf = n0 == 0 && sg == segments - 1 ? &pf : NULL;
        if (le0) /* two copies of the loop, as in the forward */
          recompute_chunk(tb, tl, NP, A2 + n0 * VL, hk + (sg * NP + n0) * VL, NULL, s[S_DT],
                          s[S_U], s[S_Y], Bk + n0, Bf + n0 * VL, Ck + n0, Cf + n0 * VL,
                          hs + n0 * VL, as + n0 * VL, B_var, C_var, true, gate, true, chunk_pf);
        else
          recompute_chunk(tb, tl, NP, A2 + n0 * VL, hk + (sg * NP + n0) * VL, NULL, s[S_DT],
                          s[S_U], s[S_Y], Bk + n0, Bf + n0 * VL, Ck + n0, Cf + n0 * VL,
                          hs + n0 * VL, as + n0 * VL, B_var, C_var, true, gate, false, chunk_pf);
      }
      prefetch_some(&pf, -1); /* what is left, if the segment was short */
      const vf Dv = vf_load(D);
      for (int t = tb; t < tb + tl; t++) {
        if (gate) { /* g = dout silu(z); dz = dout y s (1 + z (1 - s)) */
          const vf dout = vf_load(s[S_G] + t * VL), zv = vf_load(s[S_Z] + t * VL);
          const vf sz = vf_sigmoid(zv);
          const vf y = vf_fma(Dv, vf_load(s[S_U] + t * VL), vf_load(s[S_Y] + t * VL));
          const vf dz = vf_mul(vf_mul(vf_mul(dout, y), sz), vf_fma(zv, vf_sub(one, sz), one));
          vf_store(s[S_DZ] + t * VL, dz);
          vf_store(s[S_G] + t * VL, vf_mul(vf_mul(dout, zv), sz));
        }
        vf_store(s[S_DHB] + t * VL, vf_zero()), vf_store(s[S_DDTA] + t * VL, vf_zero());
      }
      /* Per-lane dB, dC of this segment: at its steps in the slot's sums, or from 0. */
      float *aB = cached ? accB + (t0 + tb) * NP * VL : accB;
      float *aC = cached ? accC + (t0 + tb) * NP * VL : accC;
      for (int n0 = 0; n0 < NP; n0 += SCB)
        reverse_chunk(tb, tl, NP, A + n0 * VL, Bk + n0, Bf + n0 * VL, Ck + n0, Cf + n0 * VL,
                      hs + n0 * VL, as + n0 * VL, carry + n0 * VL, dA + n0 * VL, dBf + n0 * VL,
                      dCf + n0 * VL, aB + n0 * VL, aC + n0 * VL, s, B_var, C_var);
      if (!cached) { /* summed over the lanes now, per segment */
        if (B_var) sum_lanes(accB, tl, NP, dBt + tb * NP);
        if (C_var) sum_lanes(accC, tl, NP, dCt + tb * NP);
      }
      /* du = dt sum dh B + D g; ddt = u sum dh B + sum dh A a h; ddelta = ddt dt'(v). */
      vf dDv = vf_load(dD), dbv = vf_load(dbias);
      for (int t = tb + tl - 1; t >= tb; t--) {
        const vf gy = vf_load(s[S_G] + t * VL), uv = vf_load(s[S_U] + t * VL);
        const vf dhB = vf_load(s[S_DHB] + t * VL);
        const vf ddelta = vf_mul(vf_fma(uv, dhB, vf_load(s[S_DDTA] + t * VL)), vf_load(s[S_DTDV] + t * VL));
        vf_store(s[S_DHB] + t * VL, vf_fma(vf_load(s[S_DT] + t * VL), dhB, vf_mul(Dv, gy)));
        vf_store(s[S_DDTA] + t * VL, ddelta);
        dDv = vf_fma(gy, uv, dDv);
        dbv = vf_add(dbv, ddelta);
      }
      vf_store(dD, dDv), vf_store(dbias, dbv);
    }

    if (g->du)
      scatter_rows(T, (char *)g->du + (b * g->du_batch_stride + d0 * g->du_dim_stride + t0) * es,
                   g->du_dim_stride, count, steps, s[S_DHB], tmp);
    if (g->ddelta)
      scatter_rows(T, (char *)g->ddelta + (b * g->ddelta_batch_stride + d0 * g->ddelta_dim_stride + t0) * es,
                   g->ddelta_dim_stride, count, steps, s[S_DDTA], tmp);
    if (g->dz)
      scatter_rows(T, (char *)g->dz + (b * g->dz_batch_stride + d0 * g->dz_dim_stride + t0) * es,
                   g->dz_dim_stride, count, steps, s[S_DZ], tmp);
    if (!cached && B_var && sink->dB_var) add_time_major(dBt, NP, N, steps, L, sink->dB_var + slot * N * L + t0, tmp);
    if (!cached && C_var && sink->dC_var) add_time_major(dCt, NP, N, steps, L, sink->dC_var + slot * N * L + t0, tmp);
  }
  /* The slot's last block here: its per-lane sums, summed over the lanes, go to the sink. */
  if (cached && slot_ends) {
    if (B_var && sink->dB_var) flush_lanes(accB, 0, L, NP, N, L, W, dBt, tmp, sink->dB_var + slot * N * L);
    if (C_var && sink->dC_var) flush_lanes(accC, 0, L, NP, N, L, W, dCt, tmp, sink->dC_var + slot * N * L);
  }

  /* After step 0 the carry is a[0] dh[0], the gradient of the initial state. */
  if (g->dh0) scatter_lanes(carry, N, count, N, g->dh0 + row0 * N);
  for (int c = 0; c < count; c++) {
    const int64_t chan = (d0 + c - sink->chan_first + a->dim) % a->dim;
    for (int n = 0; n < N; n++) {
      if (sink->dA) sink->dA[chan * N + n] += dA[n * VL + c];
      if (sink->dB_fixed) sink->dB_fixed[chan * N + n] += dBf[n * VL + c];
      if (sink->dC_fixed) sink->dC_fixed[chan * N + n] += dCf[n * VL + c];
    }
    if (sink->dD) sink->dD[chan] += dD[c];
    if (sink->ddelta_bias) sink->ddelta_bias[chan] += dbias[c];
  }
}

static void bwd_block(const sf_scan_bwd_args *g, const sf_cpu_bwd_sink *sink, int64_t b,
                      int64_t d0, int count, float *scratch, bool slot_begins, bool slot_ends) {
  const bool B_var = g->fwd.B_var, C_var = g->fwd.C_var, gate = g->fwd.z != NULL;
#define BWD_CASE(bv, cv, zv)                                                                   \
  if (B_var == bv && C_var == cv && gate == zv) {                                              \
    bwd_block_impl(g, sink, b, d0, count, scratch, slot_begins, slot_ends, bv, cv, zv);        \
    return;                                                                                    \
  }
  BWD_CASE(true, true, false);
  BWD_CASE(true, true, true);
  BWD_CASE(true, false, false);
  BWD_CASE(true, false, true);
  BWD_CASE(false, true, false);
  BWD_CASE(false, true, true);
  BWD_CASE(false, false, false);
  BWD_CASE(false, false, true);
#undef BWD_CASE
}

const sf_cpu_kernels SF_CPU_KERNELS = {
    .name = SF_CPU_KERNELS_LABEL,
    .lanes = VL,
    .fwd_scratch = fwd_scratch,
    .bwd_scratch = bwd_scratch,
    .fwd_block = fwd_block,
    .bwd_block = bwd_block,
};
