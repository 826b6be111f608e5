/* test_launch_plan_fake.c: the launch plans on the pretend driver (tests/fake_cuda/), whose
 * blocks an SM follow the kernels' static shared memory as on an H100: pairs=1 is chosen
 * exactly when it needs fewer waves, and only without a launch spec; a one-wave launch of
 * few warps its spread twin; the deterministic mode the same launches; the forward's half items likewise; block-states backwards take
 * their own tuning entries. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generator/generator.h"
#include "scanforge/scanforge.h"
#include "runtime/cuda/dynamic_shared.h"
#include "runtime/cuda/module.h"
#include "runtime/launch/kernels.h"
#include "runtime/launch_config/heuristics.h"
#include "runtime/launch_config/select.h"
#include "tuning/database_write.h"
#include "tests/support/temp_dir.h"

static sf_context *ctx;

static void setup_driver_and_cache(void) {
  setenv("SCANFORGE_CUDA_LIBRARY", SCANFORGE_FAKE_CUDA_PATH, 1);
  const char *cache_dir = scratch_dir("sf_plan_fake_"); /* removed when the test's process exits */
  cr_assert_not_null(cache_dir);
  setenv("SCANFORGE_CACHE_DIR", cache_dir, 1);
}

static void setup(void) {
  setup_driver_and_cache();
  setenv("SCANFORGE_TUNING_DB", "/nonexistent/no-tuning.json", 1); /* the heuristics decide */
  cr_assert_eq(sf_context_create(NULL, &ctx), SF_OK, "%s", sf_last_error());
}

static void teardown(void) { sf_context_destroy(ctx); }

/* A bf16 gated training call of (batch, dim, 2048, 16); its tensors are never read. */
static sf_scan_bwd_args training_call(int64_t batch, int64_t dim) {
  static _Alignas(16) float never_read[4];
  float *x = never_read;
  return (sf_scan_bwd_args){
      .fwd = {.batch = batch, .dim = dim, .seqlen = 2048, .dstate = 16, .groups = 1, .dtype = SF_BF16,
              .delta_softplus = true, .u = x, .delta = x, .A = x, .B = x, .B_var = true, .C = x, .C_var = true,
              .D = x, .delta_bias = x, .z = x, .saved_states = x},
      .dout = x, .du = x, .ddelta = x, .dz = x, .dA = x, .dB = x, .dC = x};
}

/* Training calls whose launches take the backward's twins on this GPU: 1024, 1728 and 768
 * blocks of the heuristics' 2 lanes x 16 channels. */
static const struct {
  int64_t batch, dim;
} twin_calls[] = {{4, 4096}, {18, 1536}, {8, 1536}};

static int64_t waves(const sf_launch_shape *s) {
  const int64_t at_once = (int64_t)s->blocks_per_sm * s->sm_count;
  return (s->blocks + at_once - 1) / at_once;
}

/* What fit_spread makes of `fit`, the launch so far: when it runs in one wave with at most
 * SF_BWD_SPREAD_MAX_WARPS warps an SM, its spread twin (twice the lanes, registers capped
 * for the blocks an SM the call needs) if that still runs in one wave (the pretend driver
 * reports no spills). True, with *spread set, when the plan should take it. */
static bool expected_spread(sf_scan_bwd_args *args, const sf_launch_shape *fit, sf_launch_shape *spread) {
  const sf_variant *v = &fit->variant;
  const int64_t per_sm = (fit->blocks + fit->sm_count - 1) / fit->sm_count;
  if (waves(fit) != 1 || per_sm * (v->threads * v->channels / 32) > SF_BWD_SPREAD_MAX_WARPS ||
      v->dstate / (2 * v->threads) < SF_BWD_TWIN_MIN_STATES || 2 * v->threads > SF_BWD_SPREAD_MAX_LANES)
    return false;
  char spec[128];
  snprintf(spec, sizeof spec, "threads=%d,channels=%d,pairs=%d,minblocks=%lld", 2 * v->threads, v->channels,
           v->pairs, (long long)per_sm);
  cr_assert_eq(sf_scan_bwd_shape(ctx, args, &(sf_launch){.spec = spec}, spread), SF_OK, "%s", sf_last_error());
  return waves(spread) == 1;
}

/* The backward's plan without a spec: the lanes twin (twice the lanes, half the channels a
 * block) when the launch needs more than one wave and the twin's waves, at
 * SF_BWD_TWIN_BLOCK_COST of a wave each, take less; then pairs=1 exactly when it needs
 * fewer waves than the launch so far; then, for one wave of few warps, the spread twin. */
