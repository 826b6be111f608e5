/* test_tuning_heuristics.c: the heuristics' launch configuration, in every regime, is one
 * its template accepts and the launch rules allow (an untuned call never fails there),
 * gated or not, deterministic or not. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "generator/generator.h"
#include "runtime/launch_config/heuristics.h"

typedef struct {
  int64_t batch, dim, seqlen;
  int groups;
} shape;

static const shape shapes[] = {
    {1, 4, 16, 1},     {4, 16, 64, 1},     {64, 160, 196, 1},   {64, 320, 49, 1},  {1, 256, 1024, 1},
    {8, 1536, 2048, 1}, {4, 1024, 2048, 2}, {2, 512, 2048, 1},  {1, 512, 2048, 1}, {1, 64, 65536, 1},
    {2, 48, 100000, 1}, {1, 1536, 16384, 1}, {16, 64, 256, 1},  {3, 40, 300, 1},   {1, 1, 1, 1}};
static const int dstates[] = {1, 2, 4, 5, 8, 16, 32, 64, 128, 256};
static const sf_dtype dtypes[] = {SF_FP32, SF_FP16, SF_BF16};

/* The template's verdict on v: its source generated, then freed. */
static sf_status generate(const sf_variant *v) {
  char *source = NULL;
  size_t length = 0;
  const sf_status st = sf_generate(v, &source, &length);
  free(source);
  return st;
}

Test(tuning_heuristics, every_choice_is_generated_and_launchable, .timeout = 600) {
  int checked = 0;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (size_t n = 0; n < sizeof dstates / sizeof dstates[0]; n++)
      for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++)
        for (int op = 0; op < 2; op++) {
          const shape *sh = &shapes[s];
          sf_variant v = sf_variant_default();
          v.op = op ? SF_OP_BWD : SF_OP_FWD;
          v.dstate = dstates[n];
          v.dtype = dtypes[t];
          v.has_z = (s + n) % 2 == 0;
          v.deterministic = op && (s + n + t) % 3 == 0; /* its partial sums take shared memory too */
          if (op)
            sf_heuristic_configure_bwd(&v, sh->batch, sh->dim, sh->groups, sh->seqlen);
          else
            sf_heuristic_configure(&v, sh->batch, sh->dim, sh->groups, sh->seqlen);
          char spec[512];
          sf_variant_format(&v, spec, sizeof spec);
          const char *where = spec;
          char row[64];
          snprintf(row, sizeof row, "%lld,%lld,%lld groups %d", (long long)sh->batch, (long long)sh->dim,
                   (long long)sh->seqlen, sh->groups);
          cr_assert_eq(sf_variant_validate(&v), SF_OK, "%s on %s: %s", where, row, sf_last_error());
          /* the launch rules of scan.c and scan_bwd_gpu.c */
          if (v.split_states)
            cr_expect_eq((sh->dim / sh->groups) % v.channels, 0, "%s on %s: channels must divide a group", where, row);
          else if (v.op == SF_OP_BWD)
            cr_expect_eq((int64_t)v.threads * v.items, sf_scan_state_interval(sh->seqlen),
                         "%s on %s: threads x items must be the state interval", where, row);
          cr_expect_eq(generate(&v), SF_OK, "%s on %s: the template refuses: %s", where, row, sf_last_error());
          checked++;
        }
  cr_expect_eq(checked, 2 * 3 * 10 * (int)(sizeof shapes / sizeof shapes[0]));
}

/* The spread twin (fit_spread): twice the lanes at the same channels, registers capped for
 * the blocks an SM asked for; none where a lane would keep fewer than 4 states, past
 * SF_BWD_SPREAD_MAX_LANES lanes, or for a forward; the twin is a variant the template takes. */
