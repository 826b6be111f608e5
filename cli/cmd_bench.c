/* cmd_bench.c: scanforge bench: forward and backward times on the GPU against the floor.
 * The command itself: its options, the device header, the loop over the rows and the
 * --json file; the rows, timing, floor, tables, JSON rows and overheads are the bench_*.c
 * files beside it. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench_json.h"
#include "cli/bench_overheads.h"
#include "cli/bench_rows.h"
#include "cli/bench_rows_source.h"
#include "cli/bench_table.h"
#include "cli/bench_timing.h"
#include "cli/commands.h"
#include "cli/scan_common.h"
#include "base/error.h"
#include "runtime/compile/target.h"
#include "scanforge/scanforge.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: scanforge bench [--rows FILE] [--dtype LIST] [--json FILE] [--reps N] [--warmup N]\n"
          "                       [--forward-only | --backward-only] [--deterministic]\n"
          "                       [--spec SPEC] [--bwd-spec SPEC] [--tuned | --untuned] [--keep-pool]\n"
          "                       [--block-states] [--no-overheads]\n"
          "\n"
          "Times the forward and the backward selective scan on the GPU: random inputs rotated\n"
          "through enough copies that the working set exceeds 128 MiB (so the L2 cache does\n"
          "not serve repeated runs), warm-up first (kernel compile and load stay out of the\n"
          "numbers), each launch timed with CUDA events on its own stream, every launch's\n"
          "status checked; median, min and p90 of the repetitions. Every row: variable B and\n"
          "C, one group, D and delta_bias, softplus on. The backward runs on the states a\n"
          "forward saved on the same inputs, with a random dout, and writes every gradient\n"
          "(du, ddelta, dz with z, dA, dB, dC, dD, ddelta_bias).\n"
          "\n"
          "Two tables, forward then backward. Per row: the variant (threads/items/channels;\n"
          "a trailing p: the backward's pairs=1, docs/design-pairs.md),\n"
          "its waves (the main kernel's blocks over what the GPU holds at once: blocks an SM\n"
          "x SMs, the driver's occupancy; 1.1 means a second, nearly empty wave; JSON: blocks,\n"
          "blocks_per_sm, sm_count, segments), the time, GB/s, and the floor\n"
          "max(bytes / copy bandwidth, exps / (16 exp2 per SM per clock)) as a percentage of\n"
          "the time. Bytes: every input read once and every\n"
          "output written once; for the backward u, delta, z, dout, B, C (in T), A, D,\n"
          "delta_bias and the saved states read, du, ddelta, dz (in T), dB, dC (fp32), dA, dD,\n"
          "ddelta_bias written. Exps: batch*dim*L*N for either pass. Once per run: the GPU,\n"
          "the copy bandwidth measured in the same run and an empty launch timed as the rows\n"
          "are (no call takes less). Once per pass: a cold NVRTC compile, a disk-cache hit,\n"
          "an in-process kernel lookup and the host time of one call through the C API.\n"
          "\n"
          "  --rows FILE      the rows to run instead of the reference rows\n"
          "                   (bench/rows_reference.txt; file format below)\n"
          "  --dtype LIST     comma-separated types among fp32, fp16, bf16. Without --rows and\n"
          "                   without --dtype: the reference rows in the types they list;\n"
          "                   with --dtype: every reference shape in each type of LIST. Rows of a\n"
          "                   file without a type run in each type of LIST (default fp32,bf16)\n"
          "  --json FILE      also write every number to FILE as JSON (a row's backward under\n"
          "                   \"backward\", its deterministic mode under \"backward_deterministic\")\n"
          "  --forward-only   time the forward alone\n"
          "  --backward-only  time the backward alone\n"
          "  --deterministic  also time the backward's deterministic mode (fixed-order sums,\n"
          "                   bitwise reproducible) on the same inputs: columns 'det us' and\n"
          "                   'det cost' (its time over the default backward's)\n"
          "  --spec SPEC      the forward's launch knobs (threads, items, channels, states) for\n"
          "                   every row, in place of the tuned or heuristic choice\n"
          "  --bwd-spec SPEC  the backward's launch knobs for every row (runs as written: no\n"
          "                   lanes twin or pairs=1 from the launch plan); with split=time\n"
          "                   its threads x items must equal the state interval of L (the\n"
          "                   next power of two >= L, clamped to 64..512)\n"
          "  --tuned          launch configurations from the tuning database, else the\n"
          "                   heuristics (the default; docs/tuning.md)\n"
          "  --untuned        the heuristics alone, to compare with --tuned\n"
          "  --keep-pool      let the device's default memory pool keep its memory across\n"
          "                   synchronizations (release threshold: no limit), so that a\n"
          "                   call's workspace (segment carries, deterministic partial sums)\n"
          "                   never waits for the driver to map memory: an experiment, to\n"
          "                   compare with the default\n"
          "  --block-states   the training mode: the forward saves the state at the start of\n"
          "                   each of the backward's blocks (every `items` steps of its\n"
          "                   variant), so the backward recomputes no states before a block;\n"
          "                   more memory (N x 4 / items bytes per step and channel), a\n"
          "                   slower forward, a faster backward (docs/design-block-states.md)\n"
          "  --no-overheads   leave out the once-per-pass costs (cold compile, disk-cache and\n"
          "                   in-process hits, host launch): a sweep of launches over few\n"
          "                   rows then times only the rows (each run would otherwise\n"
          "                   compile the first row's kernel cold, seconds at large d_state)\n"
          "  --reps N         timed launches per row and pass (default 50)\n"
          "  --warmup N       untimed launches per row and pass first (default 10)\n"
          "  -h, --help       this text\n"
          "\n"
          "rows file: one row per line, 'batch,dim,L,N[,z][,dtype]'; 'z' adds the gate;\n"
          "blanks are ignored and '#' starts a comment:\n"
          "  # Mamba-130M training, gated, in bf16\n"
          "  8,1536,2048,16,z,bf16\n"
          "  64,160,196,8          # MambaVision-T stage 3, in each --dtype\n"
          "\n"
          "Needs a CUDA GPU ('scanforge check --device cpu' and 'scanforge demo' run without).\n"
          "exit status: 0 every row ran, 1 a row or the setup failed (or no GPU), 2 bad usage.\n");
}

static int usage_error(const char *fmt, const char *value) {
  fprintf(stderr, "scanforge bench: ");
  fprintf(stderr, fmt, value);
  fprintf(stderr, "\n(see 'scanforge bench --help')\n");
  return 2;
}

typedef struct bench_options {
  const char *rows_path, *json_path;
  sf_dtype dtypes[3];
  int ndtypes; /* 0: not given */
  long long reps, warmup;
  bool forward, backward; /* the passes to time (--forward-only, --backward-only) */
  bool deterministic;     /* the backward's deterministic mode too */
  bool keep_pool;         /* --keep-pool: the default pool's release threshold at no limit */
  bool no_overheads;      /* --no-overheads: time the rows alone */
} bench_options;

