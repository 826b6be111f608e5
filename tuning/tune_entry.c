/* tune_entry.c: one entry of a tuner run: its input sets, the knob grid then the
 * refinements around the best measured, the winner chosen, the entry saved. */
#include "tuning/run_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/launch/context.h"
#include "tuning/database_write.h"

static void utc_now(char *buf, size_t cap) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Why a status keeps a candidate out, in words for the database. */
static void failure_text(sf_status st, const char *detail, char *buf, size_t cap) {
  const char *what = st == SF_ERESOURCE ? "out of GPU resources"
                     : st == SF_ECOMPILE ? "compile error"
                     : st == SF_EINVAL   ? "rejected"
                                         : sf_status_name(st);
  snprintf(buf, cap, "%s: %.200s", what, detail);
}

/* The shape's inputs, and for a backward the states its forward saves: at the default
 * interval, or for a block-states request every `state_interval` steps. */
static sf_status prepare_sets(run_state *s, const sf_tune_request *r, int64_t state_interval, sf_measure_sets *sets) {
  const sf_variant *v = &r->variant;
  sf_measure_shape shape = {.batch = r->shape.batch, .dim = r->shape.dim, .seqlen = r->shape.seqlen,
                            .dstate = v->dstate, .groups = r->shape.groups, .dtype = v->dtype, .z = v->has_z,
                            .D = v->has_D, .delta_bias = v->has_delta_bias, .softplus = v->softplus,
                            .B_var = v->B_var, .C_var = v->C_var, .backward = v->op == SF_OP_BWD,
                            .state_interval = r->block_states ? state_interval : 0};
  /* More than the L2 cache, so that no run finds the previous one's inputs there. */
  double min_bytes = 4.0 * s->info.l2_bytes;
  if (min_bytes < 128.0 * 1024 * 1024) min_bytes = 128.0 * 1024 * 1024;
  const int reps = s->opt->reps < 20 ? 20 : s->opt->reps;
  sf_status st = sf_measure_sets_alloc(s->timer.cu, &shape, min_bytes, reps + s->opt->warmup, sets);
  if (st != SF_OK || v->op != SF_OP_BWD) return st;
  const sf_launch fwd = {.stream = s->timer.stream, .untuned = true};
  for (int i = 0; i < sets->sets && st == SF_OK; i++) {
    sf_scan_fwd_args a = sf_measure_fwd_args(sets, i);
    st = sf_scan_fwd(s->measure_ctx, &a, &fwd);
  }
  if (st == SF_OK) st = sf_cu_check(s->timer.cu->StreamSynchronize(s->timer.stream), "cuStreamSynchronize");
  if (st != SF_OK) sf_measure_sets_free(s->timer.cu, sets);
  return st;
}

/* Compiles, checks and times one candidate into *c. A failing candidate is recorded with
 * why; the status is SF_OK unless the CUDA context itself is broken (a sticky fault),
 * after which nothing more can run in this process. */
static sf_status measure_one(run_state *s, const sf_tune_request *r, const sf_measure_sets *sets, const sf_variant *v,
                             bool is_default, double *best_ms, sf_tune_candidate *c) {
  memset(c, 0, sizeof *c);
  c->knobs = sf_tune_knobs_of(v);
  c->error = -1;
  const int u = sf_tuner_find_unique(s, v);
  if (u < 0 || s->uniques[u].compile_status != SF_OK) {
    failure_text(u < 0 ? SF_EINTERNAL : s->uniques[u].compile_status,
                 u < 0 ? "not compiled" : s->uniques[u].compile_error, c->why, sizeof c->why);
    return SF_OK;
  }
  bool passed = false;
  sf_status st = sf_tuner_check_candidate(s, r, v, &passed, &c->error, c->why, sizeof c->why);
  if (st == SF_OK && passed) {
    st = sf_tuner_time_candidate(s, sets, v, *best_ms, !is_default, c);
    if (st == SF_OK && c->reps >= 20 && (*best_ms == 0 || c->median_us * 1e-3 < *best_ms)) *best_ms = c->median_us * 1e-3;
  }
  if (st == SF_OK) return SF_OK;
  /* The candidate's failure (resources, launch): recorded, never fatal... */
  c->ok = false;
  failure_text(st, sf_last_error(), c->why, sizeof c->why);
  /* ...unless it broke the context. */
  CUresult sync = s->timer.cu->CtxSynchronize();
  if (sync == CUDA_SUCCESS) return SF_OK;
  char spec[128];
  sf_tune_knobs_short(&c->knobs, spec, sizeof spec);
  return sf_fail(SF_ECUDA, "the CUDA context failed after candidate %s (%s: %s); nothing more can run in this process: %s",
                 spec, sf_cu_error_name(sync), sf_cu_error_string(sync), c->why);
}

