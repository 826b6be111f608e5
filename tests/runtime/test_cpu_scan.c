/* test_cpu_scan.c: the CPU forward against the float64 reference, for every dtype, flag,
 * layout and thread count, on outputs poisoned with NaN. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cpu/cpu_scan.h"
#include "base/half.h"
#include "runtime/check/reference.h"
#include "runtime/check/random_inputs.h"
#include "runtime/check/relerr.h"

/* Flags of a case; ALL_FLAGS is everything on. */
enum {
  F_B_VAR = 1 << 0,
  F_C_VAR = 1 << 1,
  F_D = 1 << 2,
  F_Z = 1 << 3,
  F_BIAS = 1 << 4,
  F_SOFTPLUS = 1 << 5,
  F_H0 = 1 << 6,
  ALL_FLAGS = (1 << 7) - 1,
};

/* How u, delta, z, out and variable B, C are laid out in memory. */
typedef enum layout {
  CONTIGUOUS, /* every stride 0 */
  PADDED,     /* explicit strides with gaps between rows, channels and batches */
  TRANSPOSED, /* (dim, batch, L) as Mamba slices it, B and C padded */
} layout;

typedef struct scan_case {
  int batch, dim, seqlen, dstate, groups;
  int flags;
  sf_dtype dtype;
  layout lay;
  int threads;
} scan_case;

static double tolerance(sf_dtype dtype) { return dtype == SF_FP32 ? 1e-5 : 5e-3; }

/* The value the kernel will see: fp32 inputs are floats, activations are T. */
static double quantise(double x, sf_dtype dtype) {
  float f = (float)x;
  if (dtype == SF_FP16) f = sf_half_to_float(sf_float_to_half(f));
  if (dtype == SF_BF16) f = sf_bf16_to_float(sf_float_to_bf16(f));
  return f;
}

static void quantise_all(double *x, size_t n, sf_dtype dtype) {
  for (size_t i = 0; x && i < n; i++) x[i] = quantise(x[i], dtype);
}

static float *to_floats(const double *x, size_t n) {
  if (!x) return NULL;
  float *f = malloc(n * sizeof *f);
  cr_assert(f);
  for (size_t i = 0; i < n; i++) f[i] = (float)x[i];
  return f;
}

static float *nan_floats(size_t n) {
  float *f = malloc(n * sizeof *f);
  cr_assert(f);
  for (size_t i = 0; i < n; i++) f[i] = NAN;
  return f;
}

/* A (batch, dim, L) tensor in T at the case's strides. */
typedef struct strided {
  void *data;
  int64_t batch_stride, dim_stride; /* actual */
  int64_t arg_batch, arg_dim;       /* as passed: 0 when contiguous */
  size_t span;                      /* elements */
} strided;

static strided make_strided(const scan_case *c) {
  strided s = {0};
  int64_t L = c->seqlen;
  switch (c->lay) {
    case CONTIGUOUS: s.dim_stride = L, s.batch_stride = c->dim * L; break;
    case PADDED: s.dim_stride = L + 3, s.batch_stride = c->dim * (L + 3) + 5; break;
    case TRANSPOSED: s.batch_stride = L + 1, s.dim_stride = c->batch * (L + 1); break;
  }
  if (c->lay != CONTIGUOUS) s.arg_batch = s.batch_stride, s.arg_dim = s.dim_stride;
  s.span = (size_t)((c->batch - 1) * s.batch_stride + (c->dim - 1) * s.dim_stride + L);
  s.data = malloc(s.span * (size_t)sf_dtype_size(c->dtype));
  cr_assert(s.data);
  return s;
}

static void fill_nan(void *data, size_t n, sf_dtype dtype) {
  float *nan = nan_floats(n);
  sf_convert_from_float(dtype, nan, (int64_t)n, data);
  free(nan);
}

/* Writes the contiguous (batch, dim, L) doubles x into s. */
static void pack(const scan_case *c, const double *x, strided *s) {
  fill_nan(s->data, s->span, c->dtype);
  int64_t L = c->seqlen;
  float *row = malloc((size_t)L * sizeof *row);
  cr_assert(row);
  for (int b = 0; b < c->batch; b++)
    for (int d = 0; d < c->dim; d++) {
      for (int64_t t = 0; t < L; t++) row[t] = (float)x[((size_t)b * c->dim + d) * L + t];
      size_t at = (size_t)(b * s->batch_stride + d * s->dim_stride);
      sf_convert_from_float(c->dtype, row, L,
                            (char *)s->data + at * (size_t)sf_dtype_size(c->dtype));
    }
  free(row);
}

