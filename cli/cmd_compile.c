/* cmd_compile.c: scanforge compile: a variant (or a CUDA file) -> cubin or PTX, and its resource report. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "generator/generator.h"
#include "runtime/compile/compile.h"
#include "runtime/compile/occupancy.h"
#include "runtime/cuda/dynamic_shared.h"
#include "scanforge/scanforge.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: scanforge compile SPEC --arch sm_XY [-o FILE] [--ptx] [--log]\n"
          "       scanforge compile --source FILE.cu --arch sm_XY [-o FILE] [--ptx] [--log]\n"
          "       scanforge compile --list-archs\n"
          "\n"
          "Generates the CUDA source of the variant SPEC, compiles it with NVRTC and prints\n"
          "the binary's size, registers, spills, shared memory, stack and compile time; for a\n"
          "SPEC also how many of its blocks one SM of that arch holds at once and what limits\n"
          "them (registers, shared memory with the driver's reserve, threads, the cap per SM),\n"
          "for the main kernel and, in split=state modules, its block-states entry point\n"
          "(sf_scan_fwd_inner_saves, sf_scan_bwd_block_states: docs/design-block-states.md).\n"
          "\n"
          "  SPEC               variant spec; omitted keys take their defaults\n"
          "  -a, --arch ARCH    target GPU: sm_75, sm_90, ... (or just 90) for a cubin;\n"
          "                     compute_90, ... for PTX (as --ptx); required\n"
          "  -o, --output FILE  write the cubin (or PTX) to FILE; default: no file, report only\n"
          "      --ptx          emit PTX for compute_XY instead of a cubin\n"
          "      --source FILE  compile this CUDA file instead of generating SPEC ('-': stdin)\n"
          "      --log          print the whole NVRTC log (ptxas report); warnings always print\n"
          "      --list-archs   print the archs this NVRTC can compile for, one a line\n"
          "  -h, --help         this text\n"
          "\n"
          "example:\n"
          "  scanforge compile op=fwd,dstate=16,dtype=bf16 --arch sm_90 -o scan_fwd.cubin\n"
          "  scanforge gen op=fwd,dstate=16 > k.cu && scanforge compile --source k.cu --arch sm_80\n"
          "\n"
          "Generated sources carry #line directives, so NVRTC's messages name the template\n"
          "file and line (templates/scan_fwd.tpl(36): error ...), and the source lines in\n"
          "error are quoted under those names. SCANFORGE_TEMPLATE_DIR=dir reads the templates\n"
          "from dir (files it lacks come from the built-in set).\n"
          "\n"
          "exit status: 0 compiled, 1 failed (the NVRTC log and the source lines in error go\n"
          "to stderr), 2 bad usage: options, a SPEC the parser or a template refuses, a\n"
          "--source file that cannot be read.\n");
}

static int usage_error(const char *what, const char *detail) {
  fprintf(stderr, "scanforge compile: %s%s\n(see 'scanforge compile --help')\n", what, detail);
  return 2;
}

/* "sm_90", "compute_90" or "90" -> 90 (*virtual_arch set for compute_90: PTX); 0 when
 * it is none of those. */
static int parse_arch(const char *text, int *virtual_arch) {
  *virtual_arch = 0;
  if (strncmp(text, "sm_", 3) == 0) {
    text += 3;
  } else if (strncmp(text, "compute_", 8) == 0) {
    text += 8;
    *virtual_arch = 1;
  }
  char *end;
  long arch = strtol(text, &end, 10);
  return (*text && !*end && arch > 0 && arch < 10000) ? (int)arch : 0;
}

static int list_archs(void) {
  int count = 0;
  if (sf_nvrtc_archs(NULL, 0, &count) != SF_OK) return cli_fail("compile", "cannot list archs");
  int *archs = calloc((size_t)count + 1, sizeof *archs);
  if (!archs || sf_nvrtc_archs(archs, count, &count) != SF_OK) {
    free(archs);
    return cli_fail("compile", "cannot list archs");
  }
  for (int i = 0; i < count; i++) printf("sm_%d\n", archs[i]);
  free(archs);
  return 0;
}

