/* cpu_scan.c: the forward selective scan on the CPU, one (batch, channel) row at a time. */
#include "runtime/cpu_scan.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "runtime/error.h"
#include "runtime/half.h"
#include "runtime/scan_args.h"

/* Time steps converted to fp32 at once: B and C blocks of TIME_BLOCK * N floats (128 KiB
 * at N = 256) stay in cache while the scan walks them. */
enum { TIME_BLOCK = 64, MAX_THREADS = 1024, MAX_N = 256 };

typedef struct scan_job {
  const sf_scan_fwd_args *a; /* resolved strides */
  int64_t row_begin, row_end; /* row = b * dim + d */
  float *scratch;             /* scratch_floats(N) floats of its own */
} scan_job;

static size_t scratch_floats(int N) { return (size_t)TIME_BLOCK * (2 * (size_t)N + 4); }

static float load_element(sf_dtype dtype, const void *base, int64_t i) {
  switch (dtype) {
    case SF_FP16: return sf_half_to_float(((const uint16_t *)base)[i]);
    case SF_BF16: return sf_bf16_to_float(((const uint16_t *)base)[i]);
    default: return ((const float *)base)[i];
  }
}

static const void *element_at(const void *base, sf_dtype dtype, int64_t offset) {
  return (const char *)base + offset * sf_dtype_size(dtype);
}

/* dst[t * N + n] = src[n * state_stride + t]: time-major, so the scan reads the N states
 * of one step contiguously. */
static void load_block_transposed(sf_dtype dtype, const void *src, int64_t state_stride, int N,
                                  int steps, float *dst) {
  for (int n = 0; n < N; n++) {
    const void *row = element_at(src, dtype, n * state_stride);
    for (int t = 0; t < steps; t++) dst[t * N + n] = load_element(dtype, row, t);
  }
}

/* Eight partial sums the compiler can keep in one vector register; a fixed order, so the
 * result does not depend on the thread count. */
static float dot(const float *c, const float *h, int N) {
  float lanes[8] = {0};
  int n = 0;
  for (; n + 8 <= N; n += 8)
    for (int k = 0; k < 8; k++) lanes[k] += c[n + k] * h[n + k];
  float sum = 0.0f;
  for (; n < N; n++) sum += c[n] * h[n];
  for (int k = 0; k < 8; k++) sum += lanes[k];
  return sum;
}

static float softplus(float v) { return v <= 20.0f ? log1pf(expf(v)) : v; }