Test(tuning_heuristics, spread_twin_doubles_the_lanes_within_its_limits) {
  sf_variant v, twin;
  cr_assert_eq(sf_variant_parse("op=bwd,split=state,dstate=16,dtype=bf16,threads=2,items=8,channels=16,minblocks=8,z=1",
                                &v), SF_OK, "%s", sf_last_error());
  cr_assert(sf_bwd_spread_twin(&v, 6, &twin));
  cr_expect_eq(twin.threads, 4);
  cr_expect_eq(twin.channels, 16);
  cr_expect_eq(twin.items, 8);
  cr_expect_eq(twin.min_blocks, 6);
  cr_expect_eq(generate(&twin), SF_OK, "%s", sf_last_error());
  cr_expect_not(sf_bwd_spread_twin(&twin, 6, &v), "4 -> 8 lanes is past SF_BWD_SPREAD_MAX_LANES");
  cr_expect_not(sf_bwd_spread_twin(&v, 0, &twin), "no blocks an SM");
  sf_variant small = v;
  small.dstate = 8;
  small.threads = 2;
  cr_expect_not(sf_bwd_spread_twin(&small, 6, &twin), "4 lanes of N = 8 keep 2 states each");
  sf_variant forward = v;
  forward.op = SF_OP_FWD;
  cr_expect_not(sf_bwd_spread_twin(&forward, 6, &twin));
}

Test(tuning_heuristics, capped_twin_raises_only_the_cap) {
  sf_variant v, twin;
  cr_assert_eq(sf_variant_parse("op=bwd,split=state,dstate=8,dtype=fp32,threads=4,items=8,channels=8", &v), SF_OK, "%s",
               sf_last_error());
  cr_assert(sf_capped_twin(&v, 16, &twin));
  cr_expect(twin.threads == 4 && twin.items == 8 && twin.channels == 8 && twin.states == v.states);
  cr_expect_eq(twin.min_blocks, 16);
  cr_expect_not(sf_capped_twin(&twin, 16, &v), "already capped at 16");
  cr_expect_not(sf_capped_twin(&twin, 12, &v), "a weaker cap is no twin");
  cr_expect_not(sf_capped_twin(&v, 33, &twin), "past the 32 blocks an SM a cap may ask");
  sf_variant forward = v;
  forward.op = SF_OP_FWD;
  cr_expect(sf_capped_twin(&forward, 16, &twin), "the forward's split=state launches have one too");
  sf_variant by_time = v;
  by_time.split_states = false;
  cr_expect_not(sf_capped_twin(&by_time, 16, &twin), "split=time launches are not capped");
}

/* Expects v to be the split=state launch threads/items/channels capped at min_blocks
 * blocks an SM, one state a pass, and its template to generate it; 1 when it did. */
static int expect_launch_generated(const sf_variant *v, int threads, int items, int channels, int min_blocks) {
  cr_expect(v->split_states && v->threads == threads && v->items == items && v->channels == channels &&
                v->min_blocks == min_blocks && v->states == 1,
            "N = %d: got %s %d/%d/%d +b%d", v->dstate, v->split_states ? "state" : "time", v->threads, v->items,
            v->channels, v->min_blocks);
  const sf_status st = generate(v);
  cr_expect_eq(st, SF_OK, "N = %d: %s", v->dstate, sf_last_error());
  return st == SF_OK;
}

/* The kinds of call the large-shared tests cover: every dtype, gated or not, one group or two. */
enum { CALL_KINDS = (int)(sizeof dtypes / sizeof dtypes[0]) * 2 * 2 };

/* The heuristics' choice (sf_heuristic_choose) for a 2048-step call of op of the given kind
 * (0 .. CALL_KINDS - 1), where a block may opt in to 227 KB; expects 163 KB (A100) to choose
 * what sf_heuristic_configure(_bwd) alone does. */
static sf_variant large_shared_choice(sf_op op, int dstate, int64_t batch, int64_t dim, int kind) {
  const int groups = 1 + kind % 2;
  sf_variant v = sf_variant_default();
  v.op = op, v.dstate = dstate, v.dtype = dtypes[kind / 4], v.has_z = (kind / 2) % 2;
  sf_variant configured = v, a100 = v;
  if (op == SF_OP_BWD) sf_heuristic_configure_bwd(&configured, batch, dim, groups, 2048);
  else sf_heuristic_configure(&configured, batch, dim, groups, 2048);
  sf_heuristic_choose(&a100, batch, dim, groups, 2048, 163 << 10);
  cr_expect(sf_variant_same(&a100, &configured), "N = %d: 163 KB changes nothing", dstate);
  sf_heuristic_choose(&v, batch, dim, groups, 2048, 227 << 10);
  return v;
}

