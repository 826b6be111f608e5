/* test_cli_usage.c: what every command shares: one exit-code rule (0 done, 1 failed, 2 bad
 * usage), --version, help texts that match the commands, and the template experiment
 * loop (SCANFORGE_TEMPLATE_DIR named or refused, templates named, errors at template
 * lines, experimental cache entries marked, the demo's count of failed calls). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/support/cli_run.h"
#include "tests/support/temp_dir.h"

/* Runs `scanforge ARGS` with `env` and checks its exit status and that its output holds
 * `needle` (NULL: anything). */
static void expect_env(const char *env, const char *args, int code, const char *needle) {
  char *out;
  int status = run_env(env, args, &out);
  cr_expect_eq(status, code, "%sscanforge %s: exit %d, expected %d:\n%s", env, args, status, code, out);
  if (needle) cr_expect_not_null(strstr(out, needle), "%sscanforge %s: no '%s' in:\n%s", env, args, needle, out);
  free(out);
}

static void expect(const char *args, int code, const char *needle) { expect_env("", args, code, needle); }

/* ---- exit codes ---------------------------------------------------------------------- */

Test(cli_usage, bad_options_exit_2_in_every_command) {
  expect("", 2, "usage: scanforge COMMAND");
  expect("no-such-command", 2, "unknown command 'no-such-command'");
  expect("variants extra", 2, "extra");
  expect("gen", 2, "expected one SPEC");
  expect("gen op=fwd --no-such-option", 2, NULL);
  expect("compile op=fwd --no-such-option", 2, "--no-such-option");
  expect("compile op=fwd --arch sm_abc", 2, "sm_abc");
  expect("check --no-such-option", 2, "--no-such-option");
  expect("check --shape 1,2,3", 2, "--shape");
  expect("check --shape 1,2,300,4 --state-interval 0", 2, "--state-interval");
  expect("check --shape 1,2,300,4 --state-interval block", 2, "give --backward too");
  expect("bench --no-such-option", 2, "--no-such-option");
  expect("bench --reps 0", 2, "--reps");
  expect("plan --no-such-option", 2, "--no-such-option");
  expect("plan --dtype fp64", 2, "got 'fp64'");
  expect("plan --forward-only --backward-only", 2, "give one of them");
  expect("plan --forward-only --deterministic", 2, "--forward-only leaves out");
  expect("plan extra", 2, "unexpected argument");
  expect("demo --no-such-option", 2, "--no-such-option");
  expect("demo --device tpu", 2, "--device");
  expect("cache no-such-action", 2, "unknown action");
  expect("cache ls --max-bytes lots", 2, "--max-bytes");
  expect("cache warm", 2, "--arch");
  expect("tune --no-such-option", 2, "--no-such-option");
  expect("tune --op sideways", 2, "--op");
  expect("tune --force-before yesterday", 2, "--force-before: expected a UTC time");
  expect("tune --force --force-before 2026-11-26T19:00:00Z", 2, "one at a time");
}

Test(cli_usage, a_bad_spec_exits_2_in_every_command) {
  /* the parser refuses an unknown key; the template refuses items=40 for split=time */
  expect("gen op=fwd,bogus=1", 2, "unknown key 'bogus'");
  expect("gen op=fwd,dstate=0", 2, "dstate");
  expect("gen op=fwd,split=time,items=40", 2, "variant key 'items'");
  expect("compile op=fwd,bogus=1 --arch sm_80", 2, "unknown key 'bogus'");
  expect("compile op=fwd,split=time,items=40 --arch sm_80", 2, "variant key 'items'");
  expect("check --shape 1,64,100,16 --spec bogus=1", 2, "--spec");
  expect("check --shape 1,64,100,16 --spec split=time,threads=32,items=40,channels=1", 2, "variant key 'items'");
  expect("bench --spec bogus=1", 2, "--spec");
  expect("bench --bwd-spec threads=sideways", 2, "--bwd-spec");
  expect("plan --spec bogus=1", 2, "--spec");
  expect("plan --bwd-spec threads=sideways", 2, "--bwd-spec");
  char *dir = temp_dir_for_test("sf_cli_usage_");
  char grid[512], args[1200];
  snprintf(grid, sizeof grid, "%s/grid.txt", dir);
  FILE *f = fopen(grid, "w");
  cr_assert_not_null(f);
  fputs("op=fwd,bogus=1\n", f);
  fclose(f);
  snprintf(args, sizeof args, "cache warm --arch sm_80 --dir '%s/cache' --grid '%s'", dir, grid);
  expect(args, 2, "bogus");
  free(dir);
}

