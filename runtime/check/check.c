/* check.c: the forward or the backward on random inputs, host or device, against the float64
 * reference. */
#include "runtime/check/check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_context.h"
#include "base/error.h"
#include "base/half.h"
#include "runtime/check/random_inputs.h"
#include "runtime/check/reference.h"
#include "runtime/check/relerr.h"
#include <xxhash.h>

double sf_check_forward_bar(sf_dtype dtype) { return dtype == SF_FP32 ? 1e-5 : 5e-3; }
double sf_check_backward_bar(sf_dtype dtype) { return dtype == SF_FP32 ? 1e-4 : 1e-2; }

/* One tensor of the call, on the host, and (on the device path) its device copy. */
typedef struct buffer {
  void *host;
  size_t bytes;
  CUdeviceptr device;
} buffer;

/* Rounds x to the activation type and back, so the reference sees what the kernel sees. */
static void round_to(sf_dtype dtype, double *x, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float f = (float)x[i];
    if (dtype == SF_BF16) f = sf_bf16_to_float(sf_float_to_bf16(f));
    else if (dtype == SF_FP16) f = sf_half_to_float(sf_float_to_half(f));
    x[i] = f;
  }
}

static bool make_typed(buffer *b, sf_dtype dtype, const double *x, size_t n) {
  b->bytes = n * (size_t)sf_dtype_size(dtype);
  b->host = malloc(b->bytes ? b->bytes : 1);
  float *tmp = malloc((n ? n : 1) * sizeof(float));
  if (!b->host || !tmp) {
    free(tmp);
    return false;
  }
  for (size_t i = 0; i < n; i++) tmp[i] = (float)x[i];
  sf_convert_from_float(dtype, tmp, (int64_t)n, b->host);
  free(tmp);
  return true;
}

static bool make_poisoned(buffer *b, sf_dtype dtype, size_t n) {
  float *nan_values = malloc((n ? n : 1) * sizeof(float));
  b->bytes = n * (size_t)sf_dtype_size(dtype);
  b->host = malloc(b->bytes ? b->bytes : 1);
  if (!nan_values || !b->host) {
    free(nan_values);
    return false;
  }
  for (size_t i = 0; i < n; i++) nan_values[i] = NAN;
  sf_convert_from_float(dtype, nan_values, (int64_t)n, b->host);
  free(nan_values);
  return true;
}

/* All the tensors of one call: the forward's, then what a backward adds (cotangents, then
 * gradients). Index order is fixed so loops can treat them alike. */
enum {
  U, DELTA, A_, B_, C_, D_, BIAS, Z, H0, OUT, LAST, SAVED,
  DOUT, DLAST, DU, DDELTA, DZ, DA, DB, DC, DD, DBIAS, DH0,
  TENSORS
};

typedef struct call {
  buffer t[TENSORS];
  bool present[TENSORS];
} call;

static void free_call(call *c, const sf_cu *cu) {
  for (int i = 0; i < TENSORS; i++) {
    free(c->t[i].host);
    if (c->t[i].device && cu) cu->MemFree(c->t[i].device);
  }
}

static sf_status upload(call *c, const sf_cu *cu) {
  for (int i = 0; i < TENSORS; i++) {
    if (!c->present[i]) continue;
    sf_status st = sf_cu_check(cu->MemAlloc(&c->t[i].device, c->t[i].bytes ? c->t[i].bytes : 4), "cuMemAlloc");
    if (st == SF_OK) st = sf_cu_check(cu->MemcpyHtoD(c->t[i].device, c->t[i].host, c->t[i].bytes), "cuMemcpyHtoD");
    if (st != SF_OK) return st;
  }
  /* A copy from pageable memory may return before its DMA has landed, and the call runs on
   * a non-blocking stream that does not wait for it: without this, a poisoned output's copy
   * could land after the kernel wrote it (seen once as a NaN saved state under load). */
  return sf_cu_check(cu->CtxSynchronize(), "cuCtxSynchronize");
}