/* The backward's launches above 48 KB (sf_heuristic_large_shared_bwd): on a GPU whose
 * blocks may opt in to 227 KB (H100, H200), N = 64, 128, 256 over 1024 steps or more take 8
 * states a lane (16 channels a block at N = 64, 8 above; 4 steps at N = 256, uncapped with
 * the gate), in every dtype, gated or not, one group or two, and the template takes each;
 * with 163 KB (A100), at N = 32, over 512 steps, for a forward, or when 8 channels do not
 * divide a group, the heuristics' choice stands. */
Test(tuning_heuristics, large_states_take_dynamic_shared_memory_where_the_gpu_allows) {
  static const struct { int dstate; int64_t batch, dim; int threads, items, channels, min_blocks; } cases[] = {
      {64, 4, 1024, 8, 8, 16, 0}, {128, 2, 512, 16, 8, 8, 2}, {256, 1, 512, 32, 4, 8, 2}};
  int generated = 0;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    for (int kind = 0; kind < CALL_KINDS; kind++) {
      const sf_variant v = large_shared_choice(SF_OP_BWD, cases[k].dstate, cases[k].batch, cases[k].dim, kind);
      /* the gate leaves N = 256 one block an SM: no cap for two */
      const int min_blocks = cases[k].dstate == 256 && v.has_z ? 1 : cases[k].min_blocks;
      generated += expect_launch_generated(&v, cases[k].threads, cases[k].items, cases[k].channels, min_blocks);
    }
  cr_expect_eq(generated, 3 * CALL_KINDS);
  static const struct { int dstate; int64_t dim, seqlen; sf_op op; } untouched[] = {
      {32, 1024, 2048, SF_OP_BWD}, {128, 512, 512, SF_OP_BWD}, {128, 12, 2048, SF_OP_BWD}, {128, 512, 2048, SF_OP_FWD}};
  for (size_t k = 0; k < sizeof untouched / sizeof untouched[0]; k++) {
    sf_variant v = sf_variant_default();
    v.op = untouched[k].op, v.dstate = untouched[k].dstate;
    if (v.op == SF_OP_BWD) sf_heuristic_configure_bwd(&v, 2, untouched[k].dim, 1, untouched[k].seqlen);
    else sf_heuristic_configure(&v, 2, untouched[k].dim, 1, untouched[k].seqlen);
    sf_variant after = v;
    sf_heuristic_large_shared_bwd(&after, 2, untouched[k].dim, 1, untouched[k].seqlen, 227 << 10);
    cr_expect(sf_variant_same(&after, &v), "case %zu: unchanged", k);
  }
}

/* The forward's launches above 48 KB (sf_heuristic_large_shared_fwd): with 227 KB, N = 32
 * to 256 over 1024 steps or more take 8 lanes, 32 steps and 32 channels (N = 32), 16 lanes,
 * 32 steps and 16 channels (N = 64),
 * 32 lanes, 32 steps and 8 channels (N = 128) or 32 lanes, 16 steps and 4 channels
 * (N = 256), however few the channels (16 to 1024 here), capped at 2 blocks an SM, in every
 * dtype, gated or not, one group or two, and the template takes each (16-bit N = 256 had
 * no split=state launch before); where those channels do not divide a group, the most that
 * do; with 163 KB, at N = 16, at 512 steps, for a backward, or when a block would not fill
 * a warp, the heuristics' choice stands. */
