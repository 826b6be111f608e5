/* tuner.c: the autotuner's run: parallel compiles, check-then-time per candidate, winners saved. */
#include "tuning/tuner.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "generator/generator.h"
#include "runtime/check/check.h"
#include "runtime/launch/context.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_driver.h"
#include "base/error.h"
#include "runtime/launch/kernels.h"
#include "runtime/launch_config/heuristics.h"
#include "tuning/database_write.h"
#include "tuning/measure.h"
#include "runtime/launch_config/select.h"

/* ---- the run's state -------------------------------------------------------------------- */

enum { MAX_CANDIDATES = 512 };

/* One distinct variant of the run: compiled once, checked once per check shape. */
typedef struct unique_variant {
  sf_variant v;
  char spec[256];        /* canonical, to find it again */
  atomic_int done;       /* 1 once compile_status is set (release) */
  sf_status compile_status;
  char compile_error[256];
} unique_variant;

/* A check result remembered across entries of the same class. */
typedef struct check_memo {
  char spec[512];
  int64_t dim, seqlen;
  bool passed;
  double error;
  char why[256];
} check_memo;

typedef struct run_state {
  sf_context *ctx;
  sf_context *measure_ctx; /* the current entry's kernels, unloaded when it is done */
  const sf_tune_options *opt;
  sf_tune_summary *summary;
  sf_tune_gpu gpu;
  sf_device_info info;
  sf_timer timer;
  double start_ms;
  /* The requests to tune and their candidates. */
  const sf_tune_request **todo;
  sf_variant **candidates;
  int *candidate_counts;
  int todo_count;
  /* Distinct variants over all candidates, compiled by a pool of threads while the main
   * thread measures: the array never moves (sized up front), the main thread appends and
   * publishes unique_count, workers take the next index. */
  unique_variant *uniques;
  int unique_capacity;
  atomic_int unique_count, next_compile, compiled;
  atomic_bool stop_compiling;
  pthread_t workers[64];
  int worker_count;
  sf_target target;
  check_memo *memos;
  int memo_count, memo_cap;
  int entries_done;
} run_state;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static bool should_stop(run_state *s) {
  if (s->opt->stop && *s->opt->stop) return true;
  return s->opt->budget_s > 0 && now_ms() - s->start_ms > s->opt->budget_s * 1e3;
}

static void report(run_state *s, const char *phase, int entry, int candidate, int candidates) {
  if (!s->opt->progress) return;
  sf_tune_progress p = {.entry = entry, .entries = s->todo_count, .candidate = candidate,
                        .candidates = candidates, .compiled = atomic_load(&s->compiled),
                        .to_compile = atomic_load(&s->unique_count), .phase = phase, .eta_s = -1};
  char label[256] = "";
  if (entry < s->todo_count) sf_tune_request_format(s->todo[entry], label, sizeof label);
  p.label = label;
  p.elapsed_s = (now_ms() - s->start_ms) * 1e-3;
  /* Entries done so far (the current one in part) over the time they took; before the
   * first candidates are in, the compile rate. */
  double done = s->entries_done + (candidates > 0 ? (double)candidate / candidates : 0);
  if (done > 0.05)
    p.eta_s = p.elapsed_s / done * (s->todo_count - done);
  else if (p.compiled > 0)
    p.eta_s = p.elapsed_s / p.compiled * (p.to_compile - p.compiled);
  s->opt->progress(s->opt->user, &p);
}

static int find_unique(const run_state *s, const sf_variant *v) {
  char spec[256];
  sf_variant_format(v, spec, sizeof spec);
  const int count = atomic_load(&s->unique_count);
  for (int i = 0; i < count; i++)
    if (strcmp(s->uniques[i].spec, spec) == 0) return i;
  return -1;
}

/* Main thread only. The slot is filled before the count that lets workers see it. */
static sf_status add_unique(run_state *s, const sf_variant *v) {
  if (find_unique(s, v) >= 0) return SF_OK;
  const int i = atomic_load(&s->unique_count);
  if (i == s->unique_capacity) return sf_fail(SF_EINTERNAL, "tune: more distinct variants than planned (%d)", i);
  unique_variant *u = &s->uniques[i];
  memset(u, 0, sizeof *u);
  u->v = *v;
  u->compile_status = SF_EINTERNAL; /* until its compile says otherwise */
  snprintf(u->compile_error, sizeof u->compile_error, "not compiled before the stop");
  sf_variant_format(v, u->spec, sizeof u->spec);
  atomic_store(&s->unique_count, i + 1);
  return SF_OK;
}

