/* test_tuning_candidates.c: the default grid, entries files, and candidate enumeration within the templates' rules. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "generator/generator.h"
#include "runtime/launch_config/heuristics.h"
#include "tuning/tuner.h"

enum { CAP = 512 };

static sf_tune_request grid[256];

static int default_grid(void) {
  int n = sf_tune_default_requests(grid, 256, true);
  cr_assert(n > 0 && n <= 256);
  return n;
}

Test(tuning_candidates, default_grid_has_one_request_per_key_and_both_ops) {
  const int n = default_grid();
  int fwd = 0, bwd = 0, bf16 = 0, block_states = 0;
  for (int i = 0; i < n; i++) {
    sf_tune_entry a = sf_tune_request_key(&grid[i]);
    for (int k = 0; k < i; k++) {
      sf_tune_entry b = sf_tune_request_key(&grid[k]);
      cr_expect_not(sf_tune_entry_same_key(&a, &b), "requests %d and %d have the same key", k, i);
    }
    fwd += grid[i].variant.op == SF_OP_FWD;
    bwd += grid[i].variant.op == SF_OP_BWD && !grid[i].block_states;
    bf16 += grid[i].variant.dtype == SF_BF16;
    if (grid[i].block_states) {
      block_states++;
      cr_expect_eq(grid[i].variant.op, SF_OP_BWD, "request %d: block states are a backward's", i);
      cr_expect_geq(grid[i].shape.seqlen, 196, "request %d: block-states twins are for L >= 196", i);
    }
  }
  cr_expect(fwd > 0 && fwd == bwd, "fwd %d, bwd %d", fwd, bwd);
  /* every backward of L >= 196 has its block-states twin: the same shape and class */
  int twins_wanted = 0;
  for (int i = 0; i < n; i++) {
    if (grid[i].variant.op != SF_OP_BWD || grid[i].block_states || grid[i].shape.seqlen < 196) continue;
    twins_wanted++;
    bool twin = false;
    for (int k = 0; k < n; k++)
      twin |= grid[k].block_states && grid[k].variant.dtype == grid[i].variant.dtype &&
              grid[k].variant.dstate == grid[i].variant.dstate && grid[k].shape.batch == grid[i].shape.batch &&
              grid[k].shape.dim == grid[i].shape.dim && grid[k].shape.seqlen == grid[i].shape.seqlen;
    cr_expect(twin, "request %d (a backward of L %lld) has no block-states twin", i, (long long)grid[i].shape.seqlen);
  }
  cr_expect(twins_wanted > 0 && block_states == twins_wanted, "block-states requests %d, wanted %d", block_states,
            twins_wanted);
  cr_expect(bf16 > 0);
  /* MambaVision-T stage 3 and Mamba-130M training are in it. */
  bool mv = false, mamba = false;
  for (int i = 0; i < n; i++) {
    const sf_tune_shape *s = &grid[i].shape;
    mv |= s->batch == 64 && s->dim == 160 && s->seqlen == 196 && grid[i].variant.dstate == 8;
    mamba |= s->batch == 8 && s->dim == 1536 && s->seqlen == 2048 && grid[i].variant.has_z;
  }
  cr_expect(mv && mamba);
  cr_expect_eq(sf_tune_default_requests(grid, 256, false), fwd, "without the backward: the forward requests");
}

/* Every candidate is a valid variant the template accepts, fits the call, and the
 * heuristics' choice comes first. */
