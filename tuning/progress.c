/* progress.c: the tuner run's clock: elapsed time, whether to stop (the caller's flag or
 * the budget), and progress reports with an estimate of the time left. */
#include "tuning/run_state.h"

#include <time.h>

double sf_tuner_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

bool sf_tuner_should_stop(run_state *s) {
  if (s->opt->stop && *s->opt->stop) return true;
  return s->opt->budget_s > 0 && sf_tuner_now_ms() - s->start_ms > s->opt->budget_s * 1e3;
}

void sf_tuner_report(run_state *s, const char *phase, int entry, int candidate, int candidates) {
  if (!s->opt->progress) return;
  sf_tune_progress p = {.entry = entry, .entries = s->todo_count, .candidate = candidate,
                        .candidates = candidates, .compiled = atomic_load(&s->compiled),
                        .to_compile = atomic_load(&s->unique_count), .phase = phase, .eta_s = -1};
  char label[256] = "";
  if (entry < s->todo_count) sf_tune_request_format(s->todo[entry], label, sizeof label);
  p.label = label;
  p.elapsed_s = (sf_tuner_now_ms() - s->start_ms) * 1e-3;
  /* Entries done so far (the current one in part) over the time they took; before the
   * first candidates are in, the compile rate. */
  double done = s->entries_done + (candidates > 0 ? (double)candidate / candidates : 0);
  if (done > 0.05)
    p.eta_s = p.elapsed_s / done * (s->todo_count - done);
  else if (p.compiled > 0)
    p.eta_s = p.elapsed_s / p.compiled * (p.to_compile - p.compiled);
  s->opt->progress(s->opt->user, &p);
}
