/* workspace.c: the call workspaces' memory pool (docs/design-workspace.md).
 *
 * A stream-ordered allocation from the device's default pool is given back to the driver
 * at the next synchronization (the default pool's release threshold is 0), so a caller
 * that synchronizes after each call (a benchmark, an eager TensorFlow step) has every
 * workspace mapped again: 200 MB of deterministic partial sums cost 150-270 us a call on
 * an H100 (docs/perf.md v18). A pool of scanforge's own with a release threshold keeps
 * that memory mapped between calls without changing the process's default pool. */
#include "runtime/launch/workspace.h"

#include <stdio.h>

#include "base/env.h"
#include "base/error.h"
#include "runtime/launch/kernels.h"

#define DEFAULT_KEEP_BYTES (1ull << 30)

void sf_workspace_pool_create(const sf_cu *cu, CUdevice device, CUmemoryPool *pool) {
  *pool = NULL;
  CUmemPoolProps props = {0};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  CUmemoryPool made;
  if (cu->MemPoolCreate(&made, &props) != CUDA_SUCCESS) return;
  sf_env_value keep_env; /* a bad value is reported by sf_environment_warning */
  cuuint64_t keep = sf_env_get(SF_ENV_WORKSPACE_KEEP_BYTES, &keep_env) ? (cuuint64_t)keep_env.number
                                                                        : DEFAULT_KEEP_BYTES;
  if (cu->MemPoolSetAttribute(made, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep) != CUDA_SUCCESS) {
    cu->MemPoolDestroy(made);
    return;
  }
  *pool = made;
}

void sf_workspace_pool_destroy(const sf_cu *cu, CUmemoryPool pool) {
  if (pool) cu->MemPoolDestroy(pool); /* at exit the driver may be gone already: nothing to report */
}

sf_status sf_workspace_alloc(sf_context *ctx, const sf_cu *cu, size_t bytes, CUstream stream, const char *what,
                             CUdeviceptr *out) {
  CUmemoryPool pool = NULL;
  sf_status st = sf_context_workspace_pool(ctx, &pool);
  if (st != SF_OK) return st;
  char call[96];
  snprintf(call, sizeof call, "%s(%s)", pool ? "cuMemAllocFromPoolAsync" : "cuMemAllocAsync", what);
  return sf_cu_check(pool ? cu->MemAllocFromPoolAsync(out, bytes, pool, stream) : cu->MemAllocAsync(out, bytes, stream),
                     call);
}
