/* temp_dir.c: scratch directories for tests, removed at process exit. */
#define _XOPEN_SOURCE 700
#include "tests/support/temp_dir.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DIRS = 32 };
static char made[MAX_DIRS][256];
static int made_count;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  remove(path);
  return 0;
}

static void remove_all(void) {
  for (int i = 0; i < made_count; i++) nftw(made[i], remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

char *temp_dir_for_test(const char *prefix) {
  char path[256];
  snprintf(path, sizeof path, "/tmp/%sXXXXXX", prefix);
  if (!mkdtemp(path)) return NULL;
  if (made_count == 0) atexit(remove_all);
  if (made_count < MAX_DIRS) snprintf(made[made_count++], sizeof made[0], "%s", path);
  return strdup(path);
}

const char *scratch_dir(const char *prefix) {
  char *path = temp_dir_for_test(prefix);
  if (!path) return NULL;
  for (int i = 0; i < made_count; i++)
    if (strcmp(made[i], path) == 0) {
      free(path);
      return made[i];
    }
  return path; /* beyond MAX_DIRS: kept (and not removed) for the process */
}
