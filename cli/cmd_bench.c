/* cmd_bench.c: scanforge bench: forward times on the GPU against the floor and the established kernel (performance.md). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/scan_common.h"
#include "generator/generator.h"
#include "runtime/cache.h"
#include "runtime/compile.h"
#include "runtime/context.h"
#include "runtime/cuda_context.h"
#include "runtime/cuda_driver.h"
#include "runtime/error.h"
#include "runtime/kernels.h"
#include "runtime/target.h"
#include "scanforge/scanforge.h"
#include "tuning/measure.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: scanforge bench [--rows FILE] [--dtype LIST] [--json FILE] [--reps N] [--warmup N]\n"
          "\n"
          "Times the forward selective scan on the GPU, as performance.md prescribes: random\n"
          "inputs rotated through enough copies that the working set exceeds 128 MiB (so the\n"
          "L2 cache does not serve repeated runs), warm-up first (kernel compile and load stay\n"
          "out of the numbers), each launch timed with CUDA events on its own stream, every\n"
          "launch's status checked; median, min and p90 of the repetitions.\n"
          "Every row: variable B and C, one group, D and delta_bias, softplus on.\n"
          "\n"
          "Per row it prints the variant (threads/items/channels), the time, GB/s, the floor\n"
          "max(bytes / copy bandwidth, exps / (16 exp2 per SM per clock)) as a percentage of\n"
          "the time, and for performance.md's rows the established implementation's time\n"
          "(H200) with the speedup. Once: the GPU, the copy bandwidth measured in the same\n"
          "run, a cold NVRTC compile, a disk-cache hit, an in-process kernel lookup and the\n"
          "host time of one launch through the C API.\n"
          "\n"
          "  --rows FILE    the rows to run instead of performance.md's table (see below)\n"
          "  --dtype LIST   comma-separated types among fp32, fp16, bf16. Without --rows and\n"
          "                 without --dtype: the table's rows in the types it lists them in;\n"
          "                 with --dtype: every table shape in each type of LIST. Rows of a\n"
          "                 file without a type run in each type of LIST (default fp32,bf16)\n"
          "  --json FILE    also write every number to FILE as JSON\n"
          "  --spec SPEC    launch knobs (threads, items, channels, states) for every row,\n"
          "                 in place of the tuned or heuristic choice\n"
          "  --tuned        launch configurations from the tuning database, else the\n"
          "                 heuristics (the default; docs/tuning.md)\n"
          "  --untuned      the heuristics alone, to compare with --tuned\n"
          "  --reps N       timed launches per row (default 50)\n"
          "  --warmup N     untimed launches per row first (default 10)\n"
          "  -h, --help     this text\n"
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

typedef struct bench_row {
  int64_t batch, dim, seqlen;
  int dstate;
  bool z;
  sf_dtype dtype;
  double ref_us; /* the established implementation's forward (performance.md), 0 if none */
} bench_row;

/* performance.md's table: forward times of the established implementation on an H200. */
static const bench_row table[] = {
    {1, 4, 16, 4, false, SF_FP32, 13.2},
    {4, 16, 64, 16, false, SF_FP32, 16.1},
    {16, 64, 256, 64, false, SF_FP32, 45.4},
    {1, 256, 1024, 16, false, SF_FP32, 22.9},
    {1, 768, 1024, 16, false, SF_FP32, 35.3},
    {64, 160, 196, 8, false, SF_FP32, 52.8},
    {64, 320, 49, 8, false, SF_FP32, 58.4},
    {64, 256, 196, 8, false, SF_FP32, 78.4},
    {64, 512, 49, 8, false, SF_FP32, 86.8},
    {8, 1536, 2048, 16, true, SF_FP32, 879.6},
    {4, 4096, 2048, 16, true, SF_FP32, 1163.5},
    {1, 1536, 16384, 16, true, SF_FP32, 973.0},
    {8, 1536, 2048, 16, true, SF_BF16, 448.0},
    {4, 4096, 2048, 16, true, SF_BF16, 592.3},
    {64, 160, 196, 8, false, SF_BF16, 53.3},
    {64, 512, 49, 8, false, SF_BF16, 86.4},
};
enum { TABLE_ROWS = sizeof table / sizeof table[0] };

