/* commands.h: the subcommands of the scanforge tool, one file each (cli/cmd_<name>.c). */
#ifndef SCANFORGE_CLI_COMMANDS_H
#define SCANFORGE_CLI_COMMANDS_H

/* Each returns the process exit status: 0 on success, 1 on failure, 2 on bad usage.
 * argv[0] is the subcommand's name; getopt_long parses the rest. */
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
int cmd_demo(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_tune(int argc, char **argv);

/* Prints "scanforge NAME: message" and the library's last error to stderr; returns 1. */
int cli_fail(const char *command, const char *what);
/* True when argv holds -h or --help before any "--". */
int cli_wants_help(int argc, char **argv);

#endif
