/* scan.c: sf_scan_fwd: validate, choose the variant, load it, launch on the caller's stream. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "runtime/launch/context.h"
#include "runtime/cpu/cpu_scan.h"
#include "runtime/cuda/cuda_driver.h"
#include "base/error.h"
#include "runtime/launch/kernel_params.h"
#include "runtime/launch/launch_params.h"
#include "runtime/launch/kernels.h"
#include "runtime/args/scan_args.h"
#include "runtime/launch/segments.h"
#include "runtime/launch/call_variant.h"
#include "runtime/launch/main_launch.h"
#include "runtime/launch_config/heuristics.h"

sf_status sf_scan_fwd_variant(const sf_scan_fwd_args *args, const sf_launch *launch, sf_variant *out) {
  if (!args || !out) return sf_fail(SF_EINVAL, "sf_scan_fwd_variant: args and out must not be NULL");
  return sf_call_variant(args, SF_OP_FWD, false, false, launch, out);
}

/* A split=state launch the plan may change (sf_main_launch_may_twin) whose blocks spill
 * into one more wave than the same launch with half the steps a block would need takes
 * the shorter blocks: fewer registers and less shared memory, so more blocks an SM
 * (docs/design-waves.md). */
static sf_status fit_items(sf_context *ctx, const sf_scan_fwd_args *r, const sf_launch *launch, sf_variant *v,
                           sf_main_launch *plan) {
  if (!sf_main_launch_may_twin(launch) || !v->split_states || v->items <= SF_FWD_FIT_MIN_ITEMS ||
      plan->segments.count > 0)
    return SF_OK;
  sf_variant shorter = *v;
  shorter.items /= 2;
  return sf_main_launch_fit_waves(ctx, r, SF_FWD_PARALLEL_MAX_FILL, &shorter, 1.0, v, plan);
}

/* The variant and the main kernel's plan of a resolved device call. */
static sf_status plan_fwd(sf_context *ctx, const sf_scan_fwd_args *r, const sf_launch *launch, sf_variant *v,
                          sf_main_launch *plan) {
  if (r->seqlen > INT_MAX || r->dim > INT_MAX)
    return sf_fail(SF_EINVAL, "seqlen (%lld) and dim (%lld) must be below 2^31 on the GPU",
                   (long long)r->seqlen, (long long)r->dim);
  sf_status st = sf_scan_fwd_variant(r, launch, v);
  if (st != SF_OK) return st;
  if (v->split_states && (v->B_var || v->C_var) && (r->dim / r->groups) % v->channels != 0)
    return sf_fail(SF_EINVAL, "forward variant with split=state: channels (%d) must divide the channels of a group (dim / groups = %lld): a block shares one group's B and C",
                   v->channels, (long long)(r->dim / r->groups));
  sf_main_variant_fit_rows(v, r, NULL, 0, 0);
  st = sf_main_launch_plan(ctx, v, r, SF_FWD_PARALLEL_MAX_FILL, plan);
  if (st == SF_OK) st = fit_items(ctx, r, launch, v, plan);
  return st;
}

static sf_status launch_fwd(sf_context *ctx, const sf_scan_fwd_args *r, const sf_launch *launch) {
  sf_variant v;
  sf_main_launch plan;
  sf_status st = plan_fwd(ctx, r, launch, &v, &plan);
  if (st != SF_OK) return st;
  const sf_kernel *kernel = plan.kernel;
  const sf_cu *cu = plan.cu;
  const unsigned block = plan.block, grid_x = plan.grid_x;
  const sf_segments segments = plan.segments;
  const int64_t N = r->dstate;
  CUstream stream = (CUstream)launch->stream;
  sf_segment_passes passes; /* carries: decays and states */
  st = sf_segment_passes_open(ctx, cu, &v, &segments, r->batch, r->dim, 2, stream, &passes);
  if (st != SF_OK) return sf_segment_passes_close(cu, &passes, stream, st);
  for (int64_t b0 = 0; st == SF_OK && b0 < r->batch; b0 += SF_MAX_BATCH_PER_LAUNCH) {
    const int64_t rows = r->batch - b0 < SF_MAX_BATCH_PER_LAUNCH ? r->batch - b0 : SF_MAX_BATCH_PER_LAUNCH;
    sf_fwd_params p = sf_fwd_params_for_rows(r, b0, rows);
    void *params[] = {&p};
    if (segments.count > 0) { /* each segment's carry first (the last one's is never needed) */
      p.segment = segments.length;
      p.nsegments = (int)segments.count;
      p.carry_decay = sf_segment_carries(&passes, 0, b0);
      p.carry_state = sf_segment_carries(&passes, 1, b0);
      st = sf_segment_passes_run(cu, &passes, grid_x, rows, segments.count - 1, block, r->dim, N, params, stream);
      if (st != SF_OK) break;
    }
    st = sf_cu_check(cu->LaunchKernel(kernel->function, grid_x, (unsigned)rows,
                                      segments.count > 0 ? (unsigned)segments.count : 1u, block, 1, 1, (unsigned)kernel->dynamic_shared, stream,
                                      params, NULL),
                     "cuLaunchKernel(sf_scan_fwd)");
  }
  return sf_segment_passes_close(cu, &passes, stream, st);
}

sf_status sf_scan_fwd(sf_context *ctx, const sf_scan_fwd_args *args, const sf_launch *launch) {
  if (!ctx) return sf_fail(SF_EINVAL, "ctx: must not be NULL");
  if (!launch) return sf_fail(SF_EINVAL, "launch: must not be NULL (say on_host or give a stream)");
  if (launch->on_host) return sf_cpu_scan_fwd(args, launch->host_threads);
  sf_scan_fwd_args resolved;
  sf_status st = sf_scan_fwd_prepare(args, &resolved);
  if (st != SF_OK) return st;
  if (!sf_scan_fwd_has_work(&resolved)) return SF_OK;
  return launch_fwd(ctx, &resolved, launch);
}

sf_status sf_scan_fwd_shape(sf_context *ctx, const sf_scan_fwd_args *args, const sf_launch *launch,
                            sf_launch_shape *out) {
  if (!ctx) return sf_fail(SF_EINVAL, "ctx: must not be NULL");
  if (!out) return sf_fail(SF_EINVAL, "out: must not be NULL");
  if (launch && launch->on_host) return sf_fail(SF_EINVAL, "launch: the shape is a device call's; on_host runs on the CPU");
  const sf_launch none = {0};
  sf_scan_fwd_args resolved;
  sf_status st = sf_scan_fwd_prepare(args, &resolved);
  if (st != SF_OK) return st;
  if (!sf_scan_fwd_has_work(&resolved)) return *out = (sf_launch_shape){0}, SF_OK; /* launches nothing */
  sf_variant v;
  sf_main_launch plan;
  st = plan_fwd(ctx, &resolved, launch ? launch : &none, &v, &plan);
  if (st != SF_OK) return st;
  return sf_main_launch_shape(ctx, &v, &plan, resolved.batch, out);
}