Test(tuning_heuristics, large_forward_states_take_dynamic_shared_memory_where_the_gpu_allows) {
  static const struct { int dstate; int64_t batch, dim; int lanes, items, channels; } cases[] = {
      {32, 4, 1024, 8, 32, 32}, {64, 4, 1024, 16, 32, 16}, {128, 2, 512, 32, 32, 8}, {256, 1, 512, 32, 16, 4},
      {256, 1, 256, 32, 16, 4},  {32, 1, 256, 8, 32, 32},   {64, 1, 256, 16, 32, 16}, {128, 1, 64, 32, 32, 8},
      {256, 1, 64, 32, 16, 4},   {64, 1, 32, 16, 32, 16},  {128, 1, 16, 32, 32, 8},  {256, 2, 16, 32, 16, 4}};
  int generated = 0;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    for (int kind = 0; kind < CALL_KINDS; kind++) {
      const sf_variant v = large_shared_choice(SF_OP_FWD, cases[k].dstate, cases[k].batch, cases[k].dim, kind);
      generated += expect_launch_generated(&v, cases[k].lanes, cases[k].items, cases[k].channels, 2);
    }
  cr_expect_eq(generated, (int)(sizeof cases / sizeof cases[0]) * CALL_KINDS);
  /* 48 channels at N = 32 (one group): 16 a block; 12 a group at N = 128: 4; 6 at N = 128: 2;
   * 3 at N = 256: 1 */
  sf_variant few = sf_variant_default();
  few.dstate = 32, few.dtype = SF_FP32;
  sf_heuristic_choose(&few, 1, 48, 1, 8192, 227 << 10);
  expect_launch_generated(&few, 8, 32, 16, 2);
  few = sf_variant_default();
  few.dstate = 128;
  sf_heuristic_choose(&few, 32, 24, 2, 2048, 227 << 10);
  expect_launch_generated(&few, 32, 32, 4, 2);
  few = sf_variant_default();
  few.dstate = 128;
  sf_heuristic_choose(&few, 1, 6, 1, 4096, 227 << 10);
  expect_launch_generated(&few, 32, 32, 2, 2);
  few = sf_variant_default();
  few.dstate = 256, few.dtype = SF_BF16, few.has_z = true;
  sf_heuristic_choose(&few, 1, 3, 1, 4096, 227 << 10);
  expect_launch_generated(&few, 32, 16, 1, 2);
  static const struct { int dstate; int64_t batch, dim, seqlen; int groups; sf_op op; } untouched[] = {
      {16, 8, 1536, 2048, 1, SF_OP_FWD}, {128, 2, 512, 512, 1, SF_OP_FWD}, {128, 2, 512, 2048, 1, SF_OP_BWD},
      {32, 1, 3, 2048, 1, SF_OP_FWD},    {32, 2, 6, 2048, 2, SF_OP_FWD}};
  for (size_t k = 0; k < sizeof untouched / sizeof untouched[0]; k++) {
    sf_variant v = sf_variant_default();
    v.op = untouched[k].op, v.dstate = untouched[k].dstate;
    if (v.op == SF_OP_BWD)
      sf_heuristic_configure_bwd(&v, untouched[k].batch, untouched[k].dim, untouched[k].groups, untouched[k].seqlen);
    else
      sf_heuristic_configure(&v, untouched[k].batch, untouched[k].dim, untouched[k].groups, untouched[k].seqlen);
    sf_variant after = v;
    sf_heuristic_large_shared_fwd(&after, untouched[k].batch, untouched[k].dim, untouched[k].groups,
                                  untouched[k].seqlen, 227 << 10);
    cr_expect(sf_variant_same(&after, &v), "case %zu: unchanged", k);
  }
}

/* Small states at language-model sizes (docs/perf.md v31): over 1024 steps or more, the
 * forward takes 4 lanes of one state, 32 steps and 8 channels at N = 4 and 2 lanes, 32 steps
 * and 16 channels at N = 2; the backward 4 lanes of one state and 8 channels at N = 4 (from
 * 128 steps), blocks of 8 steps at N = 8 in 16-bit types (4 under 1024 steps), and 2 lanes,
 * 32 steps and 16 channels at N = 2; N = 1, and N = 2 at L = 49, keep lanes over time. */
