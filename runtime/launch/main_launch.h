/* main_launch.h: what a device call's main kernel needs before it launches, shared by the
 * forward, the backward and sf_scan_{fwd,bwd}_shape: the variant's kernel, its blocks over
 * channels and batch rows, and the segments of the sequence scanned in parallel. */
#ifndef SCANFORGE_MAIN_LAUNCH_H
#define SCANFORGE_MAIN_LAUNCH_H

#include <stdint.h>

#include "runtime/launch/kernels.h"
#include "runtime/launch/segments.h"

typedef struct sf_main_launch {
  const sf_kernel *kernel;
  const sf_cu *cu;
  unsigned block;   /* threads a block */
  unsigned grid_x;  /* blocks over the channels (grid y: batch rows, grid z: segments) */
  sf_segments segments;
} sf_main_launch;

/* Sets v->words for the call f (and, for a backward, its dout): a split=state variant
 * whose staged rows are not all 16-byte aligned (sf_staged_rows_aligned) runs the module
 * that copies them in 4-byte pieces (docs/design-row-alignment.md). Before the plan, so
 * that every twin the plan tries inherits it. */
void sf_main_variant_fit_rows(sf_variant *v, const sf_scan_fwd_args *f, const void *dout, int64_t dout_batch_stride,
                              int64_t dout_dim_stride);

/* Loads the entry point of variant v's module that the call f runs (its block-states entry where f asks for one), checks
 * its block size against what the kernel allows, and plans its grid for f's batch x dim
 * channels of seqlen steps; segments when the blocks fill less than max_fill of the GPU
 * (sf_plan_segments). */
sf_status sf_main_launch_plan(sf_context *ctx, const sf_variant *v, const sf_scan_fwd_args *f, double max_fill,
                              sf_main_launch *out);

/* Blocks the plan launches over batch rows: channel blocks x rows x segments. */
int64_t sf_main_launch_blocks(const sf_main_launch *plan, int64_t batch);

/* Times the GPU fills up with the plan's blocks (rounded up: 2 for 1.1), the blocks it
 * runs at once being its kernel's blocks an SM times sm_count; INT64_MAX when the
 * occupancy is unknown. */
int64_t sf_main_launch_waves(const sf_main_launch *plan, int64_t batch, int sm_count);

/* Plans `twin`, an option the launch plan may take in place of the call's variant (a call
 * with forward arguments f): true with *out set, or false, its error cleared, when it
 * cannot be planned (refused, compiled, loaded), which leaves the call as planned. */
bool sf_main_launch_plan_twin(sf_context *ctx, const sf_scan_fwd_args *f, double max_fill, const sf_variant *twin,
                              sf_main_launch *out);

/* The launch plans' wave rules (docs/design-waves.md): when `plan` (of variant *v, a call
 * with forward arguments f) needs more than one wave, plans `twin` instead and takes it,
 * with its plan, if it needs no segments and its waves (rounded up) times block_cost, the
 * time of one of its blocks over one of v's, are fewer than v's. The twin is an option:
 * one that cannot be planned (refused, compiled, loaded) leaves the call as planned.
 * Fails only when the GPU's SM count cannot be read. */
sf_status sf_main_launch_fit_waves(sf_context *ctx, const sf_scan_fwd_args *f, double max_fill, const sf_variant *twin,
                                   double block_cost, sf_variant *v, sf_main_launch *plan);

/* Plans `twin` (registers capped for one wave: the cap and spread twins) and, when its
 * plan is unsegmented, runs in one wave on sm_count SMs and needs at most `max_more_local`
 * bytes of local memory a thread more than `plan`, makes *v and *plan the twin's. */
void sf_main_launch_take_one_wave(sf_context *ctx, const sf_scan_fwd_args *f, double max_fill, int sm_count,
                                  const sf_variant *twin, int max_more_local, sf_variant *v, sf_main_launch *plan);

/* The launch plans' cap rule (docs/design-waves.md): when `plan` (of variant *v, a call
 * with forward arguments f, unsegmented) needs two waves and its capped twin
 * (sf_capped_twin: registers capped for the blocks an SM that hold the call in one wave)
 * needs at most SF_CAP_MAX_GROWTH times the blocks an SM the plan holds, runs in one wave
 * and spills at most SF_CAP_MAX_SPILL bytes a thread more, *v and *plan become the twin's. */
sf_status sf_main_launch_fit_cap(sf_context *ctx, const sf_scan_fwd_args *f, double max_fill, sf_variant *v,
                                 sf_main_launch *plan);

/* Whether the launch plan may replace the call's variant by a twin: a variant the
 * runtime chose (no spec), or a spec the caller lets be planned (spec_planned, as the
 * tuner times its candidates). */
bool sf_main_launch_may_twin(const sf_launch *launch);

/* The call's shape for sf_scan_{fwd,bwd}_shape, from its plan. */
sf_status sf_main_launch_shape(sf_context *ctx, const sf_variant *v, const sf_main_launch *plan, int64_t batch,
                               sf_launch_shape *out);

#endif
