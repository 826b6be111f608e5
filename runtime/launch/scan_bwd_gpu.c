/* scan_bwd_gpu.c: the backward on the device: choose the variant, zero the sums, launch. */
#include "runtime/launch/scan_bwd_gpu.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "runtime/launch/call_variant.h"
#include "runtime/launch/main_launch.h"
#include "runtime/cuda/cuda_driver.h"
#include "base/error.h"
#include "runtime/launch/kernel_params.h"
#include "runtime/launch/launch_params.h"
#include "runtime/launch/kernels.h"
#include "runtime/launch/segments.h"
#include "runtime/launch/workspace.h"
#include "runtime/launch_config/heuristics.h"


/* The variant of a backward call. A forward that saved states at a short interval
 * (state_interval != 0) means the block-states mode, which has tuning entries of its own. */
static sf_status variant_for(const sf_scan_bwd_args *r, bool block_states, const sf_launch *launch, sf_variant *out) {
  const sf_scan_fwd_args *f = &r->fwd;
  sf_variant v;
  sf_status st = sf_call_variant(f, SF_OP_BWD, r->deterministic, block_states, launch, &v);
  if (st != SF_OK) return st;
  if (!v.split_states && v.threads * v.items != sf_scan_state_interval(f->seqlen))
    return sf_fail(SF_EINVAL, "backward variant: threads x items (%d x %d) must equal the state interval %lld of L = %lld",
                   v.threads, v.items, (long long)sf_scan_state_interval(f->seqlen), (long long)f->seqlen);
  if ((v.B_var || v.C_var) && (f->dim / f->groups) % v.channels != 0)
    return sf_fail(SF_EINVAL, "backward variant: channels (%d) must divide the channels of a group (dim / groups = %lld): a block shares one group's B and C",
                   v.channels, (long long)(f->dim / f->groups));
  *out = v;
  return SF_OK;
}

sf_status sf_scan_bwd_variant(const sf_scan_bwd_args *args, const sf_launch *launch, sf_variant *out) {
  if (!args || !out) return sf_fail(SF_EINVAL, "sf_scan_bwd_variant: args and out must not be NULL");
  const sf_launch none = {0};
  return variant_for(args, args->fwd.state_interval != 0, launch ? launch : &none, out);
}

sf_status sf_scan_bwd_block_states_interval(const sf_scan_bwd_args *args, const sf_launch *launch, int64_t *interval) {
  if (!args || !interval) return sf_fail(SF_EINVAL, "sf_scan_bwd_block_states_interval: args and interval must not be NULL");
  const sf_launch none = {0};
  sf_variant v;
  sf_status st = variant_for(args, true, launch ? launch : &none, &v);
  if (st == SF_OK) *interval = sf_scan_bwd_block_interval(&v, args->fwd.seqlen);
  return st;
}

int64_t sf_scan_bwd_block_interval(const sf_variant *bwd, int64_t seqlen) {
  const int64_t most = sf_scan_state_interval(seqlen);
  if (!bwd || !bwd->split_states) return most;
  const int64_t items = bwd->items < 4 ? 4 : bwd->items;
  return items < most ? items : most;
}

/* The five sums the kernel accumulates: the outputs, or their partials. */
typedef struct sums {
  float *dA, *dB, *dC, *dD, *ddelta_bias;
} sums;

/* Each sum's length in floats, in the order of `sums`: dA (dim, N); dB and dC variable
 * (batch, G, N, L) or fixed (dim, N); dD and ddelta_bias (dim). */
static void sum_sizes(const sf_scan_fwd_args *f, int64_t sizes[SF_BWD_SUMS]) {
  const int64_t variable = f->batch * f->groups * f->dstate * f->seqlen, fixed = f->dim * f->dstate;
  sizes[0] = fixed;
  sizes[1] = f->B_var ? variable : fixed;
  sizes[2] = f->C_var ? variable : fixed;
  sizes[3] = sizes[4] = f->dim;
}

/* The grid of sf_scan_bwd_zero and sf_scan_bwd_finalize at most: 2048 blocks of 256
 * threads fill the largest GPUs (132 SMs x 2048 threads) about twice; past that each
 * thread serves several floats of a sum. */
