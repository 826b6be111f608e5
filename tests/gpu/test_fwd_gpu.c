/* test_fwd_gpu.c: the forward kernels on the GPU against the float64 reference (skips without a GPU). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/check/check.h"
#include "scanforge/scanforge.h"
#include "tests/support/gpu_fixture.h"
#include "tests/support/off_alignment.h"


typedef struct flag_set {
  const char *name;
  bool z, D, delta_bias, softplus, B_fixed, C_fixed, h0;
  int groups;
} flag_set;

static const flag_set flag_sets[] = {
    {"all, groups 2, h0", true, true, true, true, false, false, true, 2},
    {"none", false, false, false, false, false, false, false, 1},
    {"fixed B, D", false, true, false, false, true, false, false, 1},
    {"fixed C, z, softplus, bias, h0", true, false, true, true, false, true, true, 2},
    {"fixed B and C, softplus, bias", false, true, true, true, true, true, false, 1},
};

static int run_matrix(sf_dtype dtype, int dstate) {
  static const int64_t lengths[] = {1, 7, 49, 196, 2047, 2049, 4096};
  int failures = 0;
  uint64_t seed = 1000u * (unsigned)dtype + (unsigned)dstate;
  for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++)
    for (size_t f = 0; f < sizeof flag_sets / sizeof flag_sets[0]; f++) {
      const flag_set *fs = &flag_sets[f];
      sf_check_shape shape = {
          .batch = 2, .dim = 6, .seqlen = lengths[l], .dstate = dstate, .groups = fs->groups,
          .dtype = dtype, .z = fs->z, .D = fs->D, .delta_bias = fs->delta_bias,
          .softplus = fs->softplus, .B_fixed = fs->B_fixed, .C_fixed = fs->C_fixed, .h0 = fs->h0};
      sf_launch launch = {0};
      sf_check_result r;
      sf_status st = sf_check_fwd(gpu_ctx, &shape, &launch, seed++, &r);
      cr_expect_eq(st, SF_OK, "%s N=%d L=%lld [%s]: %s", sf_dtype_name(dtype), dstate,
                   (long long)lengths[l], fs->name, sf_last_error());
      if (st != SF_OK) { failures++; continue; }
      char spec[512];
      sf_variant_format(&r.variant, spec, sizeof spec);
      cr_expect(r.passed, "%s N=%d L=%lld [%s] %s: out %.3g, last_state %.3g, saved %.3g (bar %.0e)",
                sf_dtype_name(dtype), dstate, (long long)lengths[l], fs->name, spec, r.out_error,
                r.last_state_error, r.saved_error, r.bar);
      failures += !r.passed;
    }
  return failures;
}

#define DTYPE_DSTATE_TEST(dtype, name, n) \
  Test(fwd_gpu, name##_dstate_##n, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300) { \
    gpu_skip_without_device();                                                           \
    cr_expect_eq(run_matrix(dtype, n), 0);                                        \
  }

DTYPE_DSTATE_TEST(SF_FP32, fp32, 1)
DTYPE_DSTATE_TEST(SF_FP32, fp32, 8)
DTYPE_DSTATE_TEST(SF_FP32, fp32, 16)
DTYPE_DSTATE_TEST(SF_FP32, fp32, 64)
DTYPE_DSTATE_TEST(SF_FP32, fp32, 256)
DTYPE_DSTATE_TEST(SF_FP16, fp16, 1)
DTYPE_DSTATE_TEST(SF_FP16, fp16, 8)
DTYPE_DSTATE_TEST(SF_FP16, fp16, 16)
DTYPE_DSTATE_TEST(SF_FP16, fp16, 64)
DTYPE_DSTATE_TEST(SF_FP16, fp16, 256)
DTYPE_DSTATE_TEST(SF_BF16, bf16, 1)
DTYPE_DSTATE_TEST(SF_BF16, bf16, 8)
DTYPE_DSTATE_TEST(SF_BF16, bf16, 16)
DTYPE_DSTATE_TEST(SF_BF16, bf16, 64)
DTYPE_DSTATE_TEST(SF_BF16, bf16, 256)

/* Every launch configuration the templates offer, on shapes with several chunks and
 * channels that do not fill the last block. */
