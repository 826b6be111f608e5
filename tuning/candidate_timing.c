/* candidate_timing.c: a candidate timed on rotated input sets, warm-up first, stopping
 * early when it cannot win. */
#include "tuning/run_state.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "runtime/cuda/cuda_driver.h"

typedef struct timed_call {
  sf_context *ctx;
  const sf_measure_sets *sets;
  int next_set;
  bool backward;
  sf_launch launch;
} timed_call;

static sf_status run_call(void *user, CUstream stream) {
  timed_call *c = user;
  const int set = c->next_set++ % c->sets->sets;
  c->launch.stream = stream;
  if (c->backward) {
    sf_scan_bwd_args a = sf_measure_bwd_args(c->sets, set);
    return sf_scan_bwd(c->ctx, &a, &c->launch);
  }
  sf_scan_fwd_args a = sf_measure_fwd_args(c->sets, set);
  return sf_scan_fwd(c->ctx, &a, &c->launch);
}

/* A candidate whose first runs are all slower than this many times the best median so
 * far cannot win: it stops there (docs/tuning.md). */
#define EARLY_STOP_RUNS 3
#define EARLY_STOP_FACTOR 1.5

sf_status sf_tuner_time_candidate(run_state *s, const sf_measure_sets *sets, const sf_variant *v, double best_ms,
                                  bool may_stop_early, sf_tune_candidate *c) {
  char spec[256];
  sf_tuner_knob_spec(v, spec, sizeof spec);
  timed_call call = {.ctx = s->measure_ctx, .sets = sets, .backward = v->op == SF_OP_BWD, .launch = {.spec = spec, .spec_planned = true}};
  const int reps = s->opt->reps < 20 ? 20 : s->opt->reps;
  float *ms = malloc((size_t)reps * sizeof *ms);
  if (!ms) return sf_fail(SF_ENOMEM, "tune: out of memory");
  sf_status st = SF_OK;
  for (int i = 0; i < (s->opt->warmup > 0 ? s->opt->warmup : 0) && st == SF_OK; i++)
    st = run_call(&call, s->timer.stream);
  if (st == SF_OK) st = sf_cu_check(s->timer.cu->StreamSynchronize(s->timer.stream), "cuStreamSynchronize");
  int done = 0;
  bool stopped_early = false;
  for (; done < reps && st == SF_OK; done++) {
    st = sf_timer_time_one(&s->timer, run_call, &call, &ms[done]);
    if (st == SF_OK && may_stop_early && best_ms > 0 && done + 1 == EARLY_STOP_RUNS) {
      float fastest = ms[0];
      for (int k = 1; k <= done; k++) fastest = ms[k] < fastest ? ms[k] : fastest;
      if (fastest > EARLY_STOP_FACTOR * best_ms) {
        done++;
        stopped_early = true;
        break;
      }
    }
  }
  if (st == SF_OK) {
    sf_timing t = sf_timing_of(ms, done);
    c->ok = true;
    c->median_us = t.median * 1e3;
    c->min_us = t.min * 1e3;
    c->p90_us = t.p90 * 1e3;
    c->reps = done;
    if (stopped_early)
      snprintf(c->why, sizeof c->why, "stopped after %d runs: over %.1fx the best", done, EARLY_STOP_FACTOR);
  }
  free(ms);
  return st;
}
