/* defaults.h: the shipped tuning databases (the JSON files of tuning/defaults/), compiled into the library. */
#ifndef SCANFORGE_TUNING_DEFAULTS_H
#define SCANFORGE_TUNING_DEFAULTS_H

#include <stddef.h>

#include "runtime/launch_config/tuning_database.h"

typedef struct sf_tune_default_file {
  const char *name; /* "h100.json" */
  const char *text;
  size_t size;
} sf_tune_default_file;

/* Every file of tuning/defaults/; ends with a NULL name. The build generates the C file
 * that defines it (<build>/generated/tuning_defaults_data.c) with
 * cmake/embed_tuning_defaults.cmake whenever a JSON file changes. */
extern const sf_tune_default_file sf_tune_default_files[];

/* All shipped files merged into one database. A file that does not parse is left out and
 * named in *warning (a new string, free() it; may be NULL): never fatal. */
sf_status sf_tune_defaults_load(sf_tune_db *out, char **warning);

#endif
