/* test_call_launches_fake.c: what a backward call launches, on the pretend driver
 * (tests/fake_cuda/, whose journal names each kernel launched and counts memsets). The
 * default mode clears its five sums with one launch of sf_scan_bwd_zero and no memset;
 * the deterministic mode adds its partial sums with one launch of sf_scan_bwd_finalize;
 * both helpers launch beside a main kernel that takes dynamic shared memory
 * (docs/design-zero-sums.md). No call asks the driver for a module global the module lacks
 * (a failed call that compute-sanitizer reports). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "scanforge/scanforge.h"
#include "tests/support/temp_dir.h"

static sf_context *ctx;
static void *fake;
static void (*journal_clear)(void);
static const char *(*journal_launch)(int);
static long (*journal_memsets)(void);
static long (*journal_failed_lookups)(void);

/* The buffers of one call: the fake's device memory is host memory, and no kernel runs. */
enum { MAX_BUFFERS = 48 };
static void *buffers[MAX_BUFFERS];
static int buffer_count;

static void *device_buffer(size_t bytes) {
  cr_assert_lt(buffer_count, MAX_BUFFERS);
  void *p = calloc(1, bytes);
  cr_assert_not_null(p);
  return buffers[buffer_count++] = p;
}

static void setup(void) {
  setenv("SCANFORGE_CUDA_LIBRARY", SCANFORGE_FAKE_CUDA_PATH, 1);
  const char *cache_dir = scratch_dir("sf_launches_fake_"); /* removed when the test's process exits */
  cr_assert_not_null(cache_dir);
  setenv("SCANFORGE_CACHE_DIR", cache_dir, 1);
  setenv("SCANFORGE_TUNING_DB", "/nonexistent/no-tuning.json", 1); /* the heuristics decide */
  cr_assert_eq(sf_context_create(NULL, &ctx), SF_OK, "%s", sf_last_error());
  /* the library scanforge opens when it first needs the driver: one copy a process */
  fake = dlopen(SCANFORGE_FAKE_CUDA_PATH, RTLD_NOW);
  cr_assert_not_null(fake, "the pretend driver: %s", dlerror());
  *(void **)&journal_clear = dlsym(fake, "fake_cuda_journal_clear");
  *(void **)&journal_launch = dlsym(fake, "fake_cuda_journal_launch");
  *(void **)&journal_memsets = dlsym(fake, "fake_cuda_journal_memsets");
  *(void **)&journal_failed_lookups = dlsym(fake, "fake_cuda_journal_failed_lookups");
  cr_assert(journal_clear && journal_launch && journal_memsets && journal_failed_lookups,
            "the pretend driver has no journal");
}

static void teardown(void) {
  sf_context_destroy(ctx);
  if (fake) dlclose(fake);
  for (int i = 0; i < buffer_count; i++) free(buffers[i]);
  buffer_count = 0;
}

/* A gated backward call of (batch, dim, L, N) in `dtype` with every gradient wanted. */
static sf_scan_bwd_args call(int64_t batch, int64_t dim, int64_t L, int64_t N, sf_dtype dtype, bool deterministic) {
  const size_t seq = (size_t)(batch * dim * L) * 4, bc = (size_t)(batch * N * L) * 4, dn = (size_t)(dim * N) * 4;
  const size_t states = (size_t)(batch * dim * N * sf_scan_saved_states(L)) * 4;
  return (sf_scan_bwd_args){
      .fwd = {.batch = batch, .dim = dim, .seqlen = L, .dstate = N, .groups = 1, .dtype = dtype,
              .delta_softplus = true, .u = device_buffer(seq), .delta = device_buffer(seq), .A = device_buffer(dn),
              .B = device_buffer(bc), .B_var = true, .C = device_buffer(bc), .C_var = true,
              .D = device_buffer((size_t)dim * 4), .delta_bias = device_buffer((size_t)dim * 4),
              .z = device_buffer(seq), .saved_states = device_buffer(states)},
      .dout = device_buffer(seq), .du = device_buffer(seq), .ddelta = device_buffer(seq), .dz = device_buffer(seq),
      .dA = device_buffer(dn), .dB = device_buffer(bc), .dC = device_buffer(bc),
      .dD = device_buffer((size_t)dim * 4), .ddelta_bias = device_buffer((size_t)dim * 4),
      .deterministic = deterministic};
}

/* Runs `args` and checks what it launched: the main kernel, `helper` exactly once and
 * first (sf_scan_bwd_zero) or last (sf_scan_bwd_finalize), and no memset. Segment passes
 * (sf_scan_bwd_carry, _combine) may come between, as the launch plan decides. */
static void expect_launches(const sf_scan_bwd_args *args, const char *spec, const char *helper, bool first) {
  journal_clear();
  sf_status st = sf_scan_bwd(ctx, args, &(sf_launch){.stream = NULL, .spec = spec});
  cr_assert_eq(st, SF_OK, "%s", sf_last_error());
  int count = 0, helpers = 0, helper_at = -1, mains = 0;
  for (; journal_launch(count); count++) {
    if (strcmp(journal_launch(count), helper) == 0) helpers++, helper_at = count;
    if (strcmp(journal_launch(count), "sf_scan_bwd") == 0) mains++;
  }
  cr_expect_eq(helpers, 1, "%s launched %d times", helper, helpers);
  cr_expect_eq(mains, 1, "sf_scan_bwd launched %d times", mains);
  cr_expect_eq(helper_at, first ? 0 : count - 1, "%s is launch %d of %d", helper, helper_at + 1, count);
  cr_expect_eq(journal_memsets(), 0, "%ld memsets", journal_memsets());
  /* loading the modules asks the driver for no global they lack: compute-sanitizer
   * reports each such failed call as an error of the caller's program */
  cr_expect_eq(journal_failed_lookups(), 0, "%ld failed lookups of module globals", journal_failed_lookups());
}

TestSuite(call_launches_fake, .init = setup, .fini = teardown);

Test(call_launches_fake, default_backward_clears_its_sums_in_one_launch) {
  sf_scan_bwd_args args = call(2, 64, 256, 16, SF_FP32, false);
  expect_launches(&args, NULL, "sf_scan_bwd_zero", true);
}

Test(call_launches_fake, deterministic_backward_adds_its_sums_in_one_launch) {
  sf_scan_bwd_args args = call(2, 64, 256, 16, SF_FP32, true);
  expect_launches(&args, NULL, "sf_scan_bwd_finalize", false);
}

/* 8 lanes x 8 steps x 16 channels at N = 128 in bf16 keeps 109 KB of arrays in dynamic
 * shared memory; the helpers use none of it and launch without it. */
Test(call_launches_fake, helpers_launch_beside_a_dynamic_shared_kernel) {
  sf_scan_bwd_args args = call(1, 64, 2048, 128, SF_BF16, false);
  expect_launches(&args, "split=state,threads=8,items=8,channels=16", "sf_scan_bwd_zero", true);
  sf_scan_bwd_args det = call(1, 64, 2048, 128, SF_BF16, true);
  expect_launches(&det, "split=state,threads=8,items=8,channels=16", "sf_scan_bwd_finalize", false);
}