/* Reads s back as contiguous floats. */
static float *unpack(const scan_case *c, const strided *s) {
  int64_t L = c->seqlen;
  float *x = malloc((size_t)c->batch * c->dim * L * sizeof *x);
  cr_assert(x);
  for (int b = 0; b < c->batch; b++)
    for (int d = 0; d < c->dim; d++) {
      size_t at = (size_t)(b * s->batch_stride + d * s->dim_stride);
      sf_convert_to_float(c->dtype, (const char *)s->data + at * (size_t)sf_dtype_size(c->dtype),
                          L, x + ((size_t)b * c->dim + d) * L);
    }
  return x;
}

/* A variable B or C (batch, G, N, L) in T; padded for every layout but CONTIGUOUS. */
typedef struct strided_bc {
  void *data;
  int64_t batch_stride, group_stride, state_stride, arg_batch, arg_group, arg_state;
} strided_bc;

static strided_bc make_bc(const scan_case *c, const double *x) {
  strided_bc s = {0};
  int64_t L = c->seqlen, pad = c->lay == CONTIGUOUS ? 0 : 2;
  s.state_stride = L + pad;
  s.group_stride = c->dstate * s.state_stride + pad;
  s.batch_stride = c->groups * s.group_stride + pad;
  if (c->lay != CONTIGUOUS)
    s.arg_batch = s.batch_stride, s.arg_group = s.group_stride, s.arg_state = s.state_stride;
  size_t span = (size_t)(c->batch * s.batch_stride);
  s.data = malloc(span * (size_t)sf_dtype_size(c->dtype));
  cr_assert(s.data);
  fill_nan(s.data, span, c->dtype); /* a read of a gap would poison the result */
  float *row = malloc((size_t)L * sizeof *row);
  cr_assert(row);
  for (int b = 0; b < c->batch; b++)
    for (int g = 0; g < c->groups; g++)
      for (int n = 0; n < c->dstate; n++) {
        const double *src = x + (((size_t)b * c->groups + g) * c->dstate + n) * L;
        for (int64_t t = 0; t < L; t++) row[t] = (float)src[t];
        size_t at = (size_t)(b * s.batch_stride + g * s.group_stride + n * s.state_stride);
        sf_convert_from_float(c->dtype, row, L,
                              (char *)s.data + at * (size_t)sf_dtype_size(c->dtype));
      }
  free(row);
  return s;
}

/* The reference's state after the first `len` steps: the last state of the prefix. */
static void reference_prefix_state(const sf_ref_problem *p, int len, double *state) {
  sf_ref_problem q = *p;
  q.seqlen = len;
  size_t rows = (size_t)p->batch * p->dim, brows = (size_t)p->batch * p->groups * p->dstate;
  double *u = malloc(rows * len * sizeof *u), *delta = malloc(rows * len * sizeof *delta);
  double *z = malloc(rows * len * sizeof *z), *B = NULL, *C = NULL;
  cr_assert(u && delta && z);
  for (size_t r = 0; r < rows; r++) {
    memcpy(u + r * len, p->u + r * p->seqlen, len * sizeof *u);
    memcpy(delta + r * len, p->delta + r * p->seqlen, len * sizeof *delta);
    if (p->has_z) memcpy(z + r * len, p->z + r * p->seqlen, len * sizeof *z);
  }
  q.u = u, q.delta = delta, q.z = p->has_z ? z : NULL;
  if (p->B_var) {
    B = malloc(brows * len * sizeof *B);
    cr_assert(B);
    for (size_t r = 0; r < brows; r++) memcpy(B + r * len, p->B + r * p->seqlen, len * sizeof *B);
    q.B = B;
  }
  if (p->C_var) {
    C = malloc(brows * len * sizeof *C);
    cr_assert(C);
    for (size_t r = 0; r < brows; r++) memcpy(C + r * len, p->C + r * p->seqlen, len * sizeof *C);
    q.C = C;
  }
  cr_assert_eq(sf_ref_forward(&q, NULL, state), SF_OK, "%s", sf_last_error());
  free(u), free(delta), free(z), free(B), free(C);
}

