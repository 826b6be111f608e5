/* cmd_bench.c: scanforge bench: forward and backward times on the GPU against the floor. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench_rows.h"
#include "cli/commands.h"
#include "cli/scan_common.h"
#include "generator/generator.h"
#include "runtime/cache/cache.h"
#include "runtime/compile/compile.h"
#include "runtime/launch/context.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_driver.h"
#include "base/error.h"
#include "runtime/launch/kernels.h"
#include "runtime/compile/target.h"
#include "scanforge/scanforge.h"
#include "tuning/measure.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: scanforge bench [--rows FILE] [--dtype LIST] [--json FILE] [--reps N] [--warmup N]\n"
          "                       [--forward-only | --backward-only] [--deterministic]\n"
          "                       [--spec SPEC] [--bwd-spec SPEC] [--tuned | --untuned]\n"
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
          "Two tables, forward then backward. Per row: the variant (threads/items/channels),\n"
          "the time, GB/s, and the floor max(bytes / copy bandwidth, exps / (16 exp2 per SM\n"
          "per clock)) as a percentage of the time. Bytes: every input read once and every\n"
          "output written once; for the backward u, delta, z, dout, B, C (in T), A, D,\n"
          "delta_bias and the saved states read, du, ddelta, dz (in T), dB, dC (fp32), dA, dD,\n"
          "ddelta_bias written. Exps: batch*dim*L*N for either pass. Once per pass: the GPU,\n"
          "the copy bandwidth measured in the same run, a cold NVRTC compile, a disk-cache hit,\n"
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
          "  --bwd-spec SPEC  the backward's launch knobs for every row; its threads x items\n"
          "                   must equal the state interval of L (the next power of two >= L,\n"
          "                   clamped to 64..512), so it suits rows of one such interval\n"
          "  --tuned          launch configurations from the tuning database, else the\n"
          "                   heuristics (the default; docs/tuning.md)\n"
          "  --untuned        the heuristics alone, to compare with --tuned\n"
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

/* ---- rows --------------------------------------------------------------------------- */

/* The default rows: the reference rows (as bench/rows_reference.txt lists them). */
static const bench_row reference_rows[] = {
    {1, 4, 16, 4, false, SF_FP32},
    {4, 16, 64, 16, false, SF_FP32},
    {16, 64, 256, 64, false, SF_FP32},
    {1, 256, 1024, 16, false, SF_FP32},
    {1, 768, 1024, 16, false, SF_FP32},
    {64, 160, 196, 8, false, SF_FP32},
    {64, 320, 49, 8, false, SF_FP32},
    {64, 256, 196, 8, false, SF_FP32},
    {64, 512, 49, 8, false, SF_FP32},
    {8, 1536, 2048, 16, true, SF_FP32},
    {4, 4096, 2048, 16, true, SF_FP32},
    {1, 1536, 16384, 16, true, SF_FP32},
    {8, 1536, 2048, 16, true, SF_BF16},
    {4, 4096, 2048, 16, true, SF_BF16},
    {64, 160, 196, 8, false, SF_BF16},
    {64, 512, 49, 8, false, SF_BF16},
};
enum { REFERENCE_ROWS = sizeof reference_rows / sizeof reference_rows[0] };

static bool same_shape(const bench_row *a, const bench_row *b) {
  return a->batch == b->batch && a->dim == b->dim && a->seqlen == b->seqlen && a->dstate == b->dstate &&
         a->z == b->z;
}

/* "fp32,bf16" -> distinct types; false on anything else. */
static bool parse_dtypes(const char *text, sf_dtype *dtypes, int *count) {
  char copy[64];
  if (strlen(text) >= sizeof copy) return false;
  strcpy(copy, text);
  *count = 0;
  char *rest = copy;
  for (char *field; (field = strsep(&rest, ",")) != NULL;) {
    sf_dtype t;
    if (!cli_parse_dtype(field, &t)) return false;
    for (int i = 0; i < *count; i++)
      if (dtypes[i] == t) return false;
    dtypes[(*count)++] = t;
  }
  return *count > 0;
}

/* Reads a rows file; returns -1 on success, else the exit status (the message printed). */
static int read_rows_file(const char *path, const sf_dtype *dtypes, int ndtypes, bench_row_list *out) {
  FILE *in = fopen(path, "rb");
  if (!in) {
    fprintf(stderr, "scanforge bench: --rows: cannot open '%s': %s\n", path, strerror(errno));
    return 2;
  }
  size_t length = 0, capacity = 0;
  char *text = NULL;
  bool failed = false;
  for (;;) {
    if (length == capacity) {
      char *grown = realloc(text, capacity = capacity ? 2 * capacity : 4096);
      if (!grown) {
        failed = true;
        break;
      }
      text = grown;
    }
    size_t got = fread(text + length, 1, capacity - length, in);
    length += got;
    if (got == 0) break;
  }
  failed |= ferror(in) != 0;
  fclose(in);
  if (failed) {
    free(text);
    fprintf(stderr, "scanforge bench: --rows: cannot read '%s'\n", path);
    return 2;
  }
  sf_status st = bench_rows_parse(text, length, path, dtypes, ndtypes, out);
  free(text);
  if (st == SF_ENOMEM) return cli_fail("bench", "out of memory");
  if (st != SF_OK) {
    fprintf(stderr, "scanforge bench: --rows %s\n", sf_last_error());
    return 2;
  }
  return -1;
}