/* Copies the present tensors first..end-1 back from the device. */
static sf_status download(call *c, const sf_cu *cu, int first, int end) {
  for (int i = first; i < end; i++) {
    if (!c->present[i]) continue;
    sf_status st = sf_cu_check(cu->MemcpyDtoH(c->t[i].host, c->t[i].device, c->t[i].bytes), "cuMemcpyDtoH");
    if (st != SF_OK) return st;
  }
  return SF_OK;
}

static const void *where(const call *c, int i, bool on_device) {
  if (!c->present[i]) return NULL;
  return on_device ? (const void *)(uintptr_t)c->t[i].device : c->t[i].host;
}

/* The reference's state after step `to` - 1 from `state` (the one after step `from` - 1,
 * or h0 when from is 0), in place: the problem cut to steps [from, to). */
static sf_status reference_state_step(const sf_ref_problem *p, int64_t from, int64_t to, double *state) {
  sf_ref_problem cut = *p;
  const int64_t steps = to - from;
  cut.seqlen = (int)steps;
  if (from > 0) cut.h0 = state, cut.has_h0 = true;
  const size_t rows = (size_t)p->batch * p->dim, L = (size_t)p->seqlen;
  const size_t brows = (size_t)p->batch * p->groups * p->dstate;
  double *copies[5] = {0};
  const double *sources[5] = {p->u, p->delta, p->z, p->B_var ? p->B : NULL, p->C_var ? p->C : NULL};
  const size_t row_counts[5] = {rows, rows, rows, brows, brows};
  double *h_from = from > 0 ? malloc(sf_ref_size_state(p) * sizeof(double)) : NULL;
  sf_status st = from > 0 && !h_from ? sf_fail(SF_ENOMEM, "check: out of memory") : SF_OK;
  if (h_from) memcpy(h_from, state, sf_ref_size_state(p) * sizeof(double)), cut.h0 = h_from;
  for (int k = 0; k < 5 && st == SF_OK; k++) {
    if (!sources[k]) continue;
    copies[k] = malloc(row_counts[k] * (size_t)steps * sizeof(double));
    if (!copies[k]) { st = sf_fail(SF_ENOMEM, "check: out of memory"); break; }
    for (size_t r = 0; r < row_counts[k]; r++)
      memcpy(copies[k] + r * (size_t)steps, sources[k] + r * L + from, (size_t)steps * sizeof(double));
  }
  if (st == SF_OK) {
    cut.u = copies[0];
    cut.delta = copies[1];
    if (p->z) cut.z = copies[2];
    if (p->B_var) cut.B = copies[3];
    if (p->C_var) cut.C = copies[4];
    st = sf_ref_forward(&cut, NULL, state);
  }
  for (int k = 0; k < 5; k++) free(copies[k]);
  free(h_from);
  return st;
}

