/* test_cli_check.c: `scanforge check` (forward and --backward), `demo` and `bench` as a user runs them, on a machine with or without a GPU. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scanforge/scanforge.h"
#include "tests/support/cli_run.h"

static int run_cli(const char *args, char **output) { return run_env("", args, output); }

/* Asserts that a run exits with `code` and that its output holds `needle`. */
static void expect_run(const char *args, int code, const char *needle) {
  char *out;
  int status = run_cli(args, &out);
  cr_expect_eq(status, code, "scanforge %s: exit %d, expected %d:\n%s", args, status, code, out);
  cr_expect_not_null(strstr(out, needle), "scanforge %s: no '%s' in:\n%s", args, needle, out);
  free(out);
}

static void expect_passes(const char *args) {
  char *out;
  int status = run_cli(args, &out);
  cr_expect_eq(status, 0, "scanforge %s:\n%s", args, out);
  cr_expect_not_null(strstr(out, "\nPASS"), "scanforge %s:\n%s", args, out);
  cr_expect_null(strstr(out, "FAIL"), "scanforge %s:\n%s", args, out);
  cr_expect_not_null(strstr(out, "saved states"), "scanforge %s:\n%s", args, out);
  free(out);
}

Test(cli_check, cpu_fp32_all_flags_passes, .timeout = 120) {
  expect_passes("check --device cpu --shape 2,64,196,16 --z --D --delta-bias --softplus --h0");
}

Test(cli_check, cpu_bf16_fixed_B_groups_passes, .timeout = 120) {
  expect_passes("check --device cpu --shape 3,32,49,8 --groups 2 --dtype bf16 --fixed-B --D "
                "--delta-bias --softplus --threads 2");
}

Test(cli_check, cpu_fp16_fixed_C_long_sequence_passes, .timeout = 120) {
  expect_passes("check --device cpu --shape 1,8,2049,4 --dtype fp16 --fixed-C --z --seed 7");
}

Test(cli_check, default_device_is_named) {
  char *out;
  int status = run_cli("check --shape 1,4,16,4", &out);
  cr_expect_eq(status, 0, "%s", out);
  cr_expect(strstr(out, "device       gpu: ") || strstr(out, "device       cpu (no CUDA GPU"), "%s", out);
  free(out);
}

Test(cli_check, bad_options_name_the_option) {
  expect_run("check --shape 64,160", 2, "--shape: expected BATCH,DIM,L,N with positive integers");
  expect_run("check --shape 64,160", 2, "'64,160'");
  expect_run("check --shape 1,2,3,0", 2, "--shape");
  expect_run("check --shape 1,2,3,300", 2, "--shape");
  expect_run("check --shape 1,2,x,4", 2, "--shape");
  expect_run("check --shape 1,4,16,4 --dtype fp64", 2, "--dtype: expected fp32, fp16 or bf16, got 'fp64'");
  expect_run("check --shape 1,4,16,4 --device tpu", 2, "--device");
  expect_run("check --shape 1,6,16,4 --groups 4", 2, "--groups");
  expect_run("check --shape 1,6,16,4 --groups -1", 2, "--groups");
  expect_run("check --shape 1,4,16,4 --device cpu --threads 0", 2, "--threads");
  expect_run("check --shape 1,4,16,4 --seed minus", 2, "--seed");
  expect_run("check --shape 1,4,16,4 --device cpu --spec threads=64", 2, "--spec");
  expect_run("check --shape 1,4,16,4 --spec dtype=bf16", 2, "--spec");
  expect_run("check --shape 1,4,16,4 --no-such-option", 2, "--no-such-option");
  expect_run("check --shape", 2, "--shape");
  expect_run("check --D", 2, "--shape");
}

/* ---- check --backward ---------------------------------------------------------------- */

/* A backward check that passes: exit 0, PASS, no FAIL, and a line for each gradient named
 * in `grads` (space-separated, each as the first word of a line). */
static void expect_backward_passes(const char *args, const char *grads) {
  char *out;
  int status = run_cli(args, &out);
  cr_expect_eq(status, 0, "scanforge %s:\n%s", args, out);
  cr_expect_not_null(strstr(out, "\nPASS"), "scanforge %s:\n%s", args, out);
  cr_expect_null(strstr(out, "FAIL"), "scanforge %s:\n%s", args, out);
  cr_expect_not_null(strstr(out, "\ngradient "), "scanforge %s:\n%s", args, out);
  cr_expect_null(strstr(out, "saved states"), "a backward check reports gradients only:\n%s", out);
  char copy[256], line[64];
  snprintf(copy, sizeof copy, "%s", grads);
  for (char *rest = copy, *name; (name = strsep(&rest, " ")) != NULL;) {
    snprintf(line, sizeof line, "\n%-13s ", name);
    cr_expect_not_null(strstr(out, line), "scanforge %s: no line for %s in:\n%s", args, name, out);
  }
  free(out);
}

