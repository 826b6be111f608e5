/* memory_kind.h: tells whether a pointer addresses host or device memory. */
#ifndef SCANFORGE_MEMORY_KIND_H
#define SCANFORGE_MEMORY_KIND_H

#include "scanforge/scanforge.h"

typedef enum sf_memory_kind {
  SF_MEMORY_HOST = 0,    /* ordinary or pinned host memory: the CPU path reads it */
  SF_MEMORY_DEVICE = 1,  /* cuMemAlloc'd (or cudaMalloc'd) device memory */
  SF_MEMORY_MANAGED = 2, /* unified memory: reachable from both */
} sf_memory_kind;

/* Asks the driver (cuPointerGetAttribute) what `ptr` addresses. Without a driver every
 * pointer is host memory, and so is one the driver has never seen. NULL is host. */
sf_status sf_memory_kind_of(const void *ptr, sf_memory_kind *kind);

#endif