static sf_status compare(const call *c, const random_problem *rp, const sf_check_shape *s,
                         sf_check_result *result) {
  const size_t n_out = (size_t)(s->batch * s->dim * s->seqlen);
  const size_t n_state = (size_t)(s->batch * s->dim * s->dstate);
  const int64_t nsaved = sf_scan_saved_count(s->seqlen, s->state_interval);
  const int64_t interval = sf_scan_args_interval(&(sf_scan_fwd_args){.seqlen = s->seqlen, .state_interval = s->state_interval});
  double *ref_out = malloc(n_out * sizeof(double));
  double *ref_last = malloc(n_state * sizeof(double));
  double *ref_saved = malloc(n_state * (size_t)nsaved * sizeof(double));
  double *state = malloc(n_state * sizeof(double));
  float *got = malloc((n_out > n_state * (size_t)nsaved ? n_out : n_state * (size_t)nsaved) * sizeof(float));
  sf_status st = SF_OK;
  if (!ref_out || !ref_last || !ref_saved || !state || !got) st = sf_fail(SF_ENOMEM, "check: out of memory");
  if (st == SF_OK) st = sf_ref_forward(&rp->p, ref_out, ref_last);
  /* saved[b, d, k, n]: the state after step min((k + 1) * interval, L) */
  for (int64_t k = 0; k < nsaved && st == SF_OK; k++) {
    const int64_t steps = (k + 1) * interval < s->seqlen ? (k + 1) * interval : s->seqlen;
    st = reference_state_step(&rp->p, k * interval, steps, state);
    for (size_t row = 0; row < (size_t)(s->batch * s->dim) && st == SF_OK; row++)
      memcpy(ref_saved + (row * nsaved + k) * s->dstate, state + row * s->dstate, s->dstate * sizeof(double));
  }
  if (st == SF_OK) {
    sf_convert_to_float(s->dtype, c->t[OUT].host, (int64_t)n_out, got);
    result->out_error = relerr_f32(got, ref_out, n_out);
    result->last_state_error = relerr_f32(c->t[LAST].host, ref_last, n_state);
    result->saved_error = relerr_f32(c->t[SAVED].host, ref_saved, n_state * (size_t)nsaved);
    result->bar = sf_check_forward_bar(s->dtype);
    result->passed = result->out_error <= result->bar && result->last_state_error <= result->bar &&
                     result->saved_error <= result->bar;
  }
  free(ref_out);
  free(ref_last);
  free(ref_saved);
  free(state);
  free(got);
  return st;
}

static sf_status check_shape(const sf_check_shape *s) {
  if (s->batch < 1 || s->dim < 1 || s->seqlen < 1 || s->batch * s->dim * s->seqlen > (1LL << 31))
    return sf_fail(SF_EINVAL, "check shape: batch, dim and seqlen must be >= 1 with at most 2^31 elements, got %lld x %lld x %lld",
                   (long long)s->batch, (long long)s->dim, (long long)s->seqlen);
  if (s->groups < 1 || s->dim % s->groups != 0)
    return sf_fail(SF_EINVAL, "check shape: groups (%d) must divide dim (%lld)", s->groups, (long long)s->dim);
  if (s->dstate < 1 || s->dstate > 256)
    return sf_fail(SF_EINVAL, "check shape: dstate must be in 1..256, got %d", s->dstate);
  return SF_OK;
}

/* The random problem of the shape, its activations rounded to T. */
static sf_status make_problem(const sf_check_shape *s, uint64_t seed, random_problem *rp) {
  sf_ref_problem shape = {
      .batch = (int)s->batch, .dim = (int)s->dim, .seqlen = (int)s->seqlen, .dstate = s->dstate,
      .groups = s->groups, .B_var = !s->B_fixed, .C_var = !s->C_fixed, .has_D = s->D,
      .has_z = s->z, .has_delta_bias = s->delta_bias, .softplus = s->softplus, .has_h0 = s->h0};
  if (!random_problem_make(rp, &shape, RANDOM_A_NEG_EXP_UNIFORM, seed))
    return sf_fail(SF_ENOMEM, "check: out of memory for the inputs");
  const size_t n_seq = sf_ref_size_u(&rp->p);
  round_to(s->dtype, rp->u, n_seq);
  round_to(s->dtype, rp->delta, n_seq);
  if (s->z) round_to(s->dtype, rp->z, n_seq);
  if (!s->B_fixed) round_to(s->dtype, rp->B, sf_ref_size_B(&rp->p));
  if (!s->C_fixed) round_to(s->dtype, rp->C, sf_ref_size_C(&rp->p));
  return SF_OK;
}

