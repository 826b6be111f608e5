/* cmd_variants.c: scanforge variants: the default variant grid, one spec a line. */
#include <getopt.h>
#include <stdio.h>

#include "cli/commands.h"
#include "runtime/launch_config/default_grid.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: scanforge variants\n\n"
          "Prints the default variant grid, one canonical spec a line: the variants the\n"
          "launch heuristics choose for the reference rows' shapes and MambaVision's, forward\n"
          "and backward, for fp32, fp16 and bf16, d_state 8 and 16, with and without the\n"
          "gate z; the winners of the shipped tuning files made for these templates (what a\n"
          "tuned GPU runs); and the twins the launch plans may choose on the device instead:\n"
          "the lanes twin of each split=state backward that has one (twice the lanes, half\n"
          "the channels) and the pairs=1 twin of each that can take it (docs/design-waves.md,\n"
          "docs/design-pairs.md), and each split=state forward with half its items.\n"
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
  enum { CAPACITY = 1024 };
  static sf_variant grid[CAPACITY];
  int count = sf_default_grid(grid, CAPACITY);
  if (count < 0) {
    fprintf(stderr, "scanforge variants: out of memory\n");
    return 1;
  }
  if (count > CAPACITY) {
    fprintf(stderr, "scanforge variants: the grid has %d variants, more than the %d this command holds\n", count, CAPACITY);
    return 1;
  }
  for (int i = 0; i < count; i++) {
    char spec[512];
    sf_variant_format(&grid[i], spec, sizeof spec);
    puts(spec);
  }
  return 0;
}
