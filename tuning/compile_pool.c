/* compile_pool.c: the distinct variants of a tuner run, and the pool of threads that
 * compiles them (through the kernel cache) while the main thread measures. */
#include "tuning/run_state.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "runtime/launch/kernels.h"
#include "runtime/launch/context.h"

int sf_tuner_find_unique(const run_state *s, const sf_variant *v) {
  char spec[256];
  sf_variant_format(v, spec, sizeof spec);
  const int count = atomic_load(&s->unique_count);
  for (int i = 0; i < count; i++)
    if (strcmp(s->uniques[i].spec, spec) == 0) return i;
  return -1;
}

/* Main thread only. The slot is filled before the count that lets workers see it. */
sf_status sf_tuner_add_unique(run_state *s, const sf_variant *v) {
  if (sf_tuner_find_unique(s, v) >= 0) return SF_OK;
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

void sf_tuner_compile_first(run_state *s, int begin, int end) {
  atomic_store(&s->urgent_end, begin); /* no claims from the old range while it moves */
  atomic_store(&s->urgent_next, begin);
  atomic_store(&s->urgent_end, end);
}

/* Takes index i from `cursor` if it is still below `end`; *i is then the claimed index
 * (or, when another thread claimed the variant first, -2: try again). */
static bool take_from(run_state *s, atomic_int *cursor, int end, int *i) {
  int at = atomic_load(cursor);
  if (at >= end) return false;
  if (!atomic_compare_exchange_weak(cursor, &at, at + 1)) *i = -2;
  else *i = atomic_exchange(&s->uniques[at].taken, 1) ? -2 : at;
  return true;
}

int sf_tuner_claim_compile(run_state *s) {
  int i;
  while (take_from(s, &s->urgent_next, atomic_load(&s->urgent_end), &i))
    if (i >= 0) return i;
  while (take_from(s, &s->next_compile, atomic_load(&s->unique_count), &i))
    if (i >= 0) return i;
  return -1;
}

/* Builds variant u (through the kernel cache) and publishes its status. */
static void compile_unique(run_state *s, unique_variant *u) {
  const void *data;
  size_t size;
  sf_cache_source where;
  u->compile_status = sf_variant_binary(s->ctx->cache, s->target, &u->v, &data, &size, &where);
  if (u->compile_status != SF_OK) snprintf(u->compile_error, sizeof u->compile_error, "%s", sf_last_error());
  else u->compile_error[0] = '\0';
  atomic_store(&u->done, 1);
  atomic_fetch_add(&s->compiled, 1);
}

static void *compile_worker(void *arg) {
  run_state *s = arg;
  while (!atomic_load(&s->stop_compiling)) {
    const int i = sf_tuner_claim_compile(s);
    if (i < 0) usleep(2000); /* the main thread may add more (the states round) */
    else compile_unique(s, &s->uniques[i]);
  }
  return NULL;
}

static int default_jobs(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus < 1 ? 1 : cpus > 16 ? 16 : (int)cpus;
}

void sf_tuner_start_compiling(run_state *s) {
  const int jobs = s->opt->jobs > 0 ? s->opt->jobs : default_jobs();
  for (s->worker_count = 0; s->worker_count < jobs && s->worker_count < 64; s->worker_count++)
    if (pthread_create(&s->workers[s->worker_count], NULL, compile_worker, s) != 0) break;
}

void sf_tuner_stop_compiling(run_state *s) {
  atomic_store(&s->stop_compiling, true);
  for (int i = 0; i < s->worker_count; i++) pthread_join(s->workers[i], NULL);
  s->worker_count = 0;
}

/* Waits for variant u's compile; false when the run is told to stop first. */
bool sf_tuner_wait_compiled(run_state *s, int u, int entry, int candidate, int candidates) {
  /* Not claimed by the pool yet (or no pool): build it here rather than wait in line. */
  if (sf_tuner_should_stop(s)) return atomic_load(&s->uniques[u].done);
  if (!atomic_exchange(&s->uniques[u].taken, 1)) compile_unique(s, &s->uniques[u]);
  for (int spins = 0; !atomic_load(&s->uniques[u].done); spins++) {
    if (sf_tuner_should_stop(s)) return false;
    if (spins % 50 == 0) sf_tuner_report(s, "compiling", entry, candidate, candidates);
    usleep(2000);
  }
  return true;
}
