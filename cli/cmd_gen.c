/* cmd_gen.c: scanforge gen SPEC [-o FILE]: the generated CUDA source of a variant. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands.h"
#include "generator/generator.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: scanforge gen SPEC [-o FILE]\n\n"
          "Generates the CUDA source of the variant SPEC (a comma-separated key=value list;\n"
          "omitted keys take their defaults) and writes it to standard output or FILE.\n\n"
          "  -o, --output FILE   write the source to FILE instead of standard output\n\n"
          "keys: op (fwd|bwd), dstate (1..256), dtype (fp32|fp16|bf16), threads (power of\n"
          "two), items, channels, z, D, delta_bias, softplus (0|1), B, C (var|fixed)\n"
          "example: scanforge gen dstate=16,dtype=bf16,threads=32,items=8,z=1,D=1\n"
          "SCANFORGE_TEMPLATE_DIR=dir reads the templates from dir (files it lacks come\n"
          "from the built-in set).\n");
}

int cmd_gen(int argc, char **argv) {
  static const struct option options[] = {
      {"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'}, {0}};
  const char *output = NULL;
  int c;
  while ((c = getopt_long(argc, argv, "o:h", options, NULL)) != -1) {
    if (c == 'o') output = optarg;
    else if (c == 'h') { usage(stdout); return 0; }
    else { usage(stderr); return 2; }
  }
  if (optind != argc - 1) {
    fprintf(stderr, "scanforge gen: expected one SPEC argument, got %d\n", argc - optind);
    usage(stderr);
    return 2;
  }
  sf_variant variant;
  if (sf_variant_parse(argv[optind], &variant) != SF_OK) return cli_fail("gen", "bad variant");
  char *source;
  size_t length;
  if (sf_generate(&variant, &source, &length) != SF_OK) return cli_fail("gen", "generation failed");
  FILE *out = output ? fopen(output, "wb") : stdout;
  if (!out) {
    perror(output);
    free(source);
    return 1;
  }
  size_t written = fwrite(source, 1, length, out);
  int failed = written != length || (output ? fclose(out) != 0 : fflush(out) != 0);
  free(source);
  if (failed) {
    fprintf(stderr, "scanforge gen: could not write %s\n", output ? output : "standard output");
    return 1;
  }
  return 0;
}
