/* candidates.c: the configurations the tuner measures for a request: the knob grid around
 * the heuristics' choice, and the refinements (states, register caps) tried around the best. */
#include "tuning/tuner.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/error.h"
#include "generator/generator.h"
#include "runtime/launch_config/heuristics.h"
#include "runtime/launch_config/select.h"

static int64_t next_pow2(int64_t x) {
  int64_t p = 1;
  while (p < x) p *= 2;
  return p;
}

/* The heuristics' choice for the request (what the runtime runs untuned). */
static sf_variant heuristic_default(const sf_tune_request *r) {
  sf_variant v = r->variant;
  sf_heuristic_choose(&v, r->shape.batch, r->shape.dim, r->shape.groups, r->shape.seqlen,
                      sf_current_device_shared_optin());
  return v;
}

/* The tuner's limits of docs/tuning.md: what is worth measuring at all. */
static bool worth_measuring(const sf_tune_request *r, const sf_variant *v) {
  const int64_t block = sf_variant_block_threads(v), chunk = (int64_t)v->threads * v->items;
  const int64_t P = next_pow2(r->shape.seqlen), per_group = r->shape.dim / r->shape.groups;
  if (block < 32 || block > 256) return false;
  if (v->channels > next_pow2(r->shape.dim)) return false;
  /* A block that shares one group's B and C rows needs whole groups of channels. */
  const bool shares_rows = v->op == SF_OP_BWD || v->split_states;
  if (shares_rows && (v->B_var || v->C_var) && per_group % v->channels != 0) return false;
  /* Block states help split=state launches only (a split=time backward's blocks are
   * whole intervals); 4 steps a block would double the states the forward writes. */
  if (r->block_states && (!v->split_states || v->items < 8)) return false;
  /* A split=state lane keeps about ten registers a state (its state, A, and B and C of
   * four steps; the backward more): above 16 states a lane it spills (the forward at
   * N = 128 on 4 lanes: 255 registers and 2 KB; the backward at N = 64 on 1 lane: 1-21 KB),
   * and a walk unrolled over more than 256 (state, step) pairs a block takes NVRTC 10-40 s
   * to compile while no shipped winner comes near (docs/tuning.md). */
  if (v->split_states) {
    const int per_lane = v->dstate / v->threads; /* valid: lanes divide N */
    if (per_lane > SF_TUNE_MAX_LANE_STATES || per_lane * v->items > SF_TUNE_MAX_LANE_WALK) return false;
    return block % 32 == 0; /* lanes x channels fill whole warps */
  }
  if (v->op == SF_OP_BWD) return chunk == sf_scan_state_interval(r->shape.seqlen);
  return chunk >= (P < 64 ? P : 64) && chunk <= (P > 64 ? P : 64);
}

/* Adds v unless it is the first candidate again, invalid, not worth measuring, or (when
 * asked) refused by its template. */
static void offer(const sf_tune_request *r, sf_variant v, bool ask_template, sf_variant *out, int cap, int *count,
                  int *refused) {
  const sf_tune_knobs k = sf_tune_knobs_of(&v), first = sf_tune_knobs_of(&out[0]);
  if (sf_tune_knobs_equal(&k, &first) || sf_variant_validate(&v) != SF_OK || !worth_measuring(r, &v)) return;
  if (ask_template) { /* the template has the last word (shared memory, items, intervals) */
    char *source = NULL;
    size_t length;
    sf_status st = sf_generate(&v, &source, &length);
    free(source);
    if (st != SF_OK) {
      (*refused)++;
      return;
    }
  }
  if (*count < cap) out[*count] = v;
  (*count)++;
}

