/* test_bwd_gpu.c: every gradient of the GPU backward against the float64 reference (skips without a GPU). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/check/check.h"
#include "runtime/launch_config/heuristics.h"
#include "runtime/launch/kernels.h"
#include "scanforge/scanforge.h"
#include "tests/support/gpu_fixture.h"
#include "tests/support/off_alignment.h"


typedef struct flag_set {
  const char *name;
  bool z, D, delta_bias, softplus, B_fixed, C_fixed, h0, d_last_state;
  int groups;
} flag_set;

static const flag_set flag_sets[] = {
    {"all, groups 2, h0, d_last_state", true, true, true, true, false, false, true, true, 2},
    {"none", false, false, false, false, false, false, false, false, 1},
    {"fixed B, D, d_last_state", false, true, false, false, true, false, false, true, 1},
    {"fixed C, z, softplus, bias, h0", true, false, true, true, false, true, true, false, 2},
    {"fixed B and C, softplus, bias, h0, d_last_state", false, true, true, true, true, true, true, true, 1},
};

static void describe(char *buf, size_t cap, const sf_check_bwd_result *r) {
  size_t used = 0;
  for (int i = 0; i < r->count && used < cap; i++)
    used += (size_t)snprintf(buf + used, cap - used, "%s %.2g ", r->grads[i].name, r->grads[i].error);
}

/* One backward check with `spec` that must run and pass; `label` names it in messages. */
static void expect_check_passes(const sf_check_shape *shape, const char *spec, uint64_t seed, const char *label) {
  sf_launch launch = {.spec = spec};
  sf_check_bwd_result r;
  sf_status st = sf_check_bwd(gpu_ctx, shape, &launch, seed, &r);
  cr_expect_eq(st, SF_OK, "%s (%s): %s", label, spec, sf_last_error());
  if (st != SF_OK) return;
  char errors[512] = "";
  describe(errors, sizeof errors, &r);
  cr_expect(r.passed, "%s (%s): %s(bar %.0e)", label, spec, errors, r.bar);
}

static int run_matrix(sf_dtype dtype, int dstate) {
  static const int64_t lengths[] = {1, 49, 196, 2047, 2049, 4096};
  int failures = 0;
  uint64_t seed = 5000u + 1000u * (unsigned)dtype + (unsigned)dstate;
  for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++)
    for (size_t f = 0; f < sizeof flag_sets / sizeof flag_sets[0]; f++) {
      const flag_set *fs = &flag_sets[f];
      sf_check_shape shape = {
          .batch = 2, .dim = 8, .seqlen = lengths[l], .dstate = dstate, .groups = fs->groups,
          .dtype = dtype, .z = fs->z, .D = fs->D, .delta_bias = fs->delta_bias,
          .softplus = fs->softplus, .B_fixed = fs->B_fixed, .C_fixed = fs->C_fixed, .h0 = fs->h0,
          .d_last_state = fs->d_last_state};
      sf_launch launch = {0};
      sf_check_bwd_result r;
      sf_status st = sf_check_bwd(gpu_ctx, &shape, &launch, seed++, &r);
      cr_expect_eq(st, SF_OK, "%s N=%d L=%lld [%s]: %s", sf_dtype_name(dtype), dstate,
                   (long long)lengths[l], fs->name, sf_last_error());
      if (st != SF_OK) { failures++; continue; }
      char errors[512] = "";
      describe(errors, sizeof errors, &r);
      cr_expect(r.passed, "%s N=%d L=%lld [%s]: %s(bar %.0e)", sf_dtype_name(dtype), dstate,
                (long long)lengths[l], fs->name, errors, r.bar);
      failures += !r.passed;
    }
  return failures;
}

#define DTYPE_DSTATE_TEST(dtype, name, n) \
  Test(bwd_gpu, name##_dstate_##n, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300) { \
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

/* The launch configurations of the backward template (threads x items = the interval). */
Test(bwd_gpu, launch_configurations, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300) {
  gpu_skip_without_device();
  static const struct { int64_t L; const char *spec; } cases[] = {
      {49, "split=time,threads=8,items=8,channels=16"},   {49, "split=time,threads=32,items=2,channels=1"},
      {49, "split=time,threads=64,items=1,channels=2"},   {196, "split=time,threads=32,items=8,channels=4"},
      {196, "split=time,threads=16,items=16,channels=8"}, {196, "split=time,threads=128,items=2,channels=1"},
      {3000, "split=time,threads=64,items=8,channels=4"}, {3000, "split=time,threads=32,items=16,channels=2"},
      {3000, "split=time,threads=128,items=4,channels=1"}, {3000, "split=time,threads=512,items=1,channels=2"},
      {49, "split=state,threads=4,items=8,channels=16"}, {196, "split=state,threads=4,items=8,channels=8"},
      {3000, "split=state,threads=4,items=8,channels=16"}, {3000, "split=state,threads=16,items=16,channels=2"},
      {3000, "split=state,threads=2,items=4,channels=16"}, {700, "split=state,threads=8,items=16,channels=4,states=1"}};
  uint64_t seed = 99;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    sf_check_shape shape = {.batch = 3, .dim = 32, .seqlen = cases[k].L, .dstate = 16, .groups = 2,
                            .dtype = SF_FP32, .z = true, .D = true, .delta_bias = true,
                            .softplus = true, .h0 = true, .d_last_state = true};
    sf_launch launch = {.spec = cases[k].spec};
    sf_check_bwd_result r;
    sf_status st = sf_check_bwd(gpu_ctx, &shape, &launch, seed++, &r);
    cr_expect_eq(st, SF_OK, "%s L=%lld: %s", cases[k].spec, (long long)cases[k].L, sf_last_error());
    if (st != SF_OK) continue;
    char errors[512] = "";
    describe(errors, sizeof errors, &r);
    cr_expect(r.passed, "%s L=%lld: %s", cases[k].spec, (long long)cases[k].L, errors);
  }
}

