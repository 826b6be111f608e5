/* measure.c: CUDA-event timing behind a spin kernel, copy bandwidth, and rotated random scan inputs. */
#include "tuning/measure.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda/cuda_context.h"
#include "base/error.h"
#include "base/half.h"
#include "runtime/check/random_inputs.h"

/* ---- statistics ------------------------------------------------------------------------ */

static int compare_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

sf_timing sf_timing_of(float *ms, int n) {
  qsort(ms, (size_t)n, sizeof *ms, compare_float);
  sf_timing t = {.min = ms[0], .median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]), .reps = n};
  int k = (int)ceil(0.9 * n) - 1;
  t.p90 = ms[k < 0 ? 0 : k];
  return t;
}

/* ---- the timer -------------------------------------------------------------------------- */

/* Spins on %globaltimer for the given nanoseconds. Hand-written PTX: it needs no NVRTC and
 * the driver compiles it for any GPU. */
static const char spin_ptx[] =
    ".version 7.5\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry sf_spin(\n"
    "\t.param .u64 sf_spin_ns\n"
    ")\n"
    "{\n"
    "\t.reg .pred %p<2>;\n"
    "\t.reg .b64 %rd<5>;\n"
    "\n"
    "\tld.param.u64 %rd1, [sf_spin_ns];\n"
    "\tmov.u64 %rd2, %globaltimer;\n"
    "SPIN:\n"
    "\tmov.u64 %rd3, %globaltimer;\n"
    "\tsub.s64 %rd4, %rd3, %rd2;\n"
    "\tsetp.lt.u64 %p1, %rd4, %rd1;\n"
    "\t@%p1 bra SPIN;\n"
    "\tret;\n"
    "}\n";

