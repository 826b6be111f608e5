/* test_tune_resume.c: which entries a tuning run skips (sf_tune_entry_skipped): complete
 * ones, unless forced, or tuned before --force-before's time, so that a re-tune stopped by
 * its budget goes on where it stopped; and the times --force-before takes. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "tuning/tuner.h"

static sf_tune_entry entry_tuned_at(const char *when, bool complete) {
  sf_tune_entry e = {.complete = complete};
  snprintf(e.tuned_at, sizeof e.tuned_at, "%s", when);
  return e;
}

Test(tune_resume, complete_entries_are_skipped_unless_forced) {
  const sf_tune_entry done = entry_tuned_at("2026-11-25T18:58:16Z", true);
  const sf_tune_entry stopped = entry_tuned_at("2026-11-26T19:03:58Z", false);
  cr_expect(sf_tune_entry_skipped(&done, &(sf_tune_options){0}));
  cr_expect_not(sf_tune_entry_skipped(&done, &(sf_tune_options){.force = true}));
  cr_expect_not(sf_tune_entry_skipped(&stopped, &(sf_tune_options){0}), "an entry the budget stopped goes on");
  cr_expect_not(sf_tune_entry_skipped(NULL, &(sf_tune_options){0}), "an entry the database lacks is tuned");
}

Test(tune_resume, force_before_retunes_older_entries_only) {
  const sf_tune_options opt = {.force_before = "2026-11-26T18:00:00Z"};
  const sf_tune_entry shipped = entry_tuned_at("2026-11-25T18:58:16Z", true);
  const sf_tune_entry retuned = entry_tuned_at("2026-11-26T18:22:41Z", true);
  const sf_tune_entry same_second = entry_tuned_at("2026-11-26T18:00:00Z", true);
  const sf_tune_entry undated = entry_tuned_at("", true);
  cr_expect_not(sf_tune_entry_skipped(&shipped, &opt), "tuned before the time: tuned again");
  cr_expect(sf_tune_entry_skipped(&retuned, &opt), "tuned since: kept");
  cr_expect(sf_tune_entry_skipped(&same_second, &opt));
  cr_expect_not(sf_tune_entry_skipped(&undated, &opt), "no time counts as before any");
}

Test(tune_resume, force_before_takes_utc_times_as_the_database_writes_them) {
  cr_expect(sf_tune_is_utc_time("2026-11-26T19:00:00Z"));
  static const char *refused[] = {"2026-11-26", "2026-11-26T19:00:00", "2026-11-26 19:00:00Z",
                                  "2026-11-26T19:00:00+00:00", "2026-1l-26T19:00:00Z", "", NULL};
  for (int i = 0; i < 7; i++) cr_expect_not(sf_tune_is_utc_time(refused[i]), "'%s'", refused[i] ? refused[i] : "NULL");
}