/* Rows that do not start on a 16-byte boundary, as the forward's test of the same name:
 * the backward stages the same rows (and dout) by the same copies. */
Test(bwd_gpu, rows_off_alignment, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300) {
  gpu_skip_without_device();
  static const char *const configs[] = {"split=state,threads=4,items=8,channels=16",
                                        "split=state,threads=4,items=4,channels=8"};
  uint64_t seed = 4343;
  for (int c = 0; c < 2 * OFF_ALIGNMENT_CALLS; c++) { /* each call with each launch */
    const char *spec = configs[c % 2];
    const sf_check_shape shape = off_alignment_shape(c / 2, 32);
    sf_check_bwd_result r;
    sf_status st = sf_check_bwd(gpu_ctx, &shape, &(sf_launch){.spec = spec}, seed++, &r);
    cr_expect_eq(st, SF_OK, "%s %s L=%lld: %s", spec, sf_dtype_name(shape.dtype), (long long)shape.seqlen,
                 sf_last_error());
    char errors[512] = "";
    if (st == SF_OK) describe(errors, sizeof errors, &r);
    cr_expect(st != SF_OK || r.passed, "%s %s L=%lld: %s", spec, sf_dtype_name(shape.dtype), (long long)shape.seqlen,
              errors);
  }
}

typedef struct spec_case {
  int dstate;
  const char *spec;
  int64_t state_interval; /* steps between saved states; 0: the default */
} spec_case;

/* Each case on (2, 64, L) in every dtype at L = 1, 77 and 1000, the first `sets` flag sets
 * taken in turn; with det_every > 0, every det_every-th call (counting from the first) in
 * the deterministic mode. */
static void check_spec_cases(const spec_case *cases, size_t count, size_t sets, size_t det_every, uint64_t seed) {
  static const sf_dtype dtypes[] = {SF_FP32, SF_BF16, SF_FP16};
  static const int64_t lengths[] = {1, 77, 1000};
  size_t calls = 0;
  for (size_t k = 0; k < count; k++)
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++)
      for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++, calls++) {
        const flag_set *fs = &flag_sets[(k + t + l) % sets];
        sf_check_shape shape = {
            .batch = 2, .dim = 64, .seqlen = lengths[l], .dstate = cases[k].dstate, .groups = fs->groups,
            .dtype = dtypes[t], .z = fs->z, .D = fs->D, .delta_bias = fs->delta_bias,
            .softplus = fs->softplus, .B_fixed = fs->B_fixed, .C_fixed = fs->C_fixed, .h0 = fs->h0,
            .d_last_state = fs->d_last_state, .deterministic = det_every > 0 && calls % det_every == 0,
            .state_interval = cases[k].state_interval};
        sf_launch launch = {.spec = cases[k].spec};
        sf_check_bwd_result r;
        sf_status st = sf_check_bwd(gpu_ctx, &shape, &launch, seed++, &r);
        cr_expect_eq(st, SF_OK, "%s every %lld, %s L=%lld [%s]: %s", cases[k].spec, (long long)cases[k].state_interval,
                     sf_dtype_name(dtypes[t]), (long long)lengths[l], fs->name, sf_last_error());
        if (st != SF_OK) continue;
        char errors[512] = "";
        describe(errors, sizeof errors, &r);
        cr_expect(r.passed, "%s every %lld, %s L=%lld [%s]: %s(bar %.0e)", cases[k].spec,
                  (long long)cases[k].state_interval, sf_dtype_name(dtypes[t]), (long long)lengths[l], fs->name,
                  errors, r.bar);
      }
}

/* The split=state template over its knobs, every dtype, d_state 1 to 128, every flag set
 * and lengths from 1 step to several intervals with a ragged end (and one of 100k steps):
 * 16-bit rows of 4 steps (8-byte copies), 1 to 8 states interleaved per pass, lanes from
 * 1 to 32. */