Test(tuning_candidates, candidates_respect_the_template_rules, .timeout = 300) {
  const int n = default_grid();
  sf_variant *c = malloc(CAP * sizeof *c);
  for (int i = 0; i < n; i++) {
    const sf_tune_request *r = &grid[i];
    int rejected = -1;
    const int count = sf_tune_candidates(r, true, c, CAP, &rejected);
    cr_assert(count >= 1 && count <= CAP, "request %d: %d candidates", i, count);
    cr_expect(rejected >= 0);
    sf_variant dflt = r->variant;
    if (r->variant.op == SF_OP_BWD)
      sf_heuristic_configure_bwd(&dflt, r->shape.batch, r->shape.dim, r->shape.groups, r->shape.seqlen);
    else
      sf_heuristic_configure(&dflt, r->shape.batch, r->shape.dim, r->shape.groups, r->shape.seqlen);
    const sf_tune_knobs first = sf_tune_knobs_of(&c[0]), want = sf_tune_knobs_of(&dflt);
    cr_expect(sf_tune_knobs_equal(&first, &want), "request %d: the first candidate is not the heuristics' choice", i);
    int split_state = 0;
    for (int k = 0; k < count; k++) split_state += c[k].split_states;
    if (r->shape.dim >= 64 && r->variant.dstate <= 64) cr_expect(split_state > 0, "request %d: no split=state candidate", i);
    for (int k = 0; k < count; k++) {
      const sf_variant *v = &c[k];
      char spec[512];
      sf_variant_format(v, spec, sizeof spec);
      cr_expect_eq(sf_variant_validate(v), SF_OK, "%s: %s", spec, sf_last_error());
      char *source = NULL;
      size_t length;
      cr_expect_eq(sf_generate(v, &source, &length), SF_OK, "%s: the template rejects it: %s", spec, sf_last_error());
      free(source);
      cr_expect(v->items <= (v->split_states ? 64 : 32), "%s", spec);
      cr_expect(v->op == r->variant.op && v->dtype == r->variant.dtype && v->dstate == r->variant.dstate &&
                    v->has_z == r->variant.has_z,
                "%s: not the request's class", spec);
      if (v->op == SF_OP_BWD) {
        if (!v->split_states)
          cr_expect_eq((int64_t)v->threads * v->items, sf_scan_state_interval(r->shape.seqlen), "%s", spec);
        cr_expect_eq((r->shape.dim / r->shape.groups) % v->channels, 0, "%s", spec);
      }
      for (int j = 0; j < k; j++) {
        const sf_tune_knobs a = sf_tune_knobs_of(&c[j]), b = sf_tune_knobs_of(v);
        cr_expect_not(sf_tune_knobs_equal(&a, &b), "%s appears twice", spec);
      }
      if (v->split_states) {
        cr_expect(v->dstate % v->threads == 0, "%s", spec);
        cr_expect_eq((r->shape.dim / r->shape.groups) % v->channels, 0, "%s", spec);
      }
    }
  }
  free(c);
}

/* A configuration the template refuses (the N = 128 backward on 8 lanes over 16 steps of
 * 16 channels: more than the 227 KiB a block may have) is counted as rejected and left
 * out; without asking the template it stays. One above 48 KiB (dynamic shared memory:
 * 16 lanes, 8 steps, 8 channels) stays. */
Test(tuning_candidates, template_rejections_are_left_out) {
  sf_tune_request r = {.variant = sf_variant_default(), .shape = {1, 1024, 2048, 1}};
  r.variant.op = SF_OP_BWD;
  r.variant.dstate = 128;
  sf_variant *asked = malloc(CAP * sizeof *asked), *unasked = malloc(CAP * sizeof *unasked);
  int rejected = 0;
  const int n = sf_tune_candidates(&r, true, asked, CAP, &rejected);
  const int m = sf_tune_candidates(&r, false, unasked, CAP, NULL);
  cr_expect(rejected > 0);
  cr_expect_eq(n + rejected, m);
  bool found_asked = false, found_unasked = false, found_dynamic = false;
  for (int i = 0; i < n; i++) {
    found_asked |= asked[i].split_states && asked[i].threads == 8 && asked[i].items == 16 && asked[i].channels == 16;
    found_dynamic |= asked[i].split_states && asked[i].threads == 16 && asked[i].items == 8 && asked[i].channels == 8;
  }
  for (int i = 0; i < m; i++)
    found_unasked |= unasked[i].split_states && unasked[i].threads == 8 && unasked[i].items == 16 && unasked[i].channels == 16;
  cr_expect(found_unasked, "8/16/16 should be in the knob grid");
  cr_expect_not(found_asked, "8/16/16 needs more than 227 KiB of shared memory: the template rejects it");
  cr_expect(found_dynamic, "16/8/8 needs 112 KiB, in dynamic shared memory: the template accepts it");
  free(asked);
  free(unasked);
}