static bool same_shape(const bench_row *a, const bench_row *b) {
  return a->batch == b->batch && a->dim == b->dim && a->seqlen == b->seqlen && a->dstate == b->dstate &&
         a->z == b->z;
}

static double table_ref_us(const bench_row *r) {
  for (int i = 0; i < TABLE_ROWS; i++)
    if (same_shape(&table[i], r) && table[i].dtype == r->dtype) return table[i].ref_us;
  return 0;
}

typedef struct row_list {
  bench_row *rows;
  int count, capacity;
} row_list;

static bool add_row(row_list *l, bench_row r) {
  if (l->count == l->capacity) {
    int capacity = l->capacity ? 2 * l->capacity : 32;
    bench_row *grown = realloc(l->rows, (size_t)capacity * sizeof *grown);
    if (!grown) return false;
    l->rows = grown;
    l->capacity = capacity;
  }
  r.ref_us = table_ref_us(&r);
  l->rows[l->count++] = r;
  return true;
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

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t') s++;
  char *end = s + strlen(s);
  while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r')) *--end = '\0';
  return s;
}

/* One line "batch,dim,L,N[,z][,dtype]" (comment and blanks gone) into *r; *typed says
 * whether it named its dtype. */
static bool parse_row(char *line, bench_row *r, bool *typed) {
  char *rest = line, *fields[6];
  int count = 0;
  for (char *field; (field = strsep(&rest, ",")) != NULL;) {
    if (count == 6) return false;
    fields[count++] = trim(field);
  }
  if (count < 4) return false;
  char shape_text[128];
  snprintf(shape_text, sizeof shape_text, "%s,%s,%s,%s", fields[0], fields[1], fields[2], fields[3]);
  int64_t shape[4];
  if (!cli_parse_shape(shape_text, shape)) return false;
  *r = (bench_row){.batch = shape[0], .dim = shape[1], .seqlen = shape[2], .dstate = (int)shape[3]};
  *typed = false;
  int next = 4;
  if (next < count && strcmp(fields[next], "z") == 0) r->z = true, next++;
  if (next < count && cli_parse_dtype(fields[next], &r->dtype)) *typed = true, next++;
  return next == count;
}

/* Reads a rows file; returns -1 on success, else the exit status (the message printed). */
static int read_rows_file(const char *path, const sf_dtype *dtypes, int ndtypes, row_list *out) {
  FILE *in = fopen(path, "r");
  if (!in) {
    fprintf(stderr, "scanforge bench: --rows: cannot open '%s': %s\n", path, strerror(errno));
    return 2;
  }
  char line[1024];
  int number = 0, status = -1;
  while (status < 0 && fgets(line, sizeof line, in)) {
    number++;
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char *text = trim(line), copy[1024];
    if (!*text) continue;
    snprintf(copy, sizeof copy, "%s", text);
    bench_row r;
    bool typed;
    if (!parse_row(text, &r, &typed)) {
      fprintf(stderr, "scanforge bench: --rows %s:%d: expected batch,dim,L,N[,z][,dtype] with positive "
                      "integers (N at most 256), got '%s'\n", path, number, copy);
      status = 2;
      break;
    }
    for (int i = 0; i < (typed ? 1 : ndtypes) && status < 0; i++) {
      if (!typed) r.dtype = dtypes[i];
      if (!add_row(out, r)) status = cli_fail("bench", "out of memory");
    }
  }
  fclose(in);
  if (status < 0 && out->count == 0) {
    fprintf(stderr, "scanforge bench: --rows %s: no rows in the file\n", path);
    status = 2;
  }
  return status;
}

