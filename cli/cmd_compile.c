/* cmd_compile.c: scanforge compile SPEC --arch sm_XY [-o FILE] (placeholder until NVRTC lands). */
#include <stdio.h>

#include "cli/commands.h"

int cmd_compile(int argc, char **argv) {
  fprintf(stderr, "scanforge compile: not built yet\n");
  return 1;
}
