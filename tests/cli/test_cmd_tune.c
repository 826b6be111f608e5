/* test_cmd_tune.c: `scanforge tune` as a user runs it without a GPU: usage, --list, --report, --export-defaults, and the host flow on a pretend driver. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/cli_run.h"
#include "tuning/database_write.h"
#include "tests/support/temp_dir.h"

/* Without a driver, whatever this machine has: the GPU-less paths. */
static const char no_gpu[] = "SCANFORGE_CUDA_LIBRARY=/nonexistent/libcuda.so.1 ";

static void expect_run(const char *args, int code, const char *needle) {
  char *out;
  int status = run_env(no_gpu, args, &out);
  cr_expect_eq(status, code, "scanforge %s: exit %d, expected %d:\n%s", args, status, code, out);
  cr_expect_not_null(strstr(out, needle), "scanforge %s: no '%s' in:\n%s", args, needle, out);
  free(out);
}

static char *temp_dir(void) {
  char *dir = temp_dir_for_test("sf_cmd_tune_");
  cr_assert(dir, "mkdtemp");
  return dir;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert(f, "cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

static int count_lines(const char *text) {
  int n = 0;
  for (const char *p = text; *p; p++) n += *p == '\n';
  return n;
}

Test(cmd_tune, help_and_bad_usage) {
  expect_run("tune --help", 0, "--budget SECONDS");
  expect_run("tune --reps 5", 2, "--reps");
  expect_run("tune --op sideways", 2, "--op");
  expect_run("tune --budget -3", 2, "--budget");
  expect_run("tune --list --report", 2, "one at a time");
  expect_run("tune --entries /nonexistent/entries.txt", 2, "cannot read");
  expect_run("tune extra", 2, "unexpected argument");
  char *dir = temp_dir(), path[512], args[1024];
  snprintf(path, sizeof path, "%s/bad.txt", dir);
  write_text(path, "64,160,196,8\n64,160,196,8 threads=32\n");
  snprintf(args, sizeof args, "tune --list --entries %s", path);
  expect_run(args, 2, "bad.txt:2");
}

Test(cmd_tune, list_prints_the_grid_and_entries_files) {
  char *out;
  cr_assert_eq(run_env(no_gpu, "tune --list", &out), 0, "%s", out);
  const int all = count_lines(out);
  cr_expect(strstr(out, "64,160,196,8 op=fwd,dtype=fp32"), "%s", out);
  cr_expect(strstr(out, "8,1536,2048,16 op=bwd,dtype=bf16,z=1"), "%s", out);
  cr_expect(strstr(out, "8,1536,2048,16 op=bwd,dtype=bf16,z=1,D=1,delta_bias=1,softplus=1,B=var,C=var,block_states=1"),
            "%s", out);
  free(out);
  cr_assert_eq(run_env(no_gpu, "tune --list --op fwd", &out), 0, "%s", out);
  const int forward = count_lines(out);
  cr_expect_null(strstr(out, "op=bwd"));
  free(out);
  cr_assert_eq(run_env(no_gpu, "tune --list --op bwd", &out), 0, "%s", out);
  cr_expect_eq(forward + count_lines(out), all, "the grid is its forward and backward entries");
  cr_expect_null(strstr(out, "op=fwd"));
  free(out);
  char *dir = temp_dir(), path[512], args[1024];
  snprintf(path, sizeof path, "%s/entries.txt", dir);
  write_text(path, "# mine\n2,64,100,16,2 op=bwd,dtype=bf16\n1,8,16,4\n8,1536,2048,16 op=bwd,block_states=1,z=1\n");
  snprintf(args, sizeof args, "tune --list --entries %s", path);
  cr_assert_eq(run_env(no_gpu, args, &out), 0, "%s", out);
  cr_expect_eq(count_lines(out), 3, "%s", out);
  cr_expect(strstr(out, "2,64,100,16,2 op=bwd,dtype=bf16"), "%s", out);
  cr_expect(strstr(out, "8,1536,2048,16 op=bwd,dtype=fp32,z=1,D=1,delta_bias=1,softplus=1,B=var,C=var,block_states=1"),
            "%s", out);
  free(out);
  /* block_states is the backward's, and 0 or 1 */
  char bad[512];
  snprintf(bad, sizeof bad, "%s/bad_block_states.txt", dir);
  write_text(bad, "8,1536,2048,16 block_states=1\n");
  snprintf(args, sizeof args, "tune --list --entries %s", bad);
  expect_run(args, 2, "applies to op=bwd only");
  write_text(bad, "8,1536,2048,16 op=bwd,block_states=yes\n");
  expect_run(args, 2, "expected 0 or 1, got 'yes'");
  /* Without a GPU there is nothing to tune on. */
  snprintf(args, sizeof args, "tune --entries %s --db %s/db.json", path, dir);
  expect_run(args, 1, "needs a CUDA GPU");
}

/* A database written through the library, reported and exported by the CLI. */
Test(cmd_tune, report_and_export_read_the_database) {
  char *dir = temp_dir(), db_path[512], png[512], exported[512], args[2048];
  snprintf(db_path, sizeof db_path, "%s/tuning.json", dir);
  snprintf(png, sizeof png, "%s/plot.png", dir);
  snprintf(exported, sizeof exported, "%s/h100.json", dir);
  sf_tune_gpu gpu = {.name = "NVIDIA H100 80GB HBM3", .cc_major = 9, .sm_count = 132, .memory = 85045379072ull,
                     .driver_version = 13000, .nvrtc = "13.0", .templates = "00112233aabbccdd"};
  sf_tune_candidate c[2] = {{.knobs = {false, 32, 8, 4, 1, 0}, .ok = true, .median_us = 20, .min_us = 19,
                             .p90_us = 21, .reps = 25, .error = 1e-7},
                            {.knobs = {true, 4, 16, 16, 1, 0}, .ok = true, .median_us = 10, .min_us = 9.5,
                             .p90_us = 10.5, .reps = 25, .error = 2e-7}};
  sf_tune_entry e = {.variant = sf_variant_default(), .shape = {64, 160, 196, 1}, .seqlen_bucket = 8,
                     .rows_bucket = 14, .default_knobs = c[0].knobs, .winner_us = 10, .default_us = 20,
                     .complete = true, .candidates = c, .candidate_count = 2};
  e.variant.dstate = 8;
  e.variant.has_D = e.variant.has_delta_bias = e.variant.softplus = true;
  sf_tune_knobs_apply(&c[1].knobs, &e.variant);
  sf_tune_db db;
  sf_tune_db_init(&db);
  cr_assert_eq(sf_tune_db_put(&db, &gpu, &e), SF_OK);
  cr_assert_eq(sf_tune_db_save(db_path, &db, NULL), SF_OK, "%s", sf_last_error());
  sf_tune_db_free(&db);

  char *out;
  snprintf(args, sizeof args, "tune --report --db %s --plot %s", db_path, png);
  cr_assert_eq(run_env(no_gpu, args, &out), 0, "%s", out);
  cr_expect(strstr(out, "NVIDIA H100 80GB HBM3"), "%s", out);
  cr_expect(strstr(out, "64,160,196"), "%s", out);
  cr_expect(strstr(out, "st:4/16/16"), "the winner's knobs: %s", out);
  cr_expect(strstr(out, "2.00x"), "the speedup over the default: %s", out);
  free(out);
  FILE *f = fopen(png, "rb");
  cr_assert(f, "no plot at %s", png);
  unsigned char sig[8] = {0};
  cr_expect_eq(fread(sig, 1, 8, f), 8u);
  fclose(f);
  cr_expect(sig[0] == 0x89 && memcmp(sig + 1, "PNG", 3) == 0);

  snprintf(args, sizeof args, "tune --export-defaults %s --db %s", exported, db_path);
  cr_assert_eq(run_env(no_gpu, args, &out), 0, "%s", out);
  free(out);
  json_error_t error;
  json_t *root = json_load_file(exported, 0, &error);
  cr_assert(root, "%s: %s", exported, error.text);
  json_t *entry = json_array_get(json_object_get(json_array_get(json_object_get(root, "sections"), 0), "entries"), 0);
  cr_expect(entry && json_object_get(entry, "winner"));
  cr_expect_null(json_object_get(entry, "candidates"), "shipped defaults keep winners only");
  json_decref(root);

  /* An empty database reports nothing and exports nothing. */
  snprintf(args, sizeof args, "tune --report --db %s/none.json", dir);
  expect_run(args, 0, "no entries");
  snprintf(args, sizeof args, "tune --export-defaults %s/e.json --db %s/none.json", dir, dir);
  expect_run(args, 1, "0 entries");
}

/* The pretend driver (tests/fake_cuda) beside this test: kernels do nothing, so every
 * candidate fails its check; the run must still compile, check and report them all, save
 * nothing, and exit 1. */
Test(cmd_tune, host_flow_on_a_pretend_driver, .timeout = 600) {
  char exe[PATH_MAX], fake[PATH_MAX + 64];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  cr_assert(n > 0);
  exe[n] = '\0';
  *strrchr(exe, '/') = '\0';
  snprintf(fake, sizeof fake, "%s/libscanforge_fake_cuda.so", exe);
  if (access(fake, R_OK) != 0) cr_skip_test("no pretend driver at %s", fake);
  char *dir = temp_dir(), env[PATH_MAX + 1024], args[2048], *out;
  snprintf(env, sizeof env, "SCANFORGE_CUDA_LIBRARY='%s' SCANFORGE_CACHE_DIR='%s/cache' ", fake, dir);
  char entries[512];
  snprintf(entries, sizeof entries, "%s/entries.txt", dir);
  write_text(entries, "1,4,16,4 op=bwd\n"); /* the smallest entry: 3 candidates */
  snprintf(args, sizeof args, "tune --entries %s --db %s/db.json --jobs 2", entries, dir);
  int status = run_env(env, args, &out);
  cr_expect_eq(status, 1, "%s", out);
  cr_expect(strstr(out, "Fake GPU"), "%s", out);
  cr_expect(strstr(out, "FAILED: no candidate passed"), "%s", out);
  cr_expect(strstr(out, "failed the check"), "%s", out);
  cr_expect(strstr(out, "0 tuned") && strstr(out, "1 failed"), "%s", out);
  free(out);
  char db_path[512];
  snprintf(db_path, sizeof db_path, "%s/db.json", dir);
  cr_expect_neq(access(db_path, F_OK), 0, "nothing passed, so nothing is saved");
}

/* Without a driver: the environment's warning and the error, each a whole line of its
 * own (issue 13: they once ran together on one line). */
Test(cmd_tune, no_driver_prints_whole_lines) {
  char *out;
  char env[256];
  snprintf(env, sizeof env, "%sSCANFORGE_TUNING=maybe ", no_gpu);
  cr_assert_eq(run_env(env, "tune", &out), 1, "%s", out);
  cr_expect_eq(count_lines(out), 2, "a warning and the error:\n%s", out);
  cr_expect_eq(out[strlen(out) - 1], '\n', "the last line ends:\n%s", out);
  const char *second = strchr(out, '\n') + 1;
  cr_expect_eq(strncmp(out, "scanforge: warning: SCANFORGE_TUNING=\"maybe\" is not usable", 58), 0, "%s", out);
  cr_expect_eq(strncmp(second, "scanforge tune: needs a CUDA GPU", 32), 0, "%s", out);
  cr_expect_null(strstr(out, "SCANFORGE_CUDA_LIBRARYscanforge"), "%s", out);
  free(out);
}