Test(cli_usage, unreadable_input_files_exit_2) {
  expect("compile --source /nonexistent/k.cu --arch sm_80", 2, "/nonexistent/k.cu");
  expect("bench --rows /nonexistent/rows.txt", 2, "scanforge bench: --rows: cannot open '/nonexistent/rows.txt'");
  expect("plan --rows /nonexistent/rows.txt", 2, "scanforge plan: --rows: cannot open '/nonexistent/rows.txt'");
  expect("tune --list --entries /nonexistent/entries.txt", 2, "/nonexistent/entries.txt");
}

Test(cli_usage, an_architecture_refused_is_usage_as_in_cache_warm) {
  expect("compile op=fwd --arch sm_12", 2, "sm_12");
  expect("cache warm --arch sm_12", 2, "sm_12");
}

Test(cli_usage, failures_exit_1) {
  expect_env("SCANFORGE_TEMPLATE_DIR=/nonexistent/sf_templates ", "gen op=fwd", 1,
             "SCANFORGE_TEMPLATE_DIR=/nonexistent/sf_templates");
  /* an interval the library refuses: its message names the argument and the range */
  expect("check --shape 1,2,300,4 --device cpu --state-interval 6", 1, "state_interval: expected 0");
}

/* Saved states every 8 steps on the CPU path: the forward and the gradients that read them pass. */
Test(cli_usage, check_takes_a_state_interval) {
  expect("check --shape 2,4,300,8 --device cpu --z --D --delta-bias --softplus --state-interval 8", 0, "PASS");
  expect("check --shape 2,4,300,8 --device cpu --z --D --softplus --h0 --backward --state-interval 8", 0, "PASS");
}

/* ---- --version and help ------------------------------------------------------------- */

/* The version CMakeLists.txt's project() line gives. */
static void project_version(char *buf, size_t cap) {
  char path[1024], line[512];
  snprintf(path, sizeof path, "%s/CMakeLists.txt", SCANFORGE_SOURCE_DIR);
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "cannot read %s", path);
  buf[0] = '\0';
  while (fgets(line, sizeof line, f)) {
    const char *at = strstr(line, "project(scanforge VERSION ");
    if (!at) continue;
    at += strlen("project(scanforge VERSION ");
    snprintf(buf, cap, "%.*s", (int)strcspn(at, " )\n"), at);
    break;
  }
  fclose(f);
  cr_assert_neq(buf[0], '\0', "no project(scanforge VERSION ...) in %s", path);
}

Test(cli_usage, version_is_the_project_version) {
  char version[64], expected[96];
  project_version(version, sizeof version);
  snprintf(expected, sizeof expected, "scanforge %s\n", version);
  const char *forms[] = {"--version", "-V"};
  for (int i = 0; i < 2; i++) {
    char *out;
    cr_expect_eq(run_env("", forms[i], &out), 0, "%s", out);
    cr_expect_str_eq(out, expected, "scanforge %s", forms[i]);
    free(out);
  }
}

