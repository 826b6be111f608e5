/* kernels.h: a variant's kernel: generated, compiled through the cache, loaded once per context. */
#ifndef SCANFORGE_KERNELS_H
#define SCANFORGE_KERNELS_H

#include <cuda.h>

#include "runtime/cache/cache.h"
#include "runtime/launch/context.h"
#include "runtime/cuda/kernel_table.h"
#include "runtime/compile/target.h"
#include "scanforge/scanforge.h"

/* The binary of a variant for a target: generated, then found in the cache or compiled
 * by NVRTC and published there. Needs no GPU (this is what `cache warm` runs). *data
 * stays valid until the cache is closed. */
sf_status sf_variant_binary(sf_cache *cache, sf_target target, const sf_variant *variant,
                            const void **data, size_t *size, sf_cache_source *where);

/* The compile target of the device that owns `context` (computed once per device). */
sf_status sf_context_target(sf_context *ctx, sf_target *target);
/* The number of SMs of the calling thread's current device (read once per device). */
sf_status sf_context_sm_count(sf_context *ctx, int *sm_count);
/* The calls' workspace pool of the calling thread's current device (made once per device;
 * NULL: the device's default pool serves them). */
sf_status sf_context_workspace_pool(sf_context *ctx, CUmemoryPool *pool);

/* The loaded kernel of a variant in the calling thread's current CUDA context (made the
 * primary context of device 0 when none is current). A kernel loaded before is found
 * without a lock, a file or a driver call. `origin` (may be NULL) says where it came from. */
sf_status sf_kernel_for_variant(sf_context *ctx, const sf_variant *variant,
                                const sf_kernel **kernel, sf_kernel_origin *origin);
/* The same for another entry point of the variant's module (e.g. "sf_scan_bwd_carry"). */
sf_status sf_kernel_for_variant_entry(sf_context *ctx, const sf_variant *variant, const char *entry,
                                      const sf_kernel **kernel, sf_kernel_origin *origin);
/* The same for an entry point that uses none of the module's dynamic shared memory (the
 * segment carries' combine, the deterministic backward's finalize): loaded and launched
 * without it, so that a module whose main kernel takes nearly all a block may have still
 * runs them beside their own static arrays. */
sf_status sf_kernel_for_variant_helper(sf_context *ctx, const sf_variant *variant, const char *entry,
                                       const sf_kernel **kernel);

#endif