Test(bwd_gpu, split_state_configurations, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600) {
  gpu_skip_without_device();
  static const spec_case cases[] = {
      {1, "split=state,threads=1,items=4,channels=32", 0},
      {5, "split=state,threads=1,items=8,channels=32,states=5", 0},
      {16, "split=state,threads=4,items=4,channels=8,states=1", 0},
      {16, "split=state,threads=8,items=8,channels=4,states=2", 0},
      {16, "split=state,threads=16,items=4,channels=4,states=1", 0},
      {16, "split=state,threads=2,items=4,channels=16,states=4", 0},
      {16, "split=state,threads=8,items=8,channels=8,states=2", 0},
      {64, "split=state,threads=16,items=4,channels=2,states=2", 0},
      {128, "split=state,threads=32,items=4,channels=1,states=4", 0}};
  check_spec_cases(cases, sizeof cases / sizeof cases[0], sizeof flag_sets / sizeof flag_sets[0], 0, 777);
  static const sf_dtype dtypes[] = {SF_FP32, SF_BF16, SF_FP16};
  uint64_t seed = 900;
  /* Fixed B and C, 40 channels: the last block's slots past dim idle. */
  for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
    sf_check_shape shape = {.batch = 2, .dim = 40, .seqlen = 300, .dstate = 16, .groups = 1,
                            .dtype = dtypes[t], .z = true, .D = true, .delta_bias = true, .softplus = true,
                            .B_fixed = true, .C_fixed = true, .h0 = true, .d_last_state = true};
    char label[64];
    snprintf(label, sizeof label, "%s dim 40, fixed B and C", sf_dtype_name(dtypes[t]));
    expect_check_passes(&shape, "split=state,threads=8,items=8,channels=16", seed++, label);
  }
  /* Enough channels to fill the GPU: one block walks all intervals of its channels (the
   * small shapes above walk them in parallel). */
  {
    sf_check_shape shape = {.batch = 32, .dim = 512, .seqlen = 1100, .dstate = 16, .groups = 1,
                            .dtype = SF_BF16, .z = true, .D = true, .delta_bias = true,
                            .softplus = true, .h0 = true, .d_last_state = true};
    expect_check_passes(&shape, "split=state,threads=8,items=8,channels=8", seed++, "32x512x1100");
  }
  /* One long sequence: 100k steps, 196 intervals. */
  sf_check_shape shape = {.batch = 1, .dim = 16, .seqlen = 100000, .dstate = 16, .groups = 1,
                          .dtype = SF_BF16, .z = true, .D = true, .delta_bias = true,
                          .softplus = true, .h0 = true, .d_last_state = true};
  expect_check_passes(&shape, "split=state,threads=4,items=4,channels=8,states=1", seed, "L=100000");
}

/* States saved every `items` steps or fewer (docs/design-block-states.md): the blocks start
 * from saved states, nothing recomputed; intervals shorter than a block (every k-th saved
 * state read); intervals longer than a block but shorter than the default (the forward
 * pass through each); every dtype and flag set, segments (64 channels) and the
 * deterministic mode; then a call that fills the GPU (no segments), pairs, and split=time
 * reading every (chunk / interval)-th saved state. */
Test(bwd_gpu, block_states, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600) {
  gpu_skip_without_device();
  static const spec_case cases[] = {
      {16, "split=state,threads=2,items=8,channels=16,states=1", 8},
      {16, "split=state,threads=4,items=16,channels=8,states=1", 4},
      {16, "split=state,threads=8,items=4,channels=4,states=1", 4},
      {16, "split=state,threads=8,items=8,channels=8,states=2", 32},
      {64, "split=state,threads=16,items=8,channels=4,states=1", 8},
      {5, "split=state,threads=1,items=8,channels=32,states=5", 8}};
  check_spec_cases(cases, sizeof cases / sizeof cases[0], sizeof flag_sets / sizeof flag_sets[0], 4, 8800);
  static const struct { int64_t batch, dim, L; const char *spec; int64_t interval; } calls[] = {
      {32, 512, 1100, "split=state,threads=2,items=8,channels=16", 8},
      {32, 512, 1100, "split=state,threads=2,items=8,channels=16,pairs=1", 8},
      {4, 64, 1000, "split=time,threads=64,items=8,channels=2", 8},
      {4, 64, 1000, "split=time,threads=128,items=4,channels=1", 4}};
  uint64_t seed = 8900;
  for (size_t k = 0; k < sizeof calls / sizeof calls[0]; k++) {
    sf_check_shape shape = {.batch = calls[k].batch, .dim = calls[k].dim, .seqlen = calls[k].L, .dstate = 16,
                            .groups = 1, .dtype = k % 2 ? SF_FP32 : SF_BF16, .z = true, .D = true,
                            .delta_bias = true, .softplus = true, .h0 = true, .d_last_state = true,
                            .state_interval = calls[k].interval};
    char label[96];
    snprintf(label, sizeof label, "every %lld, %lldx%lldx%lld", (long long)calls[k].interval,
             (long long)calls[k].batch, (long long)calls[k].dim, (long long)calls[k].L);
    expect_check_passes(&shape, calls[k].spec, seed++, label);
  }
}