Test(launch_plan_fake, lanes_twin_then_pairs_when_they_save_time, .init = setup, .fini = teardown, .timeout = 300) {
  int took_lanes = 0, took_spread = 0;
  for (size_t k = 0; k < sizeof twin_calls / sizeof twin_calls[0]; k++) {
    sf_scan_bwd_args args = training_call(twin_calls[k].batch, twin_calls[k].dim);
    sf_launch_shape chosen, plain, paired, lanes, lanes_paired;
    cr_assert_eq(sf_scan_bwd_shape(ctx, &args, NULL, &chosen), SF_OK, "%s", sf_last_error());
    cr_assert_eq(sf_scan_bwd_shape(ctx, &args, &(sf_launch){.spec = "pairs=0"}, &plain), SF_OK, "%s", sf_last_error());
    cr_assert_eq(sf_scan_bwd_shape(ctx, &args, &(sf_launch){.spec = "pairs=1"}, &paired), SF_OK, "%s", sf_last_error());
    char spec[96];
    snprintf(spec, sizeof spec, "threads=%d,channels=%d,pairs=0", 2 * plain.variant.threads, plain.variant.channels / 2);
    cr_assert_eq(sf_scan_bwd_shape(ctx, &args, &(sf_launch){.spec = spec}, &lanes), SF_OK, "%s", sf_last_error());
    snprintf(spec, sizeof spec, "threads=%d,channels=%d,pairs=1", 2 * plain.variant.threads, plain.variant.channels / 2);
    cr_assert_eq(sf_scan_bwd_shape(ctx, &args, &(sf_launch){.spec = spec}, &lanes_paired), SF_OK, "%s", sf_last_error());
    cr_expect(!plain.variant.pairs && paired.variant.pairs, "a spec is run as written");
    cr_expect_gt(paired.blocks_per_sm, plain.blocks_per_sm, "half the sums' shared memory: more blocks an SM");
    /* one wave keeps its launch */
    const bool take_lanes =
        waves(&plain) > 1 && (double)waves(&lanes) * SF_BWD_TWIN_BLOCK_COST < (double)waves(&plain);
    took_lanes += take_lanes;
    const sf_launch_shape *base = take_lanes ? &lanes : &plain, *base_paired = take_lanes ? &lanes_paired : &paired;
    const bool take_pairs = waves(base_paired) < waves(base);
    const sf_launch_shape *fit = take_pairs ? base_paired : base;
    sf_launch_shape spread;
    const bool take_spread = expected_spread(&args, fit, &spread);
    took_spread += take_spread;
    const sf_launch_shape *expected = take_spread ? &spread : fit;
    cr_expect_eq(chosen.variant.threads, expected->variant.threads, "row %zu", k);
    cr_expect_eq(chosen.variant.channels, expected->variant.channels, "row %zu", k);
    cr_expect_eq(chosen.variant.min_blocks, expected->variant.min_blocks, "row %zu", k);
    cr_expect_eq(chosen.variant.pairs, take_pairs, "row %zu: %lld waves without pairs, %lld with", k,
                 (long long)waves(base), (long long)waves(base_paired));
    cr_expect_eq(chosen.blocks_per_sm, expected->blocks_per_sm);
  }
  cr_expect_gt(took_spread, 0, "the one-wave 130M row takes the spread twin on this GPU");
  cr_expect_gt(took_lanes, 0, "the rows past one wave take the twin on this GPU");
  /* The deterministic mode plans the same launches, twins and all: its partial sums stay
   * mapped in the workspace pool, so the lanes twin's doubled slices cost less than the
   * wave it saves (docs/design-waves.md). */
  for (size_t k = 0; k < sizeof twin_calls / sizeof twin_calls[0]; k++) {
    sf_scan_bwd_args args = training_call(twin_calls[k].batch, twin_calls[k].dim);
    sf_launch_shape plain_mode, det;
    cr_assert_eq(sf_scan_bwd_shape(ctx, &args, NULL, &plain_mode), SF_OK, "%s", sf_last_error());
    args.deterministic = true;
    cr_assert_eq(sf_scan_bwd_shape(ctx, &args, NULL, &det), SF_OK, "%s", sf_last_error());
    cr_expect(det.variant.deterministic && !plain_mode.variant.deterministic, "row %zu", k);
    cr_expect_eq(det.variant.threads, plain_mode.variant.threads, "row %zu", k);
    cr_expect_eq(det.variant.channels, plain_mode.variant.channels, "row %zu", k);
    cr_expect_eq(det.variant.pairs, plain_mode.variant.pairs, "row %zu", k);
    cr_expect_eq(det.variant.min_blocks, plain_mode.variant.min_blocks, "row %zu", k);
  }
}

