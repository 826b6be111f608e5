/* test_validate.c: every bad argument of a forward call is refused with its name. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "runtime/args/scan_args.h"
#include "scanforge/scanforge.h"

enum { BATCH = 2, DIM = 4, L = 7, N = 3, G = 2 };

/* Host buffers large enough for the valid problem; validation never reads them. */
static float buf_u[BATCH * DIM * L], buf_delta[BATCH * DIM * L], buf_out[BATCH * DIM * L];
static float buf_B[BATCH * G * N * L], buf_C[BATCH * G * N * L], buf_A[DIM * N];

static sf_scan_fwd_args valid_args(void) {
  sf_scan_fwd_args a = {
      .batch = BATCH, .dim = DIM, .seqlen = L, .dstate = N, .groups = G, .dtype = SF_FP32,
      .u = buf_u, .delta = buf_delta, .A = buf_A, .B = buf_B, .B_var = true, .C = buf_C,
      .C_var = true, .out = buf_out,
  };
  return a;
}

/* The call fails with SF_EINVAL and the message starts with "<name>:". */
static void expect_refused(const sf_scan_fwd_args *a, const char *name, const char *label) {
  sf_status st = sf_scan_fwd_validate(a);
  cr_expect_eq(st, SF_EINVAL, "%s: got %s (%s)", label, sf_status_name(st), sf_last_error());
  char prefix[64];
  snprintf(prefix, sizeof prefix, "%s:", name);
  cr_expect(strncmp(sf_last_error(), prefix, strlen(prefix)) == 0,
            "%s: message '%s' should start with '%s'", label, sf_last_error(), prefix);
}

static void expect_accepted(const sf_scan_fwd_args *a, const char *label) {
  sf_status st = sf_scan_fwd_validate(a);
  cr_expect_eq(st, SF_OK, "%s: got %s (%s)", label, sf_status_name(st), sf_last_error());
}

Test(validate, the_base_problem_is_valid) {
  sf_scan_fwd_args a = valid_args();
  expect_accepted(&a, "base");
}

Test(validate, a_null_args_pointer) {
  cr_expect_eq(sf_scan_fwd_validate(NULL), SF_EINVAL);
  cr_expect(strncmp(sf_last_error(), "args:", 5) == 0, "%s", sf_last_error());
}

/* One change to the valid problem, and the argument the message must name. */
typedef struct bad_case {
  const char *label;
  const char *name;
  void (*apply)(sf_scan_fwd_args *a);
} bad_case;

#define CASE(label_, name_, body)                       \
  static void apply_##label_(sf_scan_fwd_args *a) body \
  static const bad_case case_##label_ = {#label_, name_, apply_##label_};

CASE(negative_batch, "batch", { a->batch = -1; })
CASE(negative_dim, "dim", { a->dim = -3; })
CASE(negative_seqlen, "seqlen", { a->seqlen = -7; })
CASE(dstate_zero, "dstate", { a->dstate = 0; })
CASE(dstate_too_big, "dstate", { a->dstate = 257; })
CASE(groups_zero, "groups", { a->groups = 0; })
CASE(groups_not_dividing_dim, "groups", { a->groups = 3; })
CASE(groups_not_dividing_dim_C_var_only, "groups", { a->groups = 3; a->B_var = false; })
CASE(unknown_dtype, "dtype", { a->dtype = (sf_dtype)7; })
CASE(null_u, "u", { a->u = NULL; })
CASE(null_delta, "delta", { a->delta = NULL; })
CASE(null_A, "A", { a->A = NULL; })
CASE(null_B, "B", { a->B = NULL; })
CASE(null_C, "C", { a->C = NULL; })
CASE(null_out, "out", { a->out = NULL; })
CASE(negative_u_batch_stride, "u_batch_stride", { a->u_batch_stride = -1; })
CASE(negative_u_dim_stride, "u_dim_stride", { a->u_dim_stride = -1; })
CASE(negative_delta_batch_stride, "delta_batch_stride", { a->delta_batch_stride = -1; })
CASE(negative_delta_dim_stride, "delta_dim_stride", { a->delta_dim_stride = -1; })
CASE(negative_B_batch_stride, "B_batch_stride", { a->B_batch_stride = -1; })
CASE(negative_B_group_stride, "B_group_stride", { a->B_group_stride = -1; })
CASE(negative_B_state_stride, "B_state_stride", { a->B_state_stride = -1; })
CASE(negative_C_batch_stride, "C_batch_stride", { a->C_batch_stride = -1; })
CASE(negative_C_group_stride, "C_group_stride", { a->C_group_stride = -1; })
CASE(negative_C_state_stride, "C_state_stride", { a->C_state_stride = -1; })
CASE(negative_z_batch_stride, "z_batch_stride", { a->z = buf_u; a->z_batch_stride = -1; })
CASE(negative_z_dim_stride, "z_dim_stride", { a->z = buf_u; a->z_dim_stride = -1; })
CASE(negative_out_batch_stride, "out_batch_stride", { a->out_batch_stride = -1; })
CASE(negative_out_dim_stride, "out_dim_stride", { a->out_dim_stride = -1; })
/* Rows of L elements that would overlap. */
CASE(u_dim_stride_below_L, "u_dim_stride", { a->u_dim_stride = L - 1; })
CASE(u_batch_stride_below_rows, "u_batch_stride", { a->u_batch_stride = DIM * L - 1; })
CASE(u_batch_stride_equal_to_dim_stride, "u_batch_stride",
     { a->u_dim_stride = L; a->u_batch_stride = L; })