/* Reads a whole file ("-": stdin) into a new NUL-terminated buffer; NULL on failure. */
static char *read_text(const char *path) {
  FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!in) return NULL;
  size_t length = 0, capacity = 1 << 16;
  char *text = malloc(capacity);
  for (size_t got = 1; text && got > 0;) {
    if (capacity - length < 2) {
      char *grown = realloc(text, capacity * 2);
      if (!grown) {
        free(text);
        text = NULL;
        break;
      }
      text = grown;
      capacity *= 2;
    }
    got = fread(text + length, 1, capacity - length - 1, in);
    length += got;
  }
  int failed = ferror(in);
  if (in != stdin) fclose(in);
  if (!text || failed) {
    free(text);
    return NULL;
  }
  text[length] = '\0';
  return text;
}

/* The variant's generated source into *source; returns the exit status (the reason
 * printed): a SPEC that the parser or the template refuses is bad usage. */
static int generate(const char *spec, sf_variant *variant, char *canonical, size_t capacity, char **source) {
  *source = NULL;
  if (sf_variant_parse(spec, variant) != SF_OK || sf_variant_validate(variant) != SF_OK) {
    cli_fail("compile", "bad variant");
    return CLI_USAGE;
  }
  sf_variant_format(variant, canonical, capacity);
  if (cli_note_template_dir("compile") != CLI_OK) return CLI_FAILED;
  size_t length;
  sf_status st = sf_generate(variant, source, &length);
  if (st != SF_OK) {
    cli_fail("compile", st == SF_EINVAL ? "bad variant" : "cannot generate the source");
    return st == SF_EINVAL ? CLI_USAGE : CLI_FAILED;
  }
  return CLI_OK;
}

static int write_binary(const char *path, const sf_binary *b) {
  FILE *out = fopen(path, "wb");
  if (!out) {
    perror(path);
    return 0;
  }
  int ok = fwrite(b->data, 1, b->size, out) == b->size;
  ok = (fclose(out) == 0) && ok;
  if (!ok) {
    perror(path);
    remove(path); /* no half-written cubin left behind */
  }
  return ok;
}

static void print_bytes_field(const char *name, int value) {
  if (value >= 0)
    printf("%-10s %d bytes\n", name, value);
  else
    printf("%-10s unknown\n", name);
}

/* Blocks of `block_threads` threads an SM of the binary's arch holds, from the main
 * kernel's own registers and shared memory (`entry`; the lines above give the module's
 * largest) with the dynamic shared memory its launches pass, and what limits them. */
static void print_occupancy(const sf_binary *b, const char *entry, int block_threads, int dynamic_shared) {
  sf_occupancy o;
  int registers, shared;
  if (block_threads <= 0 || sf_binary_kernel_resources(b, entry, &registers, &shared) != SF_OK) return;
  if (sf_occupancy_estimate(b->arch, block_threads, registers, shared + dynamic_shared, &o) != SF_OK) {
    printf("%-10s unknown for sm_%d\n", "occupancy", b->arch);
    return;
  }
  printf("%-10s %s: %d blocks of %d threads an SM, limited by %s (registers allow %d, shared memory %d, threads %d, the cap %d)\n",
         "occupancy", entry, o.blocks, block_threads, o.limited_by, o.by_registers, o.by_shared, o.by_threads,
         o.by_blocks);
}

static void report(const char *what, const char *template_text, const sf_binary *b, const char *output,
                   const char *entry, const char *block_states_entry, int block_threads, int dynamic_shared) {
  printf("%-10s %s\n", "compiled", what);
  if (template_text) printf("%-10s %s\n", "template", template_text);
  printf("%-10s %s_%d\n", "arch", b->is_ptx ? "compute" : "sm", b->arch);
  printf("%-10s %zu bytes of %s%s%s\n", "size", b->size, b->is_ptx ? "PTX" : "cubin",
         output ? " -> " : "", output ? output : "");
  if (b->registers >= 0)
    printf("%-10s %d\n", "registers", b->registers);
  else
    printf("%-10s unknown\n", "registers");
  if (b->spill_stores >= 0 && b->spill_loads >= 0)
    printf("%-10s %d bytes stored, %d bytes loaded\n", "spills", b->spill_stores, b->spill_loads);
  else
    printf("%-10s unknown\n", "spills");
  print_bytes_field("shared", b->shared_bytes);
  if (dynamic_shared > 0) printf("%-10s %d bytes a launch (above 48 KB: docs/design-dynamic-shared.md)\n", "dynamic", dynamic_shared);
  print_bytes_field("stack", b->stack_bytes);
  if (entry) print_occupancy(b, entry, block_threads, dynamic_shared);
  /* the main kernel's stand-in for block states, where the module has one (split=state) */
  if (block_states_entry) print_occupancy(b, block_states_entry, block_threads, dynamic_shared);
  printf("%-10s %.1f ms\n", "time", b->compile_ms);
}