/* ---- compiling in parallel ------------------------------------------------------------------ */

static void *compile_worker(void *arg) {
  run_state *s = arg;
  while (!atomic_load(&s->stop_compiling)) {
    int i = atomic_load(&s->next_compile);
    if (i >= atomic_load(&s->unique_count)) {
      usleep(2000); /* the main thread may add more (the states round) */
      continue;
    }
    if (!atomic_compare_exchange_weak(&s->next_compile, &i, i + 1)) continue;
    unique_variant *u = &s->uniques[i];
    const void *data;
    size_t size;
    sf_cache_source where;
    u->compile_status = sf_variant_binary(s->ctx->cache, s->target, &u->v, &data, &size, &where);
    if (u->compile_status != SF_OK) snprintf(u->compile_error, sizeof u->compile_error, "%s", sf_last_error());
    else u->compile_error[0] = '\0';
    atomic_store(&u->done, 1);
    atomic_fetch_add(&s->compiled, 1);
  }
  return NULL;
}

static int default_jobs(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus < 1 ? 1 : cpus > 16 ? 16 : (int)cpus;
}

static void start_compiling(run_state *s) {
  const int jobs = s->opt->jobs > 0 ? s->opt->jobs : default_jobs();
  for (s->worker_count = 0; s->worker_count < jobs && s->worker_count < 64; s->worker_count++)
    if (pthread_create(&s->workers[s->worker_count], NULL, compile_worker, s) != 0) break;
}

static void stop_compiling(run_state *s) {
  atomic_store(&s->stop_compiling, true);
  for (int i = 0; i < s->worker_count; i++) pthread_join(s->workers[i], NULL);
  s->worker_count = 0;
}

/* Waits for variant u's compile; false when the run is told to stop first. */
static bool wait_compiled(run_state *s, int u, int entry, int candidate, int candidates) {
  if (s->worker_count == 0 && !atomic_load(&s->uniques[u].done)) {
    /* No pool (threads could not start): compile here. */
    unique_variant *x = &s->uniques[u];
    const void *data;
    size_t size;
    sf_cache_source where;
    x->compile_status = sf_variant_binary(s->ctx->cache, s->target, &x->v, &data, &size, &where);
    if (x->compile_status != SF_OK) snprintf(x->compile_error, sizeof x->compile_error, "%s", sf_last_error());
    atomic_store(&x->done, 1);
  }
  for (int spins = 0; !atomic_load(&s->uniques[u].done); spins++) {
    if (should_stop(s)) return false;
    if (spins % 50 == 0) report(s, "compiling", entry, candidate, candidates);
    usleep(2000);
  }
  return true;
}

/* ---- checking one candidate ---------------------------------------------------------------- */

/* The small shape a candidate is checked on: its configuration over more than one block
 * and, where the chunk allows, more than one chunk, kept small so the float64 reference
 * is quick (docs/tuning.md). */
static sf_check_shape check_shape_for(const sf_tune_request *r, const sf_variant *v) {
  const int64_t L = r->shape.seqlen, G = r->shape.groups;
  sf_check_shape c = {.batch = 2, .dstate = v->dstate, .groups = (int)G, .dtype = v->dtype, .z = v->has_z,
                      .D = v->has_D, .delta_bias = v->has_delta_bias, .softplus = v->softplus,
                      .B_fixed = !v->B_var, .C_fixed = !v->C_var, .deterministic = v->deterministic};
  if (v->op == SF_OP_BWD) {
    /* The backward needs the call's state interval and channels dividing each group. */
    const int64_t interval = sf_scan_state_interval(L);
    c.seqlen = L < interval + interval / 2 + 1 ? L : interval + interval / 2 + 1;
    c.dim = (int64_t)v->channels * G;
  } else {
    /* split=time scans chunks of threads x items steps; split=state blocks of items. */
    const int64_t chunk = v->split_states ? v->items : (int64_t)v->threads * v->items;
    const int64_t cap = 2 * chunk + 7 < 600 ? 2 * chunk + 7 : 600;
    c.seqlen = L < cap ? L : cap;
    if (v->split_states) {
      c.dim = 2 * (int64_t)v->channels * G; /* two blocks, each within one group */
    } else {
      c.dim = v->channels + (v->channels > 1 ? v->channels / 2 : 1); /* a full block and a partial one */
      c.dim = (c.dim + G - 1) / G * G;
    }
  }
  return c;
}

