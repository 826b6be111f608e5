/* cmd_variants.c: (in progress) */
#include "cli/commands.h"
int cmd_variants(int argc, char **argv) { return cli_fail("variants", "not built yet"); }
