/* main_launch.c: the main kernel's plan (kernel, grid, segments) and the call's shape. */
#include "runtime/launch/main_launch.h"

#include "base/error.h"
#include "generator/generator.h"
#include "runtime/args/scan_args.h"
#include "runtime/args/staged_rows.h"
#include "runtime/cuda/module.h"
#include "runtime/launch_config/heuristics.h"

/* The entry point of v's module that a call with these forward arguments runs: the
 * split=state templates have one for states saved more often than once a block
 * (sf_scan_fwd_inner_saves) and one for a backward that finds every block's starting
 * state saved (sf_scan_bwd_block_states; docs/design-block-states.md). */
static const char *main_entry(const sf_variant *v, const sf_scan_fwd_args *f) {
  const int64_t interval = f->state_interval; /* 0, the default interval: the main kernels as ever */
  if (interval > 0 && v->split_states && v->op == SF_OP_BWD && interval <= v->items) return sf_block_states_entry(v->op);
  if (interval > 0 && v->split_states && v->op == SF_OP_FWD && f->saved_states && interval < v->items)
    return sf_block_states_entry(v->op);
  return sf_kernel_name(v->op);
}

void sf_main_variant_fit_rows(sf_variant *v, const sf_scan_fwd_args *f, const void *dout, int64_t dout_batch_stride,
                              int64_t dout_dim_stride) {
  v->words = v->split_states && !sf_staged_rows_aligned(f, dout, dout_batch_stride, dout_dim_stride);
}

sf_status sf_main_launch_plan(sf_context *ctx, const sf_variant *v, const sf_scan_fwd_args *f, double max_fill,
                              sf_main_launch *out) {
  *out = (sf_main_launch){0};
  const int64_t batch = f->batch, dim = f->dim, seqlen = f->seqlen;
  sf_status st = sf_kernel_for_variant_entry(ctx, v, main_entry(v, f), &out->kernel, NULL);
  if (st != SF_OK) return st;
  out->block = (unsigned)sf_variant_block_threads(v);
  st = sf_kernel_check_launch(out->kernel, out->block, (size_t)out->kernel->dynamic_shared); /* the block the kernel allows */
  if (st == SF_OK) st = sf_cu_load(&out->cu);
  if (st != SF_OK) return st;
  out->grid_x = (unsigned)((dim + v->channels - 1) / v->channels);
  return sf_plan_segments(ctx, out->kernel, v, (int64_t)out->grid_x * batch, seqlen, max_fill, &out->segments);
}

int64_t sf_main_launch_blocks(const sf_main_launch *plan, int64_t batch) {
  return (int64_t)plan->grid_x * batch * (plan->segments.count > 0 ? plan->segments.count : 1);
}

int64_t sf_main_launch_waves(const sf_main_launch *plan, int64_t batch, int sm_count) {
  const int64_t blocks = sf_main_launch_blocks(plan, batch);
  const int64_t at_once = (int64_t)plan->kernel->blocks_per_sm * sm_count;
  return at_once > 0 ? (blocks + at_once - 1) / at_once : INT64_MAX;
}

bool sf_main_launch_plan_twin(sf_context *ctx, const sf_scan_fwd_args *f, double max_fill, const sf_variant *twin,
                              sf_main_launch *out) {
  if (sf_main_launch_plan(ctx, twin, f, max_fill, out) == SF_OK)
    return true;
  sf_clear_error();
  return false;
}

sf_status sf_main_launch_fit_waves(sf_context *ctx, const sf_scan_fwd_args *f, double max_fill, const sf_variant *twin,
                                   double block_cost, sf_variant *v, sf_main_launch *plan) {
  int sm_count = 0;
  sf_status st = sf_context_sm_count(ctx, &sm_count);
  if (st != SF_OK) return st;
  const int64_t waves = sf_main_launch_waves(plan, f->batch, sm_count);
  if (waves <= 1 || waves == INT64_MAX) return SF_OK;
  sf_main_launch twin_plan;
  if (!sf_main_launch_plan_twin(ctx, f, max_fill, twin, &twin_plan)) return SF_OK;
  const int64_t twin_waves = sf_main_launch_waves(&twin_plan, f->batch, sm_count);
  if (twin_plan.segments.count == 0 && twin_waves != INT64_MAX && (double)twin_waves * block_cost < (double)waves)
    *v = *twin, *plan = twin_plan;
  return SF_OK;
}

void sf_main_launch_take_one_wave(sf_context *ctx, const sf_scan_fwd_args *f, double max_fill, int sm_count,
                                  const sf_variant *twin, int max_more_local, sf_variant *v, sf_main_launch *plan) {
  sf_main_launch twin_plan;
  if (!sf_main_launch_plan_twin(ctx, f, max_fill, twin, &twin_plan)) return;
  if (twin_plan.segments.count == 0 && sf_main_launch_waves(&twin_plan, f->batch, sm_count) == 1 &&
      twin_plan.kernel->local_bytes <= plan->kernel->local_bytes + max_more_local)
    *v = *twin, *plan = twin_plan;
}

sf_status sf_main_launch_fit_cap(sf_context *ctx, const sf_scan_fwd_args *f, double max_fill, sf_variant *v,
                                 sf_main_launch *plan) {
  if (plan->segments.count > 0 || plan->kernel->blocks_per_sm < 1) return SF_OK;
  int sm_count = 0;
  sf_status st = sf_context_sm_count(ctx, &sm_count);
  if (st != SF_OK) return st;
  if (sf_main_launch_waves(plan, f->batch, sm_count) != 2) return SF_OK;
  const int64_t blocks = sf_main_launch_blocks(plan, f->batch);
  const int64_t per_sm = (blocks + sm_count - 1) / sm_count;
  sf_variant twin;
  if (per_sm <= SF_CAP_MAX_GROWTH * plan->kernel->blocks_per_sm && sf_capped_twin(v, (int)per_sm, &twin))
    sf_main_launch_take_one_wave(ctx, f, max_fill, sm_count, &twin, SF_CAP_MAX_SPILL, v, plan);
  return SF_OK;
}

sf_status sf_main_launch_shape(sf_context *ctx, const sf_variant *v, const sf_main_launch *plan, int64_t batch,
                               sf_launch_shape *out) {
  int sm_count = 0;
  sf_status st = sf_context_sm_count(ctx, &sm_count);
  if (st != SF_OK) return st;
  *out = (sf_launch_shape){
      .variant = *v,
      .blocks = sf_main_launch_blocks(plan, batch),
      .blocks_per_sm = plan->kernel->blocks_per_sm,
      .sm_count = sm_count,
      .segments = plan->segments.count,
  };
  return SF_OK;
}

bool sf_main_launch_may_twin(const sf_launch *launch) { return !launch->spec || launch->spec_planned; }