/* The lanes' parts of the sums over states in the layouts chosen phase by phase
 * (docs/design-parts-layout.md): groups of slots at chosen offsets (4 lanes, 8 steps, 16
 * channels, the 130M training rows' launch, with and without a register cap), equal strides
 * wider than before (8 lanes, 16 steps, 4 channels), the default interval and block states;
 * every dtype and flag set, the 16-channel ones also with fp32 and a gate, where the old
 * layout is kept because the new one would cost a block an SM. */
Test(bwd_gpu, lanes_parts_layouts, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600) {
  gpu_skip_without_device();
  static const spec_case cases[] = {
      {16, "split=state,threads=4,items=8,channels=16,minblocks=6,states=1", 0},
      {16, "split=state,threads=4,items=8,channels=16,minblocks=6,states=1", 8},
      {16, "split=state,threads=4,items=8,channels=16,states=1", 0},
      {16, "split=state,threads=8,items=16,channels=4,states=1", 0},
      {16, "split=state,threads=8,items=16,channels=4,states=1", 16}};
  check_spec_cases(cases, sizeof cases / sizeof cases[0], sizeof flag_sets / sizeof flag_sets[0], 5, 9300);
}

/* Launches whose arrays exceed 48 KB of static shared memory keep them in dynamic shared
 * memory (docs/design-dynamic-shared.md): N = 128 with 8 steps and 4 channels a block (94784
 * bytes in bf16), N = 64 with 16 steps (its carry pass alone was over), N = 16 with 16 steps
 * and 16 channels; on (2, 64, L) (segments walked in parallel, so the carry pass runs too),
 * every dtype and flag set, the default interval and block states, some calls
 * deterministic; then one call that fills the GPU. */
Test(bwd_gpu, dynamic_shared_memory_layouts, .init = gpu_setup, .fini = gpu_teardown, .timeout = 600) {
  gpu_skip_without_device();
  static const spec_case cases[] = {
      {128, "split=state,threads=32,items=8,channels=4,states=4", 0},
      {128, "split=state,threads=32,items=8,channels=4,states=2", 8},
      {64, "split=state,threads=32,items=16,channels=1,states=1", 0},
      {16, "split=state,threads=4,items=16,channels=16,states=1", 0},
      {16, "split=state,threads=4,items=16,channels=16,states=2", 16}};
  check_spec_cases(cases, sizeof cases / sizeof cases[0], sizeof flag_sets / sizeof flag_sets[0], 4, 6600);
  sf_check_shape shape = {.batch = 2, .dim = 512, .seqlen = 2048, .dstate = 128, .groups = 1,
                          .dtype = SF_BF16, .z = true, .D = true, .delta_bias = true,
                          .softplus = true, .h0 = true, .d_last_state = true};
  expect_check_passes(&shape, "split=state,threads=32,items=8,channels=4,minblocks=2", 6700, "2x512x2048 N=128");
}

/* Segments from one block of steps to a whole state interval ($SCANFORGE_MIN_SEGMENT
 * bounds the runtime's choice from below; few channels make it go there): a segment
 * starts from the saved state before its interval and the carries of the segments before
 * it, and from the adjoint the later ones hand back; ragged last segment; every flag set,
 * deterministic mode included. */
Test(bwd_gpu, split_state_segment_lengths, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300) {
  gpu_skip_without_device();
  static const char *least[] = {"8", "32", "128", "512"};
  static const int64_t lengths[] = {1000, 2049};
  static const sf_dtype dtypes[] = {SF_FP32, SF_BF16};
  uint64_t seed = 9300;
  for (size_t m = 0; m < sizeof least / sizeof least[0]; m++)
    for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++)
      for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
        const size_t k = m + l + t;
        const flag_set *fs = &flag_sets[k % (sizeof flag_sets / sizeof flag_sets[0])];
        setenv("SCANFORGE_MIN_SEGMENT", least[m], 1);
        sf_check_shape shape = {
            .batch = 2, .dim = 16, .seqlen = lengths[l], .dstate = 16, .groups = fs->groups,
            .dtype = dtypes[t], .z = fs->z, .D = fs->D, .delta_bias = fs->delta_bias,
            .softplus = fs->softplus, .B_fixed = fs->B_fixed, .C_fixed = fs->C_fixed, .h0 = fs->h0,
            .d_last_state = fs->d_last_state, .deterministic = k % 3 == 0};
        sf_launch launch = {.spec = "split=state,threads=8,items=8,channels=8,states=1"};
        sf_check_bwd_result r;
        sf_status st = sf_check_bwd(gpu_ctx, &shape, &launch, seed++, &r);
        unsetenv("SCANFORGE_MIN_SEGMENT");
        cr_expect_eq(st, SF_OK, "segments >= %s, L=%lld: %s", least[m], (long long)lengths[l], sf_last_error());
        if (st != SF_OK) continue;
        char errors[512] = "";
        describe(errors, sizeof errors, &r);
        cr_expect(r.passed, "segments >= %s, L=%lld, %s [%s]: %s(bar %.0e)", least[m], (long long)lengths[l],
                  sf_dtype_name(dtypes[t]), fs->name, errors, r.bar);
      }
}

