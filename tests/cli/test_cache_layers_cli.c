/* test_cache_layers_cli.c: `scanforge cache warm --into DIR` fills a read-only layer others
 * can read; `cache stat|ls` show each layer; prune and clear leave layers alone. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/cli_run.h"
#include "tests/support/temp_dir.h"

static unsigned mode_of(const char *path) {
  struct stat st;
  cr_assert_eq(stat(path, &st), 0, "%s", path);
  return (unsigned)(st.st_mode & 07777);
}

static int files_in(const char *dir) {
  char command[4300], out[64];
  snprintf(command, sizeof command, "ls -A '%s' | wc -l", dir);
  run_shell(command, out, sizeof out);
  return atoi(out);
}

/* A scratch directory removed when the test's process exits. */
static const char *scratch(void) {
  const char *path = scratch_dir("sf_cli_layers_");
  cr_assert_not_null(path);
  return path;
}

Test(cache_layers_cli, warm_into_then_stat_ls_and_clear, .timeout = 300) {
  const char *base = scratch();
  char grid[4096], layer[4096], home[4096], sub[4200], command[16384], out[16384];
  snprintf(grid, sizeof grid, "%s/grid.txt", base);
  snprintf(layer, sizeof layer, "%s/opt/scanforge/kernels", base);
  snprintf(home, sizeof home, "%s/home", base);
  FILE *f = fopen(grid, "w");
  cr_assert_not_null(f);
  fputs("op=fwd,dstate=8,threads=32,items=4,channels=4\n", f);
  fclose(f);

  /* A umask that would hide the layer from other users: --into sets the modes itself. */
  snprintf(command, sizeof command,
           "umask 077; '%s' cache warm --arch sm_80 --grid '%s' --into '%s' --jobs 1 2>&1",
           SCANFORGE_CLI_PATH, grid, layer);
  cr_assert_eq(run_shell(command, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "1 compiled, 0 already cached, 0 failed"), "%s", out);
  cr_assert_eq(mode_of(layer), 0755);
  snprintf(sub, sizeof sub, "%s/v1/sm_80", layer);
  cr_assert_eq(mode_of(sub), 0755);
  char bin[8192];
  snprintf(command, sizeof command, "ls '%s'/*.bin", sub);
  run_shell(command, bin, sizeof bin);
  bin[strcspn(bin, "\n")] = '\0';
  cr_assert_eq(mode_of(bin), 0644, "%s", bin);

  /* Filling it again finds everything there, even with another layer listed. */
  snprintf(command, sizeof command,
           "SCANFORGE_CACHE_PATH=/nonexistent '%s' cache warm --arch sm_80 --grid '%s' --into '%s' 2>&1",
           SCANFORGE_CLI_PATH, grid, layer);
  cr_assert_eq(run_shell(command, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "0 compiled, 1 already cached, 0 failed"), "%s", out);

  /* Serving: the layer from the environment, a private writable cache. */
  snprintf(command, sizeof command, "SCANFORGE_CACHE_PATH='%s:%s/missing' '%s' cache stat --dir '%s' 2>&1",
           layer, base, SCANFORGE_CLI_PATH, home);
  cr_assert_eq(run_shell(command, out, sizeof out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "layer 1"), "%s", out);
  cr_assert_not_null(strstr(out, "(read-only): 1 entries"), "%s", out);
  cr_assert_not_null(strstr(out, "layer 2"), "%s", out);
  cr_assert_not_null(strstr(out, "skipped"), "%s", out);
  cr_assert_not_null(strstr(out, "does not exist"), "the warning says why: %s", out);
  cr_assert_not_null(strstr(out, "(writable)"), "%s", out);

  snprintf(command, sizeof command, "SCANFORGE_CACHE_PATH='%s' '%s' cache ls --dir '%s' 2>&1", layer,
           SCANFORGE_CLI_PATH, home);
  cr_assert_eq(run_shell(command, out, sizeof out), 0, "%s", out);
  char heading[4200];
  snprintf(heading, sizeof heading, "== layer 1: %s (read-only) ==", layer);
  char *in_layer = strstr(out, heading), *writable = strstr(out, "(writable) ==");
  cr_assert(in_layer && writable && in_layer < writable, "%s", out);
  char *entry = strstr(out, "spec=op=fwd");
  cr_assert(entry && entry > in_layer && entry < writable, "the entry is the layer's:\n%s", out);
  cr_assert_not_null(strstr(writable, "no entries"), "%s", out);

  /* Prune and clear work on the writable cache only. */
  for (int i = 0; i < 2; i++) {
    snprintf(command, sizeof command, "SCANFORGE_CACHE_PATH='%s' '%s' cache %s --dir '%s' 2>&1",
             layer, SCANFORGE_CLI_PATH, i ? "clear" : "prune --max-bytes 1", home);
    cr_assert_eq(run_shell(command, out, sizeof out), 0, "%s", out);
    cr_assert_eq(files_in(sub), 2, "the layer lost files: %s", out);
  }
}

Test(cache_layers_cli, into_only_for_warm) {
  char command[1024], out[4096];
  snprintf(command, sizeof command, "'%s' cache stat --into /tmp/x 2>&1", SCANFORGE_CLI_PATH);
  cr_assert_eq(run_shell(command, out, sizeof out), 2, "%s", out);
  cr_assert_not_null(strstr(out, "--into"), "%s", out);
  snprintf(command, sizeof command, "'%s' cache warm --arch sm_80 --dir /tmp/a --into /tmp/b 2>&1",
           SCANFORGE_CLI_PATH);
  cr_assert_eq(run_shell(command, out, sizeof out), 2, "%s", out);
  cr_assert_not_null(strstr(out, "--dir"), "%s", out);
}

Test(cache_layers_cli, warm_into_an_untrusted_directory_fails) {
  const char *base = scratch();
  char command[4096], out[8192];
  cr_assert_eq(chmod(base, 0777), 0);
  snprintf(command, sizeof command, "'%s' cache warm --arch sm_80 --into '%s' 2>&1",
           SCANFORGE_CLI_PATH, base);
  cr_assert_eq(run_shell(command, out, sizeof out), 1, "%s", out);
  cr_assert_not_null(strstr(out, "writable by group or others"), "%s", out);
  cr_assert_eq(files_in(base), 0, "wrote into a refused directory");
}