static int default_rows(const sf_dtype *dtypes, int ndtypes, bench_row_list *out) {
  for (int i = 0; i < REFERENCE_ROWS; i++) {
    if (ndtypes == 0) { /* the reference rows as they are */
      if (!bench_rows_add(out, reference_rows[i])) return cli_fail("bench", "out of memory");
      continue;
    }
    bool seen = false; /* each shape once, in every asked type */
    for (int k = 0; k < i && !seen; k++) seen = same_shape(&reference_rows[k], &reference_rows[i]);
    for (int t = 0; t < ndtypes && !seen; t++) {
      bench_row r = reference_rows[i];
      r.dtype = dtypes[t];
      if (!bench_rows_add(out, r)) return cli_fail("bench", "out of memory");
    }
  }
  return -1;
}

static void row_label(const bench_row *r, char *buf, size_t cap) {
  snprintf(buf, cap, "%lld,%lld,%lld,%d%s", (long long)r->batch, (long long)r->dim, (long long)r->seqlen,
           r->dstate, r->z ? ",z" : "");
}

/* ---- the GPU ------------------------------------------------------------------------ */

/* Bytes of one set of a row's tensors must reach this before sets stop being added. */
static const double WORKING_SET_BYTES = 128.0 * 1024 * 1024;

typedef struct gpu {
  const sf_cu *cu;
  sf_context *ctx;
  sf_device_info info;
  sf_target target;
  sf_timer timer; /* its stream, events and spin kernel (tuning/measure.h) */
  double copy_bytes_per_s;
  double exp2_per_s;
} gpu;

/* Device-to-device copy bandwidth (tuning/measure.c). */
static sf_status measure_copy(gpu *g, size_t *bytes_used) {
  return sf_timer_copy_bandwidth(&g->timer, &g->copy_bytes_per_s, bytes_used);
}

static sf_status gpu_open(gpu *g) {
  sf_status st = sf_cu_load(&g->cu);
  CUcontext context;
  if (st == SF_OK) st = sf_cu_current_context(0, &context);
  if (st == SF_OK) st = sf_device_get_info(0, &g->info);
  if (st == SF_OK) st = sf_context_create(NULL, &g->ctx);
  if (st == SF_OK) st = sf_context_target(g->ctx, &g->target);
  if (st == SF_OK) st = sf_timer_open(&g->timer);
  if (st != SF_OK) return st;
  g->exp2_per_s = 16.0 * g->info.sm_count * g->info.clock_khz * 1e3;
  return SF_OK;
}

static void gpu_close(gpu *g) {
  sf_timer_close(&g->timer);
  sf_context_destroy(g->ctx);
}

/* ---- one row's tensors ---------------------------------------------------------------- */

static sf_measure_shape row_shape(const bench_row *r, bool backward) {
  return (sf_measure_shape){.batch = r->batch, .dim = r->dim, .seqlen = r->seqlen, .dstate = r->dstate,
                            .groups = 1, .dtype = r->dtype, .z = r->z, .D = true, .delta_bias = true,
                            .softplus = true, .B_var = true, .C_var = true, .backward = backward};
}

/* What a row's call moves at least: every input read once, every output written once. The
 * backward reads u, delta, z, dout, B, C (in T), A, D, delta_bias and the saved states, and
 * writes du, ddelta, dz (in T), dB, dC (fp32, as the C API writes them), dA, dD and
 * ddelta_bias (tuning/measure.c counts them). */
static double row_bytes(const bench_row *r, bool backward) {
  sf_measure_shape shape = row_shape(r, backward);
  return sf_measure_call_bytes(&shape);
}

/* Enough random input sets that the working set exceeds WORKING_SET_BYTES (at most
 * max_sets: more than the launches would never be read). */
static sf_status buffers_alloc(gpu *g, const bench_row *r, bool backward, int max_sets, sf_measure_sets *b) {
  sf_measure_shape shape = row_shape(r, backward);
  return sf_measure_sets_alloc(g->cu, &shape, WORKING_SET_BYTES, max_sets, b);
}

/* ---- one row ------------------------------------------------------------------------- */

/* The passes a row may time. */
typedef enum pass { PASS_FWD, PASS_BWD, PASS_BWD_DET, PASSES } pass;
static const char *const pass_key[PASSES] = {"forward", "backward", "backward_deterministic"};