/* A spec with spec_planned (as the tuner times its candidates) is planned like the
 * runtime's own choice: the heuristics' knobs as a planned spec give the launch the call
 * without a spec gets, twins and all; as a plain spec they run as written. */
Test(launch_plan_fake, a_planned_spec_takes_the_twins_a_plain_spec_does_not, .init = setup, .fini = teardown,
     .timeout = 300) {
  int twinned = 0;
  for (size_t k = 0; k < sizeof twin_calls / sizeof twin_calls[0]; k++) {
    sf_scan_bwd_args args = training_call(twin_calls[k].batch, twin_calls[k].dim);
    sf_variant heuristic;
    cr_assert_eq(sf_scan_bwd_variant(&args, NULL, &heuristic), SF_OK, "%s", sf_last_error());
    char spec[160];
    snprintf(spec, sizeof spec, "split=state,threads=%d,items=%d,channels=%d,states=%d,minblocks=%d,pairs=%d",
             heuristic.threads, heuristic.items, heuristic.channels, heuristic.states, heuristic.min_blocks,
             heuristic.pairs);
    sf_launch_shape chosen, planned, as_written;
    cr_assert_eq(sf_scan_bwd_shape(ctx, &args, NULL, &chosen), SF_OK, "%s", sf_last_error());
    cr_assert_eq(sf_scan_bwd_shape(ctx, &args, &(sf_launch){.spec = spec, .spec_planned = true}, &planned), SF_OK,
                 "%s", sf_last_error());
    cr_assert_eq(sf_scan_bwd_shape(ctx, &args, &(sf_launch){.spec = spec}, &as_written), SF_OK, "%s", sf_last_error());
    const sf_tune_knobs want = sf_tune_knobs_of(&chosen.variant), got = sf_tune_knobs_of(&planned.variant),
                        written = sf_tune_knobs_of(&as_written.variant), asked = sf_tune_knobs_of(&heuristic);
    cr_expect(sf_tune_knobs_equal(&got, &want), "row %zu: a planned spec runs what the runtime's choice runs", k);
    cr_expect_eq(planned.variant.pairs, chosen.variant.pairs, "row %zu", k);
    cr_expect(sf_tune_knobs_equal(&written, &asked) && as_written.variant.pairs == heuristic.pairs,
              "row %zu: a plain spec runs as written", k);
    twinned += !sf_tune_knobs_equal(&want, &asked) || chosen.variant.pairs != heuristic.pairs;
  }
  cr_expect_gt(twinned, 0, "some of these rows take a twin on this GPU, so the test tells the two apart");
}

/* A launch whose arrays exceed 48 KB (a backward of 32 lanes x 8 steps x 4 channels at
 * N = 128 in bf16 needs 57920 bytes): the module says so, the loader reads it, and the
 * blocks an SM count it (228 KiB an SM, 1 KiB reserved a block: 3); one of 4 steps stays
 * static. */
Test(launch_plan_fake, dynamic_shared_memory_is_read_from_the_module_and_counted, .init = setup, .fini = teardown,
     .timeout = 300) {
  sf_scan_bwd_args args = training_call(2, 512);
  args.fwd.dstate = 128;
  sf_launch_shape big, small;
  cr_assert_eq(sf_scan_bwd_shape(ctx, &args, &(sf_launch){.spec = "split=state,threads=32,items=8,channels=4"}, &big),
               SF_OK, "%s", sf_last_error());
  cr_expect_eq(big.blocks_per_sm, (228 << 10) / (57920 + 1024), "blocks an SM with 57920 bytes of dynamic shared memory");
  cr_assert_eq(sf_scan_bwd_shape(ctx, &args, &(sf_launch){.spec = "split=state,threads=32,items=4,channels=4"}, &small),
               SF_OK, "%s", sf_last_error());
  cr_expect_gt(small.blocks_per_sm, big.blocks_per_sm, "the static layout of 4 steps (40704 bytes) holds more");
}