Test(cli_usage, help_texts_match_the_commands) {
  char *out;
  cr_assert_eq(run_env("", "--help", &out), 0, "%s", out);
  const char *check = strstr(out, "\n  check"), *bench = strstr(out, "\n  bench");
  cr_assert(check && bench, "%s", out);
  cr_expect(strstr(check, "backward") && strstr(check, "backward") < strstr(check + 1, "\n"),
            "the summary of check leaves out the backward:\n%s", out);
  cr_expect(strstr(bench, "backward") && strstr(bench, "backward") < strstr(bench + 1, "\n"),
            "the summary of bench leaves out the backward:\n%s", out);
  cr_expect_not_null(strstr(out, "--version"), "%s", out);
  cr_expect_not_null(strstr(out, "exit status"), "%s", out);
  free(out);
  cr_assert_eq(run_env("", "gen --help", &out), 0, "%s", out);
  const char *keys[] = {"op ", "split", "dstate", "dtype", "threads", "items", "channels", "states",
                        "minblocks", "delta_bias", "softplus", "deterministic", "docs/variants.md"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    cr_expect_not_null(strstr(out, keys[i]), "gen --help does not name %s:\n%s", keys[i], out);
  free(out);
  /* the example spec of the top-level help is one gen accepts */
  expect("gen op=fwd,split=state,dstate=16,dtype=bf16,threads=4,items=16,channels=16,z=1,D=1", 0,
         "// template: scan_fwd_states.tpl");
}

/* ---- compute_XY is PTX -------------------------------------------------------------- */

Test(cli_usage, compute_arch_gives_ptx) {
  char *dir = temp_dir_for_test("sf_cli_usage_");
  char args[1024], path[512];
  snprintf(path, sizeof path, "%s/k.ptx", dir);
  snprintf(args, sizeof args, "compile op=fwd,split=time,dstate=4 --arch compute_80 -o '%s'", path);
  expect(args, 0, "bytes of PTX");
  expect("compile op=fwd,split=time,dstate=4 --arch compute_80", 0, "compute_80");
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "no PTX written");
  char text[4096];
  size_t n = fread(text, 1, sizeof text - 1, f);
  text[n] = '\0';
  fclose(f);
  cr_expect_not_null(strstr(text, ".target sm_80"), "not PTX for compute_80:\n%.400s", text);
  free(dir);
}

/* ---- templates ----------------------------------------------------------------------- */

/* Copies templates/<name> into dir, with `inserted` as a new line after the first line
 * that starts with `after` (NULL: an unchanged copy); returns that line's number. */
static long copy_template(const char *dir, const char *name, const char *after, const char *inserted) {
  char from[1024], to[1024], line[4096];
  snprintf(from, sizeof from, "%s/templates/%s", SCANFORGE_SOURCE_DIR, name);
  snprintf(to, sizeof to, "%s/%s", dir, name);
  FILE *in = fopen(from, "r"), *out = fopen(to, "w");
  cr_assert(in && out, "cannot copy %s to %s", from, to);
  long number = 0, inserted_at = 0;
  while (fgets(line, sizeof line, in)) {
    fputs(line, out);
    number++;
    if (after && !inserted_at && strncmp(line, after, strlen(after)) == 0) {
      fprintf(out, "%s\n", inserted);
      inserted_at = ++number;
    }
  }
  fclose(in);
  fclose(out);
  cr_assert(!after || inserted_at, "%s has no line starting with %s", name, after);
  return inserted_at;
}

Test(cli_usage, template_dir_is_named_or_refused) {
  char *dir = temp_dir_for_test("sf_cli_usage_");
  char env[600], file_env[700];
  copy_template(dir, "scan_fwd.tpl", NULL, NULL);
  snprintf(env, sizeof env, "SCANFORGE_TEMPLATE_DIR='%s' ", dir);
  snprintf(file_env, sizeof file_env, "SCANFORGE_TEMPLATE_DIR='%s/scan_fwd.tpl' ", dir);
  expect_env(env, "gen op=fwd,split=time", 0, "templates from SCANFORGE_TEMPLATE_DIR=");
  expect_env(env, "compile op=fwd,split=time,dstate=4 --arch sm_80", 0, "scan_fwd.tpl (from ");
  expect_env(env, "compile op=fwd,split=state,dstate=16,threads=4,items=16,channels=16 --arch sm_80", 0,
             "has no scan_fwd_states.tpl");
  expect_env(file_env, "gen op=fwd", 1, "not a directory");
  expect_env(file_env, "compile op=fwd --arch sm_80", 1, "not a directory");
  expect_env("SCANFORGE_TEMPLATE_DIR=/nonexistent/sf_t ", "compile op=fwd --arch sm_80", 1,
             "SCANFORGE_TEMPLATE_DIR=/nonexistent/sf_t");
  expect_env(env, "check --device cpu --shape 1,8,16,4", 0, "the CPU path uses no template");
  expect("check --device cpu --shape 1,8,16,4", 0, "the CPU path uses no template");
  free(dir);
}