/* The combine with one thread per (row, state) (sf_combine_runs: the launch's pairs fill
 * the GPU): 2 x 512 channels of 128 states, segmented on an H100 and an H200 with this
 * launch (bench's (2,512,2048,128) row); d_last_state starts the adjoint's walk. */
Test(bwd_gpu, split_state_combine_one_thread_per_state, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300) {
  gpu_skip_without_device();
  uint64_t seed = 9800;
  for (int bf16 = 0; bf16 <= 1; bf16++) {
    sf_check_shape shape = {.batch = 2, .dim = 512, .seqlen = 2048, .dstate = 128, .groups = 1,
                            .dtype = bf16 ? SF_BF16 : SF_FP32, .z = true, .D = true, .delta_bias = true,
                            .softplus = true, .h0 = true, .d_last_state = true};
    sf_launch launch = {.spec = "split=state,threads=16,items=4,channels=4"};
    sf_check_bwd_result r;
    sf_status st = sf_check_bwd(gpu_ctx, &shape, &launch, seed++, &r);
    cr_expect_eq(st, SF_OK, "%s: %s", bf16 ? "bf16" : "fp32", sf_last_error());
    if (st != SF_OK) continue;
    char errors[512] = "";
    describe(errors, sizeof errors, &r);
    cr_expect(r.passed, "%s: %s(bar %.0e)", bf16 ? "bf16" : "fp32", errors, r.bar);
  }
}

/* Deterministic mode: correct, and bitwise identical over five runs of a large shape. */
Test(bwd_gpu, deterministic_mode_is_bitwise_reproducible, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300) {
  gpu_skip_without_device();
  static const struct { bool B_fixed, C_fixed; int groups; const char *spec; } layouts[] = {
      {false, false, 1, NULL}, {true, false, 2, NULL}, {true, true, 1, NULL},
      {false, false, 1, "split=state,threads=4,items=8,channels=16"},
      {true, false, 2, "split=state,threads=4,items=8,channels=16"}};
  for (size_t k = 0; k < sizeof layouts / sizeof layouts[0]; k++) {
    sf_check_shape shape = {.batch = 4, .dim = 64, .seqlen = 4096, .dstate = 16,
                            .groups = layouts[k].groups, .dtype = SF_BF16, .z = true, .D = true,
                            .delta_bias = true, .softplus = true, .B_fixed = layouts[k].B_fixed,
                            .C_fixed = layouts[k].C_fixed, .h0 = true, .d_last_state = true,
                            .deterministic = true};
    uint64_t first = 0;
    for (int run = 0; run < 5; run++) {
      sf_launch launch = {.spec = layouts[k].spec};
      sf_check_bwd_result r;
      cr_assert_eq(sf_check_bwd(gpu_ctx, &shape, &launch, 4242, &r), SF_OK, "%s", sf_last_error());
      char errors[512] = "";
      describe(errors, sizeof errors, &r);
      cr_expect(r.passed, "layout %zu run %d: %s", k, run, errors);
      if (run == 0) first = r.checksum;
      cr_expect_eq(r.checksum, first, "layout %zu: run %d differs from run 0", k, run);
    }
  }
}

/* pairs=1 (neighbouring channels' dB and dC terms added before the block's sums) over
 * lanes, steps, channels, every dtype, d_state 16 and 64, groups, the deterministic mode
 * and lengths from one step to several intervals. */
Test(bwd_gpu, split_state_pairs, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300) {
  gpu_skip_without_device();
  static const spec_case cases[] = {
      {16, "split=state,threads=2,items=8,channels=16,states=1,minblocks=8,pairs=1", 0},
      {16, "split=state,threads=4,items=4,channels=8,states=1,pairs=1", 0},
      {16, "split=state,threads=8,items=8,channels=4,states=2,pairs=1", 0},
      {64, "split=state,threads=16,items=4,channels=2,states=2,pairs=1", 0}};
  check_spec_cases(cases, sizeof cases / sizeof cases[0], 2, 4, 12000); /* flag sets 0, 1: variable B and C */
}

/* At d_state 1 and 2, where a block has fewer dB/dC tasks than threads, teams of lanes
 * share each task and shuffles add their parts; two-lane launches of up to 8 steps a lane
 * store their gradients before the sums (templates/scan_bwd_states.tpl, docs/perf.md v38).
 * Teams of 2 to 16 lanes, with pairs, with one variable matrix (fixed B or C: one kind of
 * task), 16-step runs (gradients after the sums), every flag set, every fourth call
 * deterministic, and a segmented call (64 channels of 4096 steps). */
