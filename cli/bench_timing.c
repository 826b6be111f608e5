/* bench_timing.c: `scanforge bench` on the GPU: setting it up, a row's input sets, and the
 * timed launches of a row's forward and backward. */
#include "cli/bench_timing.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "cli/bench_floor.h"
#include "cli/scan_common.h"
#include "generator/generator.h"
#include "runtime/compile/compile.h"
#include "runtime/launch/context.h"

/* Bytes of one set of a row's tensors must reach this before sets stop being added. */
static const double WORKING_SET_BYTES = 128.0 * 1024 * 1024;

/* Device-to-device copy bandwidth (tuning/measure.c). */
sf_status bench_measure_copy(bench_gpu *g, size_t *bytes_used) {
  return sf_timer_copy_bandwidth(&g->timer, &g->copy_bytes_per_s, bytes_used);
}

sf_status bench_measure_empty_launch(bench_gpu *g) {
  return sf_timer_empty_launch(&g->timer, &g->empty_launch_us);
}

sf_status bench_gpu_open(bench_gpu *g) {
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

sf_status bench_gpu_keep_pool(bench_gpu *g) {
  CUdevice device;
  CUmemoryPool pool;
  unsigned long long keep = ~0ull; /* never release to the OS at a synchronization */
  sf_status st = sf_cu_check(g->cu->DeviceGet(&device, 0), "cuDeviceGet");
  if (st == SF_OK) st = sf_cu_check(g->cu->DeviceGetDefaultMemPool(&pool, device), "cuDeviceGetDefaultMemPool");
  if (st == SF_OK)
    st = sf_cu_check(g->cu->MemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep),
                     "cuMemPoolSetAttribute(release threshold)");
  return st;
}

void bench_gpu_close(bench_gpu *g) {
  sf_timer_close(&g->timer);
  sf_context_destroy(g->ctx);
}

/* ---- one row's tensors ---------------------------------------------------------------- */

sf_measure_shape bench_row_shape(const bench_row *r, bool backward) {
  return (sf_measure_shape){.batch = r->batch, .dim = r->dim, .seqlen = r->seqlen, .dstate = r->dstate,
                            .groups = 1, .dtype = r->dtype, .z = r->z, .D = true, .delta_bias = true,
                            .softplus = true, .B_var = true, .C_var = true, .backward = backward};
}

/* Enough random input sets that the working set exceeds WORKING_SET_BYTES (at most
 * max_sets: more than the launches would never be read). */
sf_status bench_buffers_alloc(bench_gpu *g, const bench_row *r, bool backward, int max_sets, sf_measure_sets *b) {
  sf_measure_shape shape = bench_row_shape(r, backward);
  sf_status st = sf_measure_sets_alloc(g->cu, &shape, WORKING_SET_BYTES, max_sets, b);
  if (st != SF_OK || !bench_block_states) return st;
  /* --block-states: the interval the row's backward wants (known from its variant, which
   * the sets' arguments give), then the sets again with that many saved states */
  sf_scan_bwd_args args = sf_measure_bwd_args(b, 0);
  const sf_launch launch = {.spec = bench_launch_bwd_spec, .untuned = bench_launch_untuned};
  st = sf_scan_bwd_block_states_interval(&args, &launch, &shape.state_interval);
  if (st != SF_OK) return sf_measure_sets_free(g->cu, b), st;
  if (shape.state_interval == sf_scan_state_interval(r->seqlen)) return SF_OK;
  sf_measure_sets_free(g->cu, b);
  return sf_measure_sets_alloc(g->cu, &shape, WORKING_SET_BYTES, max_sets, b);
}

/* --spec and --bwd-spec: launch knobs applied to every row's forward or backward (for
 * exploring variants by hand). */
const char *bench_launch_spec, *bench_launch_bwd_spec;
/* --untuned: the heuristics choose, the tuning database is not read. */
bool bench_launch_untuned;
/* --block-states: forwards save every block's starting state for the backward. */
bool bench_block_states;

/* One call to time: a forward or a backward on input set `set`. */
typedef struct row_call {
  sf_context *ctx;
  const sf_measure_sets *sets;
  bool backward, deterministic;
  int set;
  sf_launch launch;
} row_call;