CASE(u_transposed_too_tight, "u_dim_stride",
     { a->u_batch_stride = L; a->u_dim_stride = BATCH * L - 1; })
CASE(delta_dim_stride_below_L, "delta_dim_stride", { a->delta_dim_stride = 2; })
CASE(delta_batch_stride_below_rows, "delta_batch_stride", { a->delta_batch_stride = 8; })
CASE(z_dim_stride_below_L, "z_dim_stride", { a->z = buf_u; a->z_dim_stride = 1; })
CASE(z_batch_stride_below_rows, "z_batch_stride", { a->z = buf_u; a->z_batch_stride = L; })
CASE(out_dim_stride_below_L, "out_dim_stride", { a->out_dim_stride = 6; })
CASE(out_batch_stride_below_rows, "out_batch_stride", { a->out_batch_stride = 27; })
CASE(B_state_stride_below_L, "B_state_stride", { a->B_state_stride = L - 1; })
CASE(B_group_stride_below_states, "B_group_stride", { a->B_group_stride = N * L - 1; })
CASE(B_batch_stride_below_groups, "B_batch_stride", { a->B_batch_stride = G * N * L - 1; })
CASE(C_state_stride_below_L, "C_state_stride", { a->C_state_stride = 1; })
CASE(C_group_stride_below_states, "C_group_stride", { a->C_group_stride = L; })
CASE(C_batch_stride_below_groups, "C_batch_stride", { a->C_batch_stride = N * L; })
/* Strides given for a tensor that is not there. */
CASE(z_strides_without_z, "z_dim_stride", { a->z_dim_stride = L; })
CASE(z_batch_stride_without_z, "z_batch_stride", { a->z_batch_stride = DIM * L; })
CASE(B_stride_for_fixed_B, "B_state_stride", { a->B_var = false; a->B_state_stride = L; })
CASE(C_stride_for_fixed_C, "C_batch_stride", { a->C_var = false; a->C_batch_stride = 1000; })
/* Sizes beyond int64 bytes. */
CASE(u_span_overflows, "u", { a->u_batch_stride = INT64_MAX / 2; })
CASE(seqlen_overflows, "u", { a->seqlen = INT64_MAX / 2; })
CASE(bf16_bytes_overflow, "u",
     {
  a->dtype = SF_BF16; a->batch = 1; a->dim = 1; a->groups = 1; a->seqlen = INT64_MAX / 2 + 1;
})
/* bf16 keeps u, B and C within int64 bytes while the fp32 states are not. */
CASE(h0_bytes_overflow, "h0", {
  a->dtype = SF_BF16; a->batch = INT64_C(1) << 53; a->dim = 1; a->seqlen = 1; a->dstate = 256; a->groups = 1;
  a->h0 = buf_A;
})
CASE(last_state_bytes_overflow, "last_state", {
  a->dtype = SF_BF16; a->batch = INT64_C(1) << 53; a->dim = 1; a->seqlen = 1; a->dstate = 256; a->groups = 1;
  a->last_state = buf_A;
})
CASE(saved_states_bytes_overflow, "saved_states", {
  a->dtype = SF_BF16; a->batch = INT64_C(1) << 53; a->dim = 1; a->seqlen = 1; a->dstate = 256;
  a->groups = 1; a->saved_states = buf_A;
})
CASE(A_bytes_overflow, "A", {
  a->dim = INT64_C(1) << 60; a->seqlen = 1; a->batch = 1; a->groups = 1; a->dstate = 16;
  a->B_var = a->C_var = false;
})