/* A module that declares nearly all the shared memory a block may have (a backward of 32
 * lanes x 16 steps x 16 channels at N = 64 in bf16, 231168 bytes): its segment carries'
 * combine, which has static arrays of its own, loads and launches without the module's
 * dynamic shared memory. Given it, as until stop 32, the combine's static and dynamic bytes
 * exceeded the 227 KiB a block may have (the tuner met this on an H200). */
Test(launch_plan_fake, helper_kernels_of_a_large_module_take_no_dynamic_shared_memory, .init = setup,
     .fini = teardown, .timeout = 300) {
  sf_variant v;
  cr_assert_eq(sf_variant_parse("op=bwd,split=state,dstate=64,dtype=bf16,threads=32,items=16,channels=16,z=1,"
                                "D=1,delta_bias=1,softplus=1",
                                &v),
               SF_OK, "%s", sf_last_error());
  char *source = NULL;
  size_t length;
  cr_assert_eq(sf_generate(&v, &source, &length), SF_OK, "%s", sf_last_error());
  const int module_dynamic = sf_source_dynamic_shared(source);
  free(source);
  const sf_kernel *combine;
  cr_assert_eq(sf_kernel_for_variant_helper(ctx, &v, "sf_scan_bwd_combine", &combine), SF_OK, "%s", sf_last_error());
  cr_expect_gt(combine->static_shared + module_dynamic, 227 << 10,
               "the module's figure and the combine's own arrays would not fit one block");
  cr_expect_gt(combine->static_shared, 0);
  cr_expect_eq(combine->dynamic_shared, 0);
  cr_expect_eq(sf_kernel_check_launch(combine, 256, 0), SF_OK, "%s", sf_last_error());
}

/* A forward of (batch, dim, L, N) in bf16 with every optional input but h0; never read. */
static sf_scan_fwd_args forward_call(int64_t batch, int64_t dim, int64_t seqlen, int dstate) {
  static _Alignas(16) float never_read[4];
  float *x = never_read;
  return (sf_scan_fwd_args){.batch = batch, .dim = dim, .seqlen = seqlen, .dstate = dstate, .groups = 1,
                            .dtype = SF_BF16, .delta_softplus = true, .u = x, .delta = x, .A = x, .B = x,
                            .B_var = true, .C = x, .C_var = true, .D = x, .delta_bias = x, .out = x};
}

/* The forward's plan halves a chosen launch's steps a block when that saves a wave (its
 * smaller stages hold more blocks an SM), never below 8 steps, and runs a spec as written. */
Test(launch_plan_fake, forward_halves_items_only_when_that_saves_a_wave, .init = setup, .fini = teardown,
     .timeout = 300) {
  static const struct { int64_t batch, dim, seqlen; int dstate; } calls[] = {
      {64, 256, 196, 8}, {96, 256, 196, 8}, {128, 256, 196, 8}, {192, 256, 196, 8}, {64, 160, 196, 8},
      {8, 1536, 2048, 16}, {16, 2048, 2048, 16}};
  int halved = 0;
  for (size_t k = 0; k < sizeof calls / sizeof calls[0]; k++) {
    sf_scan_fwd_args args = forward_call(calls[k].batch, calls[k].dim, calls[k].seqlen, calls[k].dstate);
    sf_variant planned;
    cr_assert_eq(sf_scan_fwd_variant(&args, NULL, &planned), SF_OK, "%s", sf_last_error());
    if (!planned.split_states || planned.items <= 8) continue;
    char as_planned[64], halves[64];
    snprintf(as_planned, sizeof as_planned, "items=%d", planned.items);
    snprintf(halves, sizeof halves, "items=%d", planned.items / 2);
    sf_launch_shape chosen, plain, shorter;
    cr_assert_eq(sf_scan_fwd_shape(ctx, &args, NULL, &chosen), SF_OK, "%s", sf_last_error());
    cr_assert_eq(sf_scan_fwd_shape(ctx, &args, &(sf_launch){.spec = as_planned}, &plain), SF_OK, "%s", sf_last_error());
    cr_assert_eq(sf_scan_fwd_shape(ctx, &args, &(sf_launch){.spec = halves}, &shorter), SF_OK, "%s", sf_last_error());
    cr_expect_eq(plain.variant.items, planned.items, "a spec is run as written");
    const bool saves_a_wave = plain.segments == 0 && shorter.segments == 0 && waves(&shorter) < waves(&plain);
    cr_expect_eq(chosen.variant.items, saves_a_wave ? planned.items / 2 : planned.items,
                 "row %zu: %lld waves at %d items, %lld at %d", k, (long long)waves(&plain), planned.items,
                 (long long)waves(&shorter), planned.items / 2);
    halved += chosen.variant.items < planned.items;
  }
  cr_expect_gt(halved, 0, "no row exercised the rule: pick shapes just past a wave");
}

