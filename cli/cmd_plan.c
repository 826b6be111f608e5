/* cmd_plan.c: `scanforge plan`: what each row's forward and backward would launch on this
 * GPU, the tuned or heuristic variant and what the launch plan makes of it (its twins:
 * docs/design-waves.md), with blocks, blocks an SM and waves. Nothing is allocated or
 * timed, so any row size can be asked, also on the pretend driver (tests/fake_cuda). */
#define _DEFAULT_SOURCE /* strsep in the shared parsers */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/bench_rows.h"
#include "cli/bench_rows_source.h"
#include "cli/commands.h"
#include "cli/scan_common.h"
#include "scanforge/scanforge.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: scanforge plan [--rows FILE] [--dtype LIST] [--forward-only | --backward-only]\n"
          "                      [--block-states] [--deterministic] [--untuned]\n"
          "                      [--spec SPEC] [--bwd-spec SPEC]\n"
          "\n"
          "Prints what each row's forward and backward would launch on this GPU, without\n"
          "inputs and without timing: the variant the tuning database or the heuristics\n"
          "choose ('chosen'), what chose it ('by': 'tuned' where a tuning entry gives\n"
          "another launch than the heuristics, 'heuristic' where no entry reaches the row\n"
          "or it gives the same launch, 'spec' for --spec and --bwd-spec), the launch the\n"
          "launch plan runs ('runs': it may take a twin\n"
          "that fits the GPU better: more lanes, pairs=1, fewer steps a block, a register\n"
          "cap; docs/design-waves.md), its blocks, the blocks an SM holds (the driver's\n"
          "occupancy of the compiled kernel), waves (blocks over what the GPU holds at once)\n"
          "and segments (the sequence cut for parallelism). Kernels are compiled or read\n"
          "from the cache as a call would. Rows as `scanforge bench` takes them (every row:\n"
          "variable B and C, one group, D and delta_bias, softplus on).\n"
          "\n"
          "Launches are written threads/items/channels, then 'p' for pairs=1, 'sK' for K\n"
          "states a pass, '+bK' for a cap of K blocks an SM, 'w' for rows staged in 4-byte\n"
          "pieces (words=1).\n"
          "\n"
          "  --rows FILE      the rows (default: the reference rows, bench/rows_reference.txt;\n"
          "                   format: 'scanforge bench --help')\n"
          "  --dtype LIST     comma-separated types among fp32, fp16, bf16, for rows without one\n"
          "  --forward-only   the forward alone\n"
          "  --backward-only  the backward alone\n"
          "  --block-states   the training mode: the forward saves the state at every backward\n"
          "                   block's start (docs/design-block-states.md)\n"
          "  --deterministic  the backward's deterministic mode\n"
          "  --untuned        the heuristics alone, no tuning database\n"
          "  --spec SPEC      the forward's launch knobs, planned as a tuning entry's would be\n"
          "  --bwd-spec SPEC  the backward's launch knobs, likewise\n"
          "  -h, --help       this text\n"
          "\n"
          "Needs a CUDA GPU (or SCANFORGE_CUDA_LIBRARY naming another driver library).\n"
          "exit status: 0 every row planned, 1 a row or the setup failed (or no GPU), 2 bad usage.\n");
}

typedef struct plan_options {
  const char *rows_path, *spec, *bwd_spec;
  sf_dtype dtypes[3];
  int ndtypes;
  bool forward, backward, block_states, deterministic, untuned;
} plan_options;

static int usage_error(const char *what, const char *detail) {
  fprintf(stderr, "scanforge plan: %s: %s\n(see 'scanforge plan --help')\n", what, detail);
  return CLI_USAGE;
}