static const bad_case *const bad_cases[] = {
    &case_negative_batch, &case_negative_dim, &case_negative_seqlen, &case_dstate_zero,
    &case_dstate_too_big, &case_groups_zero, &case_groups_not_dividing_dim,
    &case_groups_not_dividing_dim_C_var_only, &case_unknown_dtype, &case_null_u,
    &case_null_delta, &case_null_A, &case_null_B, &case_null_C, &case_null_out,
    &case_negative_u_batch_stride, &case_negative_u_dim_stride,
    &case_negative_delta_batch_stride, &case_negative_delta_dim_stride,
    &case_negative_B_batch_stride, &case_negative_B_group_stride,
    &case_negative_B_state_stride, &case_negative_C_batch_stride,
    &case_negative_C_group_stride, &case_negative_C_state_stride,
    &case_negative_z_batch_stride, &case_negative_z_dim_stride,
    &case_negative_out_batch_stride, &case_negative_out_dim_stride,
    &case_u_dim_stride_below_L, &case_u_batch_stride_below_rows,
    &case_u_batch_stride_equal_to_dim_stride, &case_u_transposed_too_tight,
    &case_delta_dim_stride_below_L, &case_delta_batch_stride_below_rows,
    &case_z_dim_stride_below_L, &case_z_batch_stride_below_rows,
    &case_out_dim_stride_below_L, &case_out_batch_stride_below_rows,
    &case_B_state_stride_below_L, &case_B_group_stride_below_states,
    &case_B_batch_stride_below_groups, &case_C_state_stride_below_L,
    &case_C_group_stride_below_states, &case_C_batch_stride_below_groups,
    &case_z_strides_without_z, &case_z_batch_stride_without_z, &case_B_stride_for_fixed_B,
    &case_C_stride_for_fixed_C, &case_u_span_overflows, &case_seqlen_overflows,
    &case_bf16_bytes_overflow, &case_h0_bytes_overflow, &case_last_state_bytes_overflow, &case_saved_states_bytes_overflow,
    &case_A_bytes_overflow,
};

Test(validate, each_bad_argument_is_named) {
  for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
    sf_scan_fwd_args a = valid_args();
    bad_cases[i]->apply(&a);
    expect_refused(&a, bad_cases[i]->name, bad_cases[i]->label);
  }
}

Test(validate, the_message_says_what_was_expected_and_what_came) {
  sf_scan_fwd_args a = valid_args();
  a.seqlen = 196;
  a.u_dim_stride = 100;
  cr_assert_eq(sf_scan_fwd_validate(&a), SF_EINVAL);
  cr_expect_str_eq(sf_last_error(),
                   "u_dim_stride: expected 0 or >= seqlen (196), got 100 (rows of u would overlap)");
}

Test(validate, layouts_that_are_accepted) {
  sf_scan_fwd_args a = valid_args();
  a.D = a.delta_bias = a.h0 = buf_A;
  a.z = buf_u;
  a.last_state = a.saved_states = buf_out;
  expect_accepted(&a, "every optional input given");

  a = valid_args();
  a.u_dim_stride = L + 5; /* padded rows */
  a.u_batch_stride = DIM * (L + 5) + 3;
  a.out_dim_stride = 2 * L;
  a.B_state_stride = L + 1;
  a.C_group_stride = 2 * N * L;
  expect_accepted(&a, "padded strides");

  a = valid_args();
  a.u_batch_stride = L; /* Mamba's layout: u is a slice of a (dim, batch, L) buffer */
  a.u_dim_stride = BATCH * L;
  expect_accepted(&a, "batch inside dim");

  a = valid_args();
  a.batch = 1;
  a.u_batch_stride = 3; /* never multiplied by anything but 0 */
  expect_accepted(&a, "a stride of an axis of extent 1 is free");

  a = valid_args();
  a.groups = 3; /* fixed B and C do not use groups */
  a.B_var = a.C_var = false;
  expect_accepted(&a, "groups not dividing dim with fixed B and C");

  a = valid_args();
  a.dtype = SF_BF16;
  a.dstate = 256;
  a.dstate = 1;
  expect_accepted(&a, "bf16, N = 1");
  a.dstate = 256;
  a.dtype = SF_FP16;
  expect_accepted(&a, "fp16, N = 256");
}