int cmd_compile(int argc, char **argv) {
  enum { OPT_PTX = 256, OPT_SOURCE, OPT_LOG, OPT_LIST_ARCHS };
  static const struct option options[] = {
      {"arch", required_argument, NULL, 'a'},       {"output", required_argument, NULL, 'o'},
      {"ptx", no_argument, NULL, OPT_PTX},          {"source", required_argument, NULL, OPT_SOURCE},
      {"log", no_argument, NULL, OPT_LOG},          {"list-archs", no_argument, NULL, OPT_LIST_ARCHS},
      {"help", no_argument, NULL, 'h'},             {NULL, 0, NULL, 0},
  };
  const char *arch_text = NULL, *output = NULL, *source_path = NULL;
  int want_ptx = 0, show_log = 0, want_list = 0;
  optind = 1;
  opterr = 0; /* we word the usage errors ourselves */
  for (int c; (c = getopt_long(argc, argv, ":a:o:h", options, NULL)) != -1;) {
    switch (c) {
      case 'a': arch_text = optarg; break;
      case 'o': output = optarg; break;
      case OPT_PTX: want_ptx = 1; break;
      case OPT_SOURCE: source_path = optarg; break;
      case OPT_LOG: show_log = 1; break;
      case OPT_LIST_ARCHS: want_list = 1; break;
      case 'h': usage(stdout); return 0;
      case ':': return usage_error("missing the value of ", argv[optind - 1]);
      default: return usage_error("unknown option ", argv[optind - 1]);
    }
  }
  if (want_list) return optind == argc ? list_archs() : usage_error("--list-archs takes no SPEC", "");

  const char *spec = optind < argc ? argv[optind] : NULL;
  if (optind + 1 < argc) return usage_error("more than one SPEC", "");
  if (!spec && !source_path) return usage_error("missing SPEC (or --source FILE)", "");
  if (spec && source_path) return usage_error("give a SPEC or --source, not both", "");
  if (!arch_text) return usage_error("missing --arch (e.g. --arch sm_90; --list-archs lists them)", "");
  int virtual_arch;
  int arch = parse_arch(arch_text, &virtual_arch);
  if (!arch) return usage_error("--arch expects sm_XY (a cubin) or compute_XY (PTX), e.g. sm_90, got ", arch_text);
  if (virtual_arch) want_ptx = 1; /* compute_XY is a virtual architecture: only PTX exists for it */

  char what[1024], template_text[4200] = "";
  int block_threads = 0;     /* known for a SPEC: the occupancy line */
  const char *entry = NULL; /* its main kernel */
  const char *block_states_entry = NULL; /* and its block-states stand-in */
  char *source;
  const char *source_name;
  if (source_path) {
    source = read_text(source_path);
    if (!source) {
      fprintf(stderr, "scanforge compile: --source: cannot read '%s': %s\n", source_path, strerror(errno));
      return CLI_USAGE;
    }
    source_name = strcmp(source_path, "-") == 0 ? "stdin.cu" : source_path;
    snprintf(what, sizeof what, "%s", source_name);
  } else {
    sf_variant variant;
    int rc = generate(spec, &variant, what, sizeof what, &source);
    if (rc != CLI_OK) return rc;
    source_name = variant.op == SF_OP_FWD ? "scan_fwd.cu" : "scan_bwd.cu";
    block_threads = sf_variant_block_threads(&variant);
    entry = sf_kernel_name(variant.op);
    block_states_entry = sf_block_states_entry(variant.op);
    cli_describe_template(sf_template_of(&variant), template_text, sizeof template_text);
  }

  sf_binary binary;
  sf_status status = sf_compile(source, source_name, arch, want_ptx, &binary);
  const int dynamic_shared = sf_source_dynamic_shared(source);
  free(source);
  /* An architecture NVRTC or scanforge does not take is bad usage, like a bad spec. */
  if (status == SF_EINVAL) return cli_fail("compile", "compilation failed"), CLI_USAGE;
  if (status != SF_OK) return cli_fail("compile", "compilation failed");
  if (show_log || strstr(binary.log, "warning"))
    fprintf(stderr, "%s", binary.log); /* warnings matter to a template author */
  int ok = !output || write_binary(output, &binary);
  if (ok) report(what, template_text[0] ? template_text : NULL, &binary, output, entry, block_states_entry, block_threads,
                dynamic_shared);
  sf_binary_free(&binary);
  return ok ? 0 : 1;
}
