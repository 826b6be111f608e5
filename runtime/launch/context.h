/* context.h: what an sf_context holds (internal). */
#ifndef SCANFORGE_CONTEXT_H
#define SCANFORGE_CONTEXT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>

#include "runtime/cache/cache.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/kernel_table.h"
#include "runtime/compile/target.h"
#include "scanforge/scanforge.h"

/* What a device needs once per process: its compile target. */
typedef struct sf_device_slot {
  atomic_int ready; /* 1 once target is set (release) */
  sf_target target;
  int sm_count;
  CUmemoryPool workspace_pool; /* the calls' workspaces (workspace.h); NULL: the default pool */
} sf_device_slot;

struct sf_context {
  sf_cache *cache;
  bool owns_cache; /* false: borrowed from the context it was made from */
  sf_kernel_table *kernels;
  pthread_mutex_t device_lock; /* taken only to fill a device slot */
  sf_device_slot devices[SF_MAX_DEVICES];
};

/* A context with its own kernel table that shares `parent`'s cache (which must outlive
 * it): destroying it unloads the kernels it loaded and leaves the cache open. The tuner
 * measures each entry in one, so that a long run does not hold every candidate loaded. */
sf_status sf_context_create_sharing_cache(sf_context *parent, sf_context **out);

#endif