Test(fwd_gpu, launch_configurations, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300) {
  gpu_skip_without_device();
  static const char *const configs[] = {
      "threads=1,items=1,channels=32",  "threads=4,items=3,channels=8",
      "threads=8,items=8,channels=16",  "threads=32,items=1,channels=1",
      "threads=32,items=16,channels=4", "threads=32,items=32,channels=2",
      "threads=64,items=4,channels=2",  "threads=128,items=16,channels=1",
      "threads=256,items=5,channels=1", "threads=1024,items=2,channels=1",
      "threads=32,items=8,channels=4,states=2", "threads=64,items=4,channels=2,states=4",
      "split=state,threads=4,items=16,channels=32", "split=state,threads=16,items=16,channels=2",
      "split=state,threads=1,items=8,channels=32", "split=state,threads=2,items=4,channels=16",
      "split=state,threads=8,items=64,channels=4", "split=state,threads=16,items=4,channels=2"};
  static const int64_t lengths[] = {1, 100, 3000, 5000};
  uint64_t seed = 77;
  for (size_t k = 0; k < sizeof configs / sizeof configs[0]; k++)
    for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++) {
      /* split=state blocks share one group's B and C: channels divide dim; the time split
       * gets a last block with idle channels */
      const int64_t dim = strstr(configs[k], "split=state") ? 64 : 5;
      sf_check_shape shape = {.batch = 3, .dim = dim, .seqlen = lengths[l], .dstate = 16, .groups = 1,
                              .dtype = SF_FP32, .z = true, .D = true, .delta_bias = true,
                              .softplus = true, .h0 = true};
      sf_launch launch = {.spec = configs[k]};
      sf_check_result r;
      sf_status st = sf_check_fwd(gpu_ctx, &shape, &launch, seed++, &r);
      cr_expect_eq(st, SF_OK, "%s L=%lld: %s", configs[k], (long long)lengths[l], sf_last_error());
      if (st == SF_OK)
        cr_expect(r.passed, "%s L=%lld: out %.3g, last_state %.3g, saved %.3g", configs[k],
                  (long long)lengths[l], r.out_error, r.last_state_error, r.saved_error);
    }
}

/* Rows that do not start on a 16-byte boundary (an L of 196 in a 16-bit type, 49 in any):
 * the staged copies go in 4-byte pieces, or element by element where a row starts 2 bytes
 * off; 64 channels put every channel's row at each of the offsets the length gives. */
Test(fwd_gpu, rows_off_alignment, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300) {
  gpu_skip_without_device();
  static const char *const configs[] = {"split=state,threads=4,items=16,channels=16",
                                        "split=state,threads=8,items=32,channels=8"};
  uint64_t seed = 4242;
  for (size_t k = 0; k < sizeof configs / sizeof configs[0]; k++)
    for (int i = 0; i < OFF_ALIGNMENT_CALLS; i++) {
      const sf_check_shape shape = off_alignment_shape(i, 64);
      const sf_launch launch = {.spec = configs[k]};
      sf_check_result r;
      sf_status st = sf_check_fwd(gpu_ctx, &shape, &launch, seed++, &r);
      cr_expect_eq(st, SF_OK, "%s %s L=%lld: %s", configs[k], sf_dtype_name(shape.dtype), (long long)shape.seqlen,
                   sf_last_error());
      if (st == SF_OK)
        cr_expect(r.passed, "%s %s L=%lld: out %.3g, last_state %.3g, saved %.3g", configs[k],
                  sf_dtype_name(shape.dtype), (long long)shape.seqlen, r.out_error, r.last_state_error, r.saved_error);
    }
}

/* States saved every 4 to 64 steps (docs/design-block-states.md): intervals shorter than a
 * block or a thread's run (saved inside it), equal, longer; ragged ends; segments (few
 * channels) and not; every dtype. The saved states are compared state by state. */
