/* cpu_scan_bwd.c: the backward selective scan on the CPU: per state interval, the forward
 * again from its saved state, then the reverse scan; reductions in per-thread buffers. */
#include "runtime/cpu_scan_bwd.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/error.h"
#include "runtime/half.h"
#include "runtime/scan_args.h"
#include "runtime/scan_bwd_args.h"

enum { MAX_THREADS = 1024, MAX_N = 256 };

/* The reductions a thread keeps to itself: per channel (dA, fixed dB and dC: N wide; dD,
 * ddelta_bias: 1 wide) or per (batch, group) slot (variable dB and dC: N * L wide). */
enum { P_DA, P_DB_FIXED, P_DC_FIXED, P_DD, P_DDELTA_BIAS, P_DB_VAR, P_DC_VAR, PRIVATE };

/* One thread's rows and its private share of the reductions. A thread's rows
 * [row_begin, row_end) meet at most min(rows, dim) channels, consecutive modulo dim from
 * the first row's channel, and a consecutive range of (batch, group) slots: its buffers
 * cover only those, so they cost about one copy of each reduced gradient in all. */
typedef struct bwd_job {
  const sf_scan_bwd_args *a; /* resolved strides */
  int64_t row_begin, row_end; /* row = b * dim + d */
  float *scratch;             /* scratch_floats() floats of its own */

  int64_t chan_first, chan_count; /* local channel c is (chan_first + c) % dim */
  int64_t slot_first, slot_count; /* local slot s is b * G + g = slot_first + s */
  float *own[PRIVATE]; /* zeroed, NULL when that gradient was not asked for */
  float *memory;       /* the one allocation they point into */
} bwd_job;

/* Per interval of W steps: states h[-1..W-1] and decays (N each), B, C and their
 * gradients time-major (N each), and eight per-step arrays. */
static size_t scratch_floats(int64_t W, int N) {
  return ((size_t)W + 1) * (size_t)N + 5 * (size_t)W * (size_t)N + 8 * (size_t)W;
}

static const void *element_at(const void *base, sf_dtype dtype, int64_t offset) {
  return (const char *)base + offset * sf_dtype_size(dtype);
}

static float load_element(sf_dtype dtype, const void *base, int64_t i) {
  switch (dtype) {
    case SF_FP16: return sf_half_to_float(((const uint16_t *)base)[i]);
    case SF_BF16: return sf_bf16_to_float(((const uint16_t *)base)[i]);
    default: return ((const float *)base)[i];
  }
}

/* dst[t * N + n] = src[n * state_stride + t]: the N values of one step side by side. */
static void load_transposed(sf_dtype dtype, const void *src, int64_t state_stride, int N,
                            int steps, float *dst) {
  for (int n = 0; n < N; n++) {
    const void *row = element_at(src, dtype, n * state_stride);
    for (int t = 0; t < steps; t++) dst[t * N + n] = load_element(dtype, row, t);
  }
}

/* dst[n * L + t] += src[t * N + n]: a time-major block into a (N, L) gradient. */
static void add_transposed(const float *src, int N, int steps, int64_t L, float *dst) {
  for (int n = 0; n < N; n++)
    for (int t = 0; t < steps; t++) dst[n * L + t] += src[t * N + n];
}

/* Eight partial sums in a fixed order: vectorisable, and independent of the thread count. */
static float dot(const float *x, const float *y, int N) {
  float lanes[8] = {0};
  int n = 0;
  for (; n + 8 <= N; n += 8)
    for (int k = 0; k < 8; k++) lanes[k] += x[n + k] * y[n + k];
  float sum = 0.0f;
  for (; n < N; n++) sum += x[n] * y[n];
  for (int k = 0; k < 8; k++) sum += lanes[k];
  return sum;
}

static float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

