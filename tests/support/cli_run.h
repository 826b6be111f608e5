/* cli_run.h: runs the built scanforge tool from a test and captures what it prints. */
#ifndef SCANFORGE_TESTS_CLI_RUN_H
#define SCANFORGE_TESTS_CLI_RUN_H

/* Runs the CLI with `args` after `env` ("VAR=x ", may be "") in a shell, stdout and
 * stderr together into *output (free it); returns the exit status. */
int run_env(const char *env, const char *args, char **output);

#endif