static int parse(int argc, char **argv, bench_options *o) {
  enum {
    OPT_ROWS = 256, OPT_DTYPE, OPT_JSON, OPT_REPS, OPT_WARMUP, OPT_SPEC, OPT_BWD_SPEC, OPT_TUNED, OPT_UNTUNED,
    OPT_FORWARD_ONLY, OPT_BACKWARD_ONLY, OPT_DETERMINISTIC, OPT_KEEP_POOL, OPT_BLOCK_STATES, OPT_NO_OVERHEADS
  };
  static const struct option options[] = {
      {"rows", required_argument, NULL, OPT_ROWS}, {"dtype", required_argument, NULL, OPT_DTYPE},
      {"json", required_argument, NULL, OPT_JSON}, {"reps", required_argument, NULL, OPT_REPS},
      {"warmup", required_argument, NULL, OPT_WARMUP}, {"spec", required_argument, NULL, OPT_SPEC},
      {"bwd-spec", required_argument, NULL, OPT_BWD_SPEC},
      {"tuned", no_argument, NULL, OPT_TUNED}, {"untuned", no_argument, NULL, OPT_UNTUNED},
      {"forward-only", no_argument, NULL, OPT_FORWARD_ONLY},
      {"backward-only", no_argument, NULL, OPT_BACKWARD_ONLY},
      {"deterministic", no_argument, NULL, OPT_DETERMINISTIC},
      {"keep-pool", no_argument, NULL, OPT_KEEP_POOL},
      {"block-states", no_argument, NULL, OPT_BLOCK_STATES},
      {"no-overheads", no_argument, NULL, OPT_NO_OVERHEADS},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  bool forward_only = false, backward_only = false;
  optind = 1;
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, ":h", options, NULL)) != -1;) {
    switch (c) {
      case OPT_ROWS: o->rows_path = optarg; break;
      case OPT_BWD_SPEC: bench_launch_bwd_spec = optarg; break;
      case OPT_FORWARD_ONLY: forward_only = true; break;
      case OPT_BACKWARD_ONLY: backward_only = true; break;
      case OPT_DETERMINISTIC: o->deterministic = true; break;
      case OPT_KEEP_POOL: o->keep_pool = true; break;
      case OPT_BLOCK_STATES: bench_block_states = true; break;
      case OPT_NO_OVERHEADS: o->no_overheads = true; break;
      case OPT_DTYPE:
        if (!cli_parse_dtype_list(optarg, o->dtypes, &o->ndtypes))
          return usage_error("--dtype: expected a comma-separated list of distinct fp32, fp16, bf16, got '%s'", optarg);
        break;
      case OPT_JSON: o->json_path = optarg; break;
      case OPT_SPEC: bench_launch_spec = optarg; break;
      case OPT_TUNED: bench_launch_untuned = false; break;
      case OPT_UNTUNED: bench_launch_untuned = true; break;
      case OPT_REPS:
        if (!cli_parse_positive(optarg, 1000000, &o->reps))
          return usage_error("--reps: expected an integer in 1..1000000, got '%s'", optarg);
        break;
      case OPT_WARMUP:
        if (strcmp(optarg, "0") == 0)
          o->warmup = 0;
        else if (!cli_parse_positive(optarg, 1000000, &o->warmup))
          return usage_error("--warmup: expected an integer in 0..1000000, got '%s'", optarg);
        break;
      case 'h': usage(stdout); return 0;
      case ':': return usage_error("missing the value of %s", argv[optind - 1]);
      default: return usage_error("unknown option %s", argv[optind - 1]);
    }
  }
  if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
  /* A spec the parser refuses is bad usage, found before anything runs; whether its
   * values fit a row is known per row. */
  const char *specs[][2] = {{"--spec", bench_launch_spec}, {"--bwd-spec", bench_launch_bwd_spec}};
  for (int i = 0; i < 2; i++) {
    char why[900], text[1024];
    if (specs[i][1] && !cli_spec_parses(specs[i][1], i == 1, why, sizeof why)) {
      snprintf(text, sizeof text, "%s: %s", specs[i][0], why);
      return usage_error("%s", text);
    }
  }
  if (forward_only && backward_only)
    return usage_error("--forward-only and --backward-only: %s", "give one of them (neither times both)");
  o->forward = !backward_only;
  o->backward = !forward_only;
  if (forward_only && o->deterministic)
    return usage_error("--deterministic: %s", "a mode of the backward, which --forward-only leaves out");
  if (forward_only && bench_launch_bwd_spec)
    return usage_error("--bwd-spec: %s", "chooses the backward's launch, which --forward-only leaves out");
  if (backward_only && bench_launch_spec)
    return usage_error("--spec: %s", "chooses the forward's launch, which --backward-only leaves out (--bwd-spec: the backward's)");
  return -1;
}

