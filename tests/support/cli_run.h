/* cli_run.h: runs the built scanforge tool from a test and captures what it prints. */
#ifndef SCANFORGE_TESTS_CLI_RUN_H
#define SCANFORGE_TESTS_CLI_RUN_H

#include <stddef.h>

/* Runs the CLI with `args` after `env` ("VAR=x ", may be "") in a shell, stdout and
 * stderr together into *output (free it); returns the exit status. */
int run_env(const char *env, const char *args, char **output);

/* Runs a shell command; its exit status, and its stdout (with stderr where the command
 * redirects it) in out, cut to cap - 1 bytes. */
int run_shell(const char *command, char *out, size_t cap);

#endif