/* One timed pass of one row. */
typedef struct pass_result {
  bool ran; /* asked for (else nothing below is set) */
  bool ok;
  char error[512];
  sf_variant variant;
  sf_kernel_origin origin;
  double load_ms;
  int sets;
  sf_timing t; /* ms */
  double bytes, exps, floor_ms;
} pass_result;

typedef struct row_result {
  pass_result pass[PASSES];
} row_result;

/* --spec and --bwd-spec: launch knobs applied to every row's forward or backward (for
 * exploring variants by hand). */
static const char *launch_spec, *launch_bwd_spec;
/* --untuned: the heuristics choose, the tuning database is not read. */
static bool launch_untuned;

/* One call to time: a forward or a backward on input set `set`. */
typedef struct row_call {
  sf_context *ctx;
  const sf_measure_sets *sets;
  bool backward, deterministic;
  int set;
  sf_launch launch;
} row_call;

static sf_status run_call(void *user, CUstream stream) {
  row_call *c = user;
  c->launch.stream = stream;
  if (!c->backward) {
    sf_scan_fwd_args args = sf_measure_fwd_args(c->sets, c->set);
    return sf_scan_fwd(c->ctx, &args, &c->launch);
  }
  sf_scan_bwd_args args = sf_measure_bwd_args(c->sets, c->set);
  args.deterministic = c->deterministic;
  return sf_scan_bwd(c->ctx, &args, &c->launch);
}

/* The variant the call runs, loaded (the load timed: a compile shows here, not in the
 * times). */
static sf_status load_variant(gpu *g, row_call *call, pass_result *out) {
  sf_status st;
  if (call->backward) {
    sf_scan_bwd_args args = sf_measure_bwd_args(call->sets, 0);
    args.deterministic = call->deterministic;
    st = sf_scan_bwd_variant(&args, &call->launch, &out->variant);
  } else {
    sf_scan_fwd_args args = sf_measure_fwd_args(call->sets, 0);
    st = sf_scan_fwd_variant(&args, &call->launch, &out->variant);
  }
  const sf_kernel *kernel;
  double t0 = cli_now_ms();
  if (st == SF_OK) st = sf_kernel_for_variant(g->ctx, &out->variant, &kernel, &out->origin);
  out->load_ms = cli_now_ms() - t0;
  return st;
}

/* Warm-up launches, then `reps` timed ones, each on the next input set. */
static sf_status time_call(gpu *g, row_call *call, int reps, int warmup, pass_result *out) {
  out->sets = call->sets->sets;
  sf_status st = load_variant(g, call, out);
  for (int i = 0; i < warmup && st == SF_OK; i++) {
    call->set = i % call->sets->sets;
    st = run_call(call, g->timer.stream);
  }
  if (st == SF_OK) st = sf_cu_check(g->cu->StreamSynchronize(g->timer.stream), "cuStreamSynchronize (warm-up)");
  float *ms = malloc((size_t)reps * sizeof *ms);
  if (!ms && st == SF_OK) st = sf_fail(SF_ENOMEM, "bench: out of memory");
  for (int i = 0; i < reps && st == SF_OK; i++) {
    call->set = (warmup + i) % call->sets->sets;
    st = sf_timer_time_one(&g->timer, run_call, call, &ms[i]);
  }
  if (st == SF_OK) out->t = sf_timing_of(ms, reps);
  free(ms);
  g->cu->StreamSynchronize(g->timer.stream); /* nothing may still read the buffers */
  return st;
}

/* The floor of a pass: bytes over the copy bandwidth, or exps over the exp2 rate. */
static void set_floor(const gpu *g, const bench_row *r, bool backward, pass_result *out) {
  out->bytes = row_bytes(r, backward);
  out->exps = (double)r->batch * r->dim * r->seqlen * r->dstate;
  out->floor_ms = 1e3 * fmax(out->bytes / g->copy_bytes_per_s, out->exps / g->exp2_per_s);
}

static void finish_pass(pass_result *out, sf_status st) {
  out->ran = true;
  out->ok = st == SF_OK;
  if (!out->ok) snprintf(out->error, sizeof out->error, "%s", sf_last_error());
}

static void time_forward(gpu *g, const bench_row *r, int reps, int warmup, pass_result *out) {
  sf_measure_sets b;
  sf_status st = buffers_alloc(g, r, false, warmup + reps, &b);
  if (st == SF_OK) {
    row_call call = {.ctx = g->ctx, .sets = &b,
                     .launch = {.stream = g->timer.stream, .spec = launch_spec, .untuned = launch_untuned}};
    st = time_call(g, &call, reps, warmup, out);
    sf_measure_sets_free(g->cu, &b);
  }
  set_floor(g, r, false, out);
  finish_pass(out, st);
}

/* The backward on the states that a forward saved on the same input set (every set gets
 * its forward first, untimed, with the forward's own choice of variant): dout random,
 * every gradient of the row requested. With `deterministic`, the deterministic mode is
 * timed too, on the same sets. */