Test(cli_check, cpu_backward_fp32_all_flags_passes, .timeout = 120) {
  expect_backward_passes("check --device cpu --backward --shape 2,64,196,16 --z --D --delta-bias --softplus --h0",
                         "du ddelta dz dA dB dC dD ddelta_bias dh0");
}

Test(cli_check, cpu_backward_bf16_groups_fixed_B_d_last_state_passes, .timeout = 120) {
  expect_backward_passes("check --device cpu --backward --d-last-state --shape 3,32,49,8 --groups 2 --dtype bf16 "
                         "--fixed-B --D --delta-bias --softplus --threads 2",
                         "du ddelta dA dB dC dD ddelta_bias");
}

Test(cli_check, cpu_backward_fp16_long_sequence_passes, .timeout = 120) {
  expect_backward_passes("check --device cpu --backward --shape 1,8,2049,4 --dtype fp16 --fixed-C --z --seed 7",
                         "du ddelta dz dA dB dC");
}

Test(cli_check, backward_shows_the_bar_of_the_type) {
  expect_run("check --device cpu --backward --shape 1,4,16,4", 0, "1e-04");
  expect_run("check --device cpu --backward --shape 1,4,16,4 --dtype bf16", 0, "1e-02");
  expect_run("check --device cpu --backward --shape 1,4,16,4 --d-last-state", 0, "d_last_state random");
}

Test(cli_check, backward_without_d_last_state_has_no_gradient_of_absent_inputs) {
  char *out;
  int status = run_cli("check --device cpu --backward --shape 1,4,16,4", &out);
  cr_expect_eq(status, 0, "%s", out);
  cr_expect_not_null(strstr(out, "d_last_state zero"), "%s", out);
  const char *absent[] = {"\ndz ", "\ndD ", "\nddelta_bias ", "\ndh0 "};
  for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
    cr_expect_null(strstr(out, absent[i]), "'%s' in:\n%s", absent[i] + 1, out);
  free(out);
}

/* --deterministic runs the backward twice and compares the bits; the default device is
 * the GPU when there is one, so this checks the GPU's deterministic mode there. */
Test(cli_check, backward_deterministic_runs_twice_with_the_same_bits, .timeout = 300) {
  const char *runs[] = {"check --device cpu --backward --deterministic --shape 2,32,300,8 --z --D --delta-bias --softplus",
                        "check --backward --deterministic --shape 4,64,300,16 --D --delta-bias --softplus --h0"};
  for (size_t i = 0; i < 2; i++) {
    char *out;
    int status = run_cli(runs[i], &out);
    cr_expect_eq(status, 0, "scanforge %s:\n%s", runs[i], out);
    cr_expect_not_null(strstr(out, "second run"), "%s", out);
    cr_expect_not_null(strstr(out, "the same bits"), "%s", out);
    cr_expect_not_null(strstr(out, "\nPASS"), "%s", out);
    free(out);
  }
}

Test(cli_check, backward_on_the_default_device_passes, .timeout = 300) {
  expect_backward_passes("check --backward --shape 2,64,300,16 --z --D --delta-bias --softplus",
                         "du ddelta dz dA dB dC dD ddelta_bias");
  expect_backward_passes("check --backward --shape 2,48,49,8 --groups 3 --dtype bf16 --fixed-C --d-last-state",
                         "du ddelta dA dB dC");
}

Test(cli_check, backward_spec_on_the_gpu_names_the_variant, .timeout = 300) {
  int count = 0;
  if (sf_device_count(&count) != SF_OK || count == 0) cr_skip_test("no CUDA GPU: --spec needs one");
  /* L = 300: the state interval is 512 */
  expect_run("check --backward --shape 2,64,300,16 --D --softplus --spec threads=64,items=8,channels=1", 0,
             "variant      op=bwd,");
  expect_run("check --backward --deterministic --shape 2,64,300,16 --spec threads=64,items=8,channels=2", 0,
             "deterministic=1");
}