/* The split=state forward's lanes hold at most 16 states and 256 (state, step) pairs a
 * block: at N = 128, 8 lanes (16 states) over 16 steps are measured, over 32 steps not, and
 * 4 lanes (32 states) never; 32 lanes (4 states) go to 64 steps. */
Test(tuning_candidates, forward_lanes_hold_at_most_16_states_and_256_state_steps) {
  sf_tune_request r = {.variant = sf_variant_default(), .shape = {2, 512, 2048, 1}};
  r.variant.dstate = 128;
  sf_variant *c = malloc(CAP * sizeof *c);
  const int n = sf_tune_candidates(&r, false, c, CAP, NULL);
  cr_assert(n > 1 && n <= CAP);
  bool eight_by_16 = false, thirty_two_by_64 = false;
  for (int i = 1; i < n; i++) {
    if (!c[i].split_states) continue;
    const int per_lane = c[i].dstate / c[i].threads;
    cr_expect(per_lane <= 16 && per_lane * c[i].items <= 256, "%d lanes x %d steps", c[i].threads, c[i].items);
    eight_by_16 |= c[i].threads == 8 && c[i].items == 16;
    thirty_two_by_64 |= c[i].threads == 32 && c[i].items == 64;
  }
  cr_expect(eight_by_16);
  cr_expect(thirty_two_by_64);
  free(c);
}

/* The split=state backward's lanes too (stop 36): at N = 64 over (4,1024,2048) in bf16,
 * no lane of 32 or 64 states (one such candidate took 27 s to compile and spilled 21 KB a
 * thread), while the launches the shipped files run there (8 lanes x 8 steps x 8, 16 and
 * 32 channels) stay. */
Test(tuning_candidates, backward_lanes_hold_at_most_16_states_and_256_state_steps) {
  sf_tune_request r = {.variant = sf_variant_default(), .shape = {4, 1024, 2048, 1}};
  r.variant.op = SF_OP_BWD, r.variant.dstate = 64, r.variant.dtype = SF_BF16;
  r.variant.has_z = r.variant.has_D = r.variant.has_delta_bias = r.variant.softplus = true;
  sf_variant *c = malloc(CAP * sizeof *c);
  const int n = sf_tune_candidates(&r, false, c, CAP, NULL);
  cr_assert(n > 1 && n <= CAP);
  int shipped = 0, split_state = 0;
  for (int i = 1; i < n; i++) {
    if (!c[i].split_states) continue;
    split_state++;
    const int per_lane = c[i].dstate / c[i].threads;
    cr_expect(per_lane <= 16 && per_lane * c[i].items <= 256, "%d lanes x %d steps", c[i].threads, c[i].items);
    shipped += c[i].threads == 8 && c[i].items == 8 && (c[i].channels == 8 || c[i].channels == 16 || c[i].channels == 32);
  }
  cr_expect_gt(split_state, 10);
  cr_expect_eq(shipped, 3, "the shipped launches are among the candidates");
  free(c);
}

/* A block-states request measures split=state launches of 8 or more steps a block only
 * (beyond the heuristics' choice, always first); the same backward at the default interval
 * also measures split=time and 4-step launches. */