#define SF_SUMS_MAX_BLOCKS 2048

/* One launch of `entry` (sf_scan_bwd_zero or sf_scan_bwd_finalize) with `arg`, whose sums
 * have `sizes` floats (0 for one not wanted): nothing when every size is 0. */
static sf_status launch_sums_kernel(sf_context *ctx, const sf_cu *cu, const sf_variant *v, const char *entry,
                                    void *arg, const long long sizes[SF_BWD_SUMS], CUstream stream) {
  int64_t longest = 0;
  for (int k = 0; k < SF_BWD_SUMS; k++)
    if (sizes[k] > longest) longest = sizes[k];
  if (longest == 0) return SF_OK;
  const sf_kernel *kernel = NULL;
  sf_status st = sf_kernel_for_variant_helper(ctx, v, entry, &kernel);
  if (st != SF_OK) return st;
  const int64_t blocks = (longest + SF_SUMS_THREADS - 1) / SF_SUMS_THREADS;
  void *params[] = {arg};
  char call[64];
  snprintf(call, sizeof call, "cuLaunchKernel(%s)", entry);
  return sf_cu_check(cu->LaunchKernel(kernel->function, (unsigned)(blocks < SF_SUMS_MAX_BLOCKS ? blocks : SF_SUMS_MAX_BLOCKS),
                                      1, 1, SF_SUMS_THREADS, 1, 1, (unsigned)kernel->dynamic_shared, stream, params, NULL),
                     call);
}

/* The sums of call `f` set to 0 for the kernel's atomics, all five in one launch of
 * sf_scan_bwd_zero (templates/bwd_sums.tpl): five memsets were five launches, a few
 * microseconds each of a short call's time. */
static sf_status zero_sums(sf_context *ctx, const sf_cu *cu, const sf_variant *v, const sf_scan_fwd_args *f,
                           const sums *s, CUstream stream) {
  sf_bwd_zero_params z = {{s->dA, s->dB, s->dC, s->dD, s->ddelta_bias}, {0}};
  int64_t sizes[SF_BWD_SUMS];
  sum_sizes(f, sizes);
  for (int k = 0; k < SF_BWD_SUMS; k++) z.counts[k] = z.sums[k] ? sizes[k] : 0;
  return launch_sums_kernel(ctx, cu, v, "sf_scan_bwd_zero", &z, z.counts, stream);
}

/* Deterministic mode: partial sums in a stream-ordered workspace, one slice per batch row
 * and segment walked in parallel (dA, fixed dB/dC, dD, ddelta_bias) or per block of a
 * group's channels (variable dB/dC), added up afterwards by sf_scan_bwd_finalize in a
 * fixed order. */
typedef struct deterministic_plan {
  CUdeviceptr workspace;
  sums partials;
  sums outputs;
  int64_t slices[SF_BWD_SUMS], sizes[SF_BWD_SUMS];
} deterministic_plan;

static sf_status plan_partials(sf_context *ctx, const sf_cu *cu, const sf_scan_bwd_args *r, const sf_variant *v,
                               int64_t segments, CUstream stream, deterministic_plan *plan) {
  const sf_scan_fwd_args *f = &r->fwd;
  const int64_t blocks_per_group = f->dim / f->groups / v->channels;
  float *outputs[SF_BWD_SUMS] = {r->dA, r->dB, r->dC, r->dD, r->ddelta_bias};
  const bool var[SF_BWD_SUMS] = {false, f->B_var, f->C_var, false, false};
  sum_sizes(f, plan->sizes);
  int64_t total = 0;
  for (int k = 0; k < SF_BWD_SUMS; k++) {
    plan->slices[k] = var[k] ? blocks_per_group : f->batch * segments;
    if (outputs[k]) total += plan->slices[k] * plan->sizes[k];
  }
  plan->outputs = (sums){r->dA, r->dB, r->dC, r->dD, r->ddelta_bias};
  sf_status st = sf_workspace_alloc(ctx, cu, (size_t)(total ? total : 1) * sizeof(float), stream,
                                   "deterministic workspace", &plan->workspace);
  if (st != SF_OK) return st;
  float *next = (float *)(uintptr_t)plan->workspace;
  float **partials[SF_BWD_SUMS] = {&plan->partials.dA, &plan->partials.dB, &plan->partials.dC,
                                   &plan->partials.dD, &plan->partials.ddelta_bias};
  for (int k = 0; k < SF_BWD_SUMS; k++) {
    if (!outputs[k]) continue;
    *partials[k] = next;
    next += plan->slices[k] * plan->sizes[k];
  }
  return SF_OK;
}

