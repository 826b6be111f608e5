/* test_cli_env.c: the CLI prints each bad environment variable once, on a line of its
 * own, and goes on with the default. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/cli_run.h"
#include "tests/support/temp_dir.h"

static int count_of(const char *haystack, const char *needle) {
  int n = 0;
  for (const char *p = haystack; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

Test(cli_env, a_bad_budget_is_reported_once_and_the_default_used) {
  char *dir = temp_dir_for_test("sf_cli_env_");
  cr_assert_not_null(dir);
  char env[1024], *out;
  snprintf(env, sizeof env, "SCANFORGE_CACHE_DIR='%s' SCANFORGE_CACHE_MAX_BYTES=-1G SCANFORGE_MIN_SEGMENT=8x ", dir);
  cr_assert_eq(run_env(env, "cache stat", &out), 0, "%s", out);
  cr_expect_eq(count_of(out, "SCANFORGE_CACHE_MAX_BYTES"), 1, "%s", out);
  cr_expect(strstr(out, "scanforge: warning: SCANFORGE_CACHE_MAX_BYTES=\"-1G\" is not usable: expected a positive "
                        "byte count such as 1048576, 512K, 64M or 1G; using 1 GiB\n"),
            "%s", out);
  cr_expect(strstr(out, "scanforge: warning: SCANFORGE_MIN_SEGMENT=\"8x\" is not usable: expected a power of two "
                        "from 4 to 512; using 64\n"),
            "%s", out);
  cr_expect(strstr(out, "1.0 GiB (1073741824)"), "the default budget: %s", out);
  free(out);
}

Test(cli_env, good_values_say_nothing) {
  char *dir = temp_dir_for_test("sf_cli_env_");
  cr_assert_not_null(dir);
  char env[1024], *out;
  snprintf(env, sizeof env, "SCANFORGE_CACHE_DIR='%s' SCANFORGE_CACHE_MAX_BYTES=64M SCANFORGE_TUNING=off ", dir);
  cr_assert_eq(run_env(env, "cache stat", &out), 0, "%s", out);
  cr_expect_null(strstr(out, "warning"), "%s", out);
  cr_expect(strstr(out, "64.0 MiB (67108864)"), "%s", out);
  free(out);
}