static void check_case(const scan_case *c, uint64_t seed) {
  char label[160];
  snprintf(label, sizeof label, "batch %d dim %d L %d N %d G %d flags 0x%02x %s layout %d threads %d",
           c->batch, c->dim, c->seqlen, c->dstate, c->groups, c->flags, sf_dtype_name(c->dtype),
           (int)c->lay, c->threads);
  sf_ref_problem shape = {
      .batch = c->batch, .dim = c->dim, .seqlen = c->seqlen, .dstate = c->dstate,
      .groups = c->groups, .B_var = c->flags & F_B_VAR, .C_var = c->flags & F_C_VAR,
      .has_D = c->flags & F_D, .has_z = c->flags & F_Z, .has_delta_bias = c->flags & F_BIAS,
      .softplus = c->flags & F_SOFTPLUS, .has_h0 = c->flags & F_H0,
  };
  random_problem rp;
  cr_assert(random_problem_make(&rp, &shape, seed % 2 ? RANDOM_A_NEG_INDEX
                                                      : RANDOM_A_NEG_EXP_UNIFORM, seed));
  const sf_ref_problem *p = &rp.p;
  size_t nu = sf_ref_size_u(p), nA = sf_ref_size_A(p), nB = sf_ref_size_B(p),
         nC = sf_ref_size_C(p), nD = sf_ref_size_D(p), ns = sf_ref_size_state(p);

  /* The reference computes the function of exactly the inputs the scan receives. */
  const sf_dtype T = c->dtype;
  quantise_all(rp.u, nu, T), quantise_all(rp.delta, nu, T), quantise_all(rp.z, nu, T);
  quantise_all(rp.B, nB, p->B_var ? T : SF_FP32), quantise_all(rp.C, nC, p->C_var ? T : SF_FP32);
  quantise_all(rp.A, nA, SF_FP32), quantise_all(rp.D, nD, SF_FP32);
  quantise_all(rp.delta_bias, nD, SF_FP32), quantise_all(rp.h0, ns, SF_FP32);

  strided u = make_strided(c), delta = make_strided(c), out = make_strided(c), z = {0};
  pack(c, rp.u, &u), pack(c, rp.delta, &delta), fill_nan(out.data, out.span, T);
  if (p->has_z) z = make_strided(c), pack(c, rp.z, &z);
  strided_bc Bv = {0}, Cv = {0};
  float *B_fixed = NULL, *C_fixed = NULL;
  if (p->B_var) Bv = make_bc(c, rp.B); else B_fixed = to_floats(rp.B, nB);
  if (p->C_var) Cv = make_bc(c, rp.C); else C_fixed = to_floats(rp.C, nC);
  float *A = to_floats(rp.A, nA), *D = to_floats(rp.D, nD);
  float *bias = to_floats(rp.delta_bias, nD), *h0 = to_floats(rp.h0, ns);
  const int64_t nsaved = sf_scan_saved_states(c->seqlen);
  const size_t rows = (size_t)c->batch * c->dim;
  float *last = nan_floats(ns), *saved = nan_floats(rows * nsaved * c->dstate);

  sf_scan_fwd_args args = {
      .batch = c->batch, .dim = c->dim, .seqlen = c->seqlen, .dstate = c->dstate,
      .groups = c->groups, .dtype = T, .delta_softplus = p->softplus,
      .u = u.data, .u_batch_stride = u.arg_batch, .u_dim_stride = u.arg_dim,
      .delta = delta.data, .delta_batch_stride = delta.arg_batch,
      .delta_dim_stride = delta.arg_dim, .A = A,
      .B = p->B_var ? Bv.data : (const void *)B_fixed, .B_var = p->B_var,
      .B_batch_stride = Bv.arg_batch, .B_group_stride = Bv.arg_group,
      .B_state_stride = Bv.arg_state,
      .C = p->C_var ? Cv.data : (const void *)C_fixed, .C_var = p->C_var,
      .C_batch_stride = Cv.arg_batch, .C_group_stride = Cv.arg_group,
      .C_state_stride = Cv.arg_state,
      .D = D, .delta_bias = bias, .z = z.data, .z_batch_stride = z.arg_batch,
      .z_dim_stride = z.arg_dim, .h0 = h0,
      .out = out.data, .out_batch_stride = out.arg_batch, .out_dim_stride = out.arg_dim,
      .last_state = last, .saved_states = saved,
  };
  sf_status st = sf_cpu_scan_fwd(&args, c->threads);
  cr_assert_eq(st, SF_OK, "%s: %s", label, sf_last_error());

  double *out_ref = malloc(nu * sizeof *out_ref), *last_ref = malloc(ns * sizeof *last_ref);
  cr_assert(out_ref && last_ref);
  cr_assert_eq(sf_ref_forward(p, out_ref, last_ref), SF_OK, "%s", sf_last_error());

  float *out_f = unpack(c, &out);
  double err = relerr_f32(out_f, out_ref, nu);
  cr_expect(err <= tolerance(T), "%s: out relative error %.3g", label, err);
  /* The state sees the same inputs in fp32 whatever T is. */
  err = relerr_f32(last, last_ref, ns);
  cr_expect(err <= 1e-5, "%s: last_state relative error %.3g", label, err);

  /* Saved state k is the state after min((k + 1) * interval, L) steps. */
  const int64_t interval = sf_scan_state_interval(c->seqlen);
  double *state_ref = malloc(ns * sizeof *state_ref);
  float *saved_k = malloc(ns * sizeof *saved_k);
  cr_assert(state_ref && saved_k);
  for (int64_t k = 0; k < nsaved; k++) {
    int64_t len = (k + 1) * interval < c->seqlen ? (k + 1) * interval : c->seqlen;
    reference_prefix_state(p, (int)len, state_ref);
    for (size_t r = 0; r < rows; r++)
      memcpy(saved_k + r * c->dstate, saved + (r * nsaved + k) * c->dstate,
             c->dstate * sizeof *saved_k);
    err = relerr_f32(saved_k, state_ref, ns);
    cr_expect(err <= 1e-5, "%s: saved state %lld relative error %.3g", label, (long long)k, err);
  }

  /* Gaps between the rows of out are never written. */
  float *all_out = malloc(out.span * sizeof *all_out);
  cr_assert(all_out);
  sf_convert_to_float(T, out.data, (int64_t)out.span, all_out);
  size_t written = 0;
  for (size_t i = 0; i < out.span; i++) written += !isnan(all_out[i]);
  cr_expect_eq(written, nu, "%s: %zu elements of out written, expected %zu", label, written, nu);

  free(all_out), free(state_ref), free(saved_k), free(out_f), free(out_ref), free(last_ref);
  free(u.data), free(delta.data), free(out.data), free(z.data), free(Bv.data), free(Cv.data);
  free(B_fixed), free(C_fixed), free(A), free(D), free(bias), free(h0), free(last), free(saved);
  random_problem_free(&rp);
}