Test(tuning_candidates, block_states_requests_take_split_state_launches_of_8_steps_or_more) {
  sf_tune_request r = {.variant = sf_variant_default(), .shape = {8, 1536, 2048, 1}};
  r.variant.op = SF_OP_BWD;
  r.variant.dstate = 16;
  r.variant.dtype = SF_BF16;
  r.variant.has_z = r.variant.has_D = r.variant.has_delta_bias = r.variant.softplus = true;
  sf_variant *plain = malloc(CAP * sizeof *plain), *block = malloc(CAP * sizeof *block);
  const int n_plain = sf_tune_candidates(&r, false, plain, CAP, NULL);
  r.block_states = true;
  const int n_block = sf_tune_candidates(&r, false, block, CAP, NULL);
  cr_assert(n_block > 1 && n_block < n_plain, "block states %d, plain %d", n_block, n_plain);
  cr_expect(sf_variant_same(&block[0], &plain[0]), "the heuristics' choice first in both");
  int split_time = 0, short_blocks = 0;
  for (int i = 0; i < n_plain; i++) {
    split_time += !plain[i].split_states;
    short_blocks += plain[i].split_states && plain[i].items < 8;
  }
  cr_expect(split_time > 0 && short_blocks > 0, "the plain grid has both kinds");
  for (int i = 1; i < n_block; i++)
    cr_expect(block[i].split_states && block[i].items >= 8, "candidate %d: split=%s, items %d", i,
              block[i].split_states ? "state" : "time", block[i].items);
  free(plain);
  free(block);
}

/* The second round offers each other number of states the template would really use, and
 * register caps that still let that many blocks fit an SM. */
Test(tuning_candidates, refinements_are_distinct_states_and_register_caps) {
  sf_tune_request r = {.variant = sf_variant_default(), .shape = {8, 1536, 2048, 1}};
  r.variant.dstate = 16;
  sf_variant base = r.variant, out[16];
  base.threads = 32, base.items = 16, base.channels = 4, base.states = 1, base.split_states = false;
  base.min_blocks = 0;
  int n = sf_tune_refinements(&r, &base, out, 16);
  int states = 0, caps = 0;
  for (int i = 0; i < n; i++) {
    const sf_variant *v = &out[i];
    cr_expect(v->threads == 32 && v->items == 16 && v->channels == 4 && !v->split_states);
    cr_expect((v->states != 1) != (v->min_blocks != 0), "one knob changes at a time");
    if (v->states != 1) {
      states++;
      cr_expect(16 % v->states == 0);
    }
    if (v->min_blocks != 0) {
      caps++;
      cr_expect(v->min_blocks * 128 <= 2048);
    }
  }
  cr_expect_eq(states, 4, "states 2, 4, 8, 16");
  cr_expect_eq(caps, 5, "minblocks 2, 3 (12 warps an SM), 4, 8, 16 for a block of 128");
  r.variant.dstate = base.dstate = 12; /* divisors 1, 2, 4 among the powers of two up to 12 */
  n = sf_tune_refinements(&r, &base, out, 16);
  states = 0;
  for (int i = 0; i < n; i++) states += out[i].states != 1;
  cr_expect_eq(states, 2);
  base.dstate = 16;
  base.split_states = true, base.threads = 4, base.items = 16, base.channels = 16;
  n = sf_tune_refinements(&r, &base, out, 16);
  for (int i = 0; i < n; i++) cr_expect(out[i].states == base.states, "split=state forward has no states knob");
  /* The split=state backward interleaves states per pass: powers of two dividing the
   * lane's N / threads = 4 states (1 is the base); a block of 32 threads is capped at up
   * to 32 blocks per SM. */
  base.op = r.variant.op = SF_OP_BWD;
  base.threads = 4, base.items = 8, base.channels = 8, base.states = 1;
  n = sf_tune_refinements(&r, &base, out, 16);
  states = 0, caps = 0;
  for (int i = 0; i < n; i++) {
    cr_expect((out[i].states != 1) != (out[i].min_blocks != 0), "one knob changes at a time");
    if (out[i].states != 1) {
      states++;
      cr_expect(out[i].states == 2 || out[i].states == 4, "got states=%d", out[i].states);
    }
    caps += out[i].min_blocks != 0;
  }
  cr_expect_eq(states, 2, "states 2 and 4");
  cr_expect_eq(caps, 8, "minblocks 2, 4, 8, 10, 12, 16, 24, 32 for a block of 32");
  /* A block of two warps: 5 and 6 blocks put 10 and 12 warps on an SM. */
  base.channels = 16;
  n = sf_tune_refinements(&r, &base, out, 16);
  bool five = false, six = false;
  for (int i = 0; i < n; i++) five |= out[i].min_blocks == 5, six |= out[i].min_blocks == 6;
  cr_expect(five && six, "minblocks 5 and 6 for a block of 64");
}

