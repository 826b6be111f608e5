/* test_cmd_compile.c: `scanforge compile` as a user runs it: exit status, files, messages. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs the CLI with `args` in a shell, stdout and stderr together into *output (free it);
 * returns the exit status. */
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

/* A fresh directory holding `name` with `text`; the path goes to path[]. */
static void write_temp(char *dir, const char *name, const char *text, char *path, size_t cap) {
  cr_assert_not_null(mkdtemp(dir));
  snprintf(path, cap, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
}

static const char kernel[] =
    "extern \"C\" __global__ void twice(float *x) {\n"
    "  x[threadIdx.x] *= 2.f;\n"
    "}\n";

Test(cmd_compile, source_to_cubin_file) {
  char dir[] = "/tmp/sf_cli_compile_XXXXXX", path[512], args[1200], cubin[512];
  write_temp(dir, "twice.cu", kernel, path, sizeof path);
  snprintf(cubin, sizeof cubin, "%s/twice.cubin", dir);
  snprintf(args, sizeof args, "compile --source '%s' --arch sm_80 -o '%s'", path, cubin);
  char *out;
  cr_assert_eq(run_cli(args, &out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "registers"), "%s", out);
  cr_assert_not_null(strstr(out, "sm_80"), "%s", out);
  FILE *f = fopen(cubin, "rb");
  cr_assert_not_null(f, "no cubin written");
  unsigned char magic[4] = {0};
  cr_assert_eq(fread(magic, 1, 4, f), 4);
  fclose(f);
  cr_assert(magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F');
  free(out);
  remove(cubin);
  remove(path);
  rmdir(dir);
}

Test(cmd_compile, error_exits_1_and_quotes_the_line) {
  char dir[] = "/tmp/sf_cli_compile_XXXXXX", path[512], args[1024];
  write_temp(dir, "bad.cu", "extern \"C\" __global__ void k(float *x) {\n  x[0] = nope_;\n}\n", path, sizeof path);
  snprintf(args, sizeof args, "compile --source '%s' --arch sm_90", path);
  char *out;
  cr_assert_eq(run_cli(args, &out), 1, "%s", out);
  cr_assert_not_null(strstr(out, "at line 2:   x[0] = nope_;"), "%s", out);
  free(out);
  remove(path);
  rmdir(dir);
}

Test(cmd_compile, list_archs) {
  char *out;
  cr_assert_eq(run_cli("compile --list-archs", &out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "sm_75\n"), "%s", out);
  cr_assert_not_null(strstr(out, "sm_90\n"), "%s", out);
  free(out);
}

Test(cmd_compile, help_has_an_example) {
  char *out;
  cr_assert_eq(run_cli("compile --help", &out), 0);
  cr_assert_not_null(strstr(out, "--arch"), "%s", out);
  cr_assert_not_null(strstr(out, "example"), "%s", out);
  free(out);
}

Test(cmd_compile, usage_errors_exit_2) {
  char *out;
  cr_assert_eq(run_cli("compile op=fwd", &out), 2, "%s", out);
  cr_assert_not_null(strstr(out, "--arch"), "%s", out);
  free(out);
  cr_assert_eq(run_cli("compile op=fwd --arch bogus", &out), 2, "%s", out);
  free(out);
  cr_assert_eq(run_cli("compile --no-such-option", &out), 2, "%s", out);
  cr_assert_not_null(strstr(out, "--no-such-option"), "%s", out);
  free(out);
}

Test(cmd_compile, unsupported_arch_exits_2) {
  char dir[] = "/tmp/sf_cli_compile_XXXXXX", path[512], args[1024];
  write_temp(dir, "k.cu", kernel, path, sizeof path);
  snprintf(args, sizeof args, "compile --source '%s' --arch sm_12", path);
  char *out;
  cr_assert_eq(run_cli(args, &out), 2, "%s", out);
  cr_assert_not_null(strstr(out, "sm_12"), "%s", out);
  free(out);
  remove(path);
  rmdir(dir);
}

Test(cmd_compile, spec_is_generated_and_compiled) {
  char *out;
  cr_assert_eq(run_cli("compile op=fwd,dstate=16,dtype=fp16 --arch sm_80", &out), 0, "%s", out);
  cr_assert_not_null(strstr(out, "dstate=16"), "the canonical spec is not reported: %s", out);
  cr_assert_not_null(strstr(out, "bytes of cubin"), "%s", out);
  cr_assert_not_null(strstr(out, "occupancy  sf_scan_fwd: "), "the blocks an SM holds are not reported: %s", out);
  cr_assert_not_null(strstr(out, "threads an SM, limited by "), "%s", out);
  free(out);
}

/* A split=state module's block-states entry points get an occupancy line of their own. */
Test(cmd_compile, block_state_entries_report_their_occupancy, .timeout = 120) {
  char *out;
  cr_assert_eq(run_cli("compile op=bwd,split=state,dstate=16,threads=4,items=8,channels=8 --arch sm_90", &out), 0, "%s",
               out);
  cr_expect_not_null(strstr(out, "occupancy  sf_scan_bwd: "), "%s", out);
  cr_expect_not_null(strstr(out, "occupancy  sf_scan_bwd_block_states: "), "%s", out);
  free(out);
  cr_assert_eq(run_cli("compile op=fwd,dstate=16 --arch sm_90", &out), 0, "%s", out);
  cr_expect_null(strstr(out, "inner_saves"), "a split=time module has no such entry: %s", out);
  free(out);
}