sf_status sf_timer_open(sf_timer *t) {
  memset(t, 0, sizeof *t);
  CUcontext context;
  sf_status st = sf_cu_load(&t->cu);
  if (st == SF_OK) st = sf_cu_current_context(0, &context);
  if (st == SF_OK) st = sf_cu_check(t->cu->StreamCreate(&t->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  if (st == SF_OK) st = sf_cu_check(t->cu->EventCreate(&t->start, CU_EVENT_DEFAULT), "cuEventCreate");
  if (st == SF_OK) st = sf_cu_check(t->cu->EventCreate(&t->stop, CU_EVENT_DEFAULT), "cuEventCreate");
  if (st != SF_OK) {
    sf_timer_close(t);
    return st;
  }
  if (t->cu->ModuleLoadData(&t->spin_module, spin_ptx) != CUDA_SUCCESS ||
      t->cu->ModuleGetFunction(&t->spin, t->spin_module, "sf_spin") != CUDA_SUCCESS)
    t->spin = NULL;
  return SF_OK;
}

void sf_timer_close(sf_timer *t) {
  if (t->cu) {
    if (t->stream) t->cu->StreamSynchronize(t->stream);
    if (t->spin_module) t->cu->ModuleUnload(t->spin_module);
    if (t->start) t->cu->EventDestroy(t->start);
    if (t->stop) t->cu->EventDestroy(t->stop);
    if (t->stream) t->cu->StreamDestroy(t->stream);
  }
  memset(t, 0, sizeof *t);
}

static sf_status elapsed(sf_timer *t, float *ms) {
  sf_status st = sf_cu_check(t->cu->EventSynchronize(t->stop), "cuEventSynchronize");
  if (st == SF_OK) st = sf_cu_check(t->cu->EventElapsedTime(ms, t->start, t->stop), "cuEventElapsedTime");
  return st;
}

sf_status sf_timer_time_one(sf_timer *t, sf_timed_fn fn, void *user, float *ms) {
  unsigned long long spin_ns = SF_SPIN_NS;
  void *params[] = {&spin_ns};
  sf_status st = SF_OK;
  if (t->spin)
    st = sf_cu_check(t->cu->LaunchKernel(t->spin, 1, 1, 1, 1, 1, 1, 0, t->stream, params, NULL), "cuLaunchKernel(spin)");
  if (st == SF_OK) st = sf_cu_check(t->cu->EventRecord(t->start, t->stream), "cuEventRecord");
  if (st == SF_OK) st = fn(user, t->stream);
  if (st == SF_OK) st = sf_cu_check(t->cu->EventRecord(t->stop, t->stream), "cuEventRecord");
  if (st == SF_OK) st = elapsed(t, ms);
  if (st != SF_OK) t->cu->StreamSynchronize(t->stream); /* leave nothing queued behind a failure */
  return st;
}

typedef struct copy_job {
  const sf_cu *cu;
  CUdeviceptr dst, src;
  size_t bytes;
} copy_job;

static sf_status run_copy(void *user, CUstream stream) {
  copy_job *c = user;
  return sf_cu_check(c->cu->MemcpyDtoDAsync(c->dst, c->src, c->bytes, stream), "cuMemcpyDtoDAsync");
}

sf_status sf_timer_copy_bandwidth(sf_timer *t, double *bytes_per_s, size_t *bytes_used) {
  const sf_cu *cu = t->cu;
  copy_job job = {.cu = cu};
  for (job.bytes = (size_t)1 << 30; job.bytes >= ((size_t)64 << 20); job.bytes /= 2) {
    if (cu->MemAlloc(&job.src, job.bytes) != CUDA_SUCCESS) continue;
    if (cu->MemAlloc(&job.dst, job.bytes) == CUDA_SUCCESS) break;
    cu->MemFree(job.src);
    job.src = 0;
  }
  if (!job.dst) return sf_fail(SF_ENOMEM, "copy bandwidth: cannot allocate two buffers of 64 MiB");
  float ms[10];
  sf_status st = sf_cu_check(cu->MemsetD8Async(job.src, 0x5a, job.bytes, t->stream), "cuMemsetD8Async");
  for (int i = -2; i < 10 && st == SF_OK; i++) /* two untimed copies first */
    st = sf_timer_time_one(t, run_copy, &job, &ms[i < 0 ? 0 : i]);
  cu->MemFree(job.src);
  cu->MemFree(job.dst);
  if (st != SF_OK) return st;
  sf_timing timing = sf_timing_of(ms, 10);
  *bytes_per_s = 2.0 * (double)job.bytes / (timing.median * 1e-3);
  *bytes_used = job.bytes;
  return SF_OK;
}

static sf_status run_empty(void *user, CUstream stream) {
  const sf_timer *t = user;
  unsigned long long no_spin = 0;
  void *params[] = {&no_spin};
  return sf_cu_check(t->cu->LaunchKernel(t->spin, 1, 1, 1, 1, 1, 1, 0, stream, params, NULL),
                     "cuLaunchKernel(empty launch)");
}

sf_status sf_timer_empty_launch(sf_timer *t, double *us) {
  *us = -1.0;
  if (!t->spin) return SF_OK;
  float ms[20];
  sf_status st = SF_OK;
  for (int i = -3; i < 20 && st == SF_OK; i++) /* three untimed launches first */
    st = sf_timer_time_one(t, run_empty, t, &ms[i < 0 ? 0 : i]);
  if (st != SF_OK) return st;
  *us = 1e3 * sf_timing_of(ms, 20).median;
  return SF_OK;
}

/* ---- rotated inputs ------------------------------------------------------------------------- */

static bool is_output(int i) {
  return i == SF_MT_OUT || i == SF_MT_LAST || i == SF_MT_SAVED || i >= SF_MT_DU;
}

/* Element counts and sizes of every tensor of one set. */
static void layout(const sf_measure_shape *s, sf_measure_sets *m) {
  const size_t seq = (size_t)(s->batch * s->dim * s->seqlen);
  const size_t var = (size_t)(s->batch * s->groups * s->dstate * s->seqlen), fixed = (size_t)(s->dim * s->dstate);
  const size_t state = (size_t)(s->batch * s->dim * s->dstate), dim = (size_t)s->dim;
  const size_t bc_B = s->B_var ? var : fixed, bc_C = s->C_var ? var : fixed;
  const bool bw = s->backward;
  const size_t counts[SF_MT_COUNT] = {
      [SF_MT_U] = seq, [SF_MT_DELTA] = seq, [SF_MT_Z] = s->z ? seq : 0, [SF_MT_B] = bc_B, [SF_MT_C] = bc_C,
      [SF_MT_A] = fixed, [SF_MT_D] = s->D ? dim : 0, [SF_MT_BIAS] = s->delta_bias ? dim : 0,
      [SF_MT_OUT] = seq, [SF_MT_LAST] = state, [SF_MT_SAVED] = state * (size_t)sf_scan_saved_count(s->seqlen, s->state_interval),
      [SF_MT_DOUT] = bw ? seq : 0, [SF_MT_DU] = bw ? seq : 0, [SF_MT_DDELTA] = bw ? seq : 0,
      [SF_MT_DZ] = bw && s->z ? seq : 0, [SF_MT_DA] = bw ? fixed : 0, [SF_MT_DB] = bw ? bc_B : 0,
      [SF_MT_DC] = bw ? bc_C : 0, [SF_MT_DD] = bw && s->D ? dim : 0, [SF_MT_DBIAS] = bw && s->delta_bias ? dim : 0,
  };
  const int es = sf_dtype_size(s->dtype);
  memset(m, 0, sizeof *m);
  m->shape = *s;
  for (int i = 0; i < SF_MT_COUNT; i++) {
    /* Activations and their gradients are in T; B and C too when variable; the rest fp32. */
    bool in_t = i == SF_MT_U || i == SF_MT_DELTA || i == SF_MT_Z || i == SF_MT_OUT || i == SF_MT_DOUT ||
                i == SF_MT_DU || i == SF_MT_DDELTA || i == SF_MT_DZ || (i == SF_MT_B && s->B_var) ||
                (i == SF_MT_C && s->C_var);
    m->count[i] = counts[i];
    m->size[i] = in_t ? es : 4;
    m->stride[i] = (counts[i] * (size_t)m->size[i] + 255) / 256 * 256;
    m->set_bytes += m->stride[i];
  }
}

double sf_measure_call_bytes(const sf_measure_shape *s) {
  sf_measure_sets m;
  layout(s, &m);
  double bytes = 0;
  for (int i = 0; i < SF_MT_COUNT; i++) {
    /* A forward reads no cotangent and writes no gradient; the backward reads what the
     * forward wrote (saved states) and writes the gradients, not out or last_state. */
    bool counted = s->backward ? i != SF_MT_OUT && i != SF_MT_LAST : i < SF_MT_DOUT;
    if (counted) bytes += (double)m.count[i] * m.size[i];
  }
  return bytes;
}

/* A value for tensor i drawn from x in [-1, 1). */
static float value_for(int i, const sf_measure_shape *s, double x) {
  switch (i) {
    case SF_MT_DELTA: return s->softplus ? (float)x : (float)(0.03 + 0.02 * x); /* dt of a few hundredths */
    case SF_MT_BIAS: return s->softplus ? (float)(-4.0 + 0.5 * x) : (float)(0.005 + 0.005 * x);
    case SF_MT_A: return (float)-exp(0.5 * (x + 1.0)); /* -exp(U(0, 1)) */
    default: return (float)(2.0 * x);                  /* u, z, B, C, D, dout */
  }
}

/* Fills tensor i of every set: a block of random values, repeated (random enough to time,
 * and quick for tensors of hundreds of MB). */
static sf_status fill(const sf_cu *cu, sf_measure_sets *m, int i, rng *r) {
  const size_t total = m->stride[i] * (size_t)m->sets;
  if (is_output(i)) return sf_cu_check(cu->MemsetD8(m->base[i], 0, total), "cuMemsetD8");
  enum { BLOCK = 1 << 20 };
  const size_t n = m->count[i] < BLOCK ? m->count[i] : BLOCK;
  float *values = malloc(n * sizeof *values);
  unsigned char *block = malloc(n * (size_t)m->size[i]);
  sf_status st = values && block ? SF_OK : sf_fail(SF_ENOMEM, "measure: out of host memory");
  if (st == SF_OK) {
    for (size_t k = 0; k < n; k++) values[k] = value_for(i, &m->shape, rng_uniform(r, -1.0, 1.0));
    sf_convert_from_float(m->size[i] == 4 ? SF_FP32 : m->shape.dtype, values, (int64_t)n, block);
  }
  const size_t block_bytes = n * (size_t)m->size[i], set_bytes = m->count[i] * (size_t)m->size[i];
  for (int s = 0; s < m->sets && st == SF_OK; s++)
    for (size_t at = 0; at < set_bytes && st == SF_OK; at += block_bytes) {
      size_t bytes = set_bytes - at < block_bytes ? set_bytes - at : block_bytes;
      st = sf_cu_check(cu->MemcpyHtoD(m->base[i] + m->stride[i] * (size_t)s + at, block, bytes), "cuMemcpyHtoD");
    }
  free(values);
  free(block);
  return st;
}

sf_status sf_measure_sets_alloc(const sf_cu *cu, const sf_measure_shape *shape, double min_bytes, int max_sets,
                                sf_measure_sets *out) {
  layout(shape, out);
  double sets = ceil(min_bytes / (double)out->set_bytes);
  out->sets = sets > max_sets ? max_sets : (int)sets;
  if (out->sets < 1) out->sets = 1;
  rng random = rng_seeded(0x5ca9f0f9u ^ (uint64_t)shape->seqlen);
  sf_status st = SF_OK;
  for (int i = 0; i < SF_MT_COUNT && st == SF_OK; i++) {
    if (out->count[i] == 0) continue;
    st = sf_cu_check(cu->MemAlloc(&out->base[i], out->stride[i] * (size_t)out->sets), "cuMemAlloc");
    if (st == SF_OK) st = fill(cu, out, i, &random);
  }
  /* The copies and memsets ran on the legacy stream, which a non-blocking stream does not
   * wait for. */
  if (st == SF_OK) st = sf_cu_check(cu->CtxSynchronize(), "cuCtxSynchronize");
  if (st != SF_OK) sf_measure_sets_free(cu, out);
  return st;
}

void sf_measure_sets_free(const sf_cu *cu, sf_measure_sets *m) {
  for (int i = 0; i < SF_MT_COUNT; i++)
    if (m->base[i]) cu->MemFree(m->base[i]);
  memset(m->base, 0, sizeof m->base);
}

static void *at(const sf_measure_sets *m, int i, int set) {
  if (!m->base[i]) return NULL;
  return (void *)(uintptr_t)(m->base[i] + m->stride[i] * (size_t)set);
}

sf_scan_fwd_args sf_measure_fwd_args(const sf_measure_sets *m, int set) {
  const sf_measure_shape *s = &m->shape;
  return (sf_scan_fwd_args){
      .batch = s->batch, .dim = s->dim, .seqlen = s->seqlen, .dstate = s->dstate, .groups = s->groups,
      .dtype = s->dtype, .delta_softplus = s->softplus,
      .u = at(m, SF_MT_U, set), .delta = at(m, SF_MT_DELTA, set), .A = at(m, SF_MT_A, set),
      .B = at(m, SF_MT_B, set), .B_var = s->B_var, .C = at(m, SF_MT_C, set), .C_var = s->C_var,
      .D = at(m, SF_MT_D, set), .delta_bias = at(m, SF_MT_BIAS, set), .z = at(m, SF_MT_Z, set),
      .out = at(m, SF_MT_OUT, set), .last_state = at(m, SF_MT_LAST, set),
      .saved_states = at(m, SF_MT_SAVED, set), .state_interval = s->state_interval};
}

sf_scan_bwd_args sf_measure_bwd_args(const sf_measure_sets *m, int set) {
  sf_scan_bwd_args a = {
      .fwd = sf_measure_fwd_args(m, set),
      .dout = at(m, SF_MT_DOUT, set), .du = at(m, SF_MT_DU, set), .ddelta = at(m, SF_MT_DDELTA, set),
      .dz = at(m, SF_MT_DZ, set), .dA = at(m, SF_MT_DA, set), .dB = at(m, SF_MT_DB, set),
      .dC = at(m, SF_MT_DC, set), .dD = at(m, SF_MT_DD, set), .ddelta_bias = at(m, SF_MT_DBIAS, set)};
  a.fwd.out = NULL; /* the backward reads neither */
  a.fwd.last_state = NULL;
  return a;
}
