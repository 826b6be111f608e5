/* test_cmd_cache.c: `scanforge cache stat|ls|prune|clear` on a cache the library filled. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/cache/cache.h"

/* Runs the CLI with `args`, stdout and stderr together into *output (free it); returns
 * the exit status. */
static int run_cli(const char *args, char **output) {
  char command[4096];
  snprintf(command, sizeof command, "'%s' %s 2>&1", SCANFORGE_CLI_PATH, args);
  FILE *pipe = popen(command, "r");
  cr_assert_not_null(pipe, "cannot run %s", command);
  size_t length = 0, capacity = 1 << 16;
  char *text = malloc(capacity);
  for (size_t got; (got = fread(text + length, 1, capacity - length - 1, pipe)) > 0;) length += got;
  text[length] = '\0';
  int status = pclose(pipe);
  *output = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static sf_status build_text(void *user, void **data, size_t *size) {
  *size = strlen(user);
  *data = malloc(*size);
  memcpy(*data, user, *size);
  return SF_OK;
}

/* A fresh cache directory holding two entries: "alpha" for sm_80, "beta" for sm_90. */
static void fill(char *dir) {
  cr_assert_not_null(mkdtemp(dir));
  sf_cache_options opt = {.dir = dir};
  sf_cache *c;
  cr_assert_eq(sf_cache_open(&opt, &c), SF_OK);
  static char bytes[400]; /* an entry of ~0.8 KiB with its manifest */
  memset(bytes, 'x', sizeof bytes - 1);
  const char *names[] = {"alpha", "beta"}, *targets[] = {"sm_80", "sm_90"};
  for (int i = 0; i < 2; i++) {
    sf_cache_input in[] = {{"spec", names[i], strlen(names[i])}, {"target", targets[i], 5}};
    sf_cache_key key = sf_cache_key_of(in, 2);
    char *manifest = sf_cache_manifest_of(in, 2);
    const void *data;
    size_t size;
    cr_assert_eq(sf_cache_get_or_build(c, &key, targets[i], manifest, build_text, bytes,
                                       &data, &size, NULL),
                 SF_OK);
    free(manifest);
  }
  sf_cache_close(c);
}

static void remove_dir(const char *dir) {
  char command[512];
  snprintf(command, sizeof command, "rm -rf '%s'", dir);
  cr_assert_eq(system(command), 0);
}

Test(cmd_cache, stat_and_ls) {
  char dir[] = "/tmp/sf_cli_cache_XXXXXX", args[256], *out;
  fill(dir);
  snprintf(args, sizeof args, "cache stat --dir '%s'", dir);
  cr_assert_eq(run_cli(args, &out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "entries    2"), "%s", out);
  cr_assert_not_null(strstr(out, dir), "%s", out);
  free(out);

  snprintf(args, sizeof args, "cache ls --dir '%s'", dir);
  cr_assert_eq(run_cli(args, &out), 0, "%s", out);
  char *beta = strstr(out, "spec=beta"), *alpha = strstr(out, "spec=alpha");
  cr_assert(alpha && beta, "%s", out);
  cr_assert_lt(beta, alpha, "most recently used first:\n%s", out);
  cr_assert_not_null(strstr(out, "sm_80"), "%s", out);
  free(out);
  remove_dir(dir);
}

Test(cmd_cache, prune_then_clear) {
  char dir[] = "/tmp/sf_cli_cache_XXXXXX", args[256], *out;
  fill(dir);
  snprintf(args, sizeof args, "cache prune --dir '%s'", dir);
  cr_assert_eq(run_cli(args, &out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "removed 0 entries"), "within 1 GiB: %s", out);
  free(out);

  /* Room for one entry (the newer, beta) but not two. */
  snprintf(args, sizeof args, "cache prune --dir '%s' --max-bytes 1K", dir);
  cr_assert_eq(run_cli(args, &out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "removed 1 entries"), "%s", out);
  free(out);
  snprintf(args, sizeof args, "cache ls --dir '%s'", dir);
  cr_assert_eq(run_cli(args, &out), 0, "%s", out);
  cr_assert_null(strstr(out, "spec=alpha"), "%s", out);
  cr_assert_not_null(strstr(out, "spec=beta"), "%s", out);
  free(out);

  snprintf(args, sizeof args, "cache clear --dir '%s'", dir);
  cr_assert_eq(run_cli(args, &out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "removed 1 entries"), "%s", out);
  free(out);
  snprintf(args, sizeof args, "cache ls --dir '%s'", dir);
  cr_assert_eq(run_cli(args, &out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "no entries"), "%s", out);
  free(out);
  remove_dir(dir);
}

Test(cmd_cache, usage_errors_and_help) {
  char *out;
  cr_assert_eq(run_cli("cache", &out), 2, "%s", out);
  free(out);
  cr_assert_eq(run_cli("cache frobnicate", &out), 2, "%s", out);
  cr_assert_not_null(strstr(out, "frobnicate"), "%s", out);
  free(out);
  cr_assert_eq(run_cli("cache prune --max-bytes lots", &out), 2, "%s", out);
  cr_assert_not_null(strstr(out, "lots"), "%s", out);
  free(out);
  cr_assert_eq(run_cli("cache --help", &out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "prune"), "%s", out);
  free(out);
}

Test(cmd_cache, unsafe_directory_is_refused) {
  char dir[] = "/tmp/sf_cli_cache_XXXXXX", args[256], *out;
  fill(dir);
  cr_assert_eq(chmod(dir, 0777), 0);
  snprintf(args, sizeof args, "cache clear --dir '%s'", dir);
  cr_assert_eq(run_cli(args, &out), 1, "%s", out);
  cr_assert_not_null(strstr(out, "writable by group or others"), "%s", out);
  free(out);
  char v1[300];
  snprintf(v1, sizeof v1, "%s/v1/sm_80", dir);
  cr_assert_eq(access(v1, F_OK), 0, "clear touched a refused directory");
  remove_dir(dir);
}