static int parse(int argc, char **argv, plan_options *o) {
  enum { OPT_ROWS = 256, OPT_DTYPE, OPT_FWD, OPT_BWD, OPT_BLOCK, OPT_DET, OPT_UNTUNED, OPT_SPEC, OPT_BWD_SPEC };
  static const struct option longs[] = {
      {"rows", required_argument, NULL, OPT_ROWS},       {"dtype", required_argument, NULL, OPT_DTYPE},
      {"forward-only", no_argument, NULL, OPT_FWD},      {"backward-only", no_argument, NULL, OPT_BWD},
      {"block-states", no_argument, NULL, OPT_BLOCK},    {"deterministic", no_argument, NULL, OPT_DET},
      {"untuned", no_argument, NULL, OPT_UNTUNED},       {"spec", required_argument, NULL, OPT_SPEC},
      {"bwd-spec", required_argument, NULL, OPT_BWD_SPEC}, {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  bool forward_only = false, backward_only = false;
  optind = 1;
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, "h", longs, NULL)) != -1;) {
    switch (c) {
      case OPT_ROWS: o->rows_path = optarg; break;
      case OPT_DTYPE:
        if (!cli_parse_dtype_list(optarg, o->dtypes, &o->ndtypes)) {
          char detail[160];
          snprintf(detail, sizeof detail, "expected a comma-separated list of distinct fp32, fp16, bf16, got '%s'", optarg);
          return usage_error("--dtype", detail);
        }
        break;
      case OPT_FWD: forward_only = true; break;
      case OPT_BWD: backward_only = true; break;
      case OPT_BLOCK: o->block_states = true; break;
      case OPT_DET: o->deterministic = true; break;
      case OPT_UNTUNED: o->untuned = true; break;
      case OPT_SPEC: o->spec = optarg; break;
      case OPT_BWD_SPEC: o->bwd_spec = optarg; break;
      case 'h': usage(stdout); return CLI_OK;
      default: return usage_error("unknown option or missing value", argv[optind - 1]);
    }
  }
  if (optind < argc) return usage_error("unexpected argument", argv[optind]);
  /* a spec the parser refuses is bad usage; whether its values fit a row is known per row */
  char why[900];
  if (o->spec && !cli_spec_parses(o->spec, false, why, sizeof why)) return usage_error("--spec", why);
  if (o->bwd_spec && !cli_spec_parses(o->bwd_spec, true, why, sizeof why)) return usage_error("--bwd-spec", why);
  if (forward_only && backward_only) return usage_error("--forward-only and --backward-only", "give one of them");
  if (forward_only && (o->deterministic || o->bwd_spec))
    return usage_error("--deterministic and --bwd-spec", "concern the backward, which --forward-only leaves out");
  if (backward_only && o->spec) return usage_error("--spec", "chooses the forward's launch, which --backward-only leaves out");
  o->forward = !backward_only;
  o->backward = !forward_only;
  return -1;
}

/* "4/8/16p+b8": threads/items/channels and the knobs that differ from the defaults. */
static void launch_text(const sf_variant *v, char *buf, size_t cap) {
  char states[16] = "", cap_text[16] = "";
  if (v->states > 1) snprintf(states, sizeof states, "s%d", v->states);
  if (v->min_blocks > 0) snprintf(cap_text, sizeof cap_text, "+b%d", v->min_blocks);
  snprintf(buf, cap, "%s%d/%d/%d%s%s%s%s", v->split_states ? "" : "time:", v->threads, v->items, v->channels,
           v->pairs ? "p" : "", states, cap_text, v->words ? "w" : "");
}

static void print_header(bool backward) {
  printf("\n%s\n%-20s %-5s %-16s %-9s %-16s %7s %6s %6s %8s\n", backward ? "backward" : "forward", "shape B,D,L,N",
         "type", "chosen", "by", "runs", "blocks", "per SM", "waves", "segments");
}

/* What chose `chosen`: a spec, a tuning entry (a launch other than the heuristics' own),
 * or the heuristics (no entry reaches the row, or the entry gives their launch). */
static const char *chosen_by(const sf_scan_bwd_args *args, const sf_variant *chosen, const plan_options *o,
                             bool backward) {
  if (backward ? o->bwd_spec != NULL : o->spec != NULL) return "spec";
  if (o->untuned) return "heuristic";
  const sf_launch untuned = {.untuned = true};
  sf_variant heuristic;
  const sf_status st = backward ? sf_scan_bwd_variant(args, &untuned, &heuristic)
                                : sf_scan_fwd_variant(&args->fwd, &untuned, &heuristic);
  char a[512], b[512];
  const int na = sf_variant_format(chosen, a, sizeof a), nb = sf_variant_format(&heuristic, b, sizeof b);
  if (st != SF_OK || na < 0 || nb < 0 || (size_t)na >= sizeof a || (size_t)nb >= sizeof b) return "?";
  return strcmp(a, b) == 0 ? "heuristic" : "tuned";
}