double bench_waves(const sf_launch_shape *s) {
  const double at_once = (double)s->blocks_per_sm * s->sm_count;
  return at_once > 0 ? (double)s->blocks / at_once : 0.0;
}

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
 * times). The launch plan may load a second variant (the backward's pairs=1, the
 * forward's shorter blocks: chosen by waves): its load is timed too, and the origin says
 * "compiled" when either was compiled. */
static sf_status load_variant(bench_gpu *g, row_call *call, bench_pass_result *out) {
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
  const unsigned long compiles = sf_compile_count();
  double t0 = cli_now_ms();
  if (st == SF_OK) st = sf_kernel_for_variant(g->ctx, &out->variant, &kernel, &out->origin);
  if (st == SF_OK && call->backward) {
    sf_scan_bwd_args args = sf_measure_bwd_args(call->sets, 0);
    args.deterministic = call->deterministic;
    st = sf_scan_bwd_shape(g->ctx, &args, &call->launch, &out->shape);
  } else if (st == SF_OK) {
    sf_scan_fwd_args args = sf_measure_fwd_args(call->sets, 0);
    st = sf_scan_fwd_shape(g->ctx, &args, &call->launch, &out->shape);
  }
  out->load_ms = cli_now_ms() - t0;
  if (st == SF_OK && out->shape.blocks > 0 && !sf_variant_same(&out->shape.variant, &out->variant)) {
    out->variant = out->shape.variant; /* the plan fitted the launch to the GPU: this one runs */
    if (sf_compile_count() != compiles) out->origin = SF_KERNEL_COMPILED;
  }
  return st;
}

/* Warm-up launches, then `reps` timed ones, each on the next input set. */
static sf_status time_call(bench_gpu *g, row_call *call, int reps, int warmup, bench_pass_result *out) {
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

static void finish_pass(bench_pass_result *out, sf_status st) {
  out->ran = true;
  out->ok = st == SF_OK;
  if (!out->ok) snprintf(out->error, sizeof out->error, "%s", sf_last_error());
}

void bench_time_forward(bench_gpu *g, const bench_row *r, int reps, int warmup, bench_pass_result *out) {
  sf_measure_sets b;
  sf_status st = bench_buffers_alloc(g, r, false, warmup + reps, &b);
  if (st == SF_OK) {
    row_call call = {.ctx = g->ctx, .sets = &b,
                     .launch = {.stream = g->timer.stream, .spec = bench_launch_spec, .untuned = bench_launch_untuned}};
    st = time_call(g, &call, reps, warmup, out);
    sf_measure_sets_free(g->cu, &b);
  }
  bench_set_floor(g, r, false, out);
  finish_pass(out, st);
}

/* The backward on the states that a forward saved on the same input set (every set gets
 * its forward first, untimed, with the forward's own choice of variant): dout random,
 * every gradient of the row requested. With `deterministic`, the deterministic mode is
 * timed too, on the same sets. */
void bench_time_backward(bench_gpu *g, const bench_row *r, int reps, int warmup, bool deterministic,
                         bench_row_result *res) {
  sf_measure_sets b;
  sf_status st = bench_buffers_alloc(g, r, true, warmup + reps, &b);
  const sf_launch fwd_launch = {.stream = g->timer.stream, .untuned = bench_launch_untuned};
  for (int set = 0; st == SF_OK && set < b.sets; set++) {
    sf_scan_fwd_args args = sf_measure_fwd_args(&b, set);
    st = sf_scan_fwd(g->ctx, &args, &fwd_launch);
  }
  if (st == SF_OK) st = sf_cu_check(g->cu->StreamSynchronize(g->timer.stream), "cuStreamSynchronize (forward for the saved states)");
  if (st != SF_OK) st = sf_fail_context(st, "the forward that saves the backward's states");
  for (int det = 0; det <= (int)deterministic; det++) {
    bench_pass_result *out = &res->pass[det ? PASS_BWD_DET : PASS_BWD];
    sf_status pass_st = st;
    if (st == SF_OK) {
      row_call call = {.ctx = g->ctx, .sets = &b, .backward = true, .deterministic = det,
                       .launch = {.stream = g->timer.stream, .spec = bench_launch_bwd_spec,
                                  .untuned = bench_launch_untuned}};
      pass_st = time_call(g, &call, reps, warmup, out);
    }
    bench_set_floor(g, r, true, out);
    finish_pass(out, pass_st);
  }
  sf_measure_sets_free(g->cu, &b); /* a failed alloc left it empty: nothing to free */
}