/* The forward's inputs in their types, and its poisoned out and saved states. */
static bool make_forward_tensors(call *c, const random_problem *rp, const sf_check_shape *s) {
  const size_t n_seq = sf_ref_size_u(&rp->p), n_state = sf_ref_size_state(&rp->p);
  const size_t nsaved = (size_t)sf_scan_saved_count(s->seqlen, s->state_interval);
  return make_typed(&c->t[U], s->dtype, rp->u, n_seq) && make_typed(&c->t[DELTA], s->dtype, rp->delta, n_seq) &&
         make_typed(&c->t[A_], SF_FP32, rp->A, sf_ref_size_A(&rp->p)) &&
         make_typed(&c->t[B_], s->B_fixed ? SF_FP32 : s->dtype, rp->B, sf_ref_size_B(&rp->p)) &&
         make_typed(&c->t[C_], s->C_fixed ? SF_FP32 : s->dtype, rp->C, sf_ref_size_C(&rp->p)) &&
         (!s->D || make_typed(&c->t[D_], SF_FP32, rp->D, (size_t)s->dim)) &&
         (!s->delta_bias || make_typed(&c->t[BIAS], SF_FP32, rp->delta_bias, (size_t)s->dim)) &&
         (!s->z || make_typed(&c->t[Z], s->dtype, rp->z, n_seq)) &&
         (!s->h0 || make_typed(&c->t[H0], SF_FP32, rp->h0, n_state)) &&
         make_poisoned(&c->t[OUT], s->dtype, n_seq) && make_poisoned(&c->t[SAVED], SF_FP32, n_state * nsaved);
}