Test(validate, nothing_to_do_needs_no_pointers) {
  sf_scan_fwd_args empty = {.dstate = 16, .groups = 1, .dtype = SF_FP32, .B_var = true,
                            .C_var = true};
  empty.batch = 0, empty.dim = 8, empty.seqlen = 100;
  expect_accepted(&empty, "batch = 0");
  empty.batch = 3, empty.dim = 8, empty.seqlen = 0;
  expect_accepted(&empty, "seqlen = 0");
  empty.batch = 3, empty.dim = 0, empty.seqlen = 10;
  expect_accepted(&empty, "dim = 0");
  /* Scalars are still checked. */
  empty.dstate = 0;
  expect_refused(&empty, "dstate", "dstate with no work");
}

Test(validate, the_state_interval_and_count) {
  const int64_t L_values[] = {0, 1, 7, 64, 65, 196, 1024, 2047, 2048, 2049, 4096, 4097, 100000};
  const int64_t interval[] = {64, 64, 64, 64, 128, 256, 512, 512, 512, 512, 512, 512, 512};
  const int64_t saved[] = {0, 1, 1, 1, 1, 1, 2, 4, 4, 5, 8, 9, 196};
  for (size_t i = 0; i < sizeof L_values / sizeof L_values[0]; i++) {
    cr_expect_eq(sf_scan_state_interval(L_values[i]), interval[i], "interval(%lld)",
                 (long long)L_values[i]);
    cr_expect_eq(sf_scan_saved_states(L_values[i]), saved[i], "saved(%lld)",
                 (long long)L_values[i]);
  }
  cr_expect_eq(sf_scan_saved_states(INT64_MAX), INT64_MAX / 512 + 1);
  cr_expect_eq(sf_scan_saved_count(2049, 0), 5);
  cr_expect_eq(sf_scan_saved_count(2049, 8), 257);
  cr_expect_eq(sf_scan_saved_count(2048, 4), 512);
  cr_expect_eq(sf_scan_saved_count(0, 8), 0);
}

/* state_interval: 0 or a power of two from 4 to the default interval of L. */
Test(validate, a_state_interval_is_a_power_of_two_up_to_the_default) {
  sf_scan_fwd_args a = valid_args();
  const int64_t most = sf_scan_state_interval(a.seqlen);
  const int64_t good[] = {0, 4, 8, most};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    a.state_interval = good[i];
    cr_expect_eq(sf_scan_args_interval(&a), good[i] ? good[i] : most);
    a.saved_states = NULL; /* its size follows the interval: checked below */
    expect_accepted(&a, "state_interval");
  }
  const int64_t bad[] = {-8, 1, 2, 6, 12, 2 * most};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    a.state_interval = bad[i];
    expect_refused(&a, "state_interval", "state_interval");
  }
}

Test(validate, resolve_fills_the_contiguous_strides) {
  sf_scan_fwd_args a = valid_args(), r;
  a.z = buf_u;
  a.delta_dim_stride = 10; /* explicit: kept, and the batch stride follows it */
  a.B_state_stride = 9;
  cr_assert_eq(sf_scan_fwd_prepare(&a, &r), SF_OK, "%s", sf_last_error());
  cr_expect_eq(r.u_dim_stride, L);
  cr_expect_eq(r.u_batch_stride, DIM * L);
  cr_expect_eq(r.delta_dim_stride, 10);
  cr_expect_eq(r.delta_batch_stride, DIM * 10);
  cr_expect_eq(r.z_dim_stride, L);
  cr_expect_eq(r.z_batch_stride, DIM * L);
  cr_expect_eq(r.out_batch_stride, DIM * L);
  cr_expect_eq(r.B_state_stride, 9);
  cr_expect_eq(r.B_group_stride, N * 9);
  cr_expect_eq(r.B_batch_stride, G * N * 9);
  cr_expect_eq(r.C_state_stride, L);
  cr_expect_eq(r.C_group_stride, N * L);
  cr_expect_eq(r.C_batch_stride, G * N * L);

  a = valid_args(); /* absent tensors keep 0 strides */
  a.B_var = false;
  cr_assert_eq(sf_scan_fwd_prepare(&a, &r), SF_OK, "%s", sf_last_error());
  cr_expect_eq(r.z_dim_stride, 0);
  cr_expect_eq(r.B_state_stride, 0);

  a.dstate = 0; /* prepare refuses what validate refuses */
  cr_expect_eq(sf_scan_fwd_prepare(&a, &r), SF_EINVAL);
}