static void print_device(const bench_gpu *g, const bench_options *o, size_t copy_bytes, json_t *root) {
  char arch[32];
  sf_target_format(g->target, arch, sizeof arch);
  printf("GPU                %s, cc %d.%d (%s), %d SMs at %.0f MHz, %.0f MiB L2, driver %d\n", g->info.name,
         g->info.cc_major, g->info.cc_minor, arch, g->info.sm_count, g->info.clock_khz / 1e3,
         g->info.l2_bytes / 1048576.0, g->info.driver_version);
  printf("copy bandwidth     %.0f GB/s (device-to-device copy of %zu MiB, read + written, median of 10)\n",
         g->copy_bytes_per_s / 1e9, copy_bytes >> 20);
  printf("exp2 rate          %.2e per s (16 per SM per clock)\n", g->exp2_per_s);
  if (g->empty_launch_us >= 0)
    printf("empty launch       %.1f us (a kernel of one thread that returns at once, timed as the rows are:\n"
           "                   no call takes less)\n", g->empty_launch_us);
  printf("method             median of %lld launches after %lld warm-up, CUDA events, inputs rotated over\n"
         "                   >= 128 MiB, %s\n",
         o->reps, o->warmup,
         g->timer.spin ? "each launch queued behind a 100 us spin kernel (host enqueue time kept out)"
                 : "no spin kernel (it did not load): small rows include host enqueue time");
  printf("configurations     %s%s\n", bench_launch_spec || bench_launch_bwd_spec ? "--spec/--bwd-spec where given, else " : "",
         bench_launch_untuned ? "heuristics (--untuned)" : "tuning database, else heuristics (--tuned)");
  printf("memory pool        %s\n", o->keep_pool ? "the default pool keeps its memory across synchronizations (--keep-pool)"
                                              : "the default pool as the driver leaves it (release threshold 0)");
  printf("passes             %s%s\n",
         o->forward && o->backward ? "forward; backward on a forward's saved states, dout random"
         : o->forward              ? "forward (--forward-only)"
                                   : "backward on a forward's saved states, dout random (--backward-only)",
         o->deterministic ? "\n                   and the backward's deterministic mode (--deterministic)" : "");
  printf("saved states       %s\n", bench_block_states ? "at every backward block's start (--block-states)"
                                                        : "every state interval (the default: 64-512 steps by L)");
  json_t *device = json_object();
  json_object_set_new(device, "name", json_string(g->info.name));
  json_object_set_new(device, "cc", json_integer(g->info.cc_major * 10 + g->info.cc_minor));
  json_object_set_new(device, "target", json_string(arch));
  json_object_set_new(device, "sm_count", json_integer(g->info.sm_count));
  json_object_set_new(device, "clock_khz", json_integer(g->info.clock_khz));
  json_object_set_new(device, "l2_bytes", json_integer(g->info.l2_bytes));
  json_object_set_new(device, "memory_bytes", json_integer((json_int_t)g->info.total_memory));
  json_object_set_new(device, "driver_version", json_integer(g->info.driver_version));
  json_object_set_new(root, "device", device);
  json_object_set_new(root, "copy_bandwidth_gb_per_s", json_real(g->copy_bytes_per_s / 1e9));
  json_object_set_new(root, "copy_bytes", json_integer((json_int_t)copy_bytes));
  json_object_set_new(root, "exp2_per_s", json_real(g->exp2_per_s));
  if (g->empty_launch_us >= 0) json_object_set_new(root, "empty_launch_us", json_real(g->empty_launch_us));
  json_object_set_new(root, "reps", json_integer(o->reps));
  json_object_set_new(root, "warmup", json_integer(o->warmup));
  json_object_set_new(root, "spin_kernel", json_boolean(g->timer.spin != NULL));
  json_object_set_new(root, "tuned", json_boolean(!bench_launch_untuned && !bench_launch_spec));
  json_object_set_new(root, "untuned", json_boolean(bench_launch_untuned));
  json_object_set_new(root, "block_states", json_boolean(bench_block_states));
  json_object_set_new(root, "keep_pool", json_boolean(o->keep_pool));
  json_object_set_new(root, "no_overheads", json_boolean(o->no_overheads));
  if (bench_launch_spec) json_object_set_new(root, "spec", json_string(bench_launch_spec));
  if (bench_launch_bwd_spec) json_object_set_new(root, "bwd_spec", json_string(bench_launch_bwd_spec));
  json_t *passes = json_array();
  if (o->forward) json_array_append_new(passes, json_string(bench_pass_key[PASS_FWD]));
  if (o->backward) json_array_append_new(passes, json_string(bench_pass_key[PASS_BWD]));
  if (o->deterministic) json_array_append_new(passes, json_string(bench_pass_key[PASS_BWD_DET]));
  json_object_set_new(root, "passes", passes);
}

