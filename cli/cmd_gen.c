/* cmd_gen.c: (in progress) */
#include "cli/commands.h"
int cmd_gen(int argc, char **argv) { return cli_fail("gen", "not built yet"); }
