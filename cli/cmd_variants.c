/* cmd_variants.c: scanforge variants: the default variant grid, one spec a line. */
#include <getopt.h>
#include <stdio.h>

#include "cli/commands.h"
#include "runtime/launch_config/heuristics.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: scanforge variants\n\n"
          "Prints the default variant grid, one canonical spec a line: the variants the\n"
          "launch heuristics choose for the reference rows' shapes and MambaVision's, forward\n"
          "and backward, for fp32, fp16 and bf16, d_state 8 and 16, with and without the\n"
          "gate z.\n"
          "'scanforge cache warm' compiles this grid ahead of time.\n");
}

int cmd_variants(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return 0;
  }
  if (argc > 1) {
    fprintf(stderr, "scanforge variants: unexpected argument '%s'\n", argv[1]);
    usage(stderr);
    return 2;
  }
  sf_variant grid[256];
  int count = sf_default_grid(grid, 256);
  for (int i = 0; i < count && i < 256; i++) {
    char spec[512];
    sf_variant_format(&grid[i], spec, sizeof spec);
    puts(spec);
  }
  return 0;
}