/* Device memory for every present tensor, filled, and a stream of our own. */
static sf_status start_device(call *c, const sf_cu **cu, CUstream *stream) {
  CUcontext context;
  sf_status st = sf_cu_load(cu);
  if (st == SF_OK) st = sf_cu_current_context(0, &context);
  if (st == SF_OK) st = upload(c, *cu);
  if (st == SF_OK) st = sf_cu_check((*cu)->StreamCreate(stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  return st;
}

static sf_scan_fwd_args forward_args(const call *c, const sf_check_shape *s, bool dev) {
  sf_scan_fwd_args a = {
      .batch = s->batch, .dim = s->dim, .seqlen = s->seqlen, .dstate = s->dstate,
      .groups = s->groups, .dtype = s->dtype, .delta_softplus = s->softplus,
      .u = where(c, U, dev), .delta = where(c, DELTA, dev), .A = where(c, A_, dev),
      .B = where(c, B_, dev), .B_var = !s->B_fixed, .C = where(c, C_, dev), .C_var = !s->C_fixed,
      .D = where(c, D_, dev), .delta_bias = where(c, BIAS, dev), .z = where(c, Z, dev),
      .h0 = where(c, H0, dev), .out = (void *)where(c, OUT, dev),
      .last_state = (float *)where(c, LAST, dev), .saved_states = (float *)where(c, SAVED, dev),
      .state_interval = s->state_interval};
  return a;
}

static void mark_present(call *c) {
  for (int i = 0; i < TENSORS; i++) c->present[i] = c->t[i].host != NULL;
}

sf_status sf_check_fwd(sf_context *ctx, const sf_check_shape *s, const sf_launch *launch,
                       uint64_t seed, sf_check_result *result) {
  if (!s || !launch || !result) return sf_fail(SF_EINVAL, "sf_check_fwd: shape, launch and result must not be NULL");
  sf_status st = check_shape(s);
  if (st != SF_OK) return st;
  memset(result, 0, sizeof *result);
  random_problem rp;
  st = make_problem(s, seed, &rp);
  if (st != SF_OK) return st;

  call c = {0};
  const size_t n_state = sf_ref_size_state(&rp.p);
  bool ok = make_forward_tensors(&c, &rp, s) && make_poisoned(&c.t[LAST], SF_FP32, n_state);
  mark_present(&c);
  if (!ok) st = sf_fail(SF_ENOMEM, "check: out of memory for the inputs");
  const sf_cu *cu = NULL;
  CUstream stream = NULL;
  const bool dev = !launch->on_host;
  if (st == SF_OK && dev) st = start_device(&c, &cu, &stream);
  if (st == SF_OK) {
    sf_scan_fwd_args a = forward_args(&c, s, dev);
    sf_launch run = *launch;
    if (dev) {
      run.stream = stream;
      st = sf_scan_fwd_variant(&a, launch, &result->variant);
    }
    if (st == SF_OK) st = sf_scan_fwd(ctx, &a, &run);
    if (st == SF_OK && dev) st = sf_cu_check(cu->StreamSynchronize(stream), "cuStreamSynchronize");
    if (st == SF_OK && dev) st = download(&c, cu, OUT, SAVED + 1);
  }
  if (st == SF_OK) st = compare(&c, &rp, s, result);
  if (stream) cu->StreamDestroy(stream);
  free_call(&c, cu);
  random_problem_free(&rp);
  return st;
}

/* ---- the backward ------------------------------------------------------------------- */

/* Each gradient of the shape against the reference's, into result. */
static sf_status compare_bwd(const call *c, const random_problem *rp, const sf_check_shape *s,
                             sf_check_bwd_result *result) {
  const size_t n_seq = sf_ref_size_u(&rp->p), n_state = sf_ref_size_state(&rp->p);
  sf_ref_grads g = {0};
  const struct {
    const char *name;
    int tensor;
    sf_dtype type;
    size_t n;
    double **ref;
  } grads[SF_CHECK_MAX_GRADS] = {
      {"du", DU, s->dtype, n_seq, &g.du},
      {"ddelta", DDELTA, s->dtype, n_seq, &g.ddelta},
      {"dz", DZ, s->dtype, n_seq, &g.dz},
      {"dA", DA, SF_FP32, sf_ref_size_A(&rp->p), &g.dA},
      {"dB", DB, SF_FP32, sf_ref_size_B(&rp->p), &g.dB},
      {"dC", DC, SF_FP32, sf_ref_size_C(&rp->p), &g.dC},
      {"dD", DD, SF_FP32, sf_ref_size_D(&rp->p), &g.dD},
      {"ddelta_bias", DBIAS, SF_FP32, sf_ref_size_D(&rp->p), &g.ddelta_bias},
      {"dh0", DH0, SF_FP32, n_state, &g.dh0},
  };
  size_t most = 0;
  bool ok = true;
  for (int i = 0; i < SF_CHECK_MAX_GRADS; i++) {
    if (!c->present[grads[i].tensor]) continue;
    *grads[i].ref = malloc(grads[i].n * sizeof(double));
    ok = ok && *grads[i].ref;
    if (grads[i].n > most) most = grads[i].n;
  }
  float *got = malloc((most ? most : 1) * sizeof(float));
  sf_status st = ok && got ? SF_OK : sf_fail(SF_ENOMEM, "check: out of memory");
  if (st == SF_OK)
    st = sf_ref_backward(&rp->p, rp->dout, s->d_last_state ? rp->d_last_state : NULL, &g);
  if (st == SF_OK) {
    result->bar = sf_check_backward_bar(s->dtype);
    result->passed = true;
    for (int i = 0; i < SF_CHECK_MAX_GRADS; i++) {
      if (!c->present[grads[i].tensor]) continue;
      sf_convert_to_float(grads[i].type, c->t[grads[i].tensor].host, (int64_t)grads[i].n, got);
      const double error = relerr_f32(got, *grads[i].ref, grads[i].n);
      result->grads[result->count++] = (sf_check_grad){grads[i].name, error};
      result->checksum = XXH3_64bits_withSeed(c->t[grads[i].tensor].host, c->t[grads[i].tensor].bytes,
                                              result->checksum);
      result->passed = result->passed && error <= result->bar;
    }
  }
  for (int i = 0; i < SF_CHECK_MAX_GRADS; i++) free(*grads[i].ref);
  free(got);
  return st;
}

/* The cotangents in their types, and every gradient of the shape poisoned. */
static bool make_backward_tensors(call *c, const random_problem *rp, const sf_check_shape *s) {
  const size_t n_seq = sf_ref_size_u(&rp->p), n_state = sf_ref_size_state(&rp->p);
  const size_t n_dim = sf_ref_size_D(&rp->p);
  return make_typed(&c->t[DOUT], s->dtype, rp->dout, n_seq) &&
         (!s->d_last_state || make_typed(&c->t[DLAST], SF_FP32, rp->d_last_state, n_state)) &&
         make_poisoned(&c->t[DU], s->dtype, n_seq) && make_poisoned(&c->t[DDELTA], s->dtype, n_seq) &&
         (!s->z || make_poisoned(&c->t[DZ], s->dtype, n_seq)) &&
         make_poisoned(&c->t[DA], SF_FP32, sf_ref_size_A(&rp->p)) &&
         make_poisoned(&c->t[DB], SF_FP32, sf_ref_size_B(&rp->p)) &&
         make_poisoned(&c->t[DC], SF_FP32, sf_ref_size_C(&rp->p)) &&
         (!s->D || make_poisoned(&c->t[DD], SF_FP32, n_dim)) &&
         (!s->delta_bias || make_poisoned(&c->t[DBIAS], SF_FP32, n_dim)) &&
         (!s->h0 || make_poisoned(&c->t[DH0], SF_FP32, n_state));
}

sf_status sf_check_bwd(sf_context *ctx, const sf_check_shape *s, const sf_launch *launch,
                       uint64_t seed, sf_check_bwd_result *result) {
  if (!s || !launch || !result) return sf_fail(SF_EINVAL, "sf_check_bwd: shape, launch and result must not be NULL");
  sf_status st = check_shape(s);
  if (st != SF_OK) return st;
  memset(result, 0, sizeof *result);
  random_problem rp;
  st = make_problem(s, seed, &rp);
  if (st != SF_OK) return st;
  round_to(s->dtype, rp.dout, sf_ref_size_u(&rp.p)); /* dout is in T */

  call c = {0};
  bool ok = make_forward_tensors(&c, &rp, s) && make_backward_tensors(&c, &rp, s);
  mark_present(&c);
  if (!ok) st = sf_fail(SF_ENOMEM, "check: out of memory for the inputs");
  const sf_cu *cu = NULL;
  CUstream stream = NULL;
  const bool dev = !launch->on_host;
  if (st == SF_OK && dev) st = start_device(&c, &cu, &stream);
  if (st == SF_OK) {
    /* The forward on the same path saves the states the backward starts its intervals from. */
    sf_scan_bwd_args g = {
        .fwd = forward_args(&c, s, dev), .dout = where(&c, DOUT, dev),
        .d_last_state = where(&c, DLAST, dev), .du = (void *)where(&c, DU, dev),
        .ddelta = (void *)where(&c, DDELTA, dev), .dz = (void *)where(&c, DZ, dev),
        .dA = (float *)where(&c, DA, dev), .dB = (float *)where(&c, DB, dev),
        .dC = (float *)where(&c, DC, dev), .dD = (float *)where(&c, DD, dev),
        .ddelta_bias = (float *)where(&c, DBIAS, dev), .dh0 = (float *)where(&c, DH0, dev),
        .deterministic = s->deterministic};
    sf_launch run = *launch;
    if (dev) run.stream = stream;
    sf_launch fwd_run = run;
    fwd_run.spec = NULL; /* a spec names the backward's variant: the forward keeps its own */
    st = sf_scan_fwd(ctx, &g.fwd, &fwd_run);
    if (st == SF_OK) st = sf_scan_bwd(ctx, &g, &run);
    if (st == SF_OK && dev) st = sf_cu_check(cu->StreamSynchronize(stream), "cuStreamSynchronize");
    if (st == SF_OK && dev) st = download(&c, cu, DU, TENSORS);
  }
  if (st == SF_OK) st = compare_bwd(&c, &rp, s, result);
  if (stream) cu->StreamDestroy(stream);
  free_call(&c, cu);
  random_problem_free(&rp);
  return st;
}
