/* module.h: loads a kernel binary into a CUDA context once and keeps its CUfunction and limits. */
#ifndef SCANFORGE_MODULE_H
#define SCANFORGE_MODULE_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/cuda/kernel_table.h"
#include "scanforge/scanforge.h"

/* Tables made for sf_module_get hold this many kernels unless told otherwise. */
#define SF_MODULE_TABLE_DEFAULT_CAPACITY 4096

/* What to load when the table does not have the kernel yet. */
typedef struct sf_module_request {
  CUcontext context;       /* load into this context (made current for the load only) */
  const uint8_t *key;      /* SF_KERNEL_KEY_BYTES naming the binary, e.g. its cache key */
  const char *kernel_name; /* the kernel's symbol in the binary */
  const void *image;       /* a cubin or fatbin, or PTX text (the driver compiles it) */
  size_t image_size;       /* bytes of image (PTX need not be NUL-terminated) */
  int dynamic_shared;      /* most bytes of dynamic shared memory a launch will ask for;
                              above the default limit the kernel is opted in to it */
  int block_threads;       /* threads per block of its launches, when known (else 0):
                              the load records how many such blocks an SM holds */
  bool no_module_dynamic_shared; /* the kernel uses none of the dynamic shared memory its
                                    module declares (runtime/cuda/dynamic_shared.h): its
                                    launches pass 0 bytes, or the request's */
} sf_module_request;

/* The kernel of the request from the table, loading its module on the first call:
 * cuModuleLoadDataEx (a failure carries the driver's JIT error log), cuModuleGetFunction,
 * then its registers, static shared memory and thread limit are read and checked against
 * the device: SF_ERESOURCE when it cannot run there. A kernel already in the table is
 * returned without a lock or a driver call. */
sf_status sf_module_get(sf_kernel_table *table, const sf_module_request *request,
                        const sf_kernel **kernel);

/* Unloads every module of the table (each in its own context) and frees it. */
void sf_module_table_destroy(sf_kernel_table *table);

/* Checks a launch of `kernel` with `block_threads` threads and `dynamic_shared` bytes
 * against what the kernel can do: SF_ERESOURCE with the numbers when it cannot.
 * No driver call. */
sf_status sf_kernel_check_launch(const sf_kernel *kernel, unsigned block_threads,
                                 size_t dynamic_shared);

#endif