/* The block-states mode (docs/design-block-states.md) reads tuning entries of its own: a
 * database on the pretend GPU with a backward entry at the default interval and another on
 * block states, for the 130M training call. */
/* A tuning entry of the 130M training call (its knobs still to set). */
static sf_tune_entry training_entry(void) {
  sf_scan_bwd_args args = training_call(8, 1536);
  sf_tune_entry e = {.shape = {8, 1536, 2048, 1}, .complete = true};
  cr_assert_eq(sf_scan_bwd_variant(&args, &(sf_launch){.untuned = true}, &e.variant), SF_OK, "%s", sf_last_error());
  e.seqlen_bucket = sf_tune_bucket(2048);
  e.rows_bucket = sf_tune_bucket(8 * 1536);
  return e;
}

/* Saves db as `name` in the cache directory, frees it, makes it the tuning database and
 * opens the context. */
static void use_database(sf_tune_db *db, const char *name) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", getenv("SCANFORGE_CACHE_DIR"), name);
  char *warning = NULL;
  cr_assert_eq(sf_tune_db_save(path, db, &warning), SF_OK, "%s", sf_last_error());
  free(warning);
  sf_tune_db_free(db);
  setenv("SCANFORGE_TUNING_DB", path, 1);
  cr_assert_eq(sf_context_create(NULL, &ctx), SF_OK, "%s", sf_last_error());
}

static void setup_tuned(void) {
  setup_driver_and_cache();
  sf_tune_gpu gpu;
  cr_assert_eq(sf_tune_gpu_of_device(0, &gpu), SF_OK, "%s", sf_last_error());
  sf_tune_entry e = training_entry();
  sf_tune_db db;
  sf_tune_db_init(&db);
  sf_tune_knobs plain = {true, 2, 8, 16, 1, 8}, block = {true, 4, 16, 8, 1, 8};
  sf_tune_knobs_apply(&plain, &e.variant);
  cr_assert_eq(sf_tune_db_put(&db, &gpu, &e), SF_OK);
  e.block_states = true;
  sf_tune_knobs_apply(&block, &e.variant);
  cr_assert_eq(sf_tune_db_put(&db, &gpu, &e), SF_OK);
  use_database(&db, "tuning.json");
}

Test(launch_plan_fake, block_states_calls_take_their_own_tuning, .init = setup_tuned, .fini = teardown,
     .timeout = 300) {
  sf_scan_bwd_args args = training_call(8, 1536);
  sf_variant v;
  cr_assert_eq(sf_scan_bwd_variant(&args, NULL, &v), SF_OK, "%s", sf_last_error());
  cr_expect(v.threads == 2 && v.items == 8 && v.channels == 16, "the default interval: its entry (%d/%d/%d)", v.threads,
            v.items, v.channels);
  int64_t interval = 0;
  cr_assert_eq(sf_scan_bwd_block_states_interval(&args, NULL, &interval), SF_OK, "%s", sf_last_error());
  cr_expect_eq(interval, 16, "the block-states entry's items");
  /* The backward given that interval runs the same variant, on its block-states entry point. */
  args.fwd.state_interval = interval;
  sf_launch_shape shape;
  cr_assert_eq(sf_scan_bwd_shape(ctx, &args, NULL, &shape), SF_OK, "%s", sf_last_error());
  cr_expect(shape.variant.threads == 4 && shape.variant.items == 16 && shape.variant.channels == 8,
            "block states: %d/%d/%d", shape.variant.threads, shape.variant.items, shape.variant.channels);
  /* A spec still decides, and the interval follows it. */
  cr_assert_eq(sf_scan_bwd_block_states_interval(&args, &(sf_launch){.spec = "split=state,threads=4,items=8,channels=8"},
                                                 &interval), SF_OK, "%s", sf_last_error());
  cr_expect_eq(interval, 8);
}

/* A database whose entries for this GPU were measured with another template set is not
 * used, and sf_tuning_warning says so before any call (it builds the device's table), so
 * a caller can show it first: here a backward entry stamped with templates 0. */