/* One (batch, channel) row, every interval from the last to the first. */
static void row_backward(const bwd_job *job, int64_t row) {
  const sf_scan_bwd_args *g = job->a;
  const sf_scan_fwd_args *a = &g->fwd;
  const int N = a->dstate;
  const sf_dtype T = a->dtype;
  const int es = sf_dtype_size(T);
  const int64_t b = row / a->dim, d = row % a->dim, L = a->seqlen;
  const int64_t W = sf_scan_state_interval(L), nsaved = sf_scan_saved_states(L);
  /* groups divides dim whenever B or C is variable (validated); only then is grp used. */
  const int64_t grp = (a->B_var || a->C_var) ? d / (a->dim / a->groups) : 0;
  const int64_t slot = b * a->groups + grp - job->slot_first;
  const int64_t chan = (d - job->chan_first + a->dim) % a->dim;

  float *hs = job->scratch, *decay = hs + (W + 1) * N;
  float *B_blk = decay + W * N, *C_blk = B_blk + W * N;
  float *dB_blk = C_blk + W * N, *dC_blk = dB_blk + W * N;
  float *u_s = dC_blk + W * N, *dt_s = u_s + W, *dtdv_s = dt_s + W, *z_s = dtdv_s + W;
  float *dout_s = z_s + W, *du_s = dout_s + W, *ddelta_s = du_s + W, *dz_s = ddelta_s + W;

  const float *A = a->A + d * N;
  const float D = a->D ? a->D[d] : 0.0f;
  const float bias = a->delta_bias ? a->delta_bias[d] : 0.0f;
  const void *u = element_at(a->u, T, b * a->u_batch_stride + d * a->u_dim_stride);
  const void *delta = element_at(a->delta, T, b * a->delta_batch_stride + d * a->delta_dim_stride);
  const void *z = a->z ? element_at(a->z, T, b * a->z_batch_stride + d * a->z_dim_stride) : NULL;
  const void *dout = element_at(g->dout, T, b * g->dout_batch_stride + d * g->dout_dim_stride);
  const void *B_var = a->B_var ? element_at(a->B, T, b * a->B_batch_stride + grp * a->B_group_stride)
                               : NULL;
  const void *C_var = a->C_var ? element_at(a->C, T, b * a->C_batch_stride + grp * a->C_group_stride)
                               : NULL;
  /* A fixed B or C is one (N,) row for every step: a step of 0 reuses it. */
  const float *B_fixed = a->B_var ? NULL : (const float *)a->B + d * N;
  const float *C_fixed = a->C_var ? NULL : (const float *)a->C + d * N;
  const int B_step = a->B_var ? N : 0, C_step = a->C_var ? N : 0;

  float *const *own = job->own;
  float *dA = own[P_DA] ? own[P_DA] + chan * N : NULL;
  float *dB_fixed = own[P_DB_FIXED] ? own[P_DB_FIXED] + chan * N : NULL;
  float *dC_fixed = own[P_DC_FIXED] ? own[P_DC_FIXED] + chan * N : NULL;
  float *dB_var = own[P_DB_VAR] ? own[P_DB_VAR] + slot * N * L : NULL;
  float *dC_var = own[P_DC_VAR] ? own[P_DC_VAR] + slot * N * L : NULL;
  float dD = 0.0f, ddelta_bias = 0.0f;

  /* carry[n] = a[t+1, n] * dh[t+1, n]: what flows into step t from the step after it. */
  float carry[MAX_N], dh[MAX_N], dhA[MAX_N], w[MAX_N];
  for (int n = 0; n < N; n++) carry[n] = g->d_last_state ? g->d_last_state[row * N + n] : 0.0f;

  for (int64_t k = nsaved - 1; k >= 0; k--) {
    const int64_t t0 = k * W;
    const int steps = (int)(L - t0 < W ? L - t0 : W);
    sf_convert_to_float(T, element_at(u, T, t0), steps, u_s);
    sf_convert_to_float(T, element_at(delta, T, t0), steps, dt_s);
    sf_convert_to_float(T, element_at(dout, T, t0), steps, dout_s);
    if (z) sf_convert_to_float(T, element_at(z, T, t0), steps, z_s);
    if (B_var) load_transposed(T, element_at(B_var, T, t0), a->B_state_stride, N, steps, B_blk);
    if (C_var) load_transposed(T, element_at(C_var, T, t0), a->C_state_stride, N, steps, C_blk);
    const float *B0 = B_var ? B_blk : B_fixed, *C0 = C_var ? C_blk : C_fixed;

    /* The interval's start: the state saved after the interval before, or h0. */
    const float *start = k > 0 ? a->saved_states + (row * nsaved + k - 1) * N
                               : (a->h0 ? a->h0 + row * N : NULL);
    for (int n = 0; n < N; n++) hs[n] = start ? start[n] : 0.0f;

    /* The forward again, as sf_cpu_scan_fwd computes it, keeping every state and decay. */
    const float *B_t = B0;
    for (int t = 0; t < steps; t++, B_t += B_step) {
      const float v = dt_s[t] + bias;
      const bool soft = a->delta_softplus && v <= 20.0f;
      const float dt = soft ? log1pf(expf(v)) : v;
      dt_s[t] = dt;
      dtdv_s[t] = soft ? sigmoid(v) : 1.0f; /* d dt / d delta */
      const float dt_u = dt * u_s[t];
      float *a_t = decay + t * N, *h = hs + (t + 1) * N;
      const float *h_prev = hs + t * N;
      for (int n = 0; n < N; n++) a_t[n] = expf(dt * A[n]);
      for (int n = 0; n < N; n++) h[n] = a_t[n] * h_prev[n] + dt_u * B_t[n];
    }

    /* The reverse scan over the interval. */
    for (int t = steps - 1; t >= 0; t--) {
      const float *B_s = B0 + t * B_step, *C_s = C0 + t * C_step;
      const float *a_t = decay + t * N, *h = hs + (t + 1) * N, *h_prev = hs + t * N;
      const float dt = dt_s[t], ut = u_s[t];
      float gy = dout_s[t];
      if (z) { /* gy = dout * silu(z); dz needs y */
        const float zt = z_s[t], s = sigmoid(zt);
        const float y = dot(C_s, h, N) + D * ut;
        dz_s[t] = gy * y * s * (1.0f + zt * (1.0f - s));
        gy = gy * zt * s;
      }
      for (int n = 0; n < N; n++) dh[n] = C_s[n] * gy + carry[n];
      for (int n = 0; n < N; n++) w[n] = a_t[n] * h_prev[n];
      for (int n = 0; n < N; n++) dhA[n] = dh[n] * A[n];
      /* du = dt sum dh B + D gy; ddt = u sum dh B + sum dh A a h_prev */
      const float dhB = dot(dh, B_s, N);
      du_s[t] = dt * dhB + D * gy;
      const float ddt = ut * dhB + dot(dhA, w, N);
      ddelta_s[t] = ddt * dtdv_s[t];

      if (dA)
        for (int n = 0; n < N; n++) dA[n] += dh[n] * dt * w[n];
      const float dt_u = dt * ut;
      if (dB_var)
        for (int n = 0; n < N; n++) dB_blk[t * N + n] = dh[n] * dt_u;
      else if (dB_fixed)
        for (int n = 0; n < N; n++) dB_fixed[n] += dh[n] * dt_u;
      if (dC_var)
        for (int n = 0; n < N; n++) dC_blk[t * N + n] = gy * h[n];
      else if (dC_fixed)
        for (int n = 0; n < N; n++) dC_fixed[n] += gy * h[n];
      dD += gy * ut;
      ddelta_bias += ddelta_s[t];
      for (int n = 0; n < N; n++) carry[n] = a_t[n] * dh[n];
    }

    if (g->du)
      sf_convert_from_float(T, du_s, steps,
                            (char *)g->du + (b * g->du_batch_stride + d * g->du_dim_stride + t0) * es);
    if (g->ddelta)
      sf_convert_from_float(
          T, ddelta_s, steps,
          (char *)g->ddelta + (b * g->ddelta_batch_stride + d * g->ddelta_dim_stride + t0) * es);
    if (g->dz)
      sf_convert_from_float(T, dz_s, steps,
                            (char *)g->dz + (b * g->dz_batch_stride + d * g->dz_dim_stride + t0) * es);
    if (dB_var) add_transposed(dB_blk, N, steps, L, dB_var + t0);
    if (dC_var) add_transposed(dC_blk, N, steps, L, dC_var + t0);
  }

  /* After step 0 the carry is a[0] * dh[0], the gradient of the initial state. */
  if (g->dh0)
    for (int n = 0; n < N; n++) g->dh0[row * N + n] = carry[n];
  if (own[P_DD]) own[P_DD][chan] += dD;
  if (own[P_DDELTA_BIAS]) own[P_DDELTA_BIAS][chan] += ddelta_bias;
}