Test(cli_usage, check_on_a_gpu_names_the_template, .timeout = 120) {
  /* The pretend driver (tests/fake_cuda/) stands in for a GPU: the numbers are not
   * checked, only that the kernel's template and where it came from are said. */
  char *dir = temp_dir_for_test("sf_cli_usage_");
  char env[1400];
  copy_template(dir, "scan_fwd_states.tpl", NULL, NULL);
  snprintf(env, sizeof env, "SCANFORGE_CUDA_LIBRARY='%s' SCANFORGE_CACHE_DIR='%s/cache' SCANFORGE_TEMPLATE_DIR='%s' ",
           SCANFORGE_FAKE_CUDA_PATH, dir, dir);
  char *out;
  run_env(env, "check --device gpu --shape 1,64,100,16", &out);
  cr_expect_not_null(strstr(out, "device       gpu: Fake GPU"), "%s", out);
  char expected[700];
  snprintf(expected, sizeof expected, "template     scan_fwd_states.tpl (from %s)", dir);
  cr_expect_not_null(strstr(out, expected), "no '%s' in:\n%s", expected, out);
  free(out);
  snprintf(env, sizeof env, "SCANFORGE_CUDA_LIBRARY='%s' SCANFORGE_CACHE_DIR='%s/cache' ", SCANFORGE_FAKE_CUDA_PATH, dir);
  run_env(env, "check --device gpu --shape 1,64,100,16 --backward", &out);
  cr_expect_not_null(strstr(out, "template     scan_bwd"), "%s", out);
  cr_expect_not_null(strstr(out, ".tpl (built-in)"), "%s", out);
  free(out);
  free(dir);
}

Test(cli_usage, compile_error_names_the_template_line) {
  char *dir = temp_dir_for_test("sf_cli_usage_");
  long line = copy_template(dir, "scan_fwd.tpl", "extern \"C\" __global__", "  not_declared_in_cli_45 += 1;");
  char env[600], place[96];
  snprintf(env, sizeof env, "SCANFORGE_TEMPLATE_DIR='%s' ", dir);
  snprintf(place, sizeof place, "templates/scan_fwd.tpl(%ld): error", line);
  expect_env(env, "compile op=fwd,split=time --arch sm_80", 1, place);
  snprintf(place, sizeof place, "at templates/scan_fwd.tpl:%ld:   not_declared_in_cli_45 += 1;", line);
  expect_env(env, "compile op=fwd,split=time --arch sm_80", 1, place);
  free(dir);
}