static void setup_stale(void) {
  setup_driver_and_cache();
  sf_tune_gpu gpu;
  cr_assert_eq(sf_tune_gpu_of_device(0, &gpu), SF_OK, "%s", sf_last_error());
  snprintf(gpu.templates, sizeof gpu.templates, "%016llx", 0ull);
  sf_tune_entry e = training_entry();
  sf_tune_knobs_apply(&(sf_tune_knobs){true, 2, 8, 16, 1, 8}, &e.variant);
  sf_tune_db db;
  sf_tune_db_init(&db);
  cr_assert_eq(sf_tune_db_put(&db, &gpu, &e), SF_OK);
  use_database(&db, "stale.json");
}

Test(launch_plan_fake, a_database_of_other_templates_is_reported_before_the_first_call, .init = setup_stale,
     .fini = teardown, .timeout = 300) {
  const char *w = sf_tuning_warning();
  cr_assert_not_null(w, "no warning for entries of another template set");
  cr_expect(strstr(w, "another template set") && strstr(w, "stale.json"), "%s", w);
  sf_scan_bwd_args args = training_call(8, 1536);
  sf_variant tuned, untuned;
  cr_assert_eq(sf_scan_bwd_variant(&args, NULL, &tuned), SF_OK, "%s", sf_last_error());
  cr_assert_eq(sf_scan_bwd_variant(&args, &(sf_launch){.untuned = true}, &untuned), SF_OK, "%s", sf_last_error());
  cr_expect(sf_variant_same(&tuned, &untuned), "the stale entry (2/8/16 +b8) was used: %d/%d/%d", tuned.threads,
            tuned.items, tuned.channels);
}

/* With FAKE_CUDA_REGISTERS the pretend driver reads each kernel's registers and local
 * memory from its cubin and lets registers limit the blocks an SM, as an H100 does. */
static void setup_registers(void) {
  setenv("FAKE_CUDA_REGISTERS", "1", 1);
  setup();
}

static void teardown_registers(void) {
  teardown();
  unsetenv("FAKE_CUDA_REGISTERS");
}

/* The MambaVision (64,256,196,8) fp32 backward at 4 lanes x 8 steps x 8 channels: 2048
 * blocks of one warp, 12 an SM at 168 registers, 1.29 waves. As a planned spec it takes
 * the capped twin (registers capped for 16 blocks an SM: one wave, a few bytes more
 * local memory); as a plain spec it runs as written; a launch past one wave by more than
 * SF_CAP_MAX_GROWTH keeps its registers. */
Test(launch_plan_fake, a_launch_a_little_past_one_wave_takes_its_capped_twin, .init = setup_registers,
     .fini = teardown_registers, .timeout = 300) {
  sf_scan_bwd_args args = training_call(64, 256);
  args.fwd.seqlen = 196, args.fwd.dstate = 8, args.fwd.dtype = SF_FP32, args.fwd.z = NULL, args.dz = NULL;
  const char *spec = "split=state,threads=4,items=8,channels=8,states=1,minblocks=0,pairs=0";
  sf_launch_shape written, planned;
  cr_assert_eq(sf_scan_bwd_shape(ctx, &args, &(sf_launch){.spec = spec}, &written), SF_OK, "%s", sf_last_error());
  cr_assert_eq(sf_scan_bwd_shape(ctx, &args, &(sf_launch){.spec = spec, .spec_planned = true}, &planned), SF_OK,
               "%s", sf_last_error());
  cr_assert_eq(written.blocks, 2048);
  cr_assert_eq(written.variant.min_blocks, 0, "a plain spec runs as written");
  cr_assert_eq(waves(&written), 2, "%d blocks an SM: the test needs a launch past one wave", written.blocks_per_sm);
  const int per_sm = (int)((written.blocks + written.sm_count - 1) / written.sm_count);
  cr_expect_eq(planned.variant.min_blocks, per_sm, "the capped twin: registers for %d blocks an SM", per_sm);
  cr_expect_eq(waves(&planned), 1);
  cr_expect(planned.variant.threads == 4 && planned.variant.items == 8 && planned.variant.channels == 8,
            "the same launch but for its cap");

  /* batch 96: 3072 blocks need 24 an SM, twice the 12 it holds: no cap that deep */
  args.fwd.batch = 96;
  sf_launch_shape deep;
  cr_assert_eq(sf_scan_bwd_shape(ctx, &args, &(sf_launch){.spec = spec, .spec_planned = true}, &deep), SF_OK, "%s",
               sf_last_error());
  cr_expect_eq(deep.variant.min_blocks, 0, "24 blocks an SM is past SF_CAP_MAX_GROWTH of 12");
}