static void knob_spec(const sf_variant *v, char *buf, size_t cap) {
  const sf_tune_knobs k = sf_tune_knobs_of(v);
  sf_tune_knobs_spec(&k, buf, cap);
}

/* Checks the candidate; returns SF_OK when the check ran (its verdict in *passed),
 * otherwise the call's status (e.g. SF_ERESOURCE). */
static sf_status check_candidate(run_state *s, const sf_tune_request *r, const sf_variant *v, bool *passed,
                                 double *error, char *why, size_t why_cap) {
  char spec[256], full[512];
  knob_spec(v, spec, sizeof spec);
  sf_variant_format(v, full, sizeof full);
  const sf_check_shape shape = check_shape_for(r, v);
  for (int i = 0; i < s->memo_count; i++) {
    const check_memo *m = &s->memos[i];
    if (strcmp(m->spec, full) == 0 && m->dim == shape.dim && m->seqlen == shape.seqlen) {
      *passed = m->passed;
      *error = m->error;
      snprintf(why, why_cap, "%s", m->why);
      return SF_OK;
    }
  }
  const sf_launch launch = {.spec = spec};
  const uint64_t seed = 0x7a11u + (uint64_t)s->memo_count;
  sf_status st;
  double bar;
  if (v->op == SF_OP_BWD) {
    sf_check_bwd_result res;
    st = sf_check_bwd(s->measure_ctx, &shape, &launch, seed, &res);
    *error = 0;
    for (int i = 0; st == SF_OK && i < res.count; i++)
      if (!(res.grads[i].error <= *error)) *error = res.grads[i].error; /* NaN sticks */
    *passed = st == SF_OK && res.passed;
    bar = res.bar;
  } else {
    sf_check_result res;
    st = sf_check_fwd(s->measure_ctx, &shape, &launch, seed, &res);
    *error = fmax(res.out_error, fmax(res.last_state_error, res.saved_error));
    if (isnan(res.out_error) || isnan(res.last_state_error) || isnan(res.saved_error)) *error = NAN;
    *passed = st == SF_OK && res.passed;
    bar = res.bar;
  }
  if (st != SF_OK) return st;
  why[0] = '\0';
  if (!*passed)
    snprintf(why, why_cap, "failed the check on %lldx%lldx%lld: error %.3g over the bar %.0e", (long long)shape.batch,
             (long long)shape.dim, (long long)shape.seqlen, *error, bar);
  if (s->memo_count == s->memo_cap) {
    int cap = s->memo_cap ? 2 * s->memo_cap : 64;
    check_memo *grown = realloc(s->memos, (size_t)cap * sizeof *grown);
    if (!grown) return SF_OK; /* not remembering costs time only */
    s->memos = grown;
    s->memo_cap = cap;
  }
  check_memo *m = &s->memos[s->memo_count++];
  snprintf(m->spec, sizeof m->spec, "%s", full);
  m->dim = shape.dim;
  m->seqlen = shape.seqlen;
  m->passed = *passed;
  m->error = *error;
  snprintf(m->why, sizeof m->why, "%s", why);
  return SF_OK;
}

/* ---- timing one candidate ------------------------------------------------------------------ */

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

