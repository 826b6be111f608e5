/* test_cli_check.c: `scanforge check`, `demo` and `bench` as a user runs them, on a machine with or without a GPU. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs the CLI with `args` (after `env`, e.g. "VAR=x ", may be "") in a shell, stdout and
 * stderr together into *output (free it); returns the exit status. */
static int run_env(const char *env, const char *args, char **output) {
  char command[4096];
  snprintf(command, sizeof command, "%s'%s' %s 2>&1", env, SCANFORGE_CLI_PATH, args);
  FILE *pipe = popen(command, "r");
  cr_assert_not_null(pipe, "cannot run %s", command);
  size_t length = 0, capacity = 1 << 20;
  char *text = malloc(capacity);
  for (size_t got; (got = fread(text + length, 1, capacity - length - 1, pipe)) > 0;) length += got;
  text[length] = '\0';
  int status = pclose(pipe);
  *output = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

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
  cr_expect(strstr(out, "device       gpu (") || strstr(out, "device       cpu (no CUDA GPU"), "%s", out);
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

Test(cli_check, backward_is_refused_clearly) {
  expect_run("check --shape 1,4,16,4 --backward", 2, "--backward: the backward pass is not available yet");
}

Test(cli_check, help_lists_every_option) {
  char *out;
  cr_assert_eq(run_cli("check --help", &out), 0, "%s", out);
  const char *options[] = {"--shape", "--groups", "--dtype", "--device", "--z", "--D", "--delta-bias",
                           "--softplus", "--fixed-B", "--fixed-C", "--h0", "--spec", "--seed", "--threads"};
  for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
    cr_expect_not_null(strstr(out, options[i]), "no %s in:\n%s", options[i], out);
  free(out);
}