Test(bwd_gpu, split_state_sums_in_teams, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300) {
  gpu_skip_without_device();
  static const spec_case cases[] = {
      {2, "split=state,threads=2,items=16,channels=16,states=1", 0},
      {2, "split=state,threads=2,items=8,channels=32,states=1", 0},
      {2, "split=state,threads=2,items=32,channels=16,states=1", 0},
      {1, "split=state,threads=1,items=8,channels=32,states=1", 0},
      {2, "split=state,threads=1,items=4,channels=32,states=2", 0}};
  check_spec_cases(cases, sizeof cases / sizeof cases[0], sizeof flag_sets / sizeof flag_sets[0], 4, 15000);
  static const spec_case paired[] = {{2, "split=state,threads=2,items=8,channels=16,states=1,minblocks=16,pairs=1", 0}};
  check_spec_cases(paired, 1, 2, 4, 15050); /* flag sets 0, 1: pairs need variable B and C */
  sf_check_shape shape = {.batch = 1, .dim = 64, .seqlen = 4096, .dstate = 2, .groups = 1,
                          .dtype = SF_FP32, .z = true, .D = true, .delta_bias = true, .softplus = true,
                          .h0 = true, .d_last_state = true};
  expect_check_passes(&shape, "split=state,threads=2,items=16,channels=16,states=1", 15100, "segmented 1x64x4096");
}

/* Arguments for sf_scan_bwd_shape, which reads sizes and flags and never the tensors. */
static sf_scan_bwd_args shape_args(const sf_check_shape *c) {
  static _Alignas(16) float never_read[4];
  float *x = never_read;
  return (sf_scan_bwd_args){
      .fwd = {.batch = c->batch, .dim = c->dim, .seqlen = c->seqlen, .dstate = c->dstate, .groups = c->groups,
              .dtype = c->dtype, .delta_softplus = c->softplus, .u = x, .delta = x, .A = x, .B = x, .B_var = true,
              .C = x, .C_var = true, .D = c->D ? x : NULL, .delta_bias = c->delta_bias ? x : NULL,
              .z = c->z ? x : NULL, .saved_states = x},
      .dout = x, .du = x, .ddelta = x, .dz = c->z ? x : NULL, .dA = x, .dB = x, .dC = x};
}

static int64_t shape_waves(const sf_launch_shape *s) {
  const int64_t at_once = (int64_t)s->blocks_per_sm * s->sm_count;
  return (s->blocks + at_once - 1) / at_once;
}

/* fit_spread's choice for the launch so far (fit): its spread twin (twice the lanes,
 * registers capped for the blocks an SM the call needs) when fit runs in one wave with at
 * most SF_BWD_SPREAD_MAX_WARPS warps an SM and the twin still runs in one wave, spilling at
 * most SF_BWD_SPREAD_MAX_SPILL bytes a thread more. True, with *spread set, when the plan
 * takes it. */
static bool spread_expected(sf_scan_bwd_args *args, const sf_launch_shape *fit, sf_launch_shape *spread) {
  const sf_variant *v = &fit->variant;
  const int64_t per_sm = (fit->blocks + fit->sm_count - 1) / fit->sm_count;
  sf_variant twin;
  if (shape_waves(fit) != 1 || per_sm * (v->threads * v->channels / 32) > SF_BWD_SPREAD_MAX_WARPS ||
      !sf_bwd_spread_twin(v, (int)per_sm, &twin))
    return false;
  char spec[128];
  snprintf(spec, sizeof spec, "threads=%d,channels=%d,pairs=%d,minblocks=%d", twin.threads, twin.channels,
           twin.pairs, twin.min_blocks);
  cr_assert_eq(sf_scan_bwd_shape(gpu_ctx, args, &(sf_launch){.spec = spec}, spread), SF_OK, "%s", sf_last_error());
  const sf_kernel *k_fit, *k_twin;
  cr_assert_eq(sf_kernel_for_variant(gpu_ctx, v, &k_fit, NULL), SF_OK, "%s", sf_last_error());
  cr_assert_eq(sf_kernel_for_variant(gpu_ctx, &twin, &k_twin, NULL), SF_OK, "%s", sf_last_error());
  return shape_waves(spread) == 1 && k_twin->local_bytes <= k_fit->local_bytes + SF_BWD_SPREAD_MAX_SPILL;
}

/* fit_cap's choice for the launch so far (fit): its capped twin (registers capped for the
 * blocks an SM that hold the call in one wave) when fit needs two waves, the twin at most
 * SF_CAP_MAX_GROWTH times fit's blocks an SM, runs in one wave and spills at most
 * SF_CAP_MAX_SPILL bytes a thread more. True, with *capped set, when the plan takes it. */