Test(tuning_heuristics, small_states_take_lanes_over_states_at_training_sizes) {
  static const struct { sf_op op; int dstate; sf_dtype dtype; int64_t batch, dim, seqlen; int threads, items, channels; } cases[] = {
      {SF_OP_FWD, 4, SF_BF16, 8, 1536, 2048, 4, 32, 8},   {SF_OP_FWD, 4, SF_FP32, 8, 1536, 2048, 4, 32, 8},
      {SF_OP_FWD, 4, SF_BF16, 64, 256, 196, 4, 16, 16},   {SF_OP_FWD, 2, SF_BF16, 8, 1536, 2048, 2, 32, 16},
      {SF_OP_BWD, 4, SF_BF16, 8, 1536, 2048, 4, 8, 8},    {SF_OP_BWD, 4, SF_FP32, 8, 1536, 2048, 4, 8, 8},
      {SF_OP_BWD, 4, SF_BF16, 64, 256, 196, 4, 8, 8},     {SF_OP_BWD, 8, SF_BF16, 8, 1536, 2048, 4, 8, 8},
      {SF_OP_BWD, 8, SF_BF16, 64, 160, 196, 4, 4, 8},     {SF_OP_BWD, 2, SF_BF16, 8, 1536, 2048, 2, 32, 16}};
  int generated = 0;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    sf_variant v = sf_variant_default();
    v.op = cases[k].op, v.dstate = cases[k].dstate, v.dtype = cases[k].dtype, v.has_z = true;
    sf_heuristic_choose(&v, cases[k].batch, cases[k].dim, 1, cases[k].seqlen, 227 << 10);
    generated += expect_launch_generated(&v, cases[k].threads, cases[k].items, cases[k].channels, 0);
  }
  cr_expect_eq(generated, (int)(sizeof cases / sizeof cases[0]));
  /* lanes over time: at N = 1 over 512 steps the forward 128 threads of 8 steps, one
   * channel at 8 blocks an SM, the backward 64 threads and 4 channels capped at 3; at L = 49
   * the N = 2 forward 8 threads of 8 steps, 16 channels, 6 blocks an SM */
  static const struct { sf_op op; int dstate; int64_t batch, dim, seqlen; int threads, items, channels, min_blocks; } by_time[] = {
      {SF_OP_FWD, 1, 8, 1536, 2048, 128, 8, 1, 8}, {SF_OP_FWD, 1, 1, 1536, 2048, 128, 8, 1, 8},
      {SF_OP_BWD, 1, 8, 1536, 2048, 64, 8, 4, 3}, {SF_OP_BWD, 1, 1, 1536, 2048, 64, 8, 4, 3},
      {SF_OP_FWD, 2, 64, 512, 49, 8, 8, 16, 6},   {SF_OP_BWD, 2, 64, 512, 49, 16, 4, 8, 0}};
  for (size_t k = 0; k < sizeof by_time / sizeof by_time[0]; k++) {
    sf_variant v = sf_variant_default();
    v.op = by_time[k].op, v.dstate = by_time[k].dstate;
    sf_heuristic_choose(&v, by_time[k].batch, by_time[k].dim, 1, by_time[k].seqlen, 227 << 10);
    cr_expect(!v.split_states && v.threads == by_time[k].threads && v.items == by_time[k].items &&
                  v.channels == by_time[k].channels && v.min_blocks == by_time[k].min_blocks,
              "case %zu: got %s %d/%d/%d +b%d", k, v.split_states ? "state" : "time", v.threads, v.items, v.channels,
              v.min_blocks);
    cr_expect_eq(generate(&v), SF_OK, "case %zu: %s", k, sf_last_error());
  }
}

/* Batches of a few language-model rows (docs/perf.md v32, v35): at N = 16 with fewer than
 * 8192 channels the backward takes 4 lanes, 16 channels, uncapped (8192 and more keep 2
 * lanes capped at 8 blocks an SM); with fewer than 4096 channels, a thousand or more, N = 8
 * and 16-bit N = 4 take 4 lanes and blocks of 16 steps, fp32 N = 4 also 16 channels (up to
 * 4096 steps), fewer channels keep blocks of 8. */
Test(tuning_heuristics, small_batches_take_four_lanes_in_the_backward) {
  static const struct { int dstate; sf_dtype dtype; int64_t batch, dim; int threads, items, channels, min_blocks; } cases[] = {
      {16, SF_BF16, 4, 1536, 4, 8, 16, 0}, {16, SF_FP32, 4, 1536, 4, 8, 16, 0}, {16, SF_BF16, 8, 1536, 2, 8, 16, 8},
      {8, SF_BF16, 4, 768, 4, 16, 8, 0},   {8, SF_FP32, 1, 1536, 4, 16, 8, 0},  {4, SF_BF16, 2, 1536, 4, 16, 8, 0},
      {4, SF_FP32, 2, 768, 4, 16, 16, 0},  {8, SF_BF16, 1, 512, 8, 8, 8, 0}};
  int generated = 0;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    sf_variant v = sf_variant_default();
    v.op = SF_OP_BWD, v.dstate = cases[k].dstate, v.dtype = cases[k].dtype, v.has_z = true;
    sf_heuristic_choose(&v, cases[k].batch, cases[k].dim, 1, 2048, 227 << 10);
    generated += expect_launch_generated(&v, cases[k].threads, cases[k].items, cases[k].channels, cases[k].min_blocks);
  }
  cr_expect_eq(generated, (int)(sizeof cases / sizeof cases[0]));
}