/* Whether a (template-accepted) variant is already among the entry's candidates. */
static bool measured(const sf_tune_entry *e, const sf_variant *v) {
  const sf_tune_knobs k = sf_tune_knobs_of(v);
  for (int i = 0; i < e->candidate_count; i++)
    if (sf_tune_knobs_equal(&e->candidates[i].knobs, &k)) return true;
  return false;
}
/* The second round: sf_tune_refinements of the three fastest candidates. */
static int refine_round(const sf_tune_request *r, const sf_tune_entry *e, sf_variant *out) {
  const sf_tune_candidate *top[REFINE_BASES] = {0};
  for (int i = 0; i < e->candidate_count; i++) {
    const sf_tune_candidate *c = &e->candidates[i];
    if (!c->ok || c->reps < 20) continue;
    for (int k = 0; k < REFINE_BASES; k++)
      if (!top[k] || c->median_us < top[k]->median_us) {
        memmove(&top[k + 1], &top[k], (size_t)(REFINE_BASES - k - 1) * sizeof top[0]);
        top[k] = c;
        break;
      }
  }
  int count = 0;
  for (int k = 0; k < REFINE_BASES && top[k]; k++) {
    sf_variant base = r->variant, more[REFINE_EACH];
    sf_tune_knobs_apply(&top[k]->knobs, &base);
    const int n = sf_tune_refinements(r, &base, more, REFINE_EACH);
    for (int j = 0; j < n && j < REFINE_EACH && count < REFINE_EXTRA; j++) {
      bool twice = measured(e, &more[j]);
      for (int i = 0; i < count && !twice; i++) {
        const sf_tune_knobs a = sf_tune_knobs_of(&out[i]), b = sf_tune_knobs_of(&more[j]);
        twice = sf_tune_knobs_equal(&a, &b);
      }
      if (!twice) out[count++] = more[j];
    }
  }
  return count;
}

/* Tunes one entry into *e. Returns SF_OK (e->candidate_count > 0 when anything was
 * measured) unless the entry cannot run at all or the context broke. */
