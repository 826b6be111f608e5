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
          "omitted keys take their defaults) and writes it to standard output or FILE. The\n"
          "source starts with comments naming the canonical spec and the template it comes\n"
          "from (op=fwd: scan_fwd.tpl with split=time, scan_fwd_states.tpl with split=state;\n"
          "op=bwd: scan_bwd.tpl, scan_bwd_states.tpl); #line directives name the template\n"
          "file and line of each part, so compiler messages point at templates.\n\n"
          "  -o, --output FILE   write the source to FILE instead of standard output\n\n"
          "keys (docs/variants.md says what each means and which values go together):\n"
          "  op (fwd|bwd), split (time|state), dstate (1..256), dtype (fp32|fp16|bf16),\n"
          "  threads (power of two), items, channels, states, minblocks, z, D, delta_bias,\n"
          "  softplus, deterministic, pairs, words (0|1), B, C (var|fixed)\n"
          "example: scanforge gen op=fwd,split=state,dstate=16,dtype=bf16,threads=4,items=16,channels=16\n\n"
          "SCANFORGE_TEMPLATE_DIR=dir reads the templates from dir (files it lacks come\n"
          "from the built-in set); a dir that does not exist is an error.\n"
          "exit status: 0 written, 1 generation or writing failed, 2 bad usage or a SPEC\n"
          "that the parser or the template refuses.\n");
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
  if (sf_variant_parse(argv[optind], &variant) != SF_OK || sf_variant_validate(&variant) != SF_OK) {
    cli_fail("gen", "bad variant");
    return CLI_USAGE;
  }
  if (cli_note_template_dir("gen") != CLI_OK) return CLI_FAILED;
  char *source;
  size_t length;
  sf_status st = sf_generate(&variant, &source, &length);
  if (st == SF_EINVAL) { /* the template refuses a key's value: a bad SPEC */
    cli_fail("gen", "bad variant");
    return CLI_USAGE;
  }
  if (st != SF_OK) return cli_fail("gen", "generation failed");
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