/* Few channels over more than 512 steps (docs/perf.md v33, v35, v36): the forward at N = 1-2
 * with a thousand to 4095 channels takes 128 threads of 8 steps, one channel, at 8 blocks an
 * SM, 16-bit N = 2 up to 4096 steps 16 steps at 4 blocks (from 4096 channels and 1024 steps
 * N = 2 takes split=state); N = 2 with 256 to 1023 channels (N = 1: 512 to 1023) 256 threads
 * at 4 blocks; fewer channels 512 threads at 2 blocks, but N = 2 below 128 channels 2 lanes,
 * 32 steps and 16 channels (with segments); fp32 at N = 4 with a thousand to 4095 channels
 * takes 64 threads of 8 steps and 2 channels instead of segments up to 4096 steps, 16-bit
 * types 128 threads of 16 steps at 4 blocks; with 512 to 1023 channels
 * N = 4 takes 256 threads at 4 blocks, below 512 4 lanes, 16 steps and 16 channels; 4096
 * channels or more and 8192 steps keep segments (at 512 steps and under no rule of these
 * applies). */
Test(tuning_heuristics, few_channel_small_states_fill_the_gpu_once) {
  static const struct { int dstate; sf_dtype dtype; int64_t batch, dim, seqlen; bool by_time; int threads, items, channels, min_blocks; } cases[] = {
      {2, SF_BF16, 2, 1536, 2048, true, 128, 16, 1, 4},  {2, SF_FP32, 1, 1024, 4096, true, 128, 8, 1, 8},
      {1, SF_BF16, 4, 1024, 4096, true, 128, 8, 1, 8},  {2, SF_BF16, 1, 512, 8192, true, 256, 8, 1, 4},
      {2, SF_FP32, 1, 256, 16384, true, 256, 8, 1, 4},  {2, SF_FP32, 1, 64, 65536, false, 2, 32, 16, 0},
      {2, SF_BF16, 1, 128, 8192, true, 512, 8, 1, 2},  {4, SF_BF16, 1, 512, 8192, true, 256, 8, 1, 4},
      {4, SF_BF16, 1, 64, 65536, false, 4, 16, 16, 0},  {2, SF_BF16, 1, 512, 512, true, 32, 16, 4, 0},
      {1, SF_BF16, 1, 512, 8192, true, 256, 8, 1, 4},   {1, SF_BF16, 1, 256, 16384, true, 512, 8, 1, 2},
      {1, SF_FP32, 1, 64, 65536, true, 512, 8, 1, 2},   {4, SF_FP32, 1, 512, 8192, true, 256, 8, 1, 4},
      {4, SF_FP32, 1, 256, 16384, false, 4, 16, 16, 0}, {4, SF_BF16, 1, 1024, 8192, false, 4, 16, 16, 0},
      {4, SF_BF16, 1, 256, 16384, false, 4, 16, 16, 0},
      {2, SF_BF16, 8, 1536, 2048, false, 2, 32, 16, 0}, {4, SF_FP32, 2, 768, 2048, true, 64, 8, 2, 8},
      {4, SF_FP32, 1, 1536, 2048, true, 64, 8, 2, 8},   {4, SF_BF16, 2, 768, 2048, true, 128, 16, 1, 4},
      {4, SF_FP32, 4, 1024, 2048, false, 4, 32, 8, 0}, {4, SF_FP32, 2, 768, 512, true, 32, 16, 4, 0},    {4, SF_FP32, 1, 1024, 8192, false, 4, 16, 16, 0}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    sf_variant v = sf_variant_default();
    v.op = SF_OP_FWD, v.dstate = cases[k].dstate, v.dtype = cases[k].dtype, v.has_z = true;
    sf_heuristic_choose(&v, cases[k].batch, cases[k].dim, 1, cases[k].seqlen, 227 << 10);
    cr_expect(v.split_states == !cases[k].by_time && v.threads == cases[k].threads && v.items == cases[k].items &&
                  v.channels == cases[k].channels && v.min_blocks == cases[k].min_blocks,
              "case %zu: got %s %d/%d/%d +b%d", k, v.split_states ? "state" : "time", v.threads, v.items, v.channels,
              v.min_blocks);
    cr_expect_eq(generate(&v), SF_OK, "case %zu: %s", k, sf_last_error());
  }
}

