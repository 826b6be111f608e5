/* test_validate_bwd.c: every bad argument of a backward call is refused with its name. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "runtime/args/scan_bwd_args.h"
#include "scanforge/scanforge.h"

enum { BATCH = 2, DIM = 4, L = 7, N = 3, G = 2 };

/* Host buffers large enough for the valid problem; validation never reads them. */
static float buf_u[BATCH * DIM * L], buf_delta[BATCH * DIM * L], buf_z[BATCH * DIM * L];
static float buf_B[BATCH * G * N * L], buf_C[BATCH * G * N * L], buf_A[DIM * N];
static float buf_D[DIM], buf_bias[DIM], buf_h0[BATCH * DIM * N], buf_saved[BATCH * DIM * N];
static float buf_dout[BATCH * DIM * L], buf_dlast[BATCH * DIM * N];
static float buf_du[BATCH * DIM * L], buf_ddelta[BATCH * DIM * L], buf_dz[BATCH * DIM * L];
static float buf_dA[DIM * N], buf_dB[BATCH * G * N * L], buf_dC[BATCH * G * N * L];
static float buf_dD[DIM], buf_dbias[DIM], buf_dh0[BATCH * DIM * N];

/* Every input and every gradient, contiguous; no out, as the backward never reads it. */
static sf_scan_bwd_args valid_args(void) {
  sf_scan_bwd_args a = {
      .fwd = {.batch = BATCH, .dim = DIM, .seqlen = L, .dstate = N, .groups = G,
              .dtype = SF_FP32, .delta_softplus = true, .u = buf_u, .delta = buf_delta,
              .A = buf_A, .B = buf_B, .B_var = true, .C = buf_C, .C_var = true, .D = buf_D,
              .delta_bias = buf_bias, .z = buf_z, .h0 = buf_h0, .saved_states = buf_saved},
      .dout = buf_dout, .d_last_state = buf_dlast,
      .du = buf_du, .ddelta = buf_ddelta, .dz = buf_dz,
      .dA = buf_dA, .dB = buf_dB, .dC = buf_dC, .dD = buf_dD, .ddelta_bias = buf_dbias,
      .dh0 = buf_dh0,
  };
  return a;
}

/* The call fails with SF_EINVAL and the message starts with "<name>:". */
static void expect_refused(const sf_scan_bwd_args *a, const char *name, const char *label) {
  sf_status st = sf_scan_bwd_validate(a);
  cr_expect_eq(st, SF_EINVAL, "%s: got %s (%s)", label, sf_status_name(st), sf_last_error());
  char prefix[64];
  snprintf(prefix, sizeof prefix, "%s:", name);
  cr_expect(strncmp(sf_last_error(), prefix, strlen(prefix)) == 0,
            "%s: message '%s' should start with '%s'", label, sf_last_error(), prefix);
}

static void expect_accepted(const sf_scan_bwd_args *a, const char *label) {
  sf_status st = sf_scan_bwd_validate(a);
  cr_expect_eq(st, SF_OK, "%s: got %s (%s)", label, sf_status_name(st), sf_last_error());
}

Test(validate_bwd, the_base_problem_is_valid) {
  sf_scan_bwd_args a = valid_args();
  expect_accepted(&a, "base");
}

Test(validate_bwd, a_null_args_pointer) {
  cr_expect_eq(sf_scan_bwd_validate(NULL), SF_EINVAL);
  cr_expect(strncmp(sf_last_error(), "args:", 5) == 0, "%s", sf_last_error());
}

/* One change to the valid problem, and the argument the message must name. */
typedef struct bad_case {
  const char *label;
  const char *name;
  void (*apply)(sf_scan_bwd_args *a);
} bad_case;

#define CASE(label_, name_, body)                       \
  static void apply_##label_(sf_scan_bwd_args *a) body \
  static const bad_case case_##label_ = {#label_, name_, apply_##label_};