static void time_backward(gpu *g, const bench_row *r, int reps, int warmup, bool deterministic, row_result *res) {
  sf_measure_sets b;
  sf_status st = buffers_alloc(g, r, true, warmup + reps, &b);
  const sf_launch fwd_launch = {.stream = g->timer.stream, .untuned = launch_untuned};
  for (int set = 0; st == SF_OK && set < b.sets; set++) {
    sf_scan_fwd_args args = sf_measure_fwd_args(&b, set);
    st = sf_scan_fwd(g->ctx, &args, &fwd_launch);
  }
  if (st == SF_OK) st = sf_cu_check(g->cu->StreamSynchronize(g->timer.stream), "cuStreamSynchronize (forward for the saved states)");
  if (st != SF_OK) st = sf_fail_context(st, "the forward that saves the backward's states");
  for (int det = 0; det <= (int)deterministic; det++) {
    pass_result *out = &res->pass[det ? PASS_BWD_DET : PASS_BWD];
    sf_status pass_st = st;
    if (st == SF_OK) {
      row_call call = {.ctx = g->ctx, .sets = &b, .backward = true, .deterministic = det,
                       .launch = {.stream = g->timer.stream, .spec = launch_bwd_spec, .untuned = launch_untuned}};
      pass_st = time_call(g, &call, reps, warmup, out);
    }
    set_floor(g, r, true, out);
    finish_pass(out, pass_st);
  }
  sf_measure_sets_free(g->cu, &b); /* a failed alloc left it empty: nothing to free */
}

/* ---- tables ---------------------------------------------------------------------------- */

static void print_table_header(pass p, bool with_det) {
  printf("%s\n", p == PASS_FWD ? "forward" : "backward (every gradient: du, ddelta, dz with z, dA, dB, dC, dD, ddelta_bias)");
  printf("%-20s %-5s %-9s %9s %9s %9s %8s %9s %7s", "shape B,D,L,N", "type", "t/i/c", "time us", "min us", "p90 us",
         "GB/s", "floor us", "% floor");
  if (with_det) printf(" %9s %8s", "det us", "det cost");
  printf("\n");
}

/* The row's line of pass p's table (with the deterministic columns for the backward when
 * it was timed). */
static void print_row(const bench_row *r, const row_result *res, pass p) {
  const pass_result *x = &res->pass[p];
  char label[96], config[32];
  row_label(r, label, sizeof label);
  if (!x->ok) {
    printf("%-20s %-5s error: %s\n", label, sf_dtype_name(r->dtype), x->error);
    fflush(stdout);
    return;
  }
  snprintf(config, sizeof config, "%d/%d/%d", x->variant.threads, x->variant.items, x->variant.channels);
  printf("%-20s %-5s %-9s %9.1f %9.1f %9.1f %8.0f %9.1f %7.1f", label, sf_dtype_name(r->dtype), config,
         x->t.median * 1e3, x->t.min * 1e3, x->t.p90 * 1e3, x->bytes / (x->t.median * 1e-3) / 1e9,
         x->floor_ms * 1e3, 100.0 * x->floor_ms / x->t.median);
  const pass_result *det = &res->pass[PASS_BWD_DET];
  if (p == PASS_BWD && det->ran) {
    if (det->ok)
      printf(" %9.1f %7.2fx", det->t.median * 1e3, det->t.median / x->t.median);
    else
      printf(" %9s %8s  (deterministic: %s)", "error", "-", det->error);
  }
  printf("\n");
  fflush(stdout);
}

/* One pass as JSON (into j): variant, times, bytes, floor. */
static void pass_json(json_t *j, const pass_result *x) {
  char spec[512];
  json_object_set_new(j, "ok", json_boolean(x->ok));
  if (!x->ok) {
    json_object_set_new(j, "error", json_string(x->error));
    return;
  }
  sf_variant_format(&x->variant, spec, sizeof spec);
  json_object_set_new(j, "variant", json_string(spec));
  json_object_set_new(j, "threads", json_integer(x->variant.threads));
  json_object_set_new(j, "items", json_integer(x->variant.items));
  json_object_set_new(j, "channels", json_integer(x->variant.channels));
  json_object_set_new(j, "kernel_origin", json_string(cli_origin_text(x->origin)));
  json_object_set_new(j, "kernel_load_ms", json_real(x->load_ms));
  json_object_set_new(j, "input_sets", json_integer(x->sets));
  json_object_set_new(j, "median_us", json_real(x->t.median * 1e3));
  json_object_set_new(j, "min_us", json_real(x->t.min * 1e3));
  json_object_set_new(j, "p90_us", json_real(x->t.p90 * 1e3));
  json_object_set_new(j, "bytes", json_real(x->bytes));
  json_object_set_new(j, "exps", json_real(x->exps));
  json_object_set_new(j, "gb_per_s", json_real(x->bytes / (x->t.median * 1e-3) / 1e9));
  json_object_set_new(j, "floor_us", json_real(x->floor_ms * 1e3));
  json_object_set_new(j, "percent_of_floor", json_real(100.0 * x->floor_ms / x->t.median));
}