Test(cli_check, backward_usage_errors_name_the_option) {
  expect_run("check --shape 1,4,16,4 --d-last-state", 2, "--d-last-state: a cotangent of the backward: give --backward");
  expect_run("check --shape 1,4,16,4 --deterministic", 2, "--deterministic: a mode of the backward: give --backward");
  /* L = 16: the state interval is 64, and 32 x 8 is not */
  expect_run("check --shape 1,4,16,4 --backward --spec threads=32,items=8", 2, "must equal the state interval 64");
  expect_run("check --shape 1,4,16,4 --backward --spec threads=32,items=8", 2, "--spec");
  expect_run("check --shape 1,4,16,4 --backward --spec op=fwd", 2, "--spec");
  expect_run("check --shape 1,4,16,4 --backward --device cpu --spec threads=8,items=8", 2, "--spec");
  expect_run("check --shape 1,4,16,4 --backward --device cpu --threads 0", 2, "--threads");
}

Test(cli_check, help_lists_every_option) {
  char *out;
  cr_assert_eq(run_cli("check --help", &out), 0, "%s", out);
  const char *options[] = {"--shape", "--groups", "--dtype", "--device", "--z", "--D", "--delta-bias",
                           "--softplus", "--fixed-B", "--fixed-C", "--h0", "--spec", "--seed", "--threads",
                           "--backward", "--d-last-state", "--deterministic", "state interval"};
  for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
    cr_expect_not_null(strstr(out, options[i]), "no %s in:\n%s", options[i], out);
  free(out);
}

/* ---- demo ------------------------------------------------------------------------- */

Test(cli_demo, second_run_compiles_nothing, .timeout = 300) {
  char dir[] = "/tmp/sf_cli_demo_XXXXXX", env[256], *out;
  cr_assert_not_null(mkdtemp(dir));
  snprintf(env, sizeof env, "SCANFORGE_CACHE_DIR='%s' ", dir);

  int status = run_env(env, "demo", &out);
  cr_expect_eq(status, 0, "first run:\n%s", out);
  cr_expect_not_null(strstr(out, dir), "the cache directory is not shown:\n%s", out);
  cr_expect_not_null(strstr(out, "compiled by NVRTC"), "first run:\n%s", out);
  cr_expect_not_null(strstr(out, "kernels: "), "first run:\n%s", out);
  cr_expect_null(strstr(out, "kernels: 0 compiled"), "first run compiled nothing:\n%s", out);
  cr_expect_null(strstr(out, "FAIL"), "first run:\n%s", out);
  free(out);

  status = run_env(env, "demo", &out);
  cr_expect_eq(status, 0, "second run:\n%s", out);
  cr_expect_not_null(strstr(out, "kernels: 0 compiled"), "second run:\n%s", out);
  cr_expect_null(strstr(out, "compiled by NVRTC"), "second run:\n%s", out);
  cr_expect_not_null(strstr(out, "from the disk cache"), "second run:\n%s", out);
  free(out);

  char command[512];
  snprintf(command, sizeof command, "rm -rf '%s'", dir);
  cr_expect_eq(system(command), 0);
}

Test(cli_demo, usage_errors_exit_2) {
  expect_run("demo --device tpu", 2, "--device");
  expect_run("demo extra", 2, "extra");
  expect_run("demo --help", 0, "sm_80");
}

/* ---- bench ------------------------------------------------------------------------ */

static bool have_gpu(void) {
  int count = 0;
  return sf_device_count(&count) == SF_OK && count > 0;
}