/* The forward's arguments are checked as the forward checks them. */
CASE(fwd_negative_batch, "batch", { a->fwd.batch = -1; })
CASE(fwd_dstate_zero, "dstate", { a->fwd.dstate = 0; })
CASE(fwd_groups_not_dividing_dim, "groups", { a->fwd.groups = 3; })
CASE(fwd_unknown_dtype, "dtype", { a->fwd.dtype = (sf_dtype)9; })
CASE(fwd_null_u, "u", { a->fwd.u = NULL; })
CASE(fwd_null_delta, "delta", { a->fwd.delta = NULL; })
CASE(fwd_null_A, "A", { a->fwd.A = NULL; })
CASE(fwd_null_B, "B", { a->fwd.B = NULL; })
CASE(fwd_null_C, "C", { a->fwd.C = NULL; })
CASE(fwd_u_dim_stride_below_L, "u_dim_stride", { a->fwd.u_dim_stride = L - 1; })
CASE(fwd_negative_delta_batch_stride, "delta_batch_stride", { a->fwd.delta_batch_stride = -2; })
CASE(fwd_z_dim_stride_below_L, "z_dim_stride", { a->fwd.z_dim_stride = 3; })
CASE(fwd_B_group_stride_below_states, "B_group_stride", { a->fwd.B_group_stride = N * L - 1; })
CASE(fwd_C_stride_for_fixed_C, "C_state_stride", { a->fwd.C_var = false; a->fwd.C_state_stride = L; })
/* What the backward needs besides the forward's inputs. */
CASE(null_saved_states, "saved_states", { a->fwd.saved_states = NULL; })
CASE(null_dout, "dout", { a->dout = NULL; })
/* Gradients of inputs that are absent. */
CASE(dz_without_z, "dz", { a->fwd.z = NULL; })
CASE(dD_without_D, "dD", { a->fwd.D = NULL; })
CASE(ddelta_bias_without_delta_bias, "ddelta_bias", { a->fwd.delta_bias = NULL; })
CASE(dh0_without_h0, "dh0", { a->fwd.h0 = NULL; })
/* Negative strides. */
CASE(negative_dout_batch_stride, "dout_batch_stride", { a->dout_batch_stride = -1; })
CASE(negative_dout_dim_stride, "dout_dim_stride", { a->dout_dim_stride = -1; })
CASE(negative_du_batch_stride, "du_batch_stride", { a->du_batch_stride = -1; })
CASE(negative_du_dim_stride, "du_dim_stride", { a->du_dim_stride = -1; })
CASE(negative_ddelta_batch_stride, "ddelta_batch_stride", { a->ddelta_batch_stride = -1; })
CASE(negative_ddelta_dim_stride, "ddelta_dim_stride", { a->ddelta_dim_stride = -1; })
CASE(negative_dz_batch_stride, "dz_batch_stride", { a->dz_batch_stride = -1; })
CASE(negative_dz_dim_stride, "dz_dim_stride", { a->dz_dim_stride = -1; })
/* Strides given for a gradient that is not asked for. */
CASE(du_stride_without_du, "du_dim_stride", { a->du = NULL; a->du_dim_stride = L; })
CASE(ddelta_stride_without_ddelta, "ddelta_batch_stride",
     { a->ddelta = NULL; a->ddelta_batch_stride = DIM * L; })
CASE(dz_stride_without_dz, "dz_dim_stride", { a->dz = NULL; a->dz_dim_stride = 2 * L; })
/* Rows of L elements that would overlap. */
CASE(dout_dim_stride_below_L, "dout_dim_stride", { a->dout_dim_stride = L - 1; })
CASE(dout_batch_stride_below_rows, "dout_batch_stride", { a->dout_batch_stride = DIM * L - 1; })
CASE(du_dim_stride_below_L, "du_dim_stride", { a->du_dim_stride = 1; })
CASE(du_batch_stride_equal_to_dim_stride, "du_batch_stride",
     { a->du_dim_stride = L; a->du_batch_stride = L; })
CASE(ddelta_dim_stride_below_L, "ddelta_dim_stride", { a->ddelta_dim_stride = 6; })
CASE(ddelta_transposed_too_tight, "ddelta_dim_stride",
     { a->ddelta_batch_stride = L; a->ddelta_dim_stride = BATCH * L - 1; })