Test(fwd_gpu, short_state_intervals, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300) {
  gpu_skip_without_device();
  static const struct { const char *spec; int64_t interval; } cases[] = {
      {"split=state,threads=4,items=16,channels=8", 4},  {"split=state,threads=4,items=16,channels=8", 8},
      {"split=state,threads=2,items=8,channels=16", 8},  {"split=state,threads=8,items=64,channels=4", 16},
      {"split=state,threads=4,items=8,channels=8", 32},  {"split=time,threads=32,items=16,channels=4", 4},
      {"split=time,threads=64,items=8,channels=2", 8},   {"split=time,threads=32,items=8,channels=4", 64}};
  static const int64_t lengths[] = {5, 77, 1000, 3001};
  static const int64_t dims[] = {16, 512};
  static const sf_dtype dtypes[] = {SF_FP32, SF_BF16, SF_FP16};
  uint64_t seed = 4100;
  size_t calls = 0;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++, calls++) {
      const int64_t dim = dims[calls % 2];
      const sf_dtype dtype = dtypes[calls % 3];
      sf_check_shape shape = {.batch = 2, .dim = dim, .seqlen = lengths[l], .dstate = 16, .groups = 1,
                              .dtype = dtype, .z = true, .D = true, .delta_bias = true, .softplus = true,
                              .h0 = calls % 2 == 0, .state_interval = cases[k].interval};
      sf_launch launch = {.spec = cases[k].spec};
      sf_check_result r;
      sf_status st = sf_check_fwd(gpu_ctx, &shape, &launch, seed++, &r);
      cr_expect_eq(st, SF_OK, "%s every %lld, dim %lld L=%lld: %s", cases[k].spec, (long long)cases[k].interval,
                   (long long)dim, (long long)lengths[l], sf_last_error());
      if (st == SF_OK)
        cr_expect(r.passed, "%s every %lld, %s dim %lld L=%lld: out %.3g, last_state %.3g, saved %.3g",
                  cases[k].spec, (long long)cases[k].interval, sf_dtype_name(dtype), (long long)dim,
                  (long long)lengths[l], r.out_error, r.last_state_error, r.saved_error);
    }
}

/* Large d_state with lanes over states: 8 to 32 lanes, fewer steps a block than lanes
 * (only the first lanes own steps), every dtype. */
Test(fwd_gpu, split_state_large_dstate, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300) {
  gpu_skip_without_device();
  static const struct { int dstate; const char *spec; } cases[] = {
      {64, "split=state,threads=16,items=16,channels=8"}, {128, "split=state,threads=16,items=8,channels=2"},
      {128, "split=state,threads=32,items=8,channels=1"}, {256, "split=state,threads=32,items=4,channels=2"}};
  static const sf_dtype dtypes[] = {SF_FP32, SF_BF16, SF_FP16};
  static const int64_t lengths[] = {1, 77, 3000};
  uint64_t seed = 901;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++)
      for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++) {
        if (cases[c].dstate == 256 && dtypes[t] != SF_FP32) continue; /* 16-bit rows need 8 steps a block */
        sf_check_shape shape = {.batch = 2, .dim = 16, .seqlen = lengths[l], .dstate = cases[c].dstate,
                                .groups = 1, .dtype = dtypes[t], .z = (l % 2) == 0, .D = true,
                                .delta_bias = true, .softplus = true, .h0 = true};
        sf_launch launch = {.spec = cases[c].spec};
        sf_check_result r;
        sf_status st = sf_check_fwd(gpu_ctx, &shape, &launch, seed++, &r);
        cr_expect_eq(st, SF_OK, "N=%d %s dtype %d L=%lld: %s", cases[c].dstate, cases[c].spec, (int)dtypes[t],
                     (long long)lengths[l], sf_last_error());
        if (st == SF_OK)
          cr_expect(r.passed, "N=%d %s dtype %d L=%lld: out %.3g, last_state %.3g, saved %.3g", cases[c].dstate,
                    cases[c].spec, (int)dtypes[t], (long long)lengths[l], r.out_error, r.last_state_error,
                    r.saved_error);
      }
}

