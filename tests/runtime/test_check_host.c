/* test_check_host.c: the check harness on the CPU path: the forward passes, and a broken run is caught. */
#include <criterion/criterion.h>

#include "runtime/check/check.h"

Test(check_host, cpu_forward_passes_for_each_dtype) {
  sf_context *ctx;
  cr_assert_eq(sf_context_create(&(sf_context_options){.cache_memory_only = true}, &ctx), SF_OK);
  const sf_dtype dtypes[] = {SF_FP32, SF_FP16, SF_BF16};
  for (int i = 0; i < 3; i++) {
    sf_check_shape shape = {.batch = 2, .dim = 4, .seqlen = 2100, .dstate = 8, .groups = 2,
                            .dtype = dtypes[i], .z = true, .D = true, .delta_bias = true,
                            .softplus = true, .h0 = true};
    sf_launch launch = {.on_host = true, .host_threads = 2};
    sf_check_result r;
    cr_assert_eq(sf_check_fwd(ctx, &shape, &launch, 5 + i, &r), SF_OK, "%s", sf_last_error());
    cr_expect(r.passed, "%s: out %.3g last %.3g saved %.3g", sf_dtype_name(dtypes[i]), r.out_error,
              r.last_state_error, r.saved_error);
    cr_expect(r.out_error > 0, "a zero error would mean the comparison saw nothing");
  }
  sf_context_destroy(ctx);
}

/* States saved every 4 to 64 steps: the forward saves each (compared state by state with
 * the reference) and the backward starts its intervals from every (interval / k)-th. */
Test(check_host, short_state_intervals_forward_and_backward) {
  sf_context *ctx;
  cr_assert_eq(sf_context_create(&(sf_context_options){.cache_memory_only = true}, &ctx), SF_OK);
  const int64_t intervals[] = {4, 8, 64};
  for (int i = 0; i < 3; i++) {
    sf_check_shape shape = {.batch = 2, .dim = 4, .seqlen = 1300, .dstate = 8, .groups = 2,
                            .dtype = i == 1 ? SF_BF16 : SF_FP32, .z = true, .D = true, .delta_bias = true,
                            .softplus = true, .h0 = true, .d_last_state = true, .state_interval = intervals[i]};
    sf_launch launch = {.on_host = true, .host_threads = 2};
    sf_check_result r;
    cr_assert_eq(sf_check_fwd(ctx, &shape, &launch, 50 + i, &r), SF_OK, "%s", sf_last_error());
    cr_expect(r.passed, "every %lld: out %.3g last %.3g saved %.3g", (long long)intervals[i], r.out_error,
              r.last_state_error, r.saved_error);
    sf_check_bwd_result g;
    cr_assert_eq(sf_check_bwd(ctx, &shape, &launch, 60 + i, &g), SF_OK, "%s", sf_last_error());
    cr_expect(g.passed, "every %lld: the backward failed its bar", (long long)intervals[i]);
  }
  sf_context_destroy(ctx);
}