CASE(dz_batch_stride_below_rows, "dz_batch_stride", { a->dz_batch_stride = 3 * L; })
/* Sizes beyond int64 bytes. */
CASE(dout_span_overflows, "dout", { a->dout_batch_stride = INT64_MAX / 2; })
CASE(dz_span_overflows, "dz", { a->dz_dim_stride = INT64_MAX / 4; })
/* With seqlen 0 there are no saved states to bound the state-shaped d_last_state. */
CASE(d_last_state_bytes_overflow, "d_last_state", {
  a->fwd.dtype = SF_BF16; a->fwd.batch = INT64_C(1) << 53; a->fwd.dim = 1; a->fwd.seqlen = 0;
  a->fwd.dstate = 256; a->fwd.groups = 1; a->fwd.h0 = NULL; a->dh0 = NULL;
})
/* bf16 keeps B (2 bytes an element) within int64 bytes while the fp32 dB is not. */
CASE(dB_bytes_overflow, "dB", {
  a->fwd.dtype = SF_BF16; a->fwd.batch = 1; a->fwd.dim = 1; a->fwd.groups = 1; a->fwd.dstate = 1;
  a->fwd.seqlen = INT64_C(1) << 61;
})
CASE(dC_bytes_overflow, "dC", {
  a->fwd.dtype = SF_BF16; a->fwd.batch = 1; a->fwd.dim = 1; a->fwd.groups = 1; a->fwd.dstate = 1;
  a->fwd.seqlen = INT64_C(1) << 61; a->dB = NULL;
})

static const bad_case *const bad_cases[] = {
    &case_fwd_negative_batch, &case_fwd_dstate_zero, &case_fwd_groups_not_dividing_dim,
    &case_fwd_unknown_dtype, &case_fwd_null_u, &case_fwd_null_delta, &case_fwd_null_A,
    &case_fwd_null_B, &case_fwd_null_C, &case_fwd_u_dim_stride_below_L,
    &case_fwd_negative_delta_batch_stride, &case_fwd_z_dim_stride_below_L,
    &case_fwd_B_group_stride_below_states, &case_fwd_C_stride_for_fixed_C,
    &case_null_saved_states, &case_null_dout, &case_dz_without_z, &case_dD_without_D,
    &case_ddelta_bias_without_delta_bias, &case_dh0_without_h0,
    &case_negative_dout_batch_stride, &case_negative_dout_dim_stride,
    &case_negative_du_batch_stride, &case_negative_du_dim_stride,
    &case_negative_ddelta_batch_stride, &case_negative_ddelta_dim_stride,
    &case_negative_dz_batch_stride, &case_negative_dz_dim_stride, &case_du_stride_without_du,
    &case_ddelta_stride_without_ddelta, &case_dz_stride_without_dz,
    &case_dout_dim_stride_below_L, &case_dout_batch_stride_below_rows,
    &case_du_dim_stride_below_L, &case_du_batch_stride_equal_to_dim_stride,
    &case_ddelta_dim_stride_below_L, &case_ddelta_transposed_too_tight,
    &case_dz_batch_stride_below_rows, &case_dout_span_overflows, &case_dz_span_overflows,
    &case_d_last_state_bytes_overflow, &case_dB_bytes_overflow, &case_dC_bytes_overflow,
};

Test(validate_bwd, each_bad_argument_is_named) {
  for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
    sf_scan_bwd_args a = valid_args();
    bad_cases[i]->apply(&a);
    expect_refused(&a, bad_cases[i]->name, bad_cases[i]->label);
  }
}

Test(validate_bwd, the_messages_say_what_was_expected_and_what_came) {
  sf_scan_bwd_args a = valid_args();
  a.fwd.z = NULL;
  cr_assert_eq(sf_scan_bwd_validate(&a), SF_EINVAL);
  cr_expect_str_eq(sf_last_error(), "dz: expected NULL because fwd.z is NULL, got a pointer");

  a = valid_args();
  a.fwd.seqlen = 196;
  a.du_dim_stride = 100;
  cr_assert_eq(sf_scan_bwd_validate(&a), SF_EINVAL);
  cr_expect_str_eq(sf_last_error(),
                   "du_dim_stride: expected 0 or >= seqlen (196), got 100 (rows of du would overlap)");
}

