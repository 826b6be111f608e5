/* defaults.c: reading the shipped tuning databases compiled into the library. */
#include "runtime/launch_config/defaults.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

sf_status sf_tune_defaults_load(sf_tune_db *out, char **warning) {
  sf_tune_db_init(out);
  if (warning) *warning = NULL;
  for (const sf_tune_default_file *f = sf_tune_default_files; f->name; f++) {
    char origin[128];
    snprintf(origin, sizeof origin, "shipped tuning defaults %s", f->name);
    sf_tune_db one;
    sf_status st = sf_tune_db_parse(f->text, f->size, origin, &one);
    if (st == SF_ENOMEM) {
      sf_tune_db_free(out);
      return st;
    }
    if (st != SF_OK) {
      /* A broken shipped file costs its entries, not the process. */
      if (warning && !*warning) *warning = strdup(sf_last_error());
      continue;
    }
    st = sf_tune_db_merge(out, &one);
    sf_tune_db_free(&one);
    if (st != SF_OK) {
      sf_tune_db_free(out);
      return st;
    }
  }
  return SF_OK;
}
