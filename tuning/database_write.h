/* database_write.h: writing the tuning database (runtime/launch_config/tuning_database.h reads it). */
#ifndef SCANFORGE_TUNING_DATABASE_WRITE_H
#define SCANFORGE_TUNING_DATABASE_WRITE_H

#include <stdbool.h>

#include "runtime/launch_config/tuning_database.h"

/* The database as indented JSON, a new string (free() it); NULL when out of memory.
 * with_candidates false leaves every entry's candidates out (for shipped defaults). */
char *sf_tune_db_dump(const sf_tune_db *db, bool with_candidates);

/* Adds the entries of `additions` to the file at `path` without losing entries another
 * process writes at the same time: takes an exclusive lock on "<path>.lock", re-reads the
 * file, merges, writes a temporary file beside it, fsyncs it and renames it over the
 * file. A corrupt file is replaced (*warning says so). SF_EIO when the file cannot be
 * written. */
sf_status sf_tune_db_save(const char *path, const sf_tune_db *additions, char **warning);

#endif