Test(validate_bwd, out_and_last_state_are_not_needed) {
  sf_scan_bwd_args a = valid_args();
  cr_assert_null(a.fwd.out);
  expect_accepted(&a, "no out");
  a.fwd.out = buf_u;
  a.fwd.out_dim_stride = 1; /* would be refused by the forward: never read here */
  a.fwd.out_batch_stride = -5;
  a.fwd.last_state = buf_h0;
  expect_accepted(&a, "an out with strides the forward would refuse");
  cr_expect_eq(a.fwd.out_dim_stride, 1, "validation must not change the caller's arguments");
}

Test(validate_bwd, layouts_that_are_accepted) {
  sf_scan_bwd_args a = valid_args();
  a.dout_dim_stride = L + 2; /* padded rows */
  a.dout_batch_stride = DIM * (L + 2) + 5;
  a.du_dim_stride = 2 * L;
  a.ddelta_batch_stride = DIM * L + 1;
  a.dz_dim_stride = L + 1;
  a.dz_batch_stride = DIM * (L + 1);
  expect_accepted(&a, "padded strides");

  a = valid_args();
  a.du_batch_stride = L; /* Mamba's layout: a slice of a (dim, batch, L) buffer */
  a.du_dim_stride = BATCH * L;
  a.dout_batch_stride = L;
  a.dout_dim_stride = BATCH * L;
  expect_accepted(&a, "batch inside dim");

  a = valid_args();
  a.du = a.ddelta = a.dz = NULL;
  a.dA = a.dB = a.dC = a.dD = a.ddelta_bias = a.dh0 = NULL;
  a.d_last_state = NULL;
  expect_accepted(&a, "no gradient asked for");

  a = valid_args();
  a.fwd.B_var = a.fwd.C_var = false; /* dB, dC are (dim, N) */
  a.fwd.groups = 3;                  /* fixed B and C do not use groups */
  expect_accepted(&a, "fixed B and C");

  a = valid_args();
  a.fwd.z = a.fwd.D = a.fwd.delta_bias = a.fwd.h0 = NULL;
  a.dz = NULL;
  a.dD = a.ddelta_bias = a.dh0 = NULL;
  a.fwd.delta_softplus = false;
  expect_accepted(&a, "no optional input, no gradient of one");

  a = valid_args();
  a.fwd.dtype = SF_BF16;
  a.fwd.dstate = 256;
  expect_accepted(&a, "bf16, N = 256");
}

Test(validate_bwd, nothing_to_do_needs_no_pointers) {
  sf_scan_bwd_args empty = {.fwd = {.dstate = 16, .groups = 1, .dtype = SF_FP32, .B_var = true,
                                    .C_var = true}};
  empty.fwd.batch = 0, empty.fwd.dim = 8, empty.fwd.seqlen = 100;
  expect_accepted(&empty, "batch = 0");
  empty.fwd.batch = 3, empty.fwd.dim = 8, empty.fwd.seqlen = 0;
  expect_accepted(&empty, "seqlen = 0");
  empty.fwd.batch = 3, empty.fwd.dim = 0, empty.fwd.seqlen = 10;
  expect_accepted(&empty, "dim = 0");
  /* Scalars and gradients of absent inputs are still checked. */
  empty.dh0 = buf_dh0;
  expect_refused(&empty, "dh0", "dh0 without h0 with no work");
  empty.dh0 = NULL;
  empty.fwd.dstate = 0;
  expect_refused(&empty, "dstate", "dstate with no work");
}