/* One row's line of a pass: 0, or 1 when it could not be planned (the reason printed). */
static int plan_row(sf_context *ctx, const bench_row *r, const plan_options *o, bool backward) {
  char label[96];
  bench_row_label(r, label, sizeof label);
  const sf_check_shape shape = {.batch = r->batch, .dim = r->dim, .seqlen = r->seqlen, .dstate = r->dstate,
                                .groups = 1, .dtype = r->dtype, .z = r->z, .D = true, .delta_bias = true,
                                .softplus = true, .deterministic = backward && o->deterministic};
  sf_scan_bwd_args args = cli_query_args(&shape);
  const char *spec = backward ? o->bwd_spec : o->spec;
  const sf_launch launch = {.spec = spec, .spec_planned = spec != NULL, .untuned = o->untuned};
  sf_variant chosen;
  sf_launch_shape runs;
  sf_status st = SF_OK;
  if (o->block_states) {
    /* the interval the backward's blocks want, which the forward saves at too */
    const sf_launch bwd_launch = {.spec = o->bwd_spec, .spec_planned = o->bwd_spec != NULL, .untuned = o->untuned};
    st = sf_scan_bwd_block_states_interval(&args, &bwd_launch, &args.fwd.state_interval);
  }
  if (st == SF_OK && backward) st = sf_scan_bwd_variant(&args, &launch, &chosen);
  if (st == SF_OK && backward) st = sf_scan_bwd_shape(ctx, &args, &launch, &runs);
  if (st == SF_OK && !backward) st = sf_scan_fwd_variant(&args.fwd, &launch, &chosen);
  if (st == SF_OK && !backward) st = sf_scan_fwd_shape(ctx, &args.fwd, &launch, &runs);
  if (st != SF_OK) {
    printf("%-20s %-5s error: %s\n", label, sf_dtype_name(r->dtype), sf_last_error());
    return 1;
  }
  char chosen_text[32], runs_text[32];
  launch_text(&chosen, chosen_text, sizeof chosen_text);
  launch_text(&runs.variant, runs_text, sizeof runs_text);
  const double at_once = (double)runs.blocks_per_sm * runs.sm_count;
  printf("%-20s %-5s %-16s %-9s %-16s %7lld %6d %6.2f %8lld\n", label, sf_dtype_name(r->dtype), chosen_text,
         chosen_by(&args, &chosen, o, backward), runs_text,
         (long long)runs.blocks, runs.blocks_per_sm, at_once > 0 ? (double)runs.blocks / at_once : 0.0,
         (long long)runs.segments);
  return 0;
}

static int run(const plan_options *o, const bench_row_list *rows) {
  sf_context *ctx = NULL;
  sf_device_info info;
  if (sf_device_get_info(0, &info) != SF_OK || sf_context_create(NULL, &ctx) != SF_OK)
    return cli_fail("plan", "cannot set up the GPU");
  size_t warnings_shown = 0;
  cli_print_warnings("plan", ctx, &warnings_shown);
  const char *tuning_warning = o->untuned ? NULL : sf_tuning_warning();
  if (tuning_warning) fprintf(stderr, "scanforge plan: warning: %s\n", tuning_warning);
  printf("GPU          %s, cc %d.%d, %d SMs\n", info.name, info.cc_major, info.cc_minor, info.sm_count);
  printf("choices      %s%s\n", o->untuned ? "heuristics (--untuned)" : "tuning database, else heuristics",
         o->spec || o->bwd_spec ? "; --spec/--bwd-spec where given, planned" : "");
  printf("saved states %s\n", o->block_states ? "at every backward block's start (--block-states)"
                                               : "every state interval (the default)");
  int failures = 0;
  for (int pass = 0; pass < 2; pass++) {
    const bool backward = pass == 1;
    if (backward ? !o->backward : !o->forward) continue;
    print_header(backward);
    for (int i = 0; i < rows->count; i++) failures += plan_row(ctx, &rows->rows[i], o, backward);
  }
  cli_print_warnings("plan", ctx, &warnings_shown);
  sf_context_destroy(ctx);
  if (failures) fprintf(stderr, "scanforge plan: %d row%s could not be planned\n", failures, failures == 1 ? "" : "s");
  return failures ? CLI_FAILED : CLI_OK;
}

int cmd_plan(int argc, char **argv) {
  plan_options o = {0};
  int status = parse(argc, argv, &o);
  if (status >= 0) return status;
  bench_row_list rows = {0};
  status = bench_rows_load("plan", o.rows_path, o.dtypes, o.ndtypes, &rows);
  if (status < 0 && cli_note_template_dir("plan") != CLI_OK) status = CLI_FAILED;
  if (status < 0) {
    char why[512];
    if (!cli_gpu_available(why, sizeof why)) {
      fprintf(stderr, "scanforge plan: needs a CUDA GPU, and none can be used here: %s\n", why);
      status = CLI_FAILED;
    } else {
      status = run(&o, &rows);
    }
  }
  bench_rows_free(&rows);
  return status;
}