Test(cli_usage, cache_ls_marks_experimental_entries, .timeout = 300) {
  char *dir = temp_dir_for_test("sf_cli_usage_");
  char templates[600], cache[600], env[1400], args[1400], grid[600];
  snprintf(templates, sizeof templates, "%s/templates", dir);
  snprintf(cache, sizeof cache, "%s/cache", dir);
  cr_assert_eq(mkdir(templates, 0700), 0);
  copy_template(templates, "scan_fwd.tpl", "@", "@ -- an experiment: every line below moves by one");
  snprintf(grid, sizeof grid, "%s/grid.txt", dir);
  FILE *f = fopen(grid, "w");
  cr_assert_not_null(f);
  fputs("op=fwd,split=time,dstate=4\n", f);
  fclose(f);
  snprintf(args, sizeof args, "cache warm --arch sm_80 --dir '%s' --grid '%s'", cache, grid);
  snprintf(env, sizeof env, "SCANFORGE_TEMPLATE_DIR='%s' ", templates);
  expect_env(env, args, 0, "1 compiled");
  expect(args, 0, "1 compiled"); /* the built-in templates' source differs: a second entry */
  snprintf(args, sizeof args, "cache ls --dir '%s'", cache);
  char *out;
  cr_assert_eq(run_env("", args, &out), 0, "%s", out);
  /* two entries: the experiment's, marked, and the built-in templates', not marked */
  char marker[700];
  snprintf(marker, sizeof marker, "[experimental templates: %s]", templates);
  const char *marked = strstr(out, marker);
  cr_expect_not_null(marked, "no '%s' in:\n%s", marker, out);
  cr_expect_null(marked ? strstr(marked + 1, "[experimental") : NULL, "both entries are marked:\n%s", out);
  int lines = 0;
  for (const char *p = out; (p = strstr(p, "sm_80 ")); p++) lines++;
  cr_expect_eq(lines, 2, "%s", out);
  free(out);
  free(dir);
}

/* ---- demo ------------------------------------------------------------------------- */

Test(cli_usage, demo_counts_failed_calls_not_targets, .timeout = 300) {
  /* A broken line in dtype.tpl's bf16 branch: the bf16 call's kernels fail for sm_80 and
   * sm_90 (two targets), the other two calls are fine: one call failed. */
  char *dir = temp_dir_for_test("sf_cli_usage_");
  char templates[600], env[1400];
  snprintf(templates, sizeof templates, "%s/templates", dir);
  cr_assert_eq(mkdir(templates, 0700), 0);
  copy_template(templates, "dtype.tpl", "__device__ __forceinline__ float to_float(elem_t x) { return __uint_as_float",
                "static int broken_bf16_46 = undeclared_bf16_thing_46;");
  snprintf(env, sizeof env, "SCANFORGE_TEMPLATE_DIR='%s' SCANFORGE_CACHE_DIR='%s/cache' ", templates, dir);
  char *out;
  int status = run_env(env, "demo --device cpu", &out);
  cr_expect_eq(status, 1, "%s", out);
  cr_expect_not_null(strstr(out, "1 of 3 calls FAILED"), "%s", out);
  cr_expect_not_null(strstr(out, "templates/dtype.tpl("), "the error does not name the template:\n%s", out);
  cr_expect_not_null(strstr(out, "templates from SCANFORGE_TEMPLATE_DIR="), "%s", out);
  free(out);
  free(dir);
}

/* ---- warnings ------------------------------------------------------------------------ */

Test(cli_usage, every_cache_warning_is_printed_not_only_the_first) {
  const char *env = "SCANFORGE_CACHE_PATH=/nonexistent/sf_layer_a:/nonexistent/sf_layer_b ";
  expect_env(env, "check --shape 1,4,16,4 --device cpu", 0, "skipping read-only layer /nonexistent/sf_layer_a");
  expect_env(env, "check --shape 1,4,16,4 --device cpu", 0, "skipping read-only layer /nonexistent/sf_layer_b");
}

/* A rows file of one small fp32 row in `dir`, and the environment that runs bench on the
 * pretend driver (tests/fake_cuda/), which reports its launches, allocations and pools at
 * exit; `extra_env` goes first. */
static void fake_bench_setup(const char *dir, const char *extra_env, char *rows, size_t rows_size, char *env,
                             size_t env_size) {
  snprintf(rows, rows_size, "%s/rows.txt", dir);
  FILE *f = fopen(rows, "w");
  cr_assert_not_null(f);
  fputs("1,16,1024,16,fp32\n", f);
  fclose(f);
  snprintf(env, env_size, "%sFAKE_CUDA_REPORT=1 SCANFORGE_CUDA_LIBRARY='%s' SCANFORGE_CACHE_DIR='%s/cache' ", extra_env,
           SCANFORGE_FAKE_CUDA_PATH, dir);
}