static const sf_dtype dtypes[] = {SF_FP32, SF_FP16, SF_BF16};

Test(cpu_scan, every_flag_combination_fp32) {
  for (int flags = 0; flags <= ALL_FLAGS; flags++) {
    scan_case c = {2, 4, 7, 5, 2, flags, SF_FP32, PADDED, 2};
    check_case(&c, 100 + (uint64_t)flags);
  }
}

Test(cpu_scan, shapes_dtypes_and_layouts) {
  /* batch, dim, L, N, G: L of 1, 7, 49, 196 and 2049 (two saved states); N from 1 to 64. */
  static const int shapes[][5] = {
      {1, 1, 1, 1, 1}, {2, 4, 7, 16, 2}, {2, 6, 49, 8, 2}, {1, 4, 196, 16, 1},
      {2, 2, 2049, 4, 2}, {1, 3, 65, 64, 3},
  };
  static const int flag_sets[] = {ALL_FLAGS, F_B_VAR | F_C_VAR | F_D | F_BIAS | F_SOFTPLUS,
                                  F_C_VAR | F_Z | F_H0, F_B_VAR | F_BIAS, 0};
  uint64_t seed = 1;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++)
      for (size_t f = 0; f < sizeof flag_sets / sizeof flag_sets[0]; f++) {
        scan_case c = {shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], shapes[s][4],
                       flag_sets[f], dtypes[t], (layout)((s + f) % 3), (int)(f % 3)};
        check_case(&c, seed++);
      }
}

Test(cpu_scan, the_largest_state) {
  scan_case c = {1, 2, 70, 256, 1, ALL_FLAGS, SF_BF16, PADDED, 0};
  check_case(&c, 7);
}

