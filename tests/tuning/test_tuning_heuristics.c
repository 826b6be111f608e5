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
          char *source = NULL;
          size_t length = 0;
          const sf_status st = sf_generate(&v, &source, &length);
          cr_expect_eq(st, SF_OK, "%s on %s: the template refuses: %s", where, row, sf_last_error());
          free(source);
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
  char *source = NULL;
  size_t length = 0;
  cr_expect_eq(sf_generate(&twin, &source, &length), SF_OK, "%s", sf_last_error());
  free(source);
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
