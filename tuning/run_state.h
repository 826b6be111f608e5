/* run_state.h: the state of one sf_tune_run (tuning/tuner.c), shared by the files that do
 * its parts: the clock and progress (progress.c), the compile pool (compile_pool.c), the
 * check and the timing of a candidate (candidate_check.c, candidate_timing.c) and one
 * entry's rounds (tune_entry.c). Internal to tuning/. */
#ifndef SCANFORGE_TUNING_RUN_STATE_H
#define SCANFORGE_TUNING_RUN_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/compile/target.h"
#include "runtime/cuda/cuda_context.h"
#include "tuning/measure.h"
#include "tuning/tuner.h"

/* One distinct variant of the run: compiled once, checked once per check shape. */
typedef struct unique_variant {
  sf_variant v;
  char spec[256];        /* canonical, to find it again */
  atomic_int taken;      /* 1 once a thread has claimed its compile */
  atomic_int done;       /* 1 once compile_status is set (release) */
  sf_status compile_status;
  char compile_error[256];
} unique_variant;

/* A check result remembered across entries of the same class. */
typedef struct check_memo {
  char spec[512];
  int64_t dim, seqlen, state_interval;
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
   * publishes unique_count, workers take the next index. An entry's second round is
   * appended after every planned candidate, so its range [urgent_next, urgent_end) is
   * taken first; each variant's `taken` flag keeps two threads off one compile. */
  unique_variant *uniques;
  int unique_capacity;
  atomic_int unique_count, next_compile, compiled;
  atomic_int urgent_next, urgent_end;
  atomic_bool stop_compiling;
  pthread_t workers[64];
  int worker_count;
  sf_target target;
  check_memo *memos;
  int memo_count, memo_cap;
  int entries_done;
} run_state;

/* The second round of an entry: the refinements of its REFINE_BASES fastest candidates,
 * REFINE_EACH of each at most (room for them is planned up front). */
enum { REFINE_BASES = 3, REFINE_EACH = 12, REFINE_EXTRA = REFINE_BASES * REFINE_EACH };

/* ---- progress.c: the clock, the stop, progress reports ---------------------------------- */

double sf_tuner_now_ms(void);
/* Whether the run must stop now: the caller's flag, or the time budget spent. */
bool sf_tuner_should_stop(run_state *s);
/* Reports progress (with an ETA) to the caller's callback, if any. */
void sf_tuner_report(run_state *s, const char *phase, int entry, int candidate, int candidates);

/* ---- compile_pool.c: the distinct variants, compiled by a pool of threads --------------- */

/* The index of v among the run's distinct variants, or -1. */
int sf_tuner_find_unique(const run_state *s, const sf_variant *v);
/* Adds v to the distinct variants unless it is there; main thread only. */
sf_status sf_tuner_add_unique(run_state *s, const sf_variant *v);
/* Has the pool compile variants [begin, end) before any other it has not started. */
void sf_tuner_compile_first(run_state *s, int begin, int end);
/* The next variant a compiling thread should build (claimed: no other thread gets it), or
 * -1 when none is waiting. */
int sf_tuner_claim_compile(run_state *s);
void sf_tuner_start_compiling(run_state *s);
void sf_tuner_stop_compiling(run_state *s);
/* Waits for variant u's compile, building it on this thread when no other has claimed it;
 * false when the run is told to stop first. */
bool sf_tuner_wait_compiled(run_state *s, int u, int entry, int candidate, int candidates);

/* ---- candidate_check.c and candidate_timing.c: one candidate ----------------------------- */

/* The launch spec of v's knobs alone (what sf_launch.spec takes). */
void sf_tuner_knob_spec(const sf_variant *v, char *buf, size_t cap);
/* Checks the candidate; returns SF_OK when the check ran (its verdict in *passed),
 * otherwise the call's status (e.g. SF_ERESOURCE). */
sf_status sf_tuner_check_candidate(run_state *s, const sf_tune_request *r, const sf_variant *v, bool *passed,
                                   double *error, char *why, size_t why_cap);
/* Times the candidate on the input sets into *c; with may_stop_early, a candidate whose
 * first runs are far slower than best_ms stops there. */
sf_status sf_tuner_time_candidate(run_state *s, const sf_measure_sets *sets, const sf_variant *v, double best_ms,
                                  bool may_stop_early, sf_tune_candidate *c);

/* ---- tune_entry.c: one entry ----------------------------------------------------------- */

/* Tunes entry `index` of the run into *e (see tune_entry.c); *stopped when told to stop. */
sf_status sf_tuner_tune_entry(run_state *s, int index, sf_tune_entry *e, bool *stopped);
/* Whether any candidate of e was fully measured. */
bool sf_tuner_has_winner(const sf_tune_entry *e);
/* Adds e to the database file (locked), keeping the first warning in the summary. */
sf_status sf_tuner_save_entry(run_state *s, const sf_tune_entry *e);

#endif
