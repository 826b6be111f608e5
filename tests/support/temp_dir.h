/* temp_dir.h: scratch directories for tests, removed when the test's process exits. */
#ifndef SCANFORGE_TESTS_TEMP_DIR_H
#define SCANFORGE_TESTS_TEMP_DIR_H

/* A fresh directory /tmp/<prefix>XXXXXX (the caller frees the string); it and everything
 * in it are removed when the process exits (Criterion runs each test in its own process). */
char *temp_dir_for_test(const char *prefix);

/* The same, as a path that stays valid for the process (no freeing); NULL on failure. */
const char *scratch_dir(const char *prefix);

#endif