/* Everything after the GPU is set up; returns how many rows failed (any of their passes). */
int bench_all(bench_gpu *g, const bench_options *o, const bench_row_list *rows, json_t *root) {
  json_t *overheads = json_object(), *bwd_overheads = json_object(), *jrows = json_array();
  json_object_set_new(root, "overheads", overheads); /* the forward's at the top, as before */
  if (o->backward) json_object_set_new(overheads, "backward", bwd_overheads);
  else json_decref(bwd_overheads);
  json_object_set_new(root, "rows", jrows);

  sf_variant fwd_first, bwd_first;
  bool have_fwd = false, have_bwd = false;
  printf("\n");
  if (o->forward && !o->no_overheads) have_fwd = bench_first_variant(g, rows, false, overheads, &fwd_first);
  if (o->backward && !o->no_overheads) have_bwd = bench_first_variant(g, rows, true, bwd_overheads, &bwd_first);

  bench_row_result *results = calloc((size_t)rows->count, sizeof *results);
  if (!results) {
    cli_fail("bench", "out of memory");
    return rows->count;
  }
  if (o->forward) {
    printf("\n");
    bench_table_header(PASS_FWD, false);
    for (int i = 0; i < rows->count; i++) {
      bench_time_forward(g, &rows->rows[i], (int)o->reps, (int)o->warmup, &results[i].pass[PASS_FWD]);
      bench_table_row(&rows->rows[i], &results[i], PASS_FWD);
    }
  }
  if (o->backward) {
    printf("\n");
    bench_table_header(PASS_BWD, o->deterministic);
    for (int i = 0; i < rows->count; i++) {
      bench_time_backward(g, &rows->rows[i], (int)o->reps, (int)o->warmup, o->deterministic, &results[i]);
      bench_table_row(&rows->rows[i], &results[i], PASS_BWD);
    }
  }
  printf("(floor us = max(bytes / copy bandwidth, exps / exp2 rate), exps = B*D*L*N.%s%s)\n\n",
         o->backward ? "\n backward bytes: u, delta, z, dout, B, C (in T), A, D, delta_bias, saved states read once;\n"
                       " du, ddelta, dz (in T), dB, dC (fp32), dA, dD, ddelta_bias written once." : "",
         o->deterministic ? "\n det cost: the deterministic mode's time over the default backward's." : "");

  int failures = 0;
  for (int i = 0; i < rows->count; i++) {
    bool ok = true;
    for (int p = 0; p < PASSES; p++) ok = ok && (!results[i].pass[p].ran || results[i].pass[p].ok);
    failures += !ok;
    json_array_append_new(jrows, bench_row_json(&rows->rows[i], &results[i]));
  }
  free(results);

  if (o->forward && !o->no_overheads) bench_measure_cached(g, have_fwd, &fwd_first, false, overheads);
  if (o->backward && !o->no_overheads) bench_measure_cached(g, have_bwd, &bwd_first, true, bwd_overheads);
  return failures;
}

