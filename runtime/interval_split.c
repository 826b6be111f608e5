/* interval_split.c: the launch-time choice of scanning state intervals in parallel. */
#include "runtime/interval_split.h"

#include "runtime/kernels.h"

sf_status sf_intervals_in_parallel(sf_context *ctx, const sf_kernel *kernel, const sf_variant *v, int64_t blocks,
                                   int64_t nsaved, double max_fill, bool *parallel) {
  *parallel = false;
  if (!v->split_states || nsaved < 2) return SF_OK;
  int sm_count = 0;
  sf_status st = sf_context_sm_count(ctx, &sm_count);
  if (st == SF_OK) *parallel = (double)blocks < max_fill * kernel->blocks_per_sm * sm_count;
  return st;
}