static bool capped_expected(sf_scan_bwd_args *args, const sf_launch_shape *fit, sf_launch_shape *capped) {
  const sf_variant *v = &fit->variant;
  const int64_t per_sm = (fit->blocks + fit->sm_count - 1) / fit->sm_count;
  sf_variant twin;
  if (shape_waves(fit) != 2 || per_sm > SF_CAP_MAX_GROWTH * fit->blocks_per_sm ||
      !sf_capped_twin(v, (int)per_sm, &twin))
    return false;
  char spec[160];
  snprintf(spec, sizeof spec, "threads=%d,items=%d,channels=%d,states=%d,pairs=%d,minblocks=%d", twin.threads,
           twin.items, twin.channels, twin.states, twin.pairs, twin.min_blocks);
  cr_assert_eq(sf_scan_bwd_shape(gpu_ctx, args, &(sf_launch){.spec = spec}, capped), SF_OK, "%s", sf_last_error());
  const sf_kernel *k_fit, *k_twin;
  cr_assert_eq(sf_kernel_for_variant(gpu_ctx, v, &k_fit, NULL), SF_OK, "%s", sf_last_error());
  cr_assert_eq(sf_kernel_for_variant(gpu_ctx, &twin, &k_twin, NULL), SF_OK, "%s", sf_last_error());
  return shape_waves(capped) == 1 && k_twin->local_bytes <= k_fit->local_bytes + SF_CAP_MAX_SPILL;
}

/* Without a spec, the launch plan takes the lanes twin (twice the lanes, half the channels
 * a block) when its waves at SF_BWD_TWIN_BLOCK_COST of a wave each take less, then pairs=1
 * exactly when it needs fewer waves of blocks than the launch so far, then the spread twin
 * of a one-wave launch of few warps; what it then runs is right. The shapes have the block counts of the 1024-block training rows (one wave of 8
 * blocks an SM on an H200) and of the 768-block one, at L = 256 (split=state, as at 2048; the
 * blocks do not depend on L, and the float64 reference stays quick). */
Test(bwd_gpu, lanes_twin_or_pairs_when_fewer_waves, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300) {
  gpu_skip_without_device();
  /* pairs=1 is a kernel of its own, and it holds no fewer blocks an SM (the tuned training
   * launch: 27648 bytes of shared memory a block without, 19200 with; both 8 an SM on an
   * H200, where the registers are the limit) */
  sf_variant plain;
  cr_assert_eq(sf_variant_parse("op=bwd,split=state,dtype=bf16,threads=2,items=8,channels=16,states=1,minblocks=8,z=1,"
                                "D=1,delta_bias=1,softplus=1", &plain), SF_OK, "%s", sf_last_error());
  sf_variant with_pairs = plain;
  with_pairs.pairs = true;
  const sf_kernel *k_plain, *k_pairs;
  cr_assert_eq(sf_kernel_for_variant(gpu_ctx, &plain, &k_plain, NULL), SF_OK, "%s", sf_last_error());
  cr_assert_eq(sf_kernel_for_variant(gpu_ctx, &with_pairs, &k_pairs, NULL), SF_OK, "%s", sf_last_error());
  cr_expect_neq(k_plain, k_pairs, "pairs=1 got the kernel of pairs=0");
  cr_expect_geq(k_pairs->blocks_per_sm, k_plain->blocks_per_sm, "blocks an SM: %d with pairs, %d without",
                k_pairs->blocks_per_sm, k_plain->blocks_per_sm);

  static const struct { int64_t batch, dim; sf_dtype dtype; } rows[] = {
      {4, 4096, SF_BF16}, {8, 2048, SF_FP32}, {8, 1536, SF_BF16}};
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    sf_check_shape shape = {.batch = rows[k].batch, .dim = rows[k].dim, .seqlen = 256, .dstate = 16, .groups = 1,
                            .dtype = rows[k].dtype, .z = true, .D = true, .delta_bias = true, .softplus = true};
    sf_scan_bwd_args args = shape_args(&shape);
    sf_launch_shape unpaired, paired, chosen, lanes;
    const sf_launch plain_spec = {.spec = "pairs=0"};
    cr_assert_eq(sf_scan_bwd_shape(gpu_ctx, &args, &plain_spec, &unpaired), SF_OK, "%s", sf_last_error());
    cr_assert_eq(sf_scan_bwd_shape(gpu_ctx, &args, NULL, &chosen), SF_OK, "%s", sf_last_error());
    /* the lanes twin first */
    sf_variant twin;
    bool take_lanes = false;
    char spec[96];
    if (sf_bwd_lanes_twin(&unpaired.variant, &twin)) {
      snprintf(spec, sizeof spec, "threads=%d,channels=%d,pairs=0", twin.threads, twin.channels);
      cr_assert_eq(sf_scan_bwd_shape(gpu_ctx, &args, &(sf_launch){.spec = spec}, &lanes), SF_OK, "%s", sf_last_error());
      take_lanes = shape_waves(&unpaired) > 1 &&
                   (double)shape_waves(&lanes) * SF_BWD_TWIN_BLOCK_COST < (double)shape_waves(&unpaired);
    }
    const sf_launch_shape *base = take_lanes ? &lanes : &unpaired, *fit = base;
    snprintf(spec, sizeof spec, "threads=%d,channels=%d,pairs=1", base->variant.threads, base->variant.channels);
    if (sf_scan_bwd_shape(gpu_ctx, &args, &(sf_launch){.spec = spec}, &paired) != SF_OK) { /* not a launch that pairs */
      cr_expect(!chosen.variant.pairs, "row %zu took pairs=1, which its launch refuses", k);
    } else {
      const bool fewer = shape_waves(&paired) < shape_waves(base);
      cr_expect_eq(chosen.variant.pairs, fewer, "row %zu: pairs=%d, waves %lld without and %lld with", k,
                   chosen.variant.pairs, (long long)shape_waves(base), (long long)shape_waves(&paired));
      if (fewer) fit = &paired;
    }
    sf_launch_shape capped, spread;
    if (capped_expected(&args, fit, &capped)) fit = &capped;
    const sf_launch_shape *expected = spread_expected(&args, fit, &spread) ? &spread : fit;
    cr_expect_eq(chosen.variant.threads, expected->variant.threads, "row %zu", k);
    cr_expect_eq(chosen.variant.channels, expected->variant.channels, "row %zu", k);
    cr_expect_eq(chosen.variant.min_blocks, expected->variant.min_blocks, "row %zu", k);
    sf_check_bwd_result r;
    cr_assert_eq(sf_check_bwd(gpu_ctx, &shape, &(sf_launch){0}, 13000 + k, &r), SF_OK, "%s", sf_last_error());
    char errors[512] = "";
    describe(errors, sizeof errors, &r);
    cr_expect(r.passed, "row %zu (pairs=%d): %s(bar %.0e)", k, chosen.variant.pairs, errors, r.bar);
  }
}

