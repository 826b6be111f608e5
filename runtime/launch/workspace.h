/* workspace.h: device memory a call needs while it runs (segment carries, deterministic
 * partial sums), from a memory pool of the context's own per device (docs/design-workspace.md). */
#ifndef SCANFORGE_WORKSPACE_H
#define SCANFORGE_WORKSPACE_H

#include <stddef.h>

#include "runtime/cuda/cuda_driver.h"
#include "scanforge/scanforge.h"

/* A pool on `device` that keeps up to $SCANFORGE_WORKSPACE_KEEP_BYTES (default 1 GiB) of
 * freed memory mapped across synchronizations. NULL in *pool when the device or the driver
 * has no memory pools: workspaces then come from the device's default pool. */
void sf_workspace_pool_create(const sf_cu *cu, CUdevice device, CUmemoryPool *pool);
/* Destroys a pool made by sf_workspace_pool_create (NULL: nothing). Memory still in use
 * or being freed on a stream is released once that is done (the driver's rule). */
void sf_workspace_pool_destroy(const sf_cu *cu, CUmemoryPool pool);

/* `bytes` of stream-ordered device memory for a call on `stream` in the calling thread's
 * current context, from the context's pool of that device; `what` names it in errors.
 * Free it with cuMemFreeAsync on the same stream. */
sf_status sf_workspace_alloc(sf_context *ctx, const sf_cu *cu, size_t bytes, CUstream stream, const char *what,
                             CUdeviceptr *out);

#endif