/* Adds up the partials into the outputs (if the main launch succeeded), all five sums in
 * one launch of sf_scan_bwd_finalize, and frees them. */
static sf_status finish_partials(sf_context *ctx, const sf_cu *cu, const sf_variant *v,
                                 deterministic_plan *plan, sf_status st, CUstream stream) {
  sf_bwd_finalize_params f = {
      .partials = {plan->partials.dA, plan->partials.dB, plan->partials.dC, plan->partials.dD, plan->partials.ddelta_bias},
      .sums = {plan->outputs.dA, plan->outputs.dB, plan->outputs.dC, plan->outputs.dD, plan->outputs.ddelta_bias},
  };
  for (int k = 0; k < SF_BWD_SUMS; k++) {
    f.slices[k] = plan->slices[k];
    f.sizes[k] = f.sums[k] ? plan->sizes[k] : 0;
  }
  if (st == SF_OK) st = launch_sums_kernel(ctx, cu, v, "sf_scan_bwd_finalize", &f, f.sizes, stream);
  sf_status freed = sf_cu_check(cu->MemFreeAsync(plan->workspace, stream), "cuMemFreeAsync");
  return st != SF_OK ? st : freed;
}

/* A launch the plan may change (sf_main_launch_may_twin) whose blocks spill into one more
 * wave than the same launch with pairs=1 would need takes pairs=1: half the shared memory
 * of the dB/dC sums, more blocks an SM, for a shuffle and an add per (t, n)
 * (docs/design-pairs.md). */
static sf_status fit_pairs(sf_context *ctx, const sf_scan_bwd_args *r, const sf_launch *launch, sf_variant *v,
                           sf_main_launch *plan) {
  if (!sf_main_launch_may_twin(launch) || v->pairs || !sf_variant_can_pair(v) || plan->segments.count > 0)
    return SF_OK;
  sf_variant paired = *v;
  paired.pairs = true;
  return sf_main_launch_fit_waves(ctx, &r->fwd, SF_BWD_PARALLEL_MAX_FILL, &paired, 1.0, v, plan);
}

/* A launch the plan may change (sf_main_launch_may_twin) whose blocks need more than one
 * wave takes its lanes twin (sf_bwd_lanes_twin: twice the lanes, half the channels a
 * block) when the twin's waves, each SF_BWD_TWIN_BLOCK_COST of a wave of the chosen
 * launch's, take less: its blocks are as large but do half the work, so its last wave is
 * shorter (docs/design-waves.md). The deterministic mode too: half the channels a block is
 * twice the slices of dB and dC partial sums, but with the workspace kept mapped
 * (workspace.h) that costs less than the wave saves on 4 of the 6 rows measured. */
static sf_status fit_lanes(sf_context *ctx, const sf_scan_bwd_args *r, const sf_launch *launch, sf_variant *v,
                           sf_main_launch *plan) {
  sf_variant twin;
  if (!sf_main_launch_may_twin(launch) || plan->segments.count > 0 ||
      !sf_bwd_lanes_twin(v, &twin))
    return SF_OK;
  return sf_main_launch_fit_waves(ctx, &r->fwd, SF_BWD_PARALLEL_MAX_FILL, &twin, SF_BWD_TWIN_BLOCK_COST, v, plan);
}

/* A launch the plan may change (sf_main_launch_may_twin) whose blocks spill a little past
 * one wave takes its capped twin (sf_main_launch_fit_cap): a second, mostly empty wave
 * costs more than a few registers fewer (docs/design-waves.md). */
static sf_status fit_cap(sf_context *ctx, const sf_scan_bwd_args *r, const sf_launch *launch, sf_variant *v,
                         sf_main_launch *plan) {
  if (!sf_main_launch_may_twin(launch)) return SF_OK;
  return sf_main_launch_fit_cap(ctx, &r->fwd, SF_BWD_PARALLEL_MAX_FILL, v, plan);
}

