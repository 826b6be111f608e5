/* bench_timing.h: the GPU `scanforge bench` runs on, and the timing of one row's passes:
 * random input sets rotated past the L2 cache, warm-up, each launch timed with CUDA events
 * behind the spin kernel (tuning/measure.h), median, min and p90. */
#ifndef SCANFORGE_CLI_BENCH_TIMING_H
#define SCANFORGE_CLI_BENCH_TIMING_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/bench_rows.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/compile/target.h"
#include "runtime/launch/kernels.h"
#include "scanforge/scanforge.h"
#include "tuning/measure.h"

typedef struct bench_gpu {
  const sf_cu *cu;
  sf_context *ctx;
  sf_device_info info;
  sf_target target;
  sf_timer timer; /* its stream, events and spin kernel (tuning/measure.h) */
  double copy_bytes_per_s;
  double exp2_per_s;
  double empty_launch_us; /* a launch that does nothing, timed as rows are (< 0: not measured) */
} bench_gpu;

/* The passes a row may time. */
typedef enum bench_pass { PASS_FWD, PASS_BWD, PASS_BWD_DET, PASSES } bench_pass;

/* One timed pass of one row. */
typedef struct bench_pass_result {
  bool ran; /* asked for (else nothing below is set) */
  bool ok;
  char error[512];
  sf_variant variant;
  sf_launch_shape shape; /* its blocks, how many an SM holds, the SMs, the segments */
  sf_kernel_origin origin;
  double load_ms;
  int sets;
  sf_timing t; /* ms */
  double bytes, exps, floor_ms;
} bench_pass_result;

typedef struct bench_row_result {
  bench_pass_result pass[PASSES];
} bench_row_result;

/* The launch every timed call uses, set from the options before any row runs: --spec and
 * --bwd-spec (knobs for every row's forward or backward, NULL: the tuned or heuristic
 * choice) and --untuned (the heuristics alone, the tuning database not read). */
extern const char *bench_launch_spec, *bench_launch_bwd_spec;
extern bool bench_launch_untuned;
/* --block-states: every row's forward saves a state at the start of each of its backward's
 * blocks (sf_scan_bwd_block_interval; docs/design-block-states.md), timed forward included. */
extern bool bench_block_states;

/* The launch's main kernel blocks over what the GPU holds at once (blocks per SM x SMs):
 * 1.0 is one full wave; 1.1 leaves most SMs idle during a second, short one. */
double bench_waves(const sf_launch_shape *s);

/* Opens the device, a context and the timer, and sets the exp2 rate; bench_gpu_close
 * releases what was opened (also after a failed open). */
sf_status bench_gpu_open(bench_gpu *g);
/* bench --keep-pool: device 0's default memory pool keeps its memory across
 * synchronizations, so stream-ordered workspaces never wait for the driver to map memory. */
sf_status bench_gpu_keep_pool(bench_gpu *g);
void bench_gpu_close(bench_gpu *g);
/* Measures the copy bandwidth into g (the floor's bytes rate); *bytes_used: the copy's size. */
sf_status bench_measure_copy(bench_gpu *g, size_t *bytes_used);
/* The empty launch's time (sf_timer_empty_launch) into g->empty_launch_us. */
sf_status bench_measure_empty_launch(bench_gpu *g);

/* A row's tensors as tuning/measure.h describes them (B and C variable, one group, D,
 * delta_bias and softplus on). */
sf_measure_shape bench_row_shape(const bench_row *r, bool backward);
/* Random input sets of a row, enough to exceed 128 MiB (at most max_sets). */
sf_status bench_buffers_alloc(bench_gpu *g, const bench_row *r, bool backward, int max_sets, sf_measure_sets *b);

/* Times the row's forward into *out (its floor too); a failure is recorded there. */
void bench_time_forward(bench_gpu *g, const bench_row *r, int reps, int warmup, bench_pass_result *out);
/* Times the row's backward (and its deterministic mode with `deterministic`) into res. */
void bench_time_backward(bench_gpu *g, const bench_row *r, int reps, int warmup, bool deterministic,
                         bench_row_result *res);

#endif