/* Rows are independent, so the thread count must not change a single bit. */
Test(cpu_scan, thread_count_does_not_change_the_result) {
  enum { BATCH = 3, DIM = 5, L = 33, N = 16 };
  sf_ref_problem shape = {.batch = BATCH, .dim = DIM, .seqlen = L, .dstate = N, .groups = 1,
                          .B_var = true, .C_var = true, .has_D = true, .softplus = true,
                          .has_delta_bias = true};
  random_problem rp;
  cr_assert(random_problem_make(&rp, &shape, RANDOM_A_NEG_INDEX, 42));
  size_t nu = sf_ref_size_u(&rp.p);
  float *u = to_floats(rp.u, nu), *delta = to_floats(rp.delta, nu);
  float *A = to_floats(rp.A, sf_ref_size_A(&rp.p)), *B = to_floats(rp.B, sf_ref_size_B(&rp.p));
  float *C = to_floats(rp.C, sf_ref_size_C(&rp.p)), *D = to_floats(rp.D, DIM);
  float *bias = to_floats(rp.delta_bias, DIM);
  float first[BATCH * DIM * L], again[BATCH * DIM * L];
  sf_scan_fwd_args a = {.batch = BATCH, .dim = DIM, .seqlen = L, .dstate = N, .groups = 1,
                        .dtype = SF_FP32, .delta_softplus = true, .u = u, .delta = delta,
                        .A = A, .B = B, .B_var = true, .C = C, .C_var = true, .D = D,
                        .delta_bias = bias, .out = first};
  cr_assert_eq(sf_cpu_scan_fwd(&a, 1), SF_OK, "%s", sf_last_error());
  const int counts[] = {2, 4, 15, 16, 1000, 0, -1};
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
    a.out = again;
    cr_assert_eq(sf_cpu_scan_fwd(&a, counts[i]), SF_OK, "%s", sf_last_error());
    cr_expect(memcmp(first, again, sizeof first) == 0, "%d threads differ from 1",
              counts[i]);
  }
  free(u), free(delta), free(A), free(B), free(C), free(D), free(bias);
  random_problem_free(&rp);
}

Test(cpu_scan, nothing_to_do_touches_nothing) {
  float out[8], last[8], saved[8];
  for (int i = 0; i < 8; i++) out[i] = last[i] = saved[i] = NAN;
  const float in[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  sf_scan_fwd_args a = {.batch = 0, .dim = 2, .seqlen = 2, .dstate = 2, .groups = 1,
                        .dtype = SF_FP32, .u = in, .delta = in, .A = in, .B = in, .C = in,
                        .out = out, .last_state = last, .saved_states = saved};
  cr_expect_eq(sf_cpu_scan_fwd(&a, 0), SF_OK, "%s", sf_last_error());
  a.batch = 1, a.seqlen = 0;
  cr_expect_eq(sf_cpu_scan_fwd(&a, 0), SF_OK, "%s", sf_last_error());
  a.seqlen = 2, a.dim = 0;
  cr_expect_eq(sf_cpu_scan_fwd(&a, 0), SF_OK, "%s", sf_last_error());
  sf_scan_fwd_args empty = {.batch = 0, .dim = 4, .seqlen = 9, .dstate = 4, .groups = 1,
                            .dtype = SF_BF16};
  cr_expect_eq(sf_cpu_scan_fwd(&empty, 0), SF_OK, "no pointers at all: %s", sf_last_error());
  for (int i = 0; i < 8; i++)
    cr_expect(isnan(out[i]) && isnan(last[i]) && isnan(saved[i]), "element %d was written", i);
}

Test(cpu_scan, bad_arguments_are_refused_before_anything_is_written) {
  float out[8];
  for (int i = 0; i < 8; i++) out[i] = NAN;
  const float in[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  sf_scan_fwd_args a = {.batch = 1, .dim = 2, .seqlen = 4, .dstate = 2, .groups = 1,
                        .dtype = SF_FP32, .u = in, .delta = in, .A = in, .B = in, .C = in,
                        .out = out, .out_dim_stride = 3};
  cr_expect_eq(sf_cpu_scan_fwd(&a, 1), SF_EINVAL);
  cr_expect(strstr(sf_last_error(), "out_dim_stride") != NULL, "%s", sf_last_error());
  for (int i = 0; i < 8; i++) cr_expect(isnan(out[i]), "element %d was written", i);
}