static int default_rows(const sf_dtype *dtypes, int ndtypes, row_list *out) {
  for (int i = 0; i < TABLE_ROWS; i++) {
    if (ndtypes == 0) { /* the table as it is */
      if (!add_row(out, table[i])) return cli_fail("bench", "out of memory");
      continue;
    }
    bool seen = false; /* each shape once, in every asked type */
    for (int k = 0; k < i && !seen; k++) seen = same_shape(&table[k], &table[i]);
    for (int t = 0; t < ndtypes && !seen; t++) {
      bench_row r = table[i];
      r.dtype = dtypes[t];
      if (!add_row(out, r)) return cli_fail("bench", "out of memory");
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

static sf_measure_shape row_shape(const bench_row *r) {
  return (sf_measure_shape){.batch = r->batch, .dim = r->dim, .seqlen = r->seqlen, .dstate = r->dstate,
                            .groups = 1, .dtype = r->dtype, .z = r->z, .D = true, .delta_bias = true,
                            .softplus = true, .B_var = true, .C_var = true};
}

/* What a row's call moves at least: every input read once, every output written once. */
static double row_bytes(const bench_row *r) {
  sf_measure_shape shape = row_shape(r);
  return sf_measure_call_bytes(&shape);
}

/* Enough random input sets that the working set exceeds WORKING_SET_BYTES (at most
 * max_sets: more than the launches would never be read). */
static sf_status buffers_alloc(gpu *g, const bench_row *r, int max_sets, sf_measure_sets *b) {
  sf_measure_shape shape = row_shape(r);
  return sf_measure_sets_alloc(g->cu, &shape, WORKING_SET_BYTES, max_sets, b);
}

/* ---- one row ------------------------------------------------------------------------- */

typedef struct row_result {
  bool ok;
  char error[512];
  sf_variant variant;
  sf_kernel_origin origin;
  double load_ms;
  int sets;
  sf_timing t; /* ms */
  double bytes, exps, floor_ms;
} row_result;

/* --spec: launch knobs applied to every row (for exploring variants by hand). */
static const char *launch_spec;
/* --untuned: the heuristics choose, the tuning database is not read. */
static bool launch_untuned;

typedef struct row_call {
  sf_context *ctx;
  sf_scan_fwd_args args;
  sf_launch launch;
} row_call;

static sf_status run_row(void *user, CUstream stream) {
  row_call *c = user;
  c->launch.stream = stream;
  return sf_scan_fwd(c->ctx, &c->args, &c->launch);
}

static sf_status time_row(gpu *g, const bench_row *r, int reps, int warmup, row_result *out) {
  sf_measure_sets b;
  sf_status st = buffers_alloc(g, r, warmup + reps, &b);
  if (st != SF_OK) return st;
  out->sets = b.sets;
  row_call call = {.ctx = g->ctx, .launch = {.stream = g->timer.stream, .spec = launch_spec, .untuned = launch_untuned}};
  call.args = sf_measure_fwd_args(&b, 0);
  const sf_kernel *kernel;
  st = sf_scan_fwd_variant(&call.args, &call.launch, &out->variant);
  double t0 = cli_now_ms();
  if (st == SF_OK) st = sf_kernel_for_variant(g->ctx, &out->variant, &kernel, &out->origin);
  out->load_ms = cli_now_ms() - t0;
  for (int i = 0; i < warmup && st == SF_OK; i++) {
    call.args = sf_measure_fwd_args(&b, i % b.sets);
    st = sf_scan_fwd(g->ctx, &call.args, &call.launch);
  }
  if (st == SF_OK) st = sf_cu_check(g->cu->StreamSynchronize(g->timer.stream), "cuStreamSynchronize (warm-up)");
  float *ms = malloc((size_t)reps * sizeof *ms);
  if (!ms && st == SF_OK) st = sf_fail(SF_ENOMEM, "bench: out of memory");
  for (int i = 0; i < reps && st == SF_OK; i++) {
    call.args = sf_measure_fwd_args(&b, (warmup + i) % b.sets);
    st = sf_timer_time_one(&g->timer, run_row, &call, &ms[i]);
  }
  if (st == SF_OK) out->t = sf_timing_of(ms, reps);
  free(ms);
  g->cu->StreamSynchronize(g->timer.stream); /* nothing may still read the buffers */
  sf_measure_sets_free(g->cu, &b);
  out->bytes = row_bytes(r);
  out->exps = (double)r->batch * r->dim * r->seqlen * r->dstate;
  out->floor_ms = 1e3 * fmax(out->bytes / g->copy_bytes_per_s, out->exps / g->exp2_per_s);
  return st;
}

static void print_table_header(void) {
  printf("%-20s %-5s %-9s %9s %9s %9s %8s %9s %7s %8s %8s\n", "shape B,D,L,N", "type", "t/i/c", "time us",
         "min us", "p90 us", "GB/s", "floor us", "% floor", "ref us", "speedup");
}

static void print_row(const bench_row *r, const row_result *res) {
  char label[96], config[32];
  row_label(r, label, sizeof label);
  if (!res->ok) {
    printf("%-20s %-5s error: %s\n", label, sf_dtype_name(r->dtype), res->error);
    fflush(stdout);
    return;
  }
  snprintf(config, sizeof config, "%d/%d/%d", res->variant.threads, res->variant.items, res->variant.channels);
  const double us = res->t.median * 1e3;
  printf("%-20s %-5s %-9s %9.1f %9.1f %9.1f %8.0f %9.1f %7.1f", label, sf_dtype_name(r->dtype), config, us,
         res->t.min * 1e3, res->t.p90 * 1e3, res->bytes / (res->t.median * 1e-3) / 1e9, res->floor_ms * 1e3,
         100.0 * res->floor_ms / res->t.median);
  if (r->ref_us > 0)
    printf(" %8.1f %7.2fx\n", r->ref_us, r->ref_us / us);
  else
    printf(" %8s %8s\n", "-", "-");
  fflush(stdout);
}

static json_t *row_json(const bench_row *r, const row_result *res) {
  char spec[512];
  json_t *j = json_object();
  json_object_set_new(j, "batch", json_integer(r->batch));
  json_object_set_new(j, "dim", json_integer(r->dim));
  json_object_set_new(j, "seqlen", json_integer(r->seqlen));
  json_object_set_new(j, "dstate", json_integer(r->dstate));
  json_object_set_new(j, "z", json_boolean(r->z));
  json_object_set_new(j, "dtype", json_string(sf_dtype_name(r->dtype)));
  json_object_set_new(j, "ok", json_boolean(res->ok));
  if (!res->ok) {
    json_object_set_new(j, "error", json_string(res->error));
    return j;
  }
  sf_variant_format(&res->variant, spec, sizeof spec);
  json_object_set_new(j, "variant", json_string(spec));
  json_object_set_new(j, "threads", json_integer(res->variant.threads));
  json_object_set_new(j, "items", json_integer(res->variant.items));
  json_object_set_new(j, "channels", json_integer(res->variant.channels));
  json_object_set_new(j, "kernel_origin", json_string(cli_origin_text(res->origin)));
  json_object_set_new(j, "kernel_load_ms", json_real(res->load_ms));
  json_object_set_new(j, "input_sets", json_integer(res->sets));
  json_object_set_new(j, "median_us", json_real(res->t.median * 1e3));
  json_object_set_new(j, "min_us", json_real(res->t.min * 1e3));
  json_object_set_new(j, "p90_us", json_real(res->t.p90 * 1e3));
  json_object_set_new(j, "bytes", json_real(res->bytes));
  json_object_set_new(j, "exps", json_real(res->exps));
  json_object_set_new(j, "gb_per_s", json_real(res->bytes / (res->t.median * 1e-3) / 1e9));
  json_object_set_new(j, "floor_us", json_real(res->floor_ms * 1e3));
  json_object_set_new(j, "percent_of_floor", json_real(100.0 * res->floor_ms / res->t.median));
  if (r->ref_us > 0) {
    json_object_set_new(j, "established_us", json_real(r->ref_us));
    json_object_set_new(j, "speedup", json_real(r->ref_us / (res->t.median * 1e3)));
  }
  return j;
}

/* ---- compile, cache and launch overheads ------------------------------------------- */

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Generation + NVRTC for the device's target, no cache involved. */
static void measure_cold_compile(gpu *g, const sf_variant *v, json_t *j) {
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
    printf("cold compile       failed: %s\n", sf_last_error());
    json_object_set_new(j, "cold_compile_error", json_string(sf_last_error()));
    return;
  }
  printf("cold compile       %.1f ms (generate %.1f ms, NVRTC %.1f ms; %zu bytes, %d registers)\n", t2 - t0,
         t1 - t0, t2 - t1, binary.size, binary.registers);
  json_object_set_new(j, "cold_compile_ms", json_real(t2 - t0));
  json_object_set_new(j, "generate_ms", json_real(t1 - t0));
  json_object_set_new(j, "nvrtc_ms", json_real(t2 - t1));
  sf_binary_free(&binary);
}

/* A fresh cache on the same directory: open, generate, key, read and verify the entry
 * (median of 5), then the module load on top. */
static void measure_disk_hit(gpu *g, const sf_variant *v, json_t *j) {
  sf_cache_stats stats;
  if (sf_cache_stat(g->ctx->cache, &stats) != SF_OK || stats.memory_only) {
    printf("disk-cache hit     n/a: the cache is memory-only this run\n");
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
      printf("disk-cache hit     failed: %s\n", sf_last_error());
      return;
    }
    hit[n] = t1 - t0;
    load[n] = t2 - t1;
  }
  qsort(hit, 5, sizeof *hit, compare_double);
  qsort(load, 5, sizeof *load, compare_double);
  printf("disk-cache hit     %.2f ms (open, generate, read, verify) + %.2f ms module load = %.2f ms\n", hit[2],
         load[2], hit[2] + load[2]);
  json_object_set_new(j, "disk_hit_ms", json_real(hit[2]));
  json_object_set_new(j, "module_load_ms", json_real(load[2]));
}

static void measure_memory_hit(gpu *g, const sf_variant *v, json_t *j) {
  enum { CALLS = 200000 };
  const sf_kernel *kernel;
  sf_kernel_origin origin = SF_KERNEL_COMPILED;
  sf_status st = sf_kernel_for_variant(g->ctx, v, &kernel, &origin);
  double t0 = cli_now_ms();
  for (int i = 0; i < CALLS && st == SF_OK; i++) st = sf_kernel_for_variant(g->ctx, v, &kernel, &origin);
  double ns = (cli_now_ms() - t0) * 1e6 / CALLS;
  if (st != SF_OK || origin != SF_KERNEL_LOADED) {
    printf("in-process hit     failed: %s\n", st != SF_OK ? sf_last_error() : "the kernel was not found loaded");
    return;
  }
  printf("in-process hit     %.0f ns (sf_kernel_for_variant, mean of %d calls)\n", ns, CALLS);
  json_object_set_new(j, "memory_hit_ns", json_real(ns));
}

/* Host time of sf_scan_fwd on the smallest table row: queue many calls, then divide. */
static void measure_host_launch(gpu *g, json_t *j) {
  enum { CALLS = 1000 };
  const bench_row r = table[0];
  sf_measure_sets b;
  sf_status st = buffers_alloc(g, &r, 1, &b);
  if (st != SF_OK) {
    printf("host launch        failed: %s\n", sf_last_error());
    return;
  }
  sf_launch launch = {.stream = g->timer.stream};
  sf_scan_fwd_args args = sf_measure_fwd_args(&b, 0);
  for (int i = 0; i < 100 && st == SF_OK; i++) st = sf_scan_fwd(g->ctx, &args, &launch);
  if (st == SF_OK) st = sf_cu_check(g->cu->StreamSynchronize(g->timer.stream), "cuStreamSynchronize");
  double t0 = cli_now_ms();
  for (int i = 0; i < CALLS && st == SF_OK; i++) st = sf_scan_fwd(g->ctx, &args, &launch);
  double us = (cli_now_ms() - t0) * 1e3 / CALLS;
  if (st == SF_OK) st = sf_cu_check(g->cu->StreamSynchronize(g->timer.stream), "cuStreamSynchronize");
  g->cu->StreamSynchronize(g->timer.stream);
  sf_measure_sets_free(g->cu, &b);
  if (st != SF_OK) {
    printf("host launch        failed: %s\n", sf_last_error());
    return;
  }
  char label[96];
  row_label(&r, label, sizeof label);
  printf("host launch        %.2f us per sf_scan_fwd (%s fp32, %d calls queued, no sync between)\n", us, label, CALLS);
  json_object_set_new(j, "host_launch_us", json_real(us));
}

/* ---- the command ------------------------------------------------------------------- */

typedef struct bench_options {
  const char *rows_path, *json_path;
  sf_dtype dtypes[3];
  int ndtypes; /* 0: not given */
  long long reps, warmup;
} bench_options;

static int parse(int argc, char **argv, bench_options *o) {
  enum { OPT_ROWS = 256, OPT_DTYPE, OPT_JSON, OPT_REPS, OPT_WARMUP, OPT_SPEC, OPT_TUNED, OPT_UNTUNED };
  static const struct option options[] = {
      {"rows", required_argument, NULL, OPT_ROWS}, {"dtype", required_argument, NULL, OPT_DTYPE},
      {"json", required_argument, NULL, OPT_JSON}, {"reps", required_argument, NULL, OPT_REPS},
      {"warmup", required_argument, NULL, OPT_WARMUP}, {"spec", required_argument, NULL, OPT_SPEC},
      {"tuned", no_argument, NULL, OPT_TUNED}, {"untuned", no_argument, NULL, OPT_UNTUNED},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  optind = 1;
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, ":h", options, NULL)) != -1;) {
    switch (c) {
      case OPT_ROWS: o->rows_path = optarg; break;
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
  return -1;
}

/* The variant a row's call runs. */
static sf_status row_variant(const bench_row *r, sf_variant *v) {
  sf_check_shape shape = {.batch = r->batch, .dim = r->dim, .seqlen = r->seqlen, .dstate = r->dstate,
                          .groups = 1, .dtype = r->dtype, .z = r->z, .D = true, .delta_bias = true,
                          .softplus = true};
  return cli_check_variant(&shape, NULL, v);
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
  printf("configurations     %s\n", launch_spec     ? "--spec for every row"
                                    : launch_untuned ? "heuristics (--untuned)"
                                                     : "tuning database, else heuristics (--tuned)");
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
}

/* Everything after the GPU is set up; returns how many rows failed. */
static int bench_all(gpu *g, const bench_options *o, const row_list *rows, json_t *root) {
  json_t *overheads = json_object(), *jrows = json_array();
  json_object_set_new(root, "overheads", overheads);
  json_object_set_new(root, "rows", jrows);

  /* The first row's variant stands for compile and cache costs: compiled cold before the
   * rows publish it, read back from the disk after. */
  sf_variant first;
  const bool have_first = row_variant(&rows->rows[0], &first) == SF_OK;
  char spec[512] = "";
  if (have_first) sf_variant_format(&first, spec, sizeof spec);
  printf("\nvariant            %s (first row)\n", have_first ? spec : sf_last_error());
  if (have_first) {
    json_object_set_new(overheads, "variant", json_string(spec));
    measure_cold_compile(g, &first, overheads);
  }

  printf("\n");
  print_table_header();
  int failures = 0;
  for (int i = 0; i < rows->count; i++) {
    row_result res = {0};
    res.ok = time_row(g, &rows->rows[i], (int)o->reps, (int)o->warmup, &res) == SF_OK;
    if (!res.ok) {
      snprintf(res.error, sizeof res.error, "%s", sf_last_error());
      failures++;
    }
    print_row(&rows->rows[i], &res);
    json_array_append_new(jrows, row_json(&rows->rows[i], &res));
  }
  printf("(ref us: the established implementation on an H200, performance.md; compare on the same GPU)\n\n");

  if (have_first) {
    measure_disk_hit(g, &first, overheads);
    measure_memory_hit(g, &first, overheads);
  }
  measure_host_launch(g, overheads);
  return failures;
}

static int run(const bench_options *o, const row_list *rows) {
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
  row_list rows = {0};
  if (o.rows_path) {
    static const sf_dtype both[] = {SF_FP32, SF_BF16};
    status = o.ndtypes ? read_rows_file(o.rows_path, o.dtypes, o.ndtypes, &rows)
                       : read_rows_file(o.rows_path, both, 2, &rows);
  } else {
    status = default_rows(o.dtypes, o.ndtypes, &rows);
  }
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
  free(rows.rows);
  return status;
}
