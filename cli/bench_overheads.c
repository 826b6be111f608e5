/* bench_overheads.c: the costs around a launch that `scanforge bench` reports once per
 * pass: compile, cache hits, host time of a call. */
#include "cli/bench_overheads.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "cli/bench_rows_source.h"
#include "cli/scan_common.h"
#include "generator/generator.h"
#include "runtime/cache/cache.h"
#include "runtime/compile/compile.h"
#include "runtime/launch/context.h"

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
static void measure_cold_compile(bench_gpu *g, const sf_variant *v, const char *tag, json_t *j) {
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
static void measure_disk_hit(bench_gpu *g, const sf_variant *v, const char *tag, json_t *j) {
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

static void measure_memory_hit(bench_gpu *g, const sf_variant *v, const char *tag, json_t *j) {
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
static void measure_host_launch(bench_gpu *g, bool backward, json_t *j) {
  enum { CALLS = 1000 };
  const char *tag = backward ? " bwd" : "";
  const bench_row r = bench_reference_rows[0];
  sf_measure_sets b;
  sf_status st = bench_buffers_alloc(g, &r, backward, 1, &b);
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
  bench_row_label(&r, label, sizeof label);
  printf("%.2f us per %s (%s fp32, %d calls queued, no sync between)\n", us,
         backward ? "sf_scan_bwd" : "sf_scan_fwd", label, CALLS);
  json_object_set_new(j, "host_launch_us", json_real(us));
}

/* The variant a row's forward or backward runs (the tuned or heuristic choice). */
static sf_status row_variant(const bench_row *r, bool backward, sf_variant *v) {
  sf_check_shape shape = {.batch = r->batch, .dim = r->dim, .seqlen = r->seqlen, .dstate = r->dstate,
                          .groups = 1, .dtype = r->dtype, .z = r->z, .D = true, .delta_bias = true,
                          .softplus = true};
  return backward ? cli_check_bwd_variant(&shape, NULL, v) : cli_check_variant(&shape, NULL, v);
}

/* The first row's variant of a pass stands for compile and cache costs: compiled cold
 * before the rows publish it (read back from the disk after, by bench_measure_cached). */
bool bench_first_variant(bench_gpu *g, const bench_row_list *rows, bool backward, json_t *j, sf_variant *v) {
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

void bench_measure_cached(bench_gpu *g, bool have, const sf_variant *v, bool backward, json_t *j) {
  const char *tag = backward ? " bwd" : "";
  if (have) {
    measure_disk_hit(g, v, tag, j);
    measure_memory_hit(g, v, tag, j);
  }
  measure_host_launch(g, backward, j);
}
