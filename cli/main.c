/* main.c: the scanforge command-line tool: dispatches to one subcommand. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "generator/template_set.h"
#include "scanforge/scanforge.h"

#ifndef SCANFORGE_VERSION
#error "SCANFORGE_VERSION (the CMake project version) must be defined"
#endif

static const sf_command commands[] = {
    {"variants", "print the default variant grid, one spec a line", cmd_variants},
    {"gen", "generate the CUDA source of a variant", cmd_gen},
    {"compile", "compile a variant to a cubin with NVRTC", cmd_compile},
    {"check", "run one forward (or, with --backward, backward) call against the float64 reference", cmd_check},
    {"bench", "time the forward and the backward on the GPU against their floor", cmd_bench},
    {"plan", "show what each row's forward and backward launch on this GPU (no timing)", cmd_plan},
    {"demo", "compile, cache and check the kernels of MambaVision and Mamba calls", cmd_demo},
    {"cache", "show, prune or clear the disk cache of compiled kernels", cmd_cache},
    {"tune", "autotune launch configurations for this GPU; report the tuning database", cmd_tune},
};
enum { COMMAND_COUNT = sizeof commands / sizeof commands[0] };

static void usage(FILE *out) {
  fprintf(out,
          "usage: scanforge COMMAND [ARGS...]\n"
          "       scanforge --version\n\n"
          "scanforge generates, compiles, caches and runs the Mamba selective-scan kernel.\n\n"
          "commands:\n");
  for (int i = 0; i < COMMAND_COUNT; i++)
    fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(out,
          "\n'scanforge COMMAND --help' describes one command.\n"
          "A variant is a spec string such as\n"
          "  op=fwd,split=state,dstate=16,dtype=bf16,threads=4,items=16,channels=16,z=1,D=1\n"
          "(every key: 'scanforge gen --help' and docs/variants.md).\n"
          "environment: SCANFORGE_TEMPLATE_DIR (read templates from a directory),\n"
          "             SCANFORGE_CACHE_DIR, SCANFORGE_CACHE_MAX_BYTES (the kernel cache),\n"
          "             SCANFORGE_TUNING_DB (tuning database), SCANFORGE_TUNING=off (ignore it);\n"
          "             README.md lists them all\n"
          "exit status (every command): 0 done, 1 failed, 2 bad usage.\n");
}

/* Bad values of environment variables, once per run, before the command's own output. */
static void print_environment_warning(void) {
  const char *warning = sf_environment_warning();
  for (const char *line = warning; line && *line;) {
    const char *end = strchr(line, '\n');
    const int length = end ? (int)(end - line) : (int)strlen(line);
    fprintf(stderr, "scanforge: warning: %.*s\n", length, line);
    line = end ? end + 1 : NULL;
  }
}

void cli_print_warnings(const char *command, const struct sf_context *ctx, size_t *shown) {
  const size_t count = sf_context_warning_count(ctx);
  for (; *shown < count; (*shown)++)
    fprintf(stderr, "scanforge %s: warning: %s\n", command, sf_context_warning_at(ctx, *shown));
}

int cli_fail(const char *command, const char *what) {
  const char *detail = sf_last_error();
  if (detail[0])
    fprintf(stderr, "scanforge %s: %s: %s\n", command, what, detail);
  else
    fprintf(stderr, "scanforge %s: %s\n", command, what);
  return 1;
}

int cli_note_template_dir(const char *command) {
  if (sf_template_dir_check() != SF_OK) {
    fprintf(stderr, "scanforge %s: %s\n", command, sf_last_error());
    return CLI_FAILED;
  }
  const char *dir = sf_template_dir();
  if (dir)
    fprintf(stderr, "scanforge %s: templates from SCANFORGE_TEMPLATE_DIR=%s (files it lacks come from the built-in set)\n",
            command, dir);
  return CLI_OK;
}

void cli_describe_template(const char *name, char *buf, size_t cap) {
  const char *dir = sf_template_dir();
  if (!dir) {
    snprintf(buf, cap, "%s (built-in)", name);
    return;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (access(path, F_OK) == 0)
    snprintf(buf, cap, "%s (from %s)", name, dir);
  else
    snprintf(buf, cap, "%s (built-in: %s has no %s)", name, dir, name);
}

int cli_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) return 0;
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
    printf("scanforge %s\n", SCANFORGE_VERSION);
    return 0;
  }
  for (int i = 0; i < COMMAND_COUNT; i++) {
    if (strcmp(argv[1], commands[i].name) != 0) continue;
    print_environment_warning();
    return commands[i].run(argc - 1, argv + 1);
  }
  fprintf(stderr, "scanforge: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
