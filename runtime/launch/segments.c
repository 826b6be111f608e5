/* segments.c: the launch-time choice of scanning segments of the sequence in parallel, and
 * the two passes that run before a segmented scan. */
#include "runtime/launch/segments.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/env.h"
#include "generator/generator.h"
#include "runtime/launch/kernel_params.h"
#include "runtime/launch/kernels.h"
#include "runtime/launch/workspace.h"
#include "runtime/args/scan_args.h"

static int min_segment(const sf_variant *v) {
  int least = SF_MIN_SEGMENT;
  sf_env_value forced; /* an experiment knob: a power of two from 4 to 512 */
  if (sf_env_get(SF_ENV_MIN_SEGMENT, &forced)) least = (int)forced.number;
  return least > v->items ? least : v->items;
}

sf_segments sf_segments_for(const sf_variant *v, int64_t blocks, int64_t seqlen, double capacity, double max_fill) {
  const int64_t interval = sf_scan_state_interval(seqlen);
  const sf_segments none = {.count = 0, .length = (int)interval};
  if (!v->split_states || sf_scan_saved_states(seqlen) < 2 || (double)blocks >= max_fill * capacity) return none;
  sf_env_value allowed; /* an experiment knob: off walks every sequence in one block per channel group */
  if (sf_env_get(SF_ENV_SEGMENTS, &allowed) && !allowed.number) return none;
  const int least = min_segment(v);
  int length = (int)interval;
  for (;;) {
    const double shorter = (double)((seqlen + length / 2 - 1) / (length / 2)); /* segments if halved */
    if (length / 2 < least || (double)blocks * ((seqlen + length - 1) / length) >= SF_SEGMENT_WAVES * capacity ||
        shorter > SF_MAX_SEGMENTS)
      break;
    length /= 2;
  }
  const int64_t count = (seqlen + length - 1) / length;
  return count <= SF_MAX_SEGMENTS ? (sf_segments){.count = count, .length = length} : none;
}

sf_status sf_segment_passes_open(sf_context *ctx, const sf_cu *cu, const sf_variant *v, const sf_segments *plan,
                                 int64_t batch, int64_t dim, int arrays, CUstream stream, sf_segment_passes *out) {
  *out = (sf_segment_passes){.per_row = dim * plan->count * v->dstate};
  out->count = batch * out->per_row;
  if (plan->count == 0) return SF_OK;
  char carry[64], combine[64];
  snprintf(carry, sizeof carry, "%s_carry", sf_kernel_name(v->op));
  snprintf(combine, sizeof combine, "%s_combine", sf_kernel_name(v->op));
  sf_status st = sf_kernel_for_variant_entry(ctx, v, carry, &out->carry, NULL);
  if (st == SF_OK) st = sf_kernel_for_variant_helper(ctx, v, combine, &out->combine);
  if (st == SF_OK)
    st = sf_workspace_alloc(ctx, cu, (size_t)(out->count * arrays) * sizeof(float), stream, "segment carries",
                            &out->carries);
  return st;
}

float *sf_segment_carries(const sf_segment_passes *sp, int array, int64_t b0) {
  return (float *)(uintptr_t)sp->carries + array * sp->count + b0 * sp->per_row;
}

sf_status sf_segment_passes_run(const sf_cu *cu, const sf_segment_passes *sp, unsigned grid_x, int64_t rows,
                                int64_t carry_segments, unsigned block, int64_t dim, int64_t dstate, void **params,
                                CUstream stream) {
  sf_status st = sf_cu_check(cu->LaunchKernel(sp->carry->function, grid_x, (unsigned)rows, (unsigned)carry_segments,
                                              block, 1, 1, (unsigned)sp->carry->dynamic_shared, stream, params, NULL),
                             "cuLaunchKernel(segment carries)");
  if (st != SF_OK) return st;
  /* the combine's maps are the carry pass's segments; its shape as the kernel computes it */
  const int runs = sf_combine_runs((long long)(rows * dim * dstate), (int)carry_segments);
  const int64_t pairs = SF_COMBINE_THREADS / runs;
  const int64_t blocks = (dim * dstate + pairs - 1) / pairs;
  return sf_cu_check(cu->LaunchKernel(sp->combine->function, (unsigned)blocks, (unsigned)rows, 1, SF_COMBINE_THREADS,
                                      1, 1, (unsigned)sp->combine->dynamic_shared, stream, params, NULL),
                     "cuLaunchKernel(segment carries' combine)");
}

sf_status sf_segment_passes_close(const sf_cu *cu, sf_segment_passes *sp, CUstream stream, sf_status st) {
  if (!sp->carries) return st;
  const sf_status freed = sf_cu_check(cu->MemFreeAsync(sp->carries, stream), "cuMemFreeAsync(segment carries)");
  sp->carries = 0;
  return st == SF_OK ? freed : st;
}

sf_status sf_plan_segments(sf_context *ctx, const sf_kernel *kernel, const sf_variant *v, int64_t blocks,
                           int64_t seqlen, double max_fill, sf_segments *plan) {
  *plan = (sf_segments){.count = 0, .length = (int)sf_scan_state_interval(seqlen)};
  if (!v->split_states || sf_scan_saved_states(seqlen) < 2) return SF_OK;
  int sm_count = 0;
  sf_status st = sf_context_sm_count(ctx, &sm_count);
  if (st != SF_OK) return st;
  *plan = sf_segments_for(v, blocks, seqlen, (double)kernel->blocks_per_sm * sm_count, max_fill);
  return SF_OK;
}