int sf_tune_candidates(const sf_tune_request *r, bool ask_template, sf_variant *out, int cap, int *rejected) {
  sf_variant first = heuristic_default(r);
  int count = 1, refused = 0;
  sf_variant scratch[1];
  if (cap <= 0) out = scratch, cap = 1; /* the first is always there to compare with */
  out[0] = first;
  /* Lanes split time (and the backward): the heuristics' states. */
  for (int threads = 4; threads <= 512; threads *= 2)
    for (int items = 4; items <= 32; items *= 2)
      for (int channels = 1; channels <= 64; channels *= 2) {
        sf_variant v = r->variant;
        sf_tune_knobs k = {false, threads, items, channels,
                           first.split_states ? sf_variant_default().states : first.states, first.min_blocks};
        sf_tune_knobs_apply(&k, &v);
        offer(r, v, ask_template, out, cap, &count, &refused);
      }
  /* Lanes split the states: threads are the lanes of a channel (dividing N), items the
   * steps of a time block; the backward interleaves one state per pass here (its
   * refinements try more). */
  const bool forward = r->variant.op == SF_OP_FWD;
  for (int lanes = 1; lanes <= 32; lanes *= 2)
    for (int items = 4; lanes <= r->variant.dstate && r->variant.dstate % lanes == 0 && items <= (forward ? 64 : 32);
         items *= 2)
      for (int channels = 1; channels <= 256; channels *= 2) {
        sf_variant v = r->variant;
        sf_tune_knobs k = {true, lanes, items, channels, forward ? first.states : 1, first.min_blocks};
        sf_tune_knobs_apply(&k, &v);
        offer(r, v, ask_template, out, cap, &count, &refused);
      }
  sf_clear_error();
  if (rejected) *rejected = refused;
  return count;
}

/* The largest divisor of n not above s: the states a split=time template really uses. */
static int effective_states(int s, int n) {
  while (s > 1 && n % s != 0) s--;
  return s;
}

/* Whether a register cap for `blocks` blocks an SM is worth a candidate: 2, 4, 8, 16, 24,
 * 32, and the counts that put 10 or 12 warps (of `warps` a block) on an SM. The doubling
 * steps alone jump from 8 warps an SM (up to 255 registers) to 16 (128): kernels whose
 * registers sit between, as the N = 16 backward's 168-242, never got a cap that buys a few
 * warps without the spills of 128 (caps of 200 and 168 registers here; docs/tuning.md). */
static bool register_cap_worth_trying(int blocks, int warps) {
  const bool doubling = blocks == 2 || blocks == 4 || blocks == 8 || blocks == 16 || blocks == 24 || blocks == 32;
  return doubling || blocks * warps == 10 || blocks * warps == 12;
}

int sf_tune_refinements(const sf_tune_request *r, const sf_variant *base, sf_variant *out, int cap) {
  int count = 0;
  /* Other states: for the split=time forward each power of two the template would use as
   * is; for the split=state backward the states interleaved per pass (dividing a lane's). */
  const int have = effective_states(base->states, base->dstate);
  const bool bwd_states = base->op == SF_OP_BWD && base->split_states;
  const int per_lane = base->threads > 0 ? base->dstate / base->threads : 1;
  for (int states = 1; (bwd_states || (base->op == SF_OP_FWD && !base->split_states)) && states <= 16 &&
                       states <= base->dstate;
       states *= 2) {
    if (bwd_states ? (states > per_lane || per_lane % states != 0 || states == base->states)
                   : (effective_states(states, base->dstate) != states || states == have))
      continue;
    sf_variant v = *base;
    v.states = states;
    if (sf_variant_validate(&v) != SF_OK || !worth_measuring(r, &v)) continue;
    if (count < cap) out[count] = v;
    count++;
  }
  /* Register caps: blocks per SM the kernel must fit, while that many blocks still fit
   * the SM's 2048 threads (and its 32 blocks). */
  const int block = sf_variant_block_threads(base);
  for (int blocks = 2; blocks <= 32; blocks++) {
    if (!register_cap_worth_trying(blocks, (block + 31) / 32) || blocks == base->min_blocks || blocks * block > 2048)
      continue;
    sf_variant v = *base;
    v.min_blocks = blocks;
    if (sf_variant_validate(&v) != SF_OK) continue;
    if (count < cap) out[count] = v;
    count++;
  }
  return count;
}