/* A launch a little past one wave takes its capped twin when planned (the MambaVision
 * (64,256,196,8) backward at 4 lanes x 8 steps: 1.29 waves on an H100 or H200 at the
 * registers the compiler picks), and the twin's gradients are right. Where the GPU holds
 * the launch in one wave, or would need more than SF_CAP_MAX_GROWTH, it runs as given. */
Test(bwd_gpu, capped_twin_a_little_past_one_wave, .init = gpu_setup, .fini = gpu_teardown, .timeout = 300) {
  gpu_skip_without_device();
  static const struct { sf_dtype dtype; const char *spec; } rows[] = {
      {SF_FP32, "split=state,threads=4,items=8,channels=8,states=1,minblocks=0,pairs=0"},
      {SF_BF16, "split=state,threads=4,items=8,channels=16,states=1,minblocks=0,pairs=0"}};
  int capped_rows = 0;
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    sf_check_shape shape = {.batch = 64, .dim = 256, .seqlen = 196, .dstate = 8, .groups = 1, .dtype = rows[k].dtype,
                            .D = true, .delta_bias = true, .softplus = true};
    sf_scan_bwd_args args = shape_args(&shape);
    const sf_launch planned = {.spec = rows[k].spec, .spec_planned = true};
    sf_launch_shape written, chosen, capped;
    cr_assert_eq(sf_scan_bwd_shape(gpu_ctx, &args, &(sf_launch){.spec = rows[k].spec}, &written), SF_OK, "%s",
                 sf_last_error());
    cr_assert_eq(sf_scan_bwd_shape(gpu_ctx, &args, &planned, &chosen), SF_OK, "%s", sf_last_error());
    /* fit_pairs comes first: where it took pairs=1, the cap rule saw the paired launch */
    sf_launch_shape base = written;
    if (chosen.variant.pairs && !written.variant.pairs) {
      char paired[128];
      snprintf(paired, sizeof paired, "%.*spairs=1", (int)(strlen(rows[k].spec) - strlen("pairs=0")), rows[k].spec);
      cr_assert_eq(sf_scan_bwd_shape(gpu_ctx, &args, &(sf_launch){.spec = paired}, &base), SF_OK, "%s",
                   sf_last_error());
    }
    const bool take = capped_expected(&args, &base, &capped);
    capped_rows += take;
    cr_expect_eq(chosen.variant.min_blocks, take ? capped.variant.min_blocks : 0,
                 "row %zu: %lld blocks, %d an SM as planned before the cap (pairs=%d)", k, (long long)base.blocks,
                 base.blocks_per_sm, base.variant.pairs);
    cr_expect_eq(chosen.variant.threads, written.variant.threads, "row %zu: only the cap changes", k);
    sf_check_bwd_result r;
    cr_assert_eq(sf_check_bwd(gpu_ctx, &shape, &planned, 13100 + k, &r), SF_OK, "%s", sf_last_error());
    char errors[512] = "";
    describe(errors, sizeof errors, &r);
    cr_expect(r.passed, "row %zu (minblocks=%d): %s(bar %.0e)", k, chosen.variant.min_blocks, errors, r.bar);
  }
  if (capped_rows == 0) cr_log_warn("neither row took the capped twin on this GPU: only the gradients were checked");
}