Test(tuning_candidates, entries_file_parses_and_formats_back) {
  const char *text =
      "# custom entries\n"
      "8,1536,2048,16 op=bwd,dtype=bf16,z=1   # Mamba-130M\n"
      "\n"
      "64,160,196,8\n"
      "4,64,1000,16,4 B=fixed,softplus=0\n";
  sf_tune_request *r = NULL;
  int n = 0;
  cr_assert_eq(sf_tune_parse_requests(text, "entries.txt", &r, &n), SF_OK, "%s", sf_last_error());
  cr_assert_eq(n, 3);
  cr_expect(r[0].variant.op == SF_OP_BWD && r[0].variant.dtype == SF_BF16 && r[0].variant.has_z);
  cr_expect(r[0].shape.batch == 8 && r[0].shape.dim == 1536 && r[0].shape.seqlen == 2048 && r[0].variant.dstate == 16);
  cr_expect(r[1].variant.op == SF_OP_FWD && r[1].variant.dtype == SF_FP32 && !r[1].variant.has_z);
  cr_expect(r[1].variant.has_D && r[1].variant.has_delta_bias && r[1].variant.softplus);
  cr_expect(r[2].shape.groups == 4 && !r[2].variant.B_var && r[2].variant.C_var && !r[2].variant.softplus);
  /* Each line formats back to one that parses to the same request. */
  for (int i = 0; i < n; i++) {
    char line[256];
    sf_tune_request_format(&r[i], line, sizeof line);
    sf_tune_request *back = NULL;
    int m = 0;
    cr_assert_eq(sf_tune_parse_requests(line, "line", &back, &m), SF_OK, "%s: %s", line, sf_last_error());
    cr_assert_eq(m, 1);
    sf_tune_entry a = sf_tune_request_key(&r[i]), b = sf_tune_request_key(&back[0]);
    cr_expect(sf_tune_entry_same_key(&a, &b) && back[0].shape.groups == r[i].shape.groups, "%s", line);
    free(back);
  }
  free(r);
}

Test(tuning_candidates, bad_entries_name_the_line) {
  static const char *bad[] = {
      "64,160,196\n",                     /* no N */
      "1,2,3,4\n64,160,196,8 threads=32\n", /* knobs are the tuner's to choose */
      "64,160,196,300\n",                 /* N too large */
      "64,160,196,8,3\n",                 /* 3 groups do not divide 160 */
      "64,160,196,8,1,6\n",               /* a sixth number */
      "64,160,196,99999999999999999999\n", /* N past long long */
      "64,160,196,8 dtype=fp64\n",
      "# nothing\n",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    sf_tune_request *r = NULL;
    int n = 0;
    cr_expect_eq(sf_tune_parse_requests(bad[i], "e.txt", &r, &n), SF_EINVAL, "case %zu accepted", i);
    cr_expect(strstr(sf_last_error(), "e.txt"), "case %zu: %s", i, sf_last_error());
    cr_expect_null(r);
  }
  sf_tune_request *r = NULL;
  int n = 0;
  sf_tune_parse_requests("1,2,3,4\n64,160,196,8 threads=32\n", "e.txt", &r, &n);
  cr_expect(strstr(sf_last_error(), "e.txt:2"), "%s", sf_last_error());
}
