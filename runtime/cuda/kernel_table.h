/* kernel_table.h: loaded kernels by (context, key, name), found on the launch path without a lock. */
#ifndef SCANFORGE_KERNEL_TABLE_H
#define SCANFORGE_KERNEL_TABLE_H

#include <cuda.h> /* types only */
#include <stddef.h>
#include <stdint.h>

#include "scanforge/scanforge.h"

/* Bytes of the key that names a kernel binary (the disk cache's key). */
#define SF_KERNEL_KEY_BYTES 16

/* One kernel loaded into one context, and what the launch path needs to know of it.
 * Immutable once the table has published it. */
typedef struct sf_kernel {
  CUcontext context;
  uint8_t key[SF_KERNEL_KEY_BYTES];
  const char *name; /* the kernel's symbol; owned by the table */
  CUmodule module;
  CUfunction function;
  int registers;             /* per thread */
  int static_shared;         /* bytes of __shared__ declared in the kernel */
  int local_bytes;           /* per thread: spills and stack */
  int max_threads_per_block; /* the most a launch may use, given its registers */
  int max_dynamic_shared;    /* bytes of dynamic shared memory a launch may ask for */
  int dynamic_shared;        /* bytes of dynamic shared memory every launch passes, as its module
                                declares them (runtime/cuda/dynamic_shared.h); 0 when it does not */
  int blocks_per_sm;         /* blocks of the request's block_threads an SM holds at once (0: unknown) */
  int binary_version;        /* 90 for an sm_90 binary */
  int ptx_version;           /* PTX ISA the binary came from, 0 if unknown */
} sf_kernel;

typedef struct sf_kernel_table sf_kernel_table;

/* Fills in a new kernel (all but context, key and name, which the table sets). Runs under
 * the table's insertion lock; returns a status with its message on failure. */
typedef sf_status (*sf_kernel_build_fn)(void *user, sf_kernel *kernel);
/* Undoes what a build did (unloads the module); called by sf_kernel_table_destroy. */
typedef void (*sf_kernel_release_fn)(void *user, const sf_kernel *kernel);

/* A table that holds up to 3/4 of `capacity` kernels (rounded up to a power of two);
 * the table never grows, so readers never see it move. */
sf_status sf_kernel_table_create(size_t capacity, sf_kernel_table **table);

/* Releases every kernel with `release` (may be NULL) and frees the table. No other
 * thread may use the table during or after this. NULL is a no-op. */
void sf_kernel_table_destroy(sf_kernel_table *table, sf_kernel_release_fn release, void *user);

/* The kernel with this context, key and name, or NULL. Takes no lock: safe from any
 * number of threads while others insert. */
const sf_kernel *sf_kernel_table_find(const sf_kernel_table *table, CUcontext context,
                                      const uint8_t key[SF_KERNEL_KEY_BYTES], const char *name);

/* The kernel with this context, key and name; when there is none, `build` makes it (once,
 * whatever the number of threads asking) and the table publishes it. SF_ERESOURCE when
 * the table is full; a failed build leaves nothing behind. */
sf_status sf_kernel_table_get_or_add(sf_kernel_table *table, CUcontext context,
                                     const uint8_t key[SF_KERNEL_KEY_BYTES], const char *name,
                                     sf_kernel_build_fn build, void *user,
                                     const sf_kernel **kernel);

/* Kernels in the table now. */
size_t sf_kernel_table_count(const sf_kernel_table *table);

#endif