static void run_job(const bwd_job *job) {
  for (int64_t row = job->row_begin; row < job->row_end; row++) row_backward(job, row);
}

static void *worker(void *arg) {
  run_job(arg);
  return NULL;
}

static int thread_count(int requested, int64_t rows) {
  long n = requested;
  if (n <= 0) n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (n > MAX_THREADS) n = MAX_THREADS;
  if (n > rows) n = (long)rows;
  return (int)n;
}

/* Sets the job's ranges and takes its zeroed private buffers, only for gradients asked for. */
static bool job_init(bwd_job *job, const sf_scan_bwd_args *a, int64_t begin, int64_t end,
                     float *scratch) {
  const sf_scan_fwd_args *f = &a->fwd;
  const int64_t N = f->dstate, L = f->seqlen, count = end - begin;
  const bool var = f->B_var || f->C_var;
  *job = (bwd_job){.a = a, .row_begin = begin, .row_end = end, .scratch = scratch};
  job->chan_first = begin % f->dim;
  job->chan_count = count < f->dim ? count : f->dim;
  if (var) {
    const int64_t per_group = f->dim / f->groups;
    const int64_t first = (begin / f->dim) * f->groups + (begin % f->dim) / per_group;
    const int64_t last = ((end - 1) / f->dim) * f->groups + ((end - 1) % f->dim) / per_group;
    job->slot_first = first;
    job->slot_count = last - first + 1;
  }
  const size_t chans = (size_t)job->chan_count, slots = (size_t)job->slot_count;
  size_t sizes[PRIVATE] = {0};
  sizes[P_DA] = a->dA ? chans * N : 0;
  sizes[P_DB_FIXED] = a->dB && !f->B_var ? chans * N : 0;
  sizes[P_DC_FIXED] = a->dC && !f->C_var ? chans * N : 0;
  sizes[P_DD] = a->dD ? chans : 0;
  sizes[P_DDELTA_BIAS] = a->ddelta_bias ? chans : 0;
  sizes[P_DB_VAR] = a->dB && f->B_var ? slots * N * L : 0;
  sizes[P_DC_VAR] = a->dC && f->C_var ? slots * N * L : 0;
  size_t total = 0;
  for (int i = 0; i < PRIVATE; i++) total += sizes[i];
  if (total == 0) return true;
  job->memory = calloc(total, sizeof(float));
  if (!job->memory) return false;
  float *next = job->memory;
  for (int i = 0; i < PRIVATE; i++) {
    if (sizes[i]) job->own[i] = next;
    next += sizes[i];
  }
  return true;
}

