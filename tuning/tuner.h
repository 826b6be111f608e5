/* tuner.h: autotuning: for each entry, every candidate configuration compiled, checked, timed; the winner recorded. */
#ifndef SCANFORGE_TUNING_TUNER_H
#define SCANFORGE_TUNING_TUNER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "scanforge/scanforge.h"
#include "runtime/launch_config/tuning_database.h"

/* ---- what to tune ---------------------------------------------------------------------- */

/* One entry to tune: op, dstate, dtype and flags in `variant` (its knobs are unused), and
 * the shape to measure, which names the entry's bucket. */
typedef struct sf_tune_request {
  sf_variant variant;
  sf_tune_shape shape;
  /* a backward timed on block states (sf_tune_entry's block_states): the launch for
   * training calls whose forward saved every block's starting state */
  bool block_states;
} sf_tune_request;

/* The default grid: docs/perf.md's rows (fp32 and bf16 as it lists them, gated rows in
 * both) and MambaVision's stage shapes in fp32 and bf16, forward, and the backward when
 * with_bwd, the backward also in the block-states mode for rows of L >= 196; all with
 * variable B and C, one group, D, delta_bias and softplus. One request per key (shapes of
 * the same bucket collapse to the first). Writes up to `cap` and
 * returns how many there are. */
int sf_tune_default_requests(sf_tune_request *out, int cap, bool with_bwd);

/* Parses an entries file: one entry a line, "BATCH,DIM,L,N[,G] [KEY=VALUE,...]", where the
 * keys are op (fwd, bwd), dtype, the flags z, D, delta_bias, softplus, B, C,
 * deterministic, and block_states (0 or 1, op=bwd only) (defaults: op=fwd, fp32, z=0 and the rest as docs/perf.md's rows);
 * blank lines and '#' comments are skipped. *out is a new array (free() it). SF_EINVAL
 * names the line. */
sf_status sf_tune_parse_requests(const char *text, const char *origin, sf_tune_request **out, int *count);
/* Writes a request as such a line. */
void sf_tune_request_format(const sf_tune_request *r, char *buf, size_t cap);

/* The entry key of a request (class and buckets; no results). */
sf_tune_entry sf_tune_request_key(const sf_tune_request *r);

/* ---- candidates ------------------------------------------------------------------------ */

/* The candidate configurations of a request, the heuristics' choice first:
 *   - lanes split time (scan_fwd.tpl, and the backward): powers of two threads 4..512,
 *     items 4..32, channels 1..64, with the heuristics' states;
 *   - lanes split the states (scan_fwd_states.tpl, scan_bwd_states.tpl): threads (lanes)
 *     1..32 dividing N, items (steps of a time block) 4..64 (the backward's to 32),
 *     channels 1..256; a block-states request takes only these, with items >= 8 (4
 *     would double the states its forward writes);
 * each a valid variant (sf_variant_validate) that fits the call (backward: threads x
 * items is the state interval; backward and split=state: channels divide dim / groups
 * with variable B or C) within the tuner's limits (docs/tuning.md): a block of 32..256
 * threads, no more channels than the call has (rounded up to a power of two), a split=time
 * forward chunk (threads x items) between min(64, P) and max(64, P) steps, P the next
 * power of two >= L, a split=state lane (forward or backward) of at most
 * SF_TUNE_MAX_LANE_STATES states and SF_TUNE_MAX_LANE_WALK (state, step) pairs a block.
 * With ask_template, those the template refuses are left out and counted in *rejected
 * (may be NULL); the tuner leaves that to its compiles instead.
 * Writes up to `cap` and returns how many there are. */
int sf_tune_candidates(const sf_tune_request *r, bool ask_template, sf_variant *out, int cap, int *rejected);
#define SF_TUNE_MAX_LANE_STATES 16
#define SF_TUNE_MAX_LANE_WALK 256