/* The N = 2 backward below 4096 channels over 1024 steps or more (docs/perf.md v34): lanes
 * over time at 64 threads of 8 steps, 2 channels, 2 states a pass, capped at 4 blocks an SM,
 * from a thousand channels up to 2048 steps; 2 lanes of one state, blocks of 16 steps and 16
 * channels (with segments) for fewer channels or longer sequences; 4096 channels or more
 * keep 2/32/16, and 512 steps the general time split. */
Test(tuning_heuristics, few_channel_n2_backward_takes_its_own_launches) {
  static const struct { sf_dtype dtype; int64_t batch, dim, seqlen; bool by_time; int threads, items, channels, states, min_blocks; } cases[] = {
      {SF_BF16, 2, 1536, 2048, true, 64, 8, 2, 2, 4},    {SF_FP32, 1, 1536, 2048, true, 64, 8, 2, 2, 4},
      {SF_BF16, 1, 2048, 4096, false, 2, 16, 16, 1, 0},  {SF_FP32, 1, 64, 65536, false, 2, 16, 16, 1, 0},
      {SF_BF16, 1, 512, 8192, false, 2, 16, 16, 1, 0},   {SF_BF16, 8, 1536, 2048, false, 2, 32, 16, 1, 0},
      {SF_FP32, 1, 1536, 512, true, 64, 8, 4, 4, 0}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    sf_variant v = sf_variant_default();
    v.op = SF_OP_BWD, v.dstate = 2, v.dtype = cases[k].dtype, v.has_z = true;
    sf_heuristic_choose(&v, cases[k].batch, cases[k].dim, 1, cases[k].seqlen, 227 << 10);
    cr_expect(v.split_states == !cases[k].by_time && v.threads == cases[k].threads && v.items == cases[k].items &&
                  v.channels == cases[k].channels && v.states == cases[k].states && v.min_blocks == cases[k].min_blocks,
              "case %zu: got %s %d/%d/%d s%d +b%d", k, v.split_states ? "state" : "time", v.threads, v.items, v.channels,
              v.states, v.min_blocks);
    cr_expect_eq(generate(&v), SF_OK, "case %zu: %s", k, sf_last_error());
  }
}

/* The N = 1 backward below 512 channels over 1024 steps or more (docs/perf.md v35): one lane,
 * blocks of 8 steps, 32 channels, with segments; 512 channels and more, or 512 steps, keep
 * lanes over time. */
Test(tuning_heuristics, few_channel_n1_backward_takes_one_lane_with_segments) {
  static const struct { sf_dtype dtype; int64_t batch, dim, seqlen; bool by_time; int threads, items, channels; } cases[] = {
      {SF_FP32, 1, 64, 65536, false, 1, 8, 32}, {SF_BF16, 1, 256, 16384, false, 1, 8, 32},
      {SF_FP32, 1, 128, 1024, false, 1, 8, 32}, {SF_BF16, 1, 512, 8192, true, 64, 8, 4},
      {SF_FP32, 1, 256, 512, true, 64, 8, 4}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    sf_variant v = sf_variant_default();
    v.op = SF_OP_BWD, v.dstate = 1, v.dtype = cases[k].dtype, v.has_z = true;
    sf_heuristic_choose(&v, cases[k].batch, cases[k].dim, 1, cases[k].seqlen, 227 << 10);
    cr_expect(v.split_states == !cases[k].by_time && v.threads == cases[k].threads && v.items == cases[k].items &&
                  v.channels == cases[k].channels,
              "case %zu: got %s %d/%d/%d", k, v.split_states ? "state" : "time", v.threads, v.items, v.channels);
    cr_expect_eq(generate(&v), SF_OK, "case %zu: %s", k, sf_last_error());
  }
}