/* out (dim, width) = the jobs' per-channel buffers, summed in job order. */
static void reduce_channels(const bwd_job *jobs, int threads, int which, int64_t dim,
                            int64_t width, float *out) {
  memset(out, 0, (size_t)dim * (size_t)width * sizeof(float));
  for (int i = 0; i < threads; i++) {
    const float *own = jobs[i].own[which];
    for (int64_t c = 0; c < jobs[i].chan_count; c++) {
      float *dst = out + ((jobs[i].chan_first + c) % dim) * width;
      for (int64_t x = 0; x < width; x++) dst[x] += own[c * width + x];
    }
  }
}

/* out (slots, width) = the jobs' per-slot buffers, summed in job order. */
static void reduce_slots(const bwd_job *jobs, int threads, int which, int64_t slots,
                         int64_t width, float *out) {
  memset(out, 0, (size_t)slots * (size_t)width * sizeof(float));
  for (int i = 0; i < threads; i++) {
    const float *own = jobs[i].own[which];
    float *dst = out + jobs[i].slot_first * width;
    for (int64_t x = 0; x < jobs[i].slot_count * width; x++) dst[x] += own[x];
  }
}

static void free_jobs(bwd_job *jobs, int threads) {
  for (int i = 0; jobs && i < threads; i++) free(jobs[i].memory);
  free(jobs);
}