/* A launch the plan may change (sf_main_launch_may_twin) that runs in one wave with at
 * most SF_BWD_SPREAD_MAX_WARPS warps an SM takes its spread twin (sf_bwd_spread_twin: twice
 * the lanes at the same channels, registers capped for the blocks an SM the call needs)
 * when the twin still runs in one wave and spills at most SF_BWD_SPREAD_MAX_SPILL bytes a
 * thread more: the same blocks with twice the warps to hide latencies
 * (docs/design-waves.md). */
static sf_status fit_spread(sf_context *ctx, const sf_scan_bwd_args *r, const sf_launch *launch, sf_variant *v,
                            sf_main_launch *plan) {
  if (!sf_main_launch_may_twin(launch) || plan->segments.count > 0) return SF_OK;
  int sm_count = 0;
  sf_status st = sf_context_sm_count(ctx, &sm_count);
  if (st != SF_OK) return st;
  /* past one wave (or of unknown occupancy): fit_lanes' and fit_pairs' case */
  if (sf_main_launch_waves(plan, r->fwd.batch, sm_count) != 1) return SF_OK;
  const int64_t blocks = sf_main_launch_blocks(plan, r->fwd.batch);
  const int per_sm = (int)((blocks + sm_count - 1) / sm_count);
  sf_variant twin;
  if (per_sm * (int)(plan->block / 32) <= SF_BWD_SPREAD_MAX_WARPS && sf_bwd_spread_twin(v, per_sm, &twin))
    sf_main_launch_take_one_wave(ctx, &r->fwd, SF_BWD_PARALLEL_MAX_FILL, sm_count, &twin, SF_BWD_SPREAD_MAX_SPILL, v,
                                 plan);
  return SF_OK;
}

/* The variant and the main kernel's plan of a resolved device call. */
static sf_status plan_bwd(sf_context *ctx, const sf_scan_bwd_args *r, const sf_launch *launch, sf_variant *v,
                          sf_main_launch *plan) {
  const sf_scan_fwd_args *f = &r->fwd;
  if (f->seqlen > INT_MAX || f->dim > INT_MAX)
    return sf_fail(SF_EINVAL, "seqlen (%lld) and dim (%lld) must be below 2^31 on the GPU",
                   (long long)f->seqlen, (long long)f->dim);
  if (r->deterministic && f->batch > SF_MAX_BATCH_PER_LAUNCH)
    return sf_fail(SF_EINVAL, "deterministic backward: batch (%lld) must be at most %d",
                   (long long)f->batch, SF_MAX_BATCH_PER_LAUNCH);
  sf_status st = variant_for(r, r->fwd.state_interval != 0, launch, v);
  if (st == SF_OK) {
    sf_main_variant_fit_rows(v, f, r->dout, r->dout_batch_stride, r->dout_dim_stride);
    st = sf_main_launch_plan(ctx, v, f, SF_BWD_PARALLEL_MAX_FILL, plan);
  }
  if (st == SF_OK) st = fit_lanes(ctx, r, launch, v, plan);
  if (st == SF_OK) st = fit_pairs(ctx, r, launch, v, plan);
  if (st == SF_OK) st = fit_cap(ctx, r, launch, v, plan);
  if (st == SF_OK) st = fit_spread(ctx, r, launch, v, plan);
  return st;
}

sf_status sf_gpu_scan_bwd_shape(sf_context *ctx, const sf_scan_bwd_args *r, const sf_launch *launch,
                                sf_launch_shape *out) {
  const sf_launch none = {0};
  sf_variant v;
  sf_main_launch plan;
  sf_status st = plan_bwd(ctx, r, launch ? launch : &none, &v, &plan);
  if (st != SF_OK) return st;
  return sf_main_launch_shape(ctx, &v, &plan, r->fwd.batch, out);
}

