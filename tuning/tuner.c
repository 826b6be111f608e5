/* tuner.c: the autotuner's run (sf_tune_run): the device and the database opened, the plan
 * of entries and their candidates, the compile pool started, each entry tuned and saved. */
#include "tuning/tuner.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/launch/context.h"
#include "runtime/launch/kernels.h"
#include "runtime/launch_config/select.h"
#include "tuning/database_write.h"
#include "tuning/run_state.h"

enum { MAX_CANDIDATES = 512 };



static void free_state(run_state *s) {
  sf_tuner_stop_compiling(s);
  for (int i = 0; i < s->todo_count; i++) free(s->candidates ? s->candidates[i] : NULL);
  free(s->candidates);
  free(s->candidate_counts);
  free(s->todo);
  free(s->uniques);
  free(s->memos);
  sf_timer_close(&s->timer);
}

bool sf_tune_is_utc_time(const char *text) {
  static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
  if (!text || strlen(text) != sizeof shape - 1) return false;
  for (size_t i = 0; shape[i]; i++)
    if (shape[i] == 'd' ? !isdigit((unsigned char)text[i]) : text[i] != shape[i]) return false;
  return true;
}

bool sf_tune_entry_skipped(const sf_tune_entry *have, const sf_tune_options *opt) {
  if (!have || !have->complete || opt->force) return false;
  /* tuned_at and force_before have one format, so their order is their strings' */
  return !opt->force_before || strcmp(have->tuned_at, opt->force_before) >= 0;
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
    if (sf_tune_entry_skipped(have, s->opt)) {
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
      sf_status st = sf_tuner_add_unique(s, &cands[c]);
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
  run_state s = {.ctx = ctx, .opt = opt, .summary = summary, .start_ms = sf_tuner_now_ms()};
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
  if (st == SF_OK) sf_tuner_start_compiling(&s); /* in entry order, while the GPU measures */
  for (int i = 0; i < s.todo_count && st == SF_OK; i++) {
    if (sf_tuner_should_stop(&s)) break;
    sf_tune_entry e;
    bool stopped = false;
    /* An entry that cannot run (its inputs do not fit, ...) fails alone. */
    const sf_status entry_status = sf_tuner_tune_entry(&s, i, &e, &stopped);
    if (entry_status == SF_ECUDA) st = entry_status; /* the context is gone: stop here */
    const bool won = entry_status == SF_OK && sf_tuner_has_winner(&e);
    if (won) st = sf_tuner_save_entry(&s, &e);
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