Test(validate_bwd, resolve_fills_the_contiguous_strides) {
  sf_scan_bwd_args a = valid_args(), r;
  a.du_dim_stride = 10; /* explicit: kept, and the batch stride follows it */
  a.fwd.B_state_stride = 9;
  cr_assert_eq(sf_scan_bwd_prepare(&a, &r), SF_OK, "%s", sf_last_error());
  cr_expect_eq(r.dout_dim_stride, L);
  cr_expect_eq(r.dout_batch_stride, DIM * L);
  cr_expect_eq(r.du_dim_stride, 10);
  cr_expect_eq(r.du_batch_stride, DIM * 10);
  cr_expect_eq(r.ddelta_dim_stride, L);
  cr_expect_eq(r.ddelta_batch_stride, DIM * L);
  cr_expect_eq(r.dz_dim_stride, L);
  cr_expect_eq(r.dz_batch_stride, DIM * L);
  /* and the forward's, as sf_scan_fwd_resolve does them */
  cr_expect_eq(r.fwd.u_dim_stride, L);
  cr_expect_eq(r.fwd.z_batch_stride, DIM * L);
  cr_expect_eq(r.fwd.B_group_stride, N * 9);
  cr_expect_eq(r.fwd.C_batch_stride, G * N * L);
  cr_expect_eq(r.dA, buf_dA, "pointers are kept");

  a = valid_args(); /* absent tensors keep 0 strides */
  a.du = a.dz = NULL;
  cr_assert_eq(sf_scan_bwd_prepare(&a, &r), SF_OK, "%s", sf_last_error());
  cr_expect_eq(r.du_dim_stride, 0);
  cr_expect_eq(r.du_batch_stride, 0);
  cr_expect_eq(r.dz_dim_stride, 0);

  a.dout = NULL; /* prepare refuses what validate refuses */
  cr_expect_eq(sf_scan_bwd_prepare(&a, &r), SF_EINVAL);
}

Test(validate_bwd, sf_scan_bwd_validates_before_running_anywhere) {
  sf_context *ctx;
  cr_assert_eq(sf_context_create(&(sf_context_options){.cache_memory_only = true}, &ctx), SF_OK);
  sf_scan_bwd_args a = valid_args();
  a.dout = NULL;
  sf_launch device = {.on_host = false}, host = {.on_host = true, .host_threads = 1};
  cr_expect_eq(sf_scan_bwd(ctx, &a, &device), SF_EINVAL, "device: %s", sf_last_error());
  cr_expect(strstr(sf_last_error(), "dout:") != NULL, "%s", sf_last_error());
  cr_expect_eq(sf_scan_bwd(ctx, &a, &host), SF_EINVAL, "host: %s", sf_last_error());
  cr_expect(strstr(sf_last_error(), "dout:") != NULL, "%s", sf_last_error());
  cr_expect_eq(sf_scan_bwd(NULL, &a, &host), SF_EINVAL);
  cr_expect(strncmp(sf_last_error(), "ctx:", 4) == 0, "%s", sf_last_error());
  a = valid_args();
  cr_expect_eq(sf_scan_bwd(ctx, &a, NULL), SF_EINVAL);
  cr_expect(strncmp(sf_last_error(), "launch:", 7) == 0, "%s", sf_last_error());
  /* Nothing to do is done on either path without a kernel. */
  a.fwd.batch = 0;
  cr_expect_eq(sf_scan_bwd(ctx, &a, &device), SF_OK, "%s", sf_last_error());
  sf_context_destroy(ctx);
}

/* The shape of a call (sf_scan_bwd_shape, sf_scan_fwd_shape) checks the same arguments
 * first, naming the wrong one, before it looks for a GPU. */
Test(validate_bwd, the_shape_of_a_call_validates_first) {
  sf_context *ctx;
  cr_assert_eq(sf_context_create(&(sf_context_options){.cache_memory_only = true}, &ctx), SF_OK);
  sf_launch_shape shape;
  sf_scan_bwd_args a = valid_args();
  a.dout = NULL;
  cr_expect_eq(sf_scan_bwd_shape(ctx, &a, NULL, &shape), SF_EINVAL);
  cr_expect(strstr(sf_last_error(), "dout:") != NULL, "%s", sf_last_error());
  a = valid_args();
  a.fwd.u = NULL;
  cr_expect_eq(sf_scan_fwd_shape(ctx, &a.fwd, NULL, &shape), SF_EINVAL);
  cr_expect(strstr(sf_last_error(), "u:") != NULL, "%s", sf_last_error());
  a = valid_args();
  cr_expect_eq(sf_scan_bwd_shape(NULL, &a, NULL, &shape), SF_EINVAL);
  cr_expect(strncmp(sf_last_error(), "ctx:", 4) == 0, "%s", sf_last_error());
  cr_expect_eq(sf_scan_fwd_shape(ctx, &a.fwd, NULL, NULL), SF_EINVAL);
  cr_expect(strncmp(sf_last_error(), "out:", 4) == 0, "%s", sf_last_error());
  sf_context_destroy(ctx);
}