/* `scanforge bench` of the rows file, two timed launches a row and pass, with `flags`, in
 * `env` (fake_bench_setup's); expects it to succeed and returns its output (to free). */
static char *run_fake_bench(const char *env, const char *rows, const char *flags) {
  char args[800];
  snprintf(args, sizeof args, "bench --rows '%s' --reps 2 --warmup 0 %s", rows, flags);
  char *out;
  cr_expect_eq(run_env(env, args, &out), 0, "%s", out);
  return out;
}

Test(cli_usage, deterministic_workspaces_come_from_the_library_pool, .timeout = 120) {
  /* On the pretend driver: a deterministic backward takes its partial sums from the pool
   * scanforge makes for the device, whose release threshold is
   * $SCANFORGE_WORKSPACE_KEEP_BYTES, and the pool is gone when the context is. */
  char *dir = temp_dir_for_test("sf_cli_usage_");
  char env[1200], rows[600];
  fake_bench_setup(dir, "SCANFORGE_WORKSPACE_KEEP_BYTES=256M ", rows, sizeof rows, env, sizeof env);
  char *out = run_fake_bench(env, rows, "--backward-only --deterministic");
  const char *report = strstr(out, "fake cuda:");
  cr_assert_not_null(report, "%s", out);
  long launches = 0, live = 0, from_pools = 0, alive = -1;
  unsigned long long threshold = 0;
  cr_assert_eq(sscanf(report, "fake cuda: %ld launches, %ld live allocations at exit; %ld allocations from created pools "
                              "(threshold %llu), %ld pools alive", &launches, &live, &from_pools, &threshold, &alive), 5,
               "%s", report);
  cr_expect_geq(from_pools, 4, "each of the 2 timed calls and the check call allocate their partial sums: %s", report);
  cr_expect_eq(threshold, 256ull << 20, "%s", report);
  cr_expect_eq(alive, 0, "%s", report);
  free(out);
  free(dir);
}

Test(cli_usage, bench_keep_pool_sets_the_release_threshold, .timeout = 120) {
  /* On the pretend driver (tests/fake_cuda/): --keep-pool says so in the header and sets
   * the default pool's release threshold to no limit (the driver reports it at exit);
   * without it the pool is left alone. */
  char *dir = temp_dir_for_test("sf_cli_usage_");
  char env[1200], rows[600];
  fake_bench_setup(dir, "", rows, sizeof rows, env, sizeof env);
  for (int keep = 0; keep <= 1; keep++) {
    char *out = run_fake_bench(env, rows, keep ? "--forward-only --keep-pool" : "--forward-only");
    cr_expect_eq(strstr(out, "keeps its memory across synchronizations (--keep-pool)") != NULL, keep, "%s", out);
    cr_expect_eq(strstr(out, "default pool kept") != NULL, keep, "%s", out);
    free(out);
  }
  free(dir);
}

Test(cli_usage, bench_no_overheads_times_the_rows_alone, .timeout = 120) {
  /* On the pretend driver: by default bench measures the once-per-pass costs (a cold
   * compile, the cache hits, the host launch); --no-overheads leaves them out and still
   * times every row. */
  char *dir = temp_dir_for_test("sf_cli_usage_");
  char env[1200], rows[600];
  fake_bench_setup(dir, "", rows, sizeof rows, env, sizeof env);
  for (int skip = 0; skip <= 1; skip++) {
    char *out = run_fake_bench(env, rows, skip ? "--no-overheads" : "");
    cr_expect_eq(strstr(out, "cold compile") != NULL, !skip, "%s", out);
    cr_expect_eq(strstr(out, "host launch") != NULL, !skip, "%s", out);
    cr_expect_eq(strstr(out, "in-process hit") != NULL, !skip, "%s", out);
    cr_expect_not_null(strstr(out, "1,16,1024,16"), "the row is not in the tables:\n%s", out);
    free(out);
  }
  free(dir);
}