/* A row: its shape, "ok" (every pass it timed ran), the forward's numbers at the top level
 * (as before the backward was timed), the backward's in "backward" and, with
 * --deterministic, "backward_deterministic" (with "cost": its time over the backward's). */
static json_t *row_json(const bench_row *r, const row_result *res) {
  json_t *j = json_object();
  json_object_set_new(j, "batch", json_integer(r->batch));
  json_object_set_new(j, "dim", json_integer(r->dim));
  json_object_set_new(j, "seqlen", json_integer(r->seqlen));
  json_object_set_new(j, "dstate", json_integer(r->dstate));
  json_object_set_new(j, "z", json_boolean(r->z));
  json_object_set_new(j, "dtype", json_string(sf_dtype_name(r->dtype)));
  bool ok = true;
  for (int p = 0; p < PASSES; p++) ok = ok && (!res->pass[p].ran || res->pass[p].ok);
  if (res->pass[PASS_FWD].ran) pass_json(j, &res->pass[PASS_FWD]);
  json_object_set_new(j, "ok", json_boolean(ok)); /* after: the forward's "ok" is the row's */
  for (int p = PASS_BWD; p < PASSES; p++) {
    if (!res->pass[p].ran) continue;
    json_t *b = json_object();
    pass_json(b, &res->pass[p]);
    if (p == PASS_BWD_DET && res->pass[p].ok && res->pass[PASS_BWD].ok)
      json_object_set_new(b, "cost", json_real(res->pass[p].t.median / res->pass[PASS_BWD].t.median));
    json_object_set_new(j, pass_key[p], b);
  }
  return j;
}

/* ---- compile, cache and launch overheads ------------------------------------------- */

/* "cold compile" + tag ("" for the forward, " bwd" for the backward), padded to the
 * column the values start at. */