static void scan_row(const sf_scan_fwd_args *a, int64_t row, float *scratch) {
  const int N = a->dstate;
  const sf_dtype T = a->dtype;
  const int64_t b = row / a->dim, d = row % a->dim, L = a->seqlen;
  const int64_t interval = sf_scan_state_interval(L), nsaved = sf_scan_saved_states(L);
  /* groups divides dim whenever B or C is variable (validated); only then is g used. */
  const int64_t g = (a->B_var || a->C_var) ? d / (a->dim / a->groups) : 0;

  float *B_block = scratch, *C_block = B_block + TIME_BLOCK * N;
  float *u_block = C_block + TIME_BLOCK * N, *dt_block = u_block + TIME_BLOCK;
  float *z_block = dt_block + TIME_BLOCK, *y_block = z_block + TIME_BLOCK;

  const float *A = a->A + d * N;
  const float D = a->D ? a->D[d] : 0.0f;
  const float bias = a->delta_bias ? a->delta_bias[d] : 0.0f;
  const void *u = element_at(a->u, T, b * a->u_batch_stride + d * a->u_dim_stride);
  const void *delta = element_at(a->delta, T, b * a->delta_batch_stride + d * a->delta_dim_stride);
  const void *z = a->z ? element_at(a->z, T, b * a->z_batch_stride + d * a->z_dim_stride) : NULL;
  void *out = (char *)a->out + (b * a->out_batch_stride + d * a->out_dim_stride) * sf_dtype_size(T);
  const void *B_var = a->B_var ? element_at(a->B, T, b * a->B_batch_stride + g * a->B_group_stride)
                               : NULL;
  const void *C_var = a->C_var ? element_at(a->C, T, b * a->C_batch_stride + g * a->C_group_stride)
                               : NULL;
  /* A fixed B or C is one (N,) row for every step: a block stride of 0 reuses it. */
  const float *B_fixed = a->B_var ? NULL : (const float *)a->B + d * N;
  const float *C_fixed = a->C_var ? NULL : (const float *)a->C + d * N;
  const int B_step = a->B_var ? N : 0, C_step = a->C_var ? N : 0;

  float h[MAX_N], decay[MAX_N];
  for (int n = 0; n < N; n++) h[n] = a->h0 ? a->h0[row * N + n] : 0.0f;

  for (int64_t t0 = 0; t0 < L; t0 += TIME_BLOCK) {
    const int steps = (int)(L - t0 < TIME_BLOCK ? L - t0 : TIME_BLOCK);
    sf_convert_to_float(T, element_at(u, T, t0), steps, u_block);
    sf_convert_to_float(T, element_at(delta, T, t0), steps, dt_block);
    if (z) sf_convert_to_float(T, element_at(z, T, t0), steps, z_block);
    if (B_var)
      load_block_transposed(T, element_at(B_var, T, t0), a->B_state_stride, N, steps, B_block);
    if (C_var)
      load_block_transposed(T, element_at(C_var, T, t0), a->C_state_stride, N, steps, C_block);
    const float *B_t = B_var ? B_block : B_fixed, *C_t = C_var ? C_block : C_fixed;

    for (int t = 0; t < steps; t++, B_t += B_step, C_t += C_step) {
      float dt = dt_block[t] + bias;
      if (a->delta_softplus) dt = softplus(dt);
      const float dt_u = dt * u_block[t];
      /* The exps first, then a multiply-add loop that vectorises on its own. */
      for (int n = 0; n < N; n++) decay[n] = expf(dt * A[n]);
      for (int n = 0; n < N; n++) h[n] = decay[n] * h[n] + dt_u * B_t[n];
      float y = dot(C_t, h, N) + D * u_block[t];
      if (z) y *= z_block[t] / (1.0f + expf(-z_block[t])); /* silu(z) */
      y_block[t] = y;

      const int64_t step = t0 + t;
      if ((step + 1) % interval == 0 || step == L - 1) {
        if (a->saved_states) {
          float *saved = a->saved_states + (row * nsaved + step / interval) * N;
          for (int n = 0; n < N; n++) saved[n] = h[n];
        }
      }
    }
    sf_convert_from_float(T, y_block, steps, (char *)out + t0 * sf_dtype_size(T));
  }
  if (a->last_state)
    for (int n = 0; n < N; n++) a->last_state[row * N + n] = h[n];
}

static void run_job(const scan_job *job) {
  for (int64_t row = job->row_begin; row < job->row_end; row++)
    scan_row(job->a, row, job->scratch);
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

sf_status sf_cpu_scan_fwd(const sf_scan_fwd_args *args, int num_threads) {
  sf_scan_fwd_args a;
  sf_status st = sf_scan_fwd_prepare(args, &a);
  if (st != SF_OK) return sf_fail_context(st, "sf_cpu_scan_fwd");
  if (!sf_scan_fwd_has_work(&a)) return SF_OK;

  const int64_t rows = a.batch * a.dim; /* fits: validation bounded u's extent */
  const int threads = thread_count(num_threads, rows);
  const size_t per_thread = scratch_floats(a.dstate);
  /* All memory is taken here, so workers cannot fail and need no error channel. */
  float *scratch = malloc((size_t)threads * per_thread * sizeof(float));
  scan_job *jobs = malloc((size_t)threads * sizeof *jobs);
  pthread_t *tids = malloc((size_t)threads * sizeof *tids);
  bool *started = malloc((size_t)threads * sizeof *started);
  if (!scratch || !jobs || !tids || !started) {
    free(scratch), free(jobs), free(tids), free(started);
    return sf_fail(SF_ENOMEM, "sf_cpu_scan_fwd: no memory for the scratch of %d threads",
                   threads);
  }

  /* Equal shares of rows: every row costs the same. */
  const int64_t share = rows / threads, extra = rows % threads;
  int64_t begin = 0;
  for (int i = 0; i < threads; i++) {
    int64_t count = share + (i < extra);
    jobs[i] = (scan_job){&a, begin, begin + count, scratch + (size_t)i * per_thread};
    begin += count;
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
  free(scratch), free(jobs), free(tids), free(started);
  return SF_OK;
}