/* Launches whose arrays exceed 48 KB and live in dynamic shared memory
 * (docs/design-dynamic-shared.md): N = 128 with 16 steps a block, N = 256 in 16 bits (no
 * static layout fits it), N = 256 fp32 with 8 steps, N = 16 with 64 steps and 32 channels,
 * N = 64 and 32 at the heuristics' launches (16 lanes, 32 steps, 16 channels; 8 lanes, 32
 * steps, 32 channels; 2 blocks an SM).
 * 64 channels over 3001 steps (segments in parallel: the carry pass and the combine run
 * too) and 512 over 77 (one walk), states saved every block or inside one, h0 or not,
 * every dtype. */
Test(fwd_gpu, dynamic_shared_memory_layouts, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600) {
  gpu_skip_without_device();
  static const struct { int dstate; const char *spec; } cases[] = {
      {128, "split=state,threads=8,items=16,channels=16"}, {256, "split=state,threads=16,items=8,channels=8"},
      {256, "split=state,threads=32,items=8,channels=4"},  {16, "split=state,threads=4,items=64,channels=32"},
      {64, "split=state,threads=16,items=32,channels=16,minblocks=2"},
      {32, "split=state,threads=8,items=32,channels=32,minblocks=2"}};
  static const sf_dtype dtypes[] = {SF_FP32, SF_BF16, SF_FP16};
  static const int64_t lengths[] = {77, 3001}, dims[] = {512, 64}, intervals[] = {0, 8};
  uint64_t seed = 5100;
  size_t calls = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++)
      for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++, calls++) {
        const int64_t dim = dims[l], interval = intervals[(calls / 2) % 2];
        sf_check_shape shape = {.batch = 2, .dim = dim, .seqlen = lengths[l], .dstate = cases[c].dstate,
                                .groups = 1, .dtype = dtypes[t], .z = calls % 3 != 0, .D = true,
                                .delta_bias = true, .softplus = true, .h0 = (c + t + l) % 2 == 0,
                                .state_interval = interval};
        sf_launch launch = {.spec = cases[c].spec};
        sf_check_result r;
        sf_status st = sf_check_fwd(gpu_ctx, &shape, &launch, seed++, &r);
        cr_expect_eq(st, SF_OK, "N=%d %s %s dim %lld L=%lld: %s", cases[c].dstate, cases[c].spec,
                     sf_dtype_name(dtypes[t]), (long long)dim, (long long)lengths[l], sf_last_error());
        if (st == SF_OK)
          cr_expect(r.passed, "N=%d %s %s dim %lld L=%lld every %lld: out %.3g, last_state %.3g, saved %.3g",
                    cases[c].dstate, cases[c].spec, sf_dtype_name(dtypes[t]), (long long)dim,
                    (long long)lengths[l], (long long)interval, r.out_error, r.last_state_error, r.saved_error);
      }
}

/* split=state scans segments of the sequence in parallel when its blocks fill under 40% of
 * the GPU (a carry pass first), one block through all of them otherwise: 3 x 64 channels
 * over 5000 steps take the parallel path, 64 x 512 channels (2048 blocks of 16 channels,
 * more than twice what an H100 or H200 holds at once) the sequential one. */