static void print_label(const char *what, const char *tag) {
  char text[64];
  snprintf(text, sizeof text, "%s%s", what, tag);
  printf("%-19s", text);
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Generation + NVRTC for the device's target, no cache involved. */
static void measure_cold_compile(gpu *g, const sf_variant *v, const char *tag, json_t *j) {
  char *source = NULL;
  size_t length;
  sf_binary binary;
  double t0 = cli_now_ms();
  sf_status st = sf_generate(v, &source, &length);
  double t1 = cli_now_ms();
  if (st == SF_OK) st = sf_compile(source, "scan.cu", g->target.arch, g->target.use_ptx, &binary);
  double t2 = cli_now_ms();
  free(source);
  if (st != SF_OK) {
    print_label("cold compile", tag);
    printf("failed: %s\n", sf_last_error());
    json_object_set_new(j, "cold_compile_error", json_string(sf_last_error()));
    return;
  }
  print_label("cold compile", tag);
  printf("%.1f ms (generate %.1f ms, NVRTC %.1f ms; %zu bytes, %d registers)\n", t2 - t0,
         t1 - t0, t2 - t1, binary.size, binary.registers);
  json_object_set_new(j, "cold_compile_ms", json_real(t2 - t0));
  json_object_set_new(j, "generate_ms", json_real(t1 - t0));
  json_object_set_new(j, "nvrtc_ms", json_real(t2 - t1));
  sf_binary_free(&binary);
}

/* A fresh cache on the same directory: open, generate, key, read and verify the entry
 * (median of 5), then the module load on top. */
static void measure_disk_hit(gpu *g, const sf_variant *v, const char *tag, json_t *j) {
  sf_cache_stats stats;
  if (sf_cache_stat(g->ctx->cache, &stats) != SF_OK || stats.memory_only) {
    print_label("disk-cache hit", tag);
    printf("n/a: the cache is memory-only this run\n");
    return;
  }
  double hit[5], load[5];
  int n = 0;
  for (; n < 5; n++) {
    sf_cache *cache;
    const void *data;
    size_t size;
    sf_cache_source where = SF_CACHE_BUILT;
    CUmodule module;
    double t0 = cli_now_ms();
    sf_status st = sf_cache_open(&(sf_cache_options){.dir = stats.dir}, &cache);
    if (st == SF_OK) st = sf_variant_binary(cache, g->target, v, &data, &size, &where);
    double t1 = cli_now_ms();
    if (st == SF_OK && where != SF_CACHE_FROM_DISK)
      st = sf_fail(SF_ECACHE, "the entry was %s, not read from disk", sf_cache_source_name(where));
    if (st == SF_OK) st = sf_cu_check(g->cu->ModuleLoadData(&module, data), "cuModuleLoadData");
    double t2 = cli_now_ms();
    if (st == SF_OK) g->cu->ModuleUnload(module);
    sf_cache_close(cache);
    if (st != SF_OK) {
      print_label("disk-cache hit", tag);
      printf("failed: %s\n", sf_last_error());
      return;
    }
    hit[n] = t1 - t0;
    load[n] = t2 - t1;
  }
  qsort(hit, 5, sizeof *hit, compare_double);
  qsort(load, 5, sizeof *load, compare_double);
  print_label("disk-cache hit", tag);
  printf("%.2f ms (open, generate, read, verify) + %.2f ms module load = %.2f ms\n", hit[2],
         load[2], hit[2] + load[2]);
  json_object_set_new(j, "disk_hit_ms", json_real(hit[2]));
  json_object_set_new(j, "module_load_ms", json_real(load[2]));
}

static void measure_memory_hit(gpu *g, const sf_variant *v, const char *tag, json_t *j) {
  enum { CALLS = 200000 };
  const sf_kernel *kernel;
  sf_kernel_origin origin = SF_KERNEL_COMPILED;
  sf_status st = sf_kernel_for_variant(g->ctx, v, &kernel, &origin);
  double t0 = cli_now_ms();
  for (int i = 0; i < CALLS && st == SF_OK; i++) st = sf_kernel_for_variant(g->ctx, v, &kernel, &origin);
  double ns = (cli_now_ms() - t0) * 1e6 / CALLS;
  if (st != SF_OK || origin != SF_KERNEL_LOADED) {
    print_label("in-process hit", tag);
    printf("failed: %s\n", st != SF_OK ? sf_last_error() : "the kernel was not found loaded");
    return;
  }
  print_label("in-process hit", tag);
  printf("%.0f ns (sf_kernel_for_variant, mean of %d calls)\n", ns, CALLS);
  json_object_set_new(j, "memory_hit_ns", json_real(ns));
}

typedef struct host_call {
  sf_context *ctx;
  bool backward;
  sf_scan_fwd_args fwd;
  sf_scan_bwd_args bwd;
  sf_launch launch;
} host_call;

static sf_status host_call_run(const host_call *c) {
  return c->backward ? sf_scan_bwd(c->ctx, &c->bwd, &c->launch) : sf_scan_fwd(c->ctx, &c->fwd, &c->launch);
}

/* Host time of sf_scan_fwd or sf_scan_bwd on the smallest reference row: queue many calls,
 * then divide. */
static void measure_host_launch(gpu *g, bool backward, json_t *j) {
  enum { CALLS = 1000 };
  const char *tag = backward ? " bwd" : "";
  const bench_row r = reference_rows[0];
  sf_measure_sets b;
  sf_status st = buffers_alloc(g, &r, backward, 1, &b);
  if (st != SF_OK) {
    print_label("host launch", tag);
    printf("failed: %s\n", sf_last_error());
    return;
  }
  host_call call = {.ctx = g->ctx, .backward = backward, .fwd = sf_measure_fwd_args(&b, 0),
                    .bwd = sf_measure_bwd_args(&b, 0), .launch = {.stream = g->timer.stream}};
  for (int i = 0; i < 100 && st == SF_OK; i++) st = host_call_run(&call);
  if (st == SF_OK) st = sf_cu_check(g->cu->StreamSynchronize(g->timer.stream), "cuStreamSynchronize");
  double t0 = cli_now_ms();
  for (int i = 0; i < CALLS && st == SF_OK; i++) st = host_call_run(&call);
  double us = (cli_now_ms() - t0) * 1e3 / CALLS;
  if (st == SF_OK) st = sf_cu_check(g->cu->StreamSynchronize(g->timer.stream), "cuStreamSynchronize");
  g->cu->StreamSynchronize(g->timer.stream);
  sf_measure_sets_free(g->cu, &b);
  print_label("host launch", tag);
  if (st != SF_OK) {
    printf("failed: %s\n", sf_last_error());
    return;
  }
  char label[96];
  row_label(&r, label, sizeof label);
  printf("%.2f us per %s (%s fp32, %d calls queued, no sync between)\n", us,
         backward ? "sf_scan_bwd" : "sf_scan_fwd", label, CALLS);
  json_object_set_new(j, "host_launch_us", json_real(us));
}

/* ---- the command ------------------------------------------------------------------- */

typedef struct bench_options {
  const char *rows_path, *json_path;
  sf_dtype dtypes[3];
  int ndtypes; /* 0: not given */
  long long reps, warmup;
  bool forward, backward; /* the passes to time (--forward-only, --backward-only) */
  bool deterministic;     /* the backward's deterministic mode too */
} bench_options;

static int parse(int argc, char **argv, bench_options *o) {
  enum {
    OPT_ROWS = 256, OPT_DTYPE, OPT_JSON, OPT_REPS, OPT_WARMUP, OPT_SPEC, OPT_BWD_SPEC, OPT_TUNED, OPT_UNTUNED,
    OPT_FORWARD_ONLY, OPT_BACKWARD_ONLY, OPT_DETERMINISTIC
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
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  bool forward_only = false, backward_only = false;
  optind = 1;
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, ":h", options, NULL)) != -1;) {
    switch (c) {
      case OPT_ROWS: o->rows_path = optarg; break;
      case OPT_BWD_SPEC: launch_bwd_spec = optarg; break;
      case OPT_FORWARD_ONLY: forward_only = true; break;
      case OPT_BACKWARD_ONLY: backward_only = true; break;
      case OPT_DETERMINISTIC: o->deterministic = true; break;
      case OPT_DTYPE:
        if (!parse_dtypes(optarg, o->dtypes, &o->ndtypes))
          return usage_error("--dtype: expected a comma-separated list of distinct fp32, fp16, bf16, got '%s'", optarg);
        break;
      case OPT_JSON: o->json_path = optarg; break;
      case OPT_SPEC: launch_spec = optarg; break;
      case OPT_TUNED: launch_untuned = false; break;
      case OPT_UNTUNED: launch_untuned = true; break;
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
  const char *specs[][2] = {{"--spec", launch_spec}, {"--bwd-spec", launch_bwd_spec}};
  for (int i = 0; i < 2; i++) {
    sf_variant v = sf_variant_default();
    if (specs[i][1] && sf_variant_apply(specs[i][1], &v) != SF_OK) {
      char text[1024];
      snprintf(text, sizeof text, "%s: %s", specs[i][0], sf_last_error());
      return usage_error("%s", text);
    }
  }
  if (forward_only && backward_only)
    return usage_error("--forward-only and --backward-only: %s", "give one of them (neither times both)");
  o->forward = !backward_only;
  o->backward = !forward_only;
  if (forward_only && o->deterministic)
    return usage_error("--deterministic: %s", "a mode of the backward, which --forward-only leaves out");
  if (forward_only && launch_bwd_spec)
    return usage_error("--bwd-spec: %s", "chooses the backward's launch, which --forward-only leaves out");
  if (backward_only && launch_spec)
    return usage_error("--spec: %s", "chooses the forward's launch, which --backward-only leaves out (--bwd-spec: the backward's)");
  return -1;
}

/* The variant a row's forward or backward runs (the tuned or heuristic choice). */
static sf_status row_variant(const bench_row *r, bool backward, sf_variant *v) {
  sf_check_shape shape = {.batch = r->batch, .dim = r->dim, .seqlen = r->seqlen, .dstate = r->dstate,
                          .groups = 1, .dtype = r->dtype, .z = r->z, .D = true, .delta_bias = true,
                          .softplus = true};
  return backward ? cli_check_bwd_variant(&shape, NULL, v) : cli_check_variant(&shape, NULL, v);
}

static void print_device(const gpu *g, const bench_options *o, size_t copy_bytes, json_t *root) {
  char arch[32];
  sf_target_format(g->target, arch, sizeof arch);
  printf("GPU                %s, cc %d.%d (%s), %d SMs at %.0f MHz, %.0f MiB L2, driver %d\n", g->info.name,
         g->info.cc_major, g->info.cc_minor, arch, g->info.sm_count, g->info.clock_khz / 1e3,
         g->info.l2_bytes / 1048576.0, g->info.driver_version);
  printf("copy bandwidth     %.0f GB/s (device-to-device copy of %zu MiB, read + written, median of 10)\n",
         g->copy_bytes_per_s / 1e9, copy_bytes >> 20);
  printf("exp2 rate          %.2e per s (16 per SM per clock)\n", g->exp2_per_s);
  printf("method             median of %lld launches after %lld warm-up, CUDA events, inputs rotated over\n"
         "                   >= 128 MiB, %s\n",
         o->reps, o->warmup,
         g->timer.spin ? "each launch queued behind a 100 us spin kernel (host enqueue time kept out)"
                 : "no spin kernel (it did not load): small rows include host enqueue time");
  printf("configurations     %s%s\n", launch_spec || launch_bwd_spec ? "--spec/--bwd-spec where given, else " : "",
         launch_untuned ? "heuristics (--untuned)" : "tuning database, else heuristics (--tuned)");
  printf("passes             %s%s\n",
         o->forward && o->backward ? "forward; backward on a forward's saved states, dout random"
         : o->forward              ? "forward (--forward-only)"
                                   : "backward on a forward's saved states, dout random (--backward-only)",
         o->deterministic ? "\n                   and the backward's deterministic mode (--deterministic)" : "");
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
  json_object_set_new(root, "reps", json_integer(o->reps));
  json_object_set_new(root, "warmup", json_integer(o->warmup));
  json_object_set_new(root, "spin_kernel", json_boolean(g->timer.spin != NULL));
  json_object_set_new(root, "tuned", json_boolean(!launch_untuned && !launch_spec));
  json_object_set_new(root, "untuned", json_boolean(launch_untuned));
  if (launch_spec) json_object_set_new(root, "spec", json_string(launch_spec));
  if (launch_bwd_spec) json_object_set_new(root, "bwd_spec", json_string(launch_bwd_spec));
  json_t *passes = json_array();
  if (o->forward) json_array_append_new(passes, json_string(pass_key[PASS_FWD]));
  if (o->backward) json_array_append_new(passes, json_string(pass_key[PASS_BWD]));
  if (o->deterministic) json_array_append_new(passes, json_string(pass_key[PASS_BWD_DET]));
  json_object_set_new(root, "passes", passes);
}

/* The first row's variant of a pass stands for compile and cache costs: compiled cold
 * before the rows publish it (read back from the disk after, by measure_cached). */
static bool first_variant(gpu *g, const bench_row_list *rows, bool backward, json_t *j, sf_variant *v) {
  const char *tag = backward ? " bwd" : "";
  char spec[512] = "";
  const bool have = row_variant(&rows->rows[0], backward, v) == SF_OK;
  if (have) sf_variant_format(v, spec, sizeof spec);
  print_label("variant", tag);
  printf("%s (first row)\n", have ? spec : sf_last_error());
  if (have) {
    json_object_set_new(j, "variant", json_string(spec));
    measure_cold_compile(g, v, tag, j);
  }
  return have;
}

static void measure_cached(gpu *g, bool have, const sf_variant *v, bool backward, json_t *j) {
  const char *tag = backward ? " bwd" : "";
  if (have) {
    measure_disk_hit(g, v, tag, j);
    measure_memory_hit(g, v, tag, j);
  }
  measure_host_launch(g, backward, j);
}

/* Everything after the GPU is set up; returns how many rows failed (any of their passes). */
static int bench_all(gpu *g, const bench_options *o, const bench_row_list *rows, json_t *root) {
  json_t *overheads = json_object(), *bwd_overheads = json_object(), *jrows = json_array();
  json_object_set_new(root, "overheads", overheads); /* the forward's at the top, as before */
  if (o->backward) json_object_set_new(overheads, "backward", bwd_overheads);
  else json_decref(bwd_overheads);
  json_object_set_new(root, "rows", jrows);

  sf_variant fwd_first, bwd_first;
  bool have_fwd = false, have_bwd = false;
  printf("\n");
  if (o->forward) have_fwd = first_variant(g, rows, false, overheads, &fwd_first);
  if (o->backward) have_bwd = first_variant(g, rows, true, bwd_overheads, &bwd_first);

  row_result *results = calloc((size_t)rows->count, sizeof *results);
  if (!results) {
    cli_fail("bench", "out of memory");
    return rows->count;
  }
  if (o->forward) {
    printf("\n");
    print_table_header(PASS_FWD, false);
    for (int i = 0; i < rows->count; i++) {
      time_forward(g, &rows->rows[i], (int)o->reps, (int)o->warmup, &results[i].pass[PASS_FWD]);
      print_row(&rows->rows[i], &results[i], PASS_FWD);
    }
  }
  if (o->backward) {
    printf("\n");
    print_table_header(PASS_BWD, o->deterministic);
    for (int i = 0; i < rows->count; i++) {
      time_backward(g, &rows->rows[i], (int)o->reps, (int)o->warmup, o->deterministic, &results[i]);
      print_row(&rows->rows[i], &results[i], PASS_BWD);
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
    json_array_append_new(jrows, row_json(&rows->rows[i], &results[i]));
  }
  free(results);

  if (o->forward) measure_cached(g, have_fwd, &fwd_first, false, overheads);
  if (o->backward) measure_cached(g, have_bwd, &bwd_first, true, bwd_overheads);
  return failures;
}

static int run(const bench_options *o, const bench_row_list *rows) {
  gpu g = {0};
  size_t copy_bytes = 0;
  if (gpu_open(&g) != SF_OK) {
    cli_fail("bench", "cannot set up the GPU");
    gpu_close(&g);
    return 1;
  }
  const char *warning = sf_context_warning(g.ctx);
  if (warning) fprintf(stderr, "scanforge bench: warning: %s\n", warning);
  const char *tuning_warning = launch_untuned ? NULL : sf_tuning_warning();
  if (tuning_warning) fprintf(stderr, "scanforge bench: warning: %s\n", tuning_warning);
  if (measure_copy(&g, &copy_bytes) != SF_OK) {
    cli_fail("bench", "cannot measure the copy bandwidth");
    gpu_close(&g);
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
  gpu_close(&g);
  if (failures) fprintf(stderr, "scanforge bench: %d row%s failed\n", failures, failures == 1 ? "" : "s");
  return failures ? 1 : 0;
}

int cmd_bench(int argc, char **argv) {
  bench_options o = {.reps = 50, .warmup = 10};
  int status = parse(argc, argv, &o);
  if (status >= 0) return status;
  bench_row_list rows = {0};
  if (o.rows_path) {
    static const sf_dtype both[] = {SF_FP32, SF_BF16};
    status = o.ndtypes ? read_rows_file(o.rows_path, o.dtypes, o.ndtypes, &rows)
                       : read_rows_file(o.rows_path, both, 2, &rows);
  } else {
    status = default_rows(o.dtypes, o.ndtypes, &rows);
  }
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
