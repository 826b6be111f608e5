/* cli_run.c: runs the built scanforge tool from a test and captures what it prints. */
#include "tests/support/cli_run.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#ifndef SCANFORGE_CLI_PATH
#define SCANFORGE_CLI_PATH "scanforge"
#endif

int run_env(const char *env, const char *args, char **output) {
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

int run_shell(const char *command, char *out, size_t cap) {
  FILE *pipe = popen(command, "r");
  cr_assert_not_null(pipe, "cannot run %s", command);
  size_t n = fread(out, 1, cap - 1, pipe);
  out[n] = '\0';
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
