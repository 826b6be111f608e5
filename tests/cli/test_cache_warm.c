/* test_cache_warm.c: scanforge cache warm fills the cache without a GPU; a second run finds everything. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/cli_run.h"

Test(cache_warm, compiles_a_grid_then_finds_it_cached, .timeout = 300) {
  char dir[] = "/tmp/scanforge_warm_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char grid[600];
  snprintf(grid, sizeof grid, "%s/grid.txt", dir);
  FILE *f = fopen(grid, "w");
  cr_assert_not_null(f);
  fputs("# two variants\nop=fwd,dstate=8,threads=32,items=4,channels=4\n\n"
        "op=fwd,split=state,dstate=16,dtype=bf16,threads=4,items=16,channels=16\n", f);
  fclose(f);
  char command[2048], out[16384];
  snprintf(command, sizeof command, "%s cache warm --arch sm_80,sm_90 --grid %s --dir %s/cache --jobs 2 2>&1",
           SCANFORGE_CLI_PATH, grid, dir);
  cr_assert_eq(run_shell(command, out, sizeof out), 0, "%s", out);
  cr_expect(strstr(out, "4 compiled, 0 already cached, 0 failed") != NULL, "%s", out);
  cr_assert_eq(run_shell(command, out, sizeof out), 0, "%s", out);
  cr_expect(strstr(out, "0 compiled, 4 already cached, 0 failed") != NULL, "%s", out);
  snprintf(command, sizeof command, "rm -rf %s", dir);
  run_shell(command, out, sizeof out);
}

Test(cache_warm, bad_options_name_themselves) {
  char command[1024], out[4096];
  snprintf(command, sizeof command, "%s cache warm 2>&1", SCANFORGE_CLI_PATH);
  cr_expect_eq(run_shell(command, out, sizeof out), 2);
  cr_expect(strstr(out, "--arch") != NULL, "%s", out);
  snprintf(command, sizeof command, "%s cache warm --arch sm_12 --dir /tmp 2>&1", SCANFORGE_CLI_PATH);
  cr_expect_eq(run_shell(command, out, sizeof out), 2);
  cr_expect(strstr(out, "sm_12") != NULL, "%s", out);
  snprintf(command, sizeof command, "%s cache warm --arch sm_90 --grid /nonexistent/grid 2>&1", SCANFORGE_CLI_PATH);
  cr_expect_eq(run_shell(command, out, sizeof out), 2);
  cr_expect(strstr(out, "--grid") != NULL, "%s", out);
}