/* The second round around a candidate `base`: the same knobs with each other number of
 * states 1, 2, 4, ... <= N that a split=time forward template would really use (a divisor
 * of N; for the split=state backward, the states a lane interleaves per pass), and with
 * minblocks 2, 4, 8, 16, 24, 32 and the counts that put 10 and 12 warps on an SM
 * (registers capped so that many blocks fit an SM) where that many blocks fit 2048
 * threads. The tuner tries them on its three fastest candidates. Writes up to `cap` and
 * returns how many there are. */
int sf_tune_refinements(const sf_tune_request *r, const sf_variant *base, sf_variant *out, int cap);

/* ---- running ---------------------------------------------------------------------------- */

typedef struct sf_tune_progress {
  int entry, entries;         /* 0-based entry being worked on, of how many */
  int candidate, candidates;  /* within the entry */
  int compiled, to_compile;   /* the compile phase */
  const char *phase;          /* "compiling", "tuning" */
  const char *label;          /* the entry, as sf_tune_request_format writes it */
  double elapsed_s, eta_s;    /* eta < 0: unknown yet */
} sf_tune_progress;

typedef struct sf_tune_options {
  const char *db_path;   /* where results go: each entry is saved when it is done */
  double budget_s;       /* stop cleanly after this long (<= 0: no limit) */
  bool force;            /* tune entries the database already has complete */
  const char *force_before; /* may be NULL: also tune complete entries tuned before this UTC
                               time (ISO 8601 as `tuned_at`: 2026-11-26T19:00:00Z), so that a
                               re-tune stopped by its budget goes on where it stopped */
  int jobs;              /* compile threads (<= 0: one per CPU, at most 16) */
  int reps;              /* timed runs of a candidate (at least 20) */
  int warmup;            /* untimed runs first */
  volatile sig_atomic_t *stop; /* may be NULL; set (e.g. by SIGINT) to stop like the budget */
  void (*progress)(void *user, const sf_tune_progress *p);
  /* Called with each entry when it is done: saved, skipped (already in the database), or
   * failed (`failure` says why; otherwise NULL). */
  void (*entry_done)(void *user, const sf_tune_request *r, const sf_tune_entry *e, bool skipped,
                     const char *failure);
  void *user;
} sf_tune_options;

typedef struct sf_tune_summary {
  int tuned;      /* entries measured and saved (complete or not) */
  int partial;    /* of those, stopped by the budget or a stop before every candidate ran */
  int skipped;    /* already in the database */
  int failed;     /* no candidate passed (nothing saved) */
  int left;       /* not reached before the stop */
  bool stopped;   /* the budget ran out or stop was set */
  char warning[1024]; /* the database file's warning, if any ("" when none) */
} sf_tune_summary;

/* Tunes the requests on the GPU of the calling thread's current context (device 0 when
 * none): compiles every candidate through ctx's cache on `jobs` threads, then per entry
 * checks each candidate against the float64 reference on a small shape of the same
 * configuration (sf_check_fwd / sf_check_bwd) and times those that pass on the entry's
 * shape (CUDA events behind a spin kernel, inputs rotated over more than L2, warm-up, the
 * median of `reps`); a candidate out of GPU resources or failing to compile or check is
 * recorded with why, and never wins. The winner is the fastest, and the heuristics'
 * choice unless another beats it by more than 1%: never slower than the default measured
 * in the same run. Entries already complete in the database for this GPU are skipped
 * unless opt->force. Fails only when the GPU or the database file cannot be used. */
sf_status sf_tune_run(sf_context *ctx, const sf_tune_request *requests, int count, const sf_tune_options *opt,
                      sf_tune_summary *summary);

/* Whether a run with `opt` skips an entry the database has (`have`, NULL: none): complete,
 * not forced, and tuned at or after opt->force_before when that is set. */
bool sf_tune_entry_skipped(const sf_tune_entry *have, const sf_tune_options *opt);

/* Whether `text` is a UTC time as `tuned_at` is written: YYYY-MM-DDTHH:MM:SSZ. */
bool sf_tune_is_utc_time(const char *text);

#endif