sf_status sf_gpu_scan_bwd(sf_context *ctx, const sf_scan_bwd_args *r, const sf_launch *launch) {
  const sf_scan_fwd_args *f = &r->fwd;
  sf_variant v;
  sf_main_launch plan_main;
  sf_status st = plan_bwd(ctx, r, launch, &v, &plan_main);
  if (st != SF_OK) return st;
  const sf_kernel *kernel = plan_main.kernel;
  const sf_cu *cu = plan_main.cu;
  const unsigned block = plan_main.block, grid_x = plan_main.grid_x;
  const sf_segments segments = plan_main.segments;
  CUstream stream = (CUstream)launch->stream;

  const int64_t N = f->dstate, L = f->seqlen;
  sums s = {r->dA, r->dB, r->dC, r->dD, r->ddelta_bias};
  deterministic_plan plan = {0};
  if (r->deterministic) {
    st = plan_partials(ctx, cu, r, &v, segments.count > 0 ? segments.count : 1, stream, &plan);
    if (st != SF_OK) return st;
    s = plan.partials;
  } else {
    st = zero_sums(ctx, cu, &v, f, &s, stream);
    if (st != SF_OK) return st;
  }

  /* Per segment: its decays' product, its state and its adjoint from 0 (kernel_params.h). */
  sf_segment_passes passes;
  st = sf_segment_passes_open(ctx, cu, &v, &segments, f->batch, f->dim, 3, stream, &passes);

  const int es = sf_dtype_size(f->dtype);
  for (int64_t b0 = 0; st == SF_OK && b0 < f->batch; b0 += SF_MAX_BATCH_PER_LAUNCH) {
    const int64_t rows = f->batch - b0 < SF_MAX_BATCH_PER_LAUNCH ? f->batch - b0 : SF_MAX_BATCH_PER_LAUNCH;
    const int64_t state_offset = b0 * f->dim * N;
    sf_bwd_params p = {
        .f = sf_fwd_params_for_rows(f, b0, rows),
        .dout = sf_advance(r->dout, b0 * r->dout_batch_stride, es),
        .dout_batch_stride = r->dout_batch_stride, .dout_dim_stride = r->dout_dim_stride,
        .d_last_state = r->d_last_state ? r->d_last_state + state_offset : NULL,
        .du = (void *)sf_advance(r->du, b0 * r->du_batch_stride, es),
        .ddelta = (void *)sf_advance(r->ddelta, b0 * r->ddelta_batch_stride, es),
        .dz = (void *)sf_advance(r->dz, b0 * r->dz_batch_stride, es),
        .du_batch_stride = r->du_batch_stride, .du_dim_stride = r->du_dim_stride,
        .ddelta_batch_stride = r->ddelta_batch_stride, .ddelta_dim_stride = r->ddelta_dim_stride,
        .dz_batch_stride = r->dz_batch_stride, .dz_dim_stride = r->dz_dim_stride,
        .dA = s.dA, .dD = s.dD, .ddelta_bias = s.ddelta_bias,
        /* deterministic runs have one slice, so the partials need no offset */
        .dB = f->B_var && s.dB && !r->deterministic ? s.dB + b0 * f->groups * N * L : s.dB,
        .dC = f->C_var && s.dC && !r->deterministic ? s.dC + b0 * f->groups * N * L : s.dC,
        .dh0 = r->dh0 ? r->dh0 + state_offset : NULL,
    };
    void *params[] = {&p};
    if (segments.count > 0) {
      p.f.segment = segments.length;
      p.f.nsegments = (int)segments.count;
      p.f.carry_decay = sf_segment_carries(&passes, 0, b0);
      p.f.carry_state = sf_segment_carries(&passes, 1, b0);
      p.carry_adjoint = sf_segment_carries(&passes, 2, b0);
      st = sf_segment_passes_run(cu, &passes, grid_x, rows, segments.count, block, f->dim, N, params, stream);
      if (st != SF_OK) break;
    }
    st = sf_cu_check(cu->LaunchKernel(kernel->function, grid_x, (unsigned)rows,
                                      segments.count > 0 ? (unsigned)segments.count : 1u, block, 1, 1, (unsigned)kernel->dynamic_shared, stream,
                                      params, NULL),
                     "cuLaunchKernel(sf_scan_bwd)");
  }
  st = sf_segment_passes_close(cu, &passes, stream, st);
  if (r->deterministic) st = finish_partials(ctx, cu, &v, &plan, st, stream);
  return st;
}