sf_status sf_cpu_scan_bwd(const sf_scan_bwd_args *args, int num_threads) {
  sf_scan_bwd_args a;
  sf_status st = sf_scan_bwd_prepare(args, &a);
  if (st != SF_OK) return sf_fail_context(st, "sf_cpu_scan_bwd");
  if (!sf_scan_bwd_has_work(&a)) return SF_OK;

  const sf_scan_fwd_args *f = &a.fwd;
  const int64_t rows = f->batch * f->dim; /* fits: validation bounded u's extent */
  const int threads = thread_count(num_threads, rows);
  const size_t per_thread = scratch_floats(sf_scan_state_interval(f->seqlen), f->dstate);
  /* All memory is taken here, so workers cannot fail and need no error channel. */
  float *scratch = malloc((size_t)threads * per_thread * sizeof(float));
  bwd_job *jobs = calloc((size_t)threads, sizeof *jobs);
  pthread_t *tids = malloc((size_t)threads * sizeof *tids);
  bool *started = malloc((size_t)threads * sizeof *started);
  bool ok = scratch && jobs && tids && started;

  /* Equal shares of rows: every row costs the same. */
  const int64_t share = rows / threads, extra = rows % threads;
  int64_t begin = 0;
  for (int i = 0; ok && i < threads; i++) {
    const int64_t count = share + (i < extra);
    ok = job_init(&jobs[i], &a, begin, begin + count, scratch + (size_t)i * per_thread);
    begin += count;
  }
  if (!ok) {
    free(scratch), free_jobs(jobs, threads), free(tids), free(started);
    return sf_fail(SF_ENOMEM, "sf_cpu_scan_bwd: no memory for the scratch and reductions of %d "
                              "threads", threads);
  }

  for (int i = 1; i < threads; i++)
    started[i] = pthread_create(&tids[i], NULL, worker, &jobs[i]) == 0;
  run_job(&jobs[0]);
  /* A thread that could not be started has its share run here instead. */
  for (int i = 1; i < threads; i++) {
    if (started[i])
      pthread_join(tids[i], NULL);
    else
      run_job(&jobs[i]);
  }

  const int64_t N = f->dstate, slots = f->batch * f->groups, NL = N * f->seqlen;
  if (a.dA) reduce_channels(jobs, threads, P_DA, f->dim, N, a.dA);
  if (a.dD) reduce_channels(jobs, threads, P_DD, f->dim, 1, a.dD);
  if (a.ddelta_bias) reduce_channels(jobs, threads, P_DDELTA_BIAS, f->dim, 1, a.ddelta_bias);
  if (a.dB && f->B_var) reduce_slots(jobs, threads, P_DB_VAR, slots, NL, a.dB);
  if (a.dB && !f->B_var) reduce_channels(jobs, threads, P_DB_FIXED, f->dim, N, a.dB);
  if (a.dC && f->C_var) reduce_slots(jobs, threads, P_DC_VAR, slots, NL, a.dC);
  if (a.dC && !f->C_var) reduce_channels(jobs, threads, P_DC_FIXED, f->dim, N, a.dC);

  free(scratch), free_jobs(jobs, threads), free(tids), free(started);
  return SF_OK;
}