/* A fresh directory holding `name` with `text`; the path goes to path[]. */
static void write_temp(char *dir, const char *name, const char *text, char *path, size_t cap) {
  cr_assert_not_null(mkdtemp(dir));
  snprintf(path, cap, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
}

Test(cli_bench, without_a_gpu_says_so_and_fails) {
  if (have_gpu()) cr_skip_test("this machine has a GPU: bench runs instead of failing");
  expect_run("bench", 1, "needs a CUDA GPU");
  expect_run("bench --reps 3", 1, "scanforge check --device cpu");
}

Test(cli_bench, small_rows_file_on_the_gpu, .timeout = 300) {
  if (!have_gpu()) cr_skip_test("no CUDA GPU: bench cannot run here");
  char dir[] = "/tmp/sf_cli_bench_XXXXXX", rows[512], json[512], args[1200], *out;
  write_temp(dir, "rows.txt", "# tiny, gated bf16, MambaVision\n1,4,16,4,fp32\n2,64,300,16,z,bf16\n64,160,196,8 # both types\n",
             rows, sizeof rows);
  snprintf(json, sizeof json, "%s/bench.json", dir);
  snprintf(args, sizeof args, "bench --rows '%s' --reps 5 --warmup 2 --json '%s'", rows, json);
  int status = run_cli(args, &out);
  cr_expect_eq(status, 0, "%s", out);
  cr_expect_not_null(strstr(out, "copy bandwidth"), "%s", out);
  cr_expect_not_null(strstr(out, "64,160,196,8         bf16"), "%s", out);
  cr_expect_not_null(strstr(out, "host launch"), "%s", out);
  cr_expect_not_null(strstr(out, "\nforward\n"), "%s", out);
  cr_expect_not_null(strstr(out, "\nbackward (every gradient"), "%s", out);
  cr_expect_not_null(strstr(out, "host launch bwd"), "%s", out);
  free(out);
  json_error_t error;
  json_t *root = json_load_file(json, 0, &error);
  cr_assert_not_null(root, "%s: %s", json, error.text);
  json_t *rows_json = json_object_get(root, "rows");
  cr_expect_eq(json_array_size(rows_json), 4);
  for (size_t i = 0; i < json_array_size(rows_json); i++) {
    json_t *row = json_array_get(rows_json, i);
    cr_expect(json_is_true(json_object_get(row, "ok")), "row %zu failed", i);
    cr_expect_gt(json_real_value(json_object_get(row, "median_us")), 0.0);
    json_t *backward = json_object_get(row, "backward");
    cr_assert_not_null(backward, "row %zu has no backward", i);
    cr_expect(json_is_true(json_object_get(backward, "ok")), "row %zu: backward failed", i);
    cr_expect_gt(json_real_value(json_object_get(backward, "median_us")), 0.0);
    cr_expect_gt(json_real_value(json_object_get(backward, "floor_us")), 0.0);
    /* the backward reads and writes more than the forward */
    cr_expect_gt(json_real_value(json_object_get(backward, "bytes")), json_real_value(json_object_get(row, "bytes")));
    cr_expect_null(json_object_get(row, "backward_deterministic"), "row %zu: not asked for", i);
  }
  /* only what the run measured: no times copied from elsewhere */
  json_t *first = json_array_get(rows_json, 0);
  cr_expect_null(json_object_get(first, "established_us"));
  cr_expect_null(json_object_get(json_object_get(first, "backward"), "speedup"));
  cr_expect_not_null(json_object_get(json_object_get(root, "overheads"), "backward"));
  json_decref(root);
  char command[600];
  snprintf(command, sizeof command, "rm -rf '%s'", dir);
  cr_expect_eq(system(command), 0);
}

Test(cli_bench, backward_only_deterministic_on_the_gpu, .timeout = 300) {
  if (!have_gpu()) cr_skip_test("no CUDA GPU: bench cannot run here");
  char dir[] = "/tmp/sf_cli_bench_XXXXXX", rows[512], json[512], args[1200], *out;
  write_temp(dir, "rows.txt", "64,160,196,8,bf16\n2,64,300,16,z,fp32\n", rows, sizeof rows);
  snprintf(json, sizeof json, "%s/bench.json", dir);
  snprintf(args, sizeof args, "bench --rows '%s' --reps 5 --warmup 2 --backward-only --deterministic --json '%s'",
           rows, json);
  int status = run_cli(args, &out);
  cr_expect_eq(status, 0, "%s", out);
  cr_expect_null(strstr(out, "\nforward\n"), "--backward-only timed the forward:\n%s", out);
  cr_expect_not_null(strstr(out, "det cost"), "%s", out);
  free(out);
  json_error_t error;
  json_t *root = json_load_file(json, 0, &error);
  cr_assert_not_null(root, "%s: %s", json, error.text);
  json_t *rows_json = json_object_get(root, "rows");
  cr_expect_eq(json_array_size(rows_json), 2);
  for (size_t i = 0; i < json_array_size(rows_json); i++) {
    json_t *row = json_array_get(rows_json, i);
    cr_expect(json_is_true(json_object_get(row, "ok")), "row %zu failed", i);
    cr_expect_null(json_object_get(row, "median_us"), "row %zu: the forward was timed", i);
    json_t *det = json_object_get(row, "backward_deterministic");
    cr_assert_not_null(det, "row %zu: no deterministic backward", i);
    cr_expect_gt(json_real_value(json_object_get(det, "cost")), 0.0);
    cr_expect_not_null(strstr(json_string_value(json_object_get(det, "variant")), "deterministic=1"));
  }
  /* 64,160,196,8 bf16 is a reference row, yet nothing but measured numbers */
  cr_expect_null(json_object_get(json_object_get(json_array_get(rows_json, 0), "backward"), "established_us"));
  json_decref(root);
  char command[600];
  snprintf(command, sizeof command, "rm -rf '%s'", dir);
  cr_expect_eq(system(command), 0);
}

/* ---- bench through the pretend driver (tests/fake_cuda): the host-side flow, any machine */

/* Runs bench on the pretend driver with a fresh cache; the JSON it wrote is parsed into
 * *root (NULL if none). Returns the exit status; *output as run_cli. */
static int run_fake_bench(const char *dir, const char *options, char **output, json_t **root) {
  char env[1024], json[600], args[1600];
  snprintf(env, sizeof env, "SCANFORGE_CUDA_LIBRARY='%s' SCANFORGE_CACHE_DIR='%s/cache' ", SCANFORGE_FAKE_CUDA_PATH,
           dir);
  snprintf(json, sizeof json, "%s/bench.json", dir);
  remove(json);
  snprintf(args, sizeof args, "bench --rows '%s/rows.txt' --reps 3 --warmup 1 --json '%s' %s", dir, json, options);
  int status = run_env(env, args, output);
  json_error_t error;
  *root = json_load_file(json, 0, &error);
  return status;
}

static double number(json_t *object, const char *key) { return json_number_value(json_object_get(object, key)); }

/* Each pass reports its launch's shape: blocks (channels / channels a block x batch rows x
 * segments), blocks an SM holds (the pretend driver: 2048 threads' worth, at most 32), the
 * SMs (132), and waves; few channels over many intervals get segments. */
Test(cli_bench, pretend_driver_reports_the_launch_shape, .timeout = 300) {
  char dir[] = "/tmp/sf_cli_fake_XXXXXX", rows[512], *out;
  write_temp(dir, "rows.txt", "2,64,300,16,z,bf16\n1,64,4096,16,fp32\n", rows, sizeof rows);
  json_t *root;
  int status = run_fake_bench(dir, "--forward-only --spec split=state,threads=4,items=16,channels=16", &out, &root);
  cr_expect_eq(status, 0, "%s", out);
  cr_expect_not_null(strstr(out, "waves"), "%s", out);
  free(out);
  cr_assert_not_null(root, "no JSON written");
  json_t *short_row = json_array_get(json_object_get(root, "rows"), 0);
  json_t *long_row = json_array_get(json_object_get(root, "rows"), 1);
  cr_expect_eq(number(short_row, "blocks"), 4 * 2, "64 / 16 channels x 2 rows");
  /* the pretend driver's blocks an SM: 64-thread blocks, limited by 2048 threads or by the
   * kernel's static shared memory (228 KiB an SM, 1 KiB reserved a block) */
  const double per_sm = number(short_row, "blocks_per_sm");
  cr_expect(per_sm >= 1 && per_sm <= 32, "%g", per_sm);
  cr_expect_eq(number(short_row, "sm_count"), 132);
  cr_expect_eq(number(short_row, "segments"), 0, "one state interval");
  const double waves = 8.0 / (per_sm * 132);
  cr_expect(fabs(number(short_row, "waves") - waves) < 1e-5 * waves, "%g, not %g", number(short_row, "waves"), waves);
  const double segments = number(long_row, "segments");
  cr_expect_gt(segments, 1, "4 blocks over 8 intervals leave the GPU idle: segments");
  cr_expect_eq(number(long_row, "blocks"), 4 * segments);
  json_decref(root);
}

Test(cli_bench, pretend_driver_both_passes_and_the_backward_floor, .timeout = 300) {
  char dir[] = "/tmp/sf_cli_fake_XXXXXX", rows[512], *out;
  write_temp(dir, "rows.txt", "1,4,16,4,fp32\n2,64,300,16,z,bf16\n", rows, sizeof rows);
  json_t *root;
  int status = run_fake_bench(dir, "--deterministic", &out, &root);
  cr_expect_eq(status, 0, "%s", out);
  cr_expect_not_null(strstr(out, "Fake GPU"), "%s", out);
  cr_expect_not_null(strstr(out, "\nforward\n"), "%s", out);
  cr_expect_not_null(strstr(out, "\nbackward (every gradient"), "%s", out);
  cr_expect_not_null(strstr(out, "det cost"), "%s", out);
  cr_expect_not_null(strstr(out, "empty launch"), "%s", out);
  cr_expect_not_null(strstr(out, "cold compile bwd"), "%s", out);
  cr_expect_not_null(strstr(out, "host launch bwd"), "%s", out);
  cr_expect_not_null(strstr(out, "% floor"), "%s", out);
  cr_expect_null(strstr(out, "ref us"), "no copied reference times:\n%s", out);
  cr_expect_null(strstr(out, "speedup"), "no copied reference times:\n%s", out);
  cr_expect_null(strstr(out, "docs/perf.md"), "%s", out);
  free(out);
  cr_assert_not_null(root, "no JSON written");
  json_t *passes = json_object_get(root, "passes");
  cr_expect_eq(json_array_size(passes), 3);
  cr_expect_str_eq(json_string_value(json_array_get(passes, 2)), "backward_deterministic");
  cr_expect_not_null(json_object_get(json_object_get(json_object_get(root, "overheads"), "backward"), "host_launch_us"));
  /* an empty launch, timed as the rows are (what no call goes below on a GPU) */
  const double empty_us = number(root, "empty_launch_us");
  cr_expect_gt(empty_us, 0.0, "no empty launch timed");
  json_t *rows_json = json_object_get(root, "rows");
  cr_assert_eq(json_array_size(rows_json), 2);
  json_t *tiny = json_array_get(rows_json, 0), *gated = json_array_get(rows_json, 1);
  cr_expect(json_is_true(json_object_get(tiny, "ok")));
  cr_expect(json_is_true(json_object_get(gated, "ok")));
  /* 1,4,16,4 fp32 is a reference row: still only the numbers measured in the run */
  cr_expect_null(json_object_get(tiny, "established_us"));
  cr_expect_null(json_object_get(tiny, "speedup"));
  cr_expect_null(json_object_get(json_object_get(tiny, "backward"), "established_us"));
  cr_expect_null(json_object_get(json_object_get(tiny, "backward"), "speedup"));
  cr_expect_gt(number(tiny, "percent_of_floor"), 0.0);
  /* 2,64,300,16,z bf16: 38400 elements of u; B and C 9600 each; one saved state per row.
   * forward: u, delta, z, out (2 bytes) + B, C (2 bytes) + A, D, bias, last_state, saved (4 bytes)
   * backward: u, delta, z, dout, du, ddelta, dz (2 bytes) + B, C (2 bytes) + dB, dC (4 bytes)
   *           + A, dA, D, dD, bias, dbias, saved (4 bytes) */
  const double fwd = 4 * 38400 * 2 + 2 * 9600 * 2 + (1024 + 64 + 64 + 2048 + 2048) * 4;
  const double bwd = 7 * 38400 * 2 + 2 * 9600 * 2 + 2 * 9600 * 4 + (2 * 1024 + 4 * 64 + 2048) * 4;
  cr_expect_eq(number(gated, "bytes"), fwd);
  json_t *backward = json_object_get(gated, "backward"), *det = json_object_get(gated, "backward_deterministic");
  cr_expect_eq(number(backward, "bytes"), bwd);
  cr_expect_eq(number(backward, "exps"), 2.0 * 64 * 300 * 16);
  /* floor = max(bytes / copy bandwidth, exps / exp2 rate) */
  const double copy = number(root, "copy_bandwidth_gb_per_s") * 1e9, exp2 = number(root, "exp2_per_s");
  const double floor_us = 1e6 * fmax(bwd / copy, 2.0 * 64 * 300 * 16 / exp2);
  cr_expect(fabs(number(backward, "floor_us") - floor_us) <= 1e-3 * floor_us, "floor %g, expected %g",
            number(backward, "floor_us"), floor_us);
  cr_expect_not_null(strstr(json_string_value(json_object_get(backward, "variant")), "op=bwd,"));
  cr_expect_not_null(strstr(json_string_value(json_object_get(det, "variant")), "deterministic=1"));
  cr_expect_gt(number(det, "cost"), 0.0);
  json_decref(root);

  /* --backward-only: no forward numbers; a --bwd-spec that fits one row fails the other */
  status = run_fake_bench(dir, "--backward-only --bwd-spec threads=64,items=8,channels=2", &out, &root);
  cr_expect_eq(status, 1, "%s", out);
  cr_expect_null(strstr(out, "\nforward\n"), "%s", out);
  cr_expect_not_null(strstr(out, "must equal the state interval 64"), "%s", out);
  cr_expect_not_null(strstr(out, "1 row failed"), "%s", out);
  free(out);
  cr_assert_not_null(root, "no JSON written");
  rows_json = json_object_get(root, "rows");
  tiny = json_array_get(rows_json, 0), gated = json_array_get(rows_json, 1);
  cr_expect(json_is_false(json_object_get(tiny, "ok")));
  cr_expect_null(json_object_get(tiny, "median_us"));
  cr_expect_not_null(json_object_get(json_object_get(tiny, "backward"), "error"));
  cr_expect(json_is_true(json_object_get(gated, "ok")));
  cr_expect_eq(json_integer_value(json_object_get(json_object_get(gated, "backward"), "channels")), 2);
  json_decref(root);

  /* --forward-only: no backward */
  status = run_fake_bench(dir, "--forward-only", &out, &root);
  cr_expect_eq(status, 0, "%s", out);
  cr_expect_null(strstr(out, "\nbackward"), "%s", out);
  free(out);
  cr_assert_not_null(root, "no JSON written");
  cr_expect_null(json_object_get(json_array_get(json_object_get(root, "rows"), 1), "backward"));
  cr_expect_null(json_object_get(json_object_get(root, "overheads"), "backward"));
  json_decref(root);

  char command[600];
  snprintf(command, sizeof command, "rm -rf '%s'", dir);
  cr_expect_eq(system(command), 0);
}

Test(cli_bench, usage_errors_exit_2_before_looking_for_a_gpu) {
  expect_run("bench --reps 0", 2, "--reps");
  expect_run("bench --warmup -1", 2, "--warmup");
  expect_run("bench --dtype fp64", 2, "--dtype");
  expect_run("bench --rows /nonexistent/rows.txt", 2, "--rows");
  expect_run("bench --json", 2, "--json");
  expect_run("bench --forward-only --backward-only", 2, "--forward-only and --backward-only");
  expect_run("bench --forward-only --deterministic", 2, "--deterministic");
  expect_run("bench --forward-only --bwd-spec threads=64,items=8", 2, "--bwd-spec");
  expect_run("bench --backward-only --spec threads=32", 2, "--spec");
  expect_run("bench --bwd-spec", 2, "--bwd-spec");
  char dir[] = "/tmp/sf_cli_bench_XXXXXX", rows[512], args[600];
  write_temp(dir, "rows.txt", "# fine\n1,4,16,4\n8,1536,2048\n", rows, sizeof rows);
  snprintf(args, sizeof args, "bench --rows '%s'", rows);
  expect_run(args, 2, "rows.txt:3: expected batch,dim,L,N[,z][,dtype]");
  remove(rows);
  rmdir(dir);
}

Test(cli_bench, help_documents_the_rows_format) {
  expect_run("bench --help", 0, "batch,dim,L,N[,z][,dtype]");
}

Test(cli_bench, help_names_no_copied_times_and_the_reference_rows) {
  expect_run("bench --help", 0, "bench/rows_reference.txt");
  char *out;
  cr_expect_eq(run_cli("bench --help", &out), 0);
  cr_expect_null(strstr(out, "docs/perf.md"), "%s", out);
  cr_expect_null(strstr(out, "speedup"), "%s", out);
  cr_expect_null(strstr(out, "established"), "%s", out);
  free(out);
}

Test(cli_bench, help_documents_the_backward) {
  const char *words[] = {"--backward-only", "--forward-only", "--deterministic", "--bwd-spec",
                         "dout", "saved states", "ddelta_bias"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) expect_run("bench --help", 0, words[i]);
}

/* ---- plan through the pretend driver ------------------------------------------------- */

/* `scanforge ARGS` on the pretend driver with registers counted, its kernels cached in dir
 * and no user tuning database; `identity`: more environment (a GPU's name and memory), or "". */
static int plan_on_pretend_driver(const char *dir, const char *identity, const char *args, char **out) {
  char env[1600];
  snprintf(env, sizeof env,
           "FAKE_CUDA_REGISTERS=1 %s SCANFORGE_CUDA_LIBRARY='%s' SCANFORGE_CACHE_DIR='%s/cache' "
           "SCANFORGE_TUNING_DB='%s/none.json' ",
           identity, SCANFORGE_FAKE_CUDA_PATH, dir, dir);
  return run_env(env, args, out);
}

static void remove_dir(const char *dir) {
  char command[600];
  snprintf(command, sizeof command, "rm -rf '%s'", dir);
  cr_expect_eq(system(command), 0);
}

/* `scanforge plan` allocates nothing, so a 130M training row (which bench cannot allocate
 * on the pretend driver) is planned; with registers counted (FAKE_CUDA_REGISTERS), the
 * MambaVision (64,256,196,8) fp32 backward, chosen as 4/8/8 by the planned spec, runs
 * capped for one wave (docs/design-waves.md); a spec that does not fit a row fails that row alone. */
Test(cli_plan, pretend_driver_plans_rows_of_any_size, .timeout = 300) {
  char dir[] = "/tmp/sf_cli_plan_XXXXXX", rows[512], args[1200], *out;
  write_temp(dir, "rows.txt", "8,1536,2048,16,z,bf16\n64,256,196,8,fp32\n", rows, sizeof rows);
  snprintf(args, sizeof args, "plan --rows '%s' --backward-only --bwd-spec split=state,threads=4,items=8,channels=8",
           rows);
  int status = plan_on_pretend_driver(dir, "", args, &out);
  cr_expect_eq(status, 0, "%s", out);
  cr_expect_not_null(strstr(out, "Fake GPU"), "%s", out);
  cr_expect_not_null(strstr(out, "\nbackward\n"), "%s", out);
  cr_expect_null(strstr(out, "\nforward\n"), "--backward-only planned the forward:\n%s", out);
  cr_expect_not_null(strstr(out, "8,1536,2048,16,z     bf16"), "%s", out);
  const char *vision = strstr(out, "64,256,196,8         fp32");
  cr_assert_not_null(vision, "%s", out);
  cr_expect_not_null(strstr(vision, "4/8/8+b16"), "the capped twin does not run:\n%s", out);
  cr_expect_not_null(strstr(vision, " spec "), "--bwd-spec chose the launch:\n%s", out);
  cr_expect_not_null(strstr(vision, "2048"), "the row's 2048 blocks:\n%s", out);
  free(out);
  /* 512 channels a block: the 1536-channel row plans, the 256-channel one cannot */
  snprintf(args, sizeof args, "plan --rows '%s' --forward-only --spec split=state,threads=2,items=8,channels=512", rows);
  status = plan_on_pretend_driver(dir, "", args, &out);
  cr_expect_eq(status, 1, "%s", out);
  cr_expect_not_null(strstr(out, "2/8/512"), "the row that fits is planned:\n%s", out);
  cr_expect_not_null(strstr(out, "must divide the channels of a group"), "%s", out);
  cr_expect_not_null(strstr(out, "1 row could not be planned"), "%s", out);
  free(out);
  remove_dir(dir);
}

/* The 'by' column: pretending to be the H100, whose shipped tuning file has entries for the
 * MambaVision rows, the (64,512,49,8) bf16 launches are a tuning entry's (4/16/16+b4 forward,
 * 4/4/32s2 backward: not the heuristics'); with --untuned they are the heuristics'. */
Test(cli_plan, by_says_what_chose_each_launch, .timeout = 300) {
  static const char h100[] = "FAKE_CUDA_NAME='NVIDIA H100 80GB HBM3' FAKE_CUDA_MEMORY_BYTES=85017493504";
  char dir[] = "/tmp/sf_cli_plan_by_XXXXXX", rows[512], args[1200], *out;
  write_temp(dir, "rows.txt", "64,512,49,8,bf16\n", rows, sizeof rows);
  snprintf(args, sizeof args, "plan --rows '%s'", rows);
  int status = plan_on_pretend_driver(dir, h100, args, &out);
  cr_expect_eq(status, 0, "%s", out);
  cr_expect_not_null(strstr(out, "GPU          NVIDIA H100 80GB HBM3"), "%s", out);
  cr_expect_not_null(strstr(out, "4/16/16+b4       tuned"), "the forward's tuning entry:\n%s", out);
  cr_expect_not_null(strstr(out, "4/4/32s2         tuned"), "the backward's tuning entry:\n%s", out);
  free(out);
  snprintf(args, sizeof args, "plan --rows '%s' --untuned", rows);
  status = plan_on_pretend_driver(dir, h100, args, &out);
  cr_expect_eq(status, 0, "%s", out);
  cr_expect_null(strstr(out, "tuned "), "--untuned, yet a launch is a tuning entry's:\n%s", out);
  cr_expect_not_null(strstr(out, " heuristic "), "%s", out);
  free(out);
  remove_dir(dir);
}