static int run(const bench_options *o, const bench_row_list *rows) {
  bench_gpu g = {0};
  size_t copy_bytes = 0;
  if (bench_gpu_open(&g) != SF_OK) {
    cli_fail("bench", "cannot set up the GPU");
    bench_gpu_close(&g);
    return 1;
  }
  if (o->keep_pool && bench_gpu_keep_pool(&g) != SF_OK) {
    cli_fail("bench", "--keep-pool: cannot set the default memory pool's release threshold");
    bench_gpu_close(&g);
    return 1;
  }
  size_t warnings_shown = 0;
  cli_print_warnings("bench", g.ctx, &warnings_shown);
  const char *tuning_warning = bench_launch_untuned ? NULL : sf_tuning_warning();
  if (tuning_warning) fprintf(stderr, "scanforge bench: warning: %s\n", tuning_warning);
  if (bench_measure_copy(&g, &copy_bytes) != SF_OK) {
    cli_fail("bench", "cannot measure the copy bandwidth");
    bench_gpu_close(&g);
    return 1;
  }
  if (bench_measure_empty_launch(&g) != SF_OK) {
    cli_fail("bench", "cannot time an empty launch");
    bench_gpu_close(&g);
    return 1;
  }
  json_t *root = json_object();
  print_device(&g, o, copy_bytes, root);
  int failures = bench_all(&g, o, rows, root);
  if (o->json_path) {
    if (json_dump_file(root, o->json_path, JSON_INDENT(2) | JSON_REAL_PRECISION(6)) != 0) {
      fprintf(stderr, "scanforge bench: --json: cannot write '%s'\n", o->json_path);
      failures++;
    } else {
      printf("\nwrote %s\n", o->json_path);
    }
  }
  json_decref(root);
  bench_gpu_close(&g);
  if (failures) fprintf(stderr, "scanforge bench: %d row%s failed\n", failures, failures == 1 ? "" : "s");
  return failures ? 1 : 0;
}

int cmd_bench(int argc, char **argv) {
  bench_options o = {.reps = 50, .warmup = 10};
  int status = parse(argc, argv, &o);
  if (status >= 0) return status;
  bench_row_list rows = {0};
  status = bench_rows_load("bench", o.rows_path, o.dtypes, o.ndtypes, &rows);
  if (status < 0 && cli_note_template_dir("bench") != CLI_OK) status = CLI_FAILED;
  if (status < 0) {
    char why[512];
    if (!cli_gpu_available(why, sizeof why)) {
      fprintf(stderr,
              "scanforge bench: needs a CUDA GPU, and none can be used here: %s\n"
              "('scanforge check --device cpu' and 'scanforge demo' run without one)\n",
              why);
      status = 1;
    } else {
      status = run(&o, &rows);
    }
  }
  bench_rows_free(&rows);
  return status;
}