static sf_status time_candidate(run_state *s, const sf_measure_sets *sets, const sf_variant *v, double best_ms,
                                bool may_stop_early, sf_tune_candidate *c) {
  char spec[256];
  knob_spec(v, spec, sizeof spec);
  timed_call call = {.ctx = s->measure_ctx, .sets = sets, .backward = v->op == SF_OP_BWD, .launch = {.spec = spec}};
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

/* ---- one entry ------------------------------------------------------------------------------ */

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

/* The shape's inputs, and for a backward the states its forward saves. */
static sf_status prepare_sets(run_state *s, const sf_tune_request *r, sf_measure_sets *sets) {
  const sf_variant *v = &r->variant;
  sf_measure_shape shape = {.batch = r->shape.batch, .dim = r->shape.dim, .seqlen = r->shape.seqlen,
                            .dstate = v->dstate, .groups = r->shape.groups, .dtype = v->dtype, .z = v->has_z,
                            .D = v->has_D, .delta_bias = v->has_delta_bias, .softplus = v->softplus,
                            .B_var = v->B_var, .C_var = v->C_var, .backward = v->op == SF_OP_BWD};
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
  const int u = find_unique(s, v);
  if (u < 0 || s->uniques[u].compile_status != SF_OK) {
    failure_text(u < 0 ? SF_EINTERNAL : s->uniques[u].compile_status,
                 u < 0 ? "not compiled" : s->uniques[u].compile_error, c->why, sizeof c->why);
    return SF_OK;
  }
  bool passed = false;
  sf_status st = check_candidate(s, r, v, &passed, &c->error, c->why, sizeof c->why);
  if (st == SF_OK && passed) {
    st = time_candidate(s, sets, v, *best_ms, !is_default, c);
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

enum { REFINE_BASES = 3, REFINE_EACH = 8, REFINE_EXTRA = REFINE_BASES * REFINE_EACH };

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
static sf_status tune_entry(run_state *s, int index, sf_tune_entry *e, bool *stopped) {
  const sf_tune_request *r = s->todo[index];
  const sf_variant *cands = s->candidates[index];
  const int count = s->candidate_counts[index];
  *e = sf_tune_request_key(r);
  e->candidates = calloc((size_t)(count + REFINE_EXTRA), sizeof *e->candidates);
  if (!e->candidates) return sf_fail(SF_ENOMEM, "tune: out of memory");
  /* A context of the entry's own: its candidates are unloaded when it is done. */
  sf_status st = sf_context_create_sharing_cache(s->ctx, &s->measure_ctx);
  if (st != SF_OK) return st;
  sf_measure_sets sets;
  st = prepare_sets(s, r, &sets);
  if (st != SF_OK) {
    sf_context_destroy(s->measure_ctx);
    s->measure_ctx = NULL;
    return sf_fail_context(st, "inputs of %lldx%lldx%lld", (long long)r->shape.batch, (long long)r->shape.dim,
                           (long long)r->shape.seqlen);
  }
  double best_ms = 0;
  /* Stage 1: the knob grid. */
  for (int i = 0; i < count && st == SF_OK; i++) {
    if ((*stopped = should_stop(s))) break;
    report(s, "tuning", index, i, count);
    const int u = find_unique(s, &cands[i]);
    if (u >= 0 && !wait_compiled(s, u, index, i, count)) {
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
  for (int j = 0; j < n_extra && st == SF_OK; j++) st = add_unique(s, &extra[j]);
  for (int j = 0; j < n_extra && st == SF_OK; j++) {
    if ((*stopped = should_stop(s))) break;
    report(s, "tuning", index, count + j, count + n_extra);
    const int u = find_unique(s, &extra[j]);
    if (u >= 0 && !wait_compiled(s, u, index, count + j, count + n_extra)) {
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

static bool has_winner(const sf_tune_entry *e) {
  for (int i = 0; i < e->candidate_count; i++)
    if (e->candidates[i].ok && e->candidates[i].reps >= 20) return true;
  return false;
}

static sf_status save_entry(run_state *s, const sf_tune_entry *e) {
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

/* ---- the run --------------------------------------------------------------------------------- */


static void free_state(run_state *s) {
  stop_compiling(s);
  for (int i = 0; i < s->todo_count; i++) free(s->candidates ? s->candidates[i] : NULL);
  free(s->candidates);
  free(s->candidate_counts);
  free(s->todo);
  free(s->uniques);
  free(s->memos);
  sf_timer_close(&s->timer);
}

/* Picks the requests still to tune and their candidates. */
static sf_status plan(run_state *s, const sf_tune_request *requests, int count, const sf_tune_db *db) {
  s->todo = calloc((size_t)count + 1, sizeof *s->todo);
  s->candidates = calloc((size_t)count + 1, sizeof *s->candidates);
  s->candidate_counts = calloc((size_t)count + 1, sizeof *s->candidate_counts);
  /* Room for every candidate and each entry's states round: the array never moves. */
  s->unique_capacity = count * (MAX_CANDIDATES + REFINE_EXTRA) + 1;
  s->uniques = malloc((size_t)s->unique_capacity * sizeof *s->uniques);
  if (!s->todo || !s->candidates || !s->candidate_counts || !s->uniques)
    return sf_fail(SF_ENOMEM, "tune: out of memory");
  const sf_tune_section *section = sf_tune_db_find_section(db, &s->gpu);
  for (int i = 0; i < count; i++) {
    sf_tune_entry key = sf_tune_request_key(&requests[i]);
    const sf_tune_entry *have = section ? sf_tune_section_find(section, &key) : NULL;
    if (have && have->complete && !s->opt->force) {
      s->summary->skipped++;
      if (s->opt->entry_done) s->opt->entry_done(s->opt->user, &requests[i], have, true, NULL);
      continue;
    }
    sf_variant *cands = malloc(MAX_CANDIDATES * sizeof *cands);
    if (!cands) return sf_fail(SF_ENOMEM, "tune: out of memory");
    /* The template's verdicts come from the parallel compiles (SF_EINVAL). */
    int n = sf_tune_candidates(&requests[i], false, cands, MAX_CANDIDATES, NULL);
    const int k = s->todo_count++;
    s->todo[k] = &requests[i];
    s->candidates[k] = cands;
    s->candidate_counts[k] = n < MAX_CANDIDATES ? n : MAX_CANDIDATES;
    for (int c = 0; c < s->candidate_counts[k]; c++) {
      sf_status st = add_unique(s, &cands[c]);
      if (st != SF_OK) return st;
    }
  }
  return SF_OK;
}

sf_status sf_tune_run(sf_context *ctx, const sf_tune_request *requests, int count, const sf_tune_options *opt,
                      sf_tune_summary *summary) {
  if (!ctx || !opt || !summary || !opt->db_path || (count > 0 && !requests))
    return sf_fail(SF_EINVAL, "sf_tune_run: ctx, requests, options (with db_path) and summary are needed");
  memset(summary, 0, sizeof *summary);
  run_state s = {.ctx = ctx, .opt = opt, .summary = summary, .start_ms = now_ms()};
  CUcontext context;
  sf_status st = sf_cu_current_context(0, &context);
  if (st == SF_OK) st = sf_device_get_info(-1, &s.info);
  if (st == SF_OK) st = sf_tune_gpu_of_device(-1, &s.gpu);
  if (st == SF_OK) st = sf_context_target(ctx, &s.target);
  if (st == SF_OK) st = sf_timer_open(&s.timer);
  if (st != SF_OK) {
    free_state(&s);
    return st;
  }
  sf_tune_db db;
  char *warning = NULL;
  st = sf_tune_db_load(opt->db_path, &db, &warning);
  if (warning) snprintf(summary->warning, sizeof summary->warning, "%s", warning);
  free(warning);
  if (st == SF_OK) st = plan(&s, requests, count, &db);
  sf_tune_db_free(&db);
  if (st == SF_OK) start_compiling(&s); /* in entry order, while the GPU measures */
  for (int i = 0; i < s.todo_count && st == SF_OK; i++) {
    if (should_stop(&s)) break;
    sf_tune_entry e;
    bool stopped = false;
    /* An entry that cannot run (its inputs do not fit, ...) fails alone. */
    const sf_status entry_status = tune_entry(&s, i, &e, &stopped);
    if (entry_status == SF_ECUDA) st = entry_status; /* the context is gone: stop here */
    const bool won = entry_status == SF_OK && has_winner(&e);
    if (won) st = save_entry(&s, &e);
    if (won && st == SF_OK) {
      summary->tuned++;
      summary->partial += !e.complete;
    } else if (!stopped) {
      summary->failed++;
    }
    if (opt->entry_done && (won || !stopped)) {
      char failure[512] = "";
      if (entry_status != SF_OK)
        snprintf(failure, sizeof failure, "%s", sf_last_error());
      else if (!won)
        snprintf(failure, sizeof failure, "no candidate passed (the heuristics' choice: %s)",
                 e.candidate_count > 0 ? e.candidates[0].why : "none");
      opt->entry_done(opt->user, s.todo[i], &e, false, won ? NULL : failure);
    }
    sf_tune_entry_free(&e);
    s.entries_done++;
    if (stopped) break;
  }
  summary->left = s.todo_count - summary->tuned - summary->failed;
  summary->stopped = summary->left > 0 && st == SF_OK;
  free_state(&s);
  return st;
}