Test(fwd_gpu, split_state_intervals_parallel_and_not, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300) {
  gpu_skip_without_device();
  static const struct { int64_t batch, dim, seqlen; sf_dtype dtype; } cases[] = {
      {3, 64, 5000, SF_FP32}, {3, 64, 5000, SF_BF16}, {1, 16, 100000, SF_FP32}, {64, 512, 1100, SF_FP32}};
  uint64_t seed = 4242;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    sf_check_shape shape = {.batch = cases[c].batch, .dim = cases[c].dim, .seqlen = cases[c].seqlen, .dstate = 16,
                            .groups = 1, .dtype = cases[c].dtype, .z = true, .D = true, .delta_bias = true,
                            .softplus = true, .h0 = true};
    sf_launch launch = {.spec = "split=state,threads=4,items=16,channels=16"};
    sf_check_result r;
    sf_status st = sf_check_fwd(gpu_ctx, &shape, &launch, seed++, &r);
    cr_expect_eq(st, SF_OK, "case %zu: %s", c, sf_last_error());
    if (st == SF_OK)
      cr_expect(r.passed, "case %zu (%lldx%lldx%lld): out %.3g, last_state %.3g, saved %.3g", c,
                (long long)cases[c].batch, (long long)cases[c].dim, (long long)cases[c].seqlen, r.out_error,
                r.last_state_error, r.saved_error);
  }
}

/* The combine with one thread per (row, state) (sf_combine_runs: the launch's pairs fill
 * the GPU): 2 x 512 channels of 128 states, segmented on an H100 and an H200 with this
 * launch (bench's (2,512,2048,128) row, 8 segments). */
Test(fwd_gpu, split_state_combine_one_thread_per_state, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300) {
  gpu_skip_without_device();
  uint64_t seed = 9700;
  for (int bf16 = 0; bf16 <= 1; bf16++) {
    sf_check_shape shape = {.batch = 2, .dim = 512, .seqlen = 2048, .dstate = 128, .groups = 1,
                            .dtype = bf16 ? SF_BF16 : SF_FP32, .z = true, .D = true, .delta_bias = true,
                            .softplus = true, .h0 = true};
    sf_launch launch = {.spec = "split=state,threads=16,items=8,channels=4"};
    sf_check_result r;
    sf_status st = sf_check_fwd(gpu_ctx, &shape, &launch, seed++, &r);
    cr_expect_eq(st, SF_OK, "%s: %s", bf16 ? "bf16" : "fp32", sf_last_error());
    if (st == SF_OK)
      cr_expect(r.passed, "%s: out %.3g, last_state %.3g, saved %.3g", bf16 ? "bf16" : "fp32", r.out_error,
                r.last_state_error, r.saved_error);
  }
}

/* Segments from one block of steps to a whole state interval ($SCANFORGE_MIN_SEGMENT
 * bounds the runtime's choice from below; few channels make it go there): segments inside
 * an interval, a ragged last one, the saved states still written at every interval. */
Test(fwd_gpu, split_state_segment_lengths, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300) {
  gpu_skip_without_device();
  static const char *least[] = {"16", "32", "128", "512"};
  static const int64_t lengths[] = {1000, 2049};
  uint64_t seed = 9100;
  for (size_t m = 0; m < sizeof least / sizeof least[0]; m++)
    for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++)
      for (int bf16 = 0; bf16 <= 1; bf16++) {
        setenv("SCANFORGE_MIN_SEGMENT", least[m], 1);
        sf_check_shape shape = {.batch = 2, .dim = 16, .seqlen = lengths[l], .dstate = 16, .groups = 1,
                                .dtype = bf16 ? SF_BF16 : SF_FP32, .z = true, .D = true, .delta_bias = true,
                                .softplus = true, .h0 = true};
        sf_launch launch = {.spec = "split=state,threads=8,items=16,channels=8"};
        sf_check_result r;
        sf_status st = sf_check_fwd(gpu_ctx, &shape, &launch, seed++, &r);
        unsetenv("SCANFORGE_MIN_SEGMENT");
        cr_expect_eq(st, SF_OK, "segments >= %s, L=%lld: %s", least[m], (long long)lengths[l], sf_last_error());
        if (st == SF_OK)
          cr_expect(r.passed, "segments >= %s, L=%lld, %s: out %.3g, last_state %.3g, saved %.3g", least[m],
                    (long long)lengths[l], bf16 ? "bf16" : "fp32", r.out_error, r.last_state_error, r.saved_error);
      }
}
