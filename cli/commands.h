/* commands.h: the subcommands of the scanforge tool, one file each (cli/cmd_<name>.c). */
#ifndef SCANFORGE_CLI_COMMANDS_H
#define SCANFORGE_CLI_COMMANDS_H

#include <stddef.h>

/* Each returns the process exit status, one rule for every command:
 *   0  it did what was asked (checks passed, files written, ...);
 *   1  it failed: a check failed, a compile or generation failed, no GPU, a bad
 *      environment variable, an I/O error;
 *   2  bad usage: an unknown option, a missing or malformed value, a bad SPEC argument
 *      (one the parser or a template refuses), an input file that cannot be read.
 * argv[0] is the subcommand's name; getopt_long parses the rest. */
enum { CLI_OK = 0, CLI_FAILED = 1, CLI_USAGE = 2 };
typedef int (*sf_command_fn)(int argc, char **argv);

typedef struct sf_command {
  const char *name;
  const char *summary;
  sf_command_fn run;
} sf_command;

int cmd_variants(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_tune(int argc, char **argv);

/* Prints "scanforge NAME: message" and the library's last error to stderr; returns 1. */
int cli_fail(const char *command, const char *what);

/* Prints the context's warnings from number *shown on (each once: *shown is advanced),
 * "scanforge COMMAND: warning: ..." on stderr. */
struct sf_context;
void cli_print_warnings(const char *command, const struct sf_context *ctx, size_t *shown);
/* True when argv holds -h or --help before any "--". */
int cli_wants_help(int argc, char **argv);

/* For commands that generate kernels: checks SCANFORGE_TEMPLATE_DIR and, when it is set,
 * says on stderr that its templates are in use. Returns 0, or 1 (the error printed) when
 * it names no directory. */
int cli_note_template_dir(const char *command);
/* "scan_fwd.tpl (built-in)", "scan_fwd.tpl (from DIR)" or "scan_fwd.tpl (built-in: DIR
 * has no scan_fwd.tpl)": a variant's template and where it is read from. */
void cli_describe_template(const char *name, char *buf, size_t cap);

#endif