sf_status sf_tuner_tune_entry(run_state *s, int index, sf_tune_entry *e, bool *stopped) {
  const sf_tune_request *r = s->todo[index];
  const sf_variant *cands = s->candidates[index];
  const int count = s->candidate_counts[index];
  *e = sf_tune_request_key(r);
  e->candidates = calloc((size_t)(count + REFINE_EXTRA), sizeof *e->candidates);
  if (!e->candidates) return sf_fail(SF_ENOMEM, "tune: out of memory");
  /* A context of the entry's own: its candidates are unloaded when it is done. */
  sf_status st = sf_context_create_sharing_cache(s->ctx, &s->measure_ctx);
  if (st != SF_OK) return st;
  /* Block states: saved every 8 steps (or every block of the heuristics' choice, if
   * shorter), so that each candidate (8 or more steps a block) finds every block's start
   * saved and runs its block-states entry point (docs/design-block-states.md). */
  const int64_t block_interval = sf_scan_bwd_block_interval(&cands[0], r->shape.seqlen);
  sf_measure_sets sets;
  st = prepare_sets(s, r, block_interval < 8 ? block_interval : 8, &sets);
  if (st != SF_OK) {
    sf_context_destroy(s->measure_ctx);
    s->measure_ctx = NULL;
    return sf_fail_context(st, "inputs of %lldx%lldx%lld", (long long)r->shape.batch, (long long)r->shape.dim,
                           (long long)r->shape.seqlen);
  }
  double best_ms = 0;
  /* Stage 1: the knob grid. */
  for (int i = 0; i < count && st == SF_OK; i++) {
    if ((*stopped = sf_tuner_should_stop(s))) break;
    sf_tuner_report(s, "tuning", index, i, count);
    const int u = sf_tuner_find_unique(s, &cands[i]);
    if (u >= 0 && !sf_tuner_wait_compiled(s, u, index, i, count)) {
      *stopped = true;
      break;
    }
    /* The template refused it (shared memory, ...): not a candidate at all. */
    if (i > 0 && u >= 0 && s->uniques[u].compile_status == SF_EINVAL) continue;
    st = measure_one(s, r, &sets, &cands[i], i == 0, &best_ms, &e->candidates[e->candidate_count++]);
  }
  /* Stage 2: states and register caps around the best, compiled by the pool now. */
  sf_variant extra[REFINE_EXTRA];
  const int n_extra = st == SF_OK && !*stopped ? refine_round(r, e, extra) : 0;
  const int appended_from = atomic_load(&s->unique_count);
  for (int j = 0; j < n_extra && st == SF_OK; j++) st = sf_tuner_add_unique(s, &extra[j]);
  /* they come after every planned candidate: without this the entry would wait for all */
  sf_tuner_compile_first(s, appended_from, atomic_load(&s->unique_count));
  for (int j = 0; j < n_extra && st == SF_OK; j++) {
    if ((*stopped = sf_tuner_should_stop(s))) break;
    sf_tuner_report(s, "tuning", index, count + j, count + n_extra);
    const int u = sf_tuner_find_unique(s, &extra[j]);
    if (u >= 0 && !sf_tuner_wait_compiled(s, u, index, count + j, count + n_extra)) {
      *stopped = true;
      break;
    }
    if (u >= 0 && s->uniques[u].compile_status == SF_EINVAL) continue;
    st = measure_one(s, r, &sets, &extra[j], false, &best_ms, &e->candidates[e->candidate_count++]);
  }
  s->timer.cu->StreamSynchronize(s->timer.stream);
  sf_measure_sets_free(s->timer.cu, &sets);
  sf_context_destroy(s->measure_ctx);
  s->measure_ctx = NULL;
  if (st != SF_OK) return st;
  e->complete = !*stopped;

  /* The winner: the fastest fully measured candidate; the default unless beaten by 1%. */
  const sf_tune_candidate *dflt = e->candidate_count > 0 ? &e->candidates[0] : NULL;
  const sf_tune_candidate *best = NULL;
  for (int i = 0; i < e->candidate_count; i++) {
    const sf_tune_candidate *c = &e->candidates[i];
    if (c->ok && c->reps >= 20 && (!best || c->median_us < best->median_us)) best = c;
  }
  if (dflt && dflt->ok && best && best != dflt && best->median_us > 0.99 * dflt->median_us) best = dflt;
  if (!best) return SF_OK; /* nothing usable was measured */
  sf_tune_knobs_apply(&best->knobs, &e->variant);
  e->winner_us = best->median_us;
  e->default_knobs = sf_tune_knobs_of(&cands[0]);
  e->default_us = dflt && dflt->ok ? dflt->median_us : 0;
  utc_now(e->tuned_at, sizeof e->tuned_at);
  return SF_OK;
}

bool sf_tuner_has_winner(const sf_tune_entry *e) {
  for (int i = 0; i < e->candidate_count; i++)
    if (e->candidates[i].ok && e->candidates[i].reps >= 20) return true;
  return false;
}

sf_status sf_tuner_save_entry(run_state *s, const sf_tune_entry *e) {
  sf_tune_db add;
  sf_tune_db_init(&add);
  sf_status st = sf_tune_db_put(&add, &s->gpu, e);
  char *warning = NULL;
  if (st == SF_OK) st = sf_tune_db_save(s->opt->db_path, &add, &warning);
  if (warning && !s->summary->warning[0]) snprintf(s->summary->warning, sizeof s->summary->warning, "%s", warning);
  free(warning);
  sf_tune_db_free(&add);
  return st;
}
