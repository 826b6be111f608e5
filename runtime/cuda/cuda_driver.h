/* cuda_driver.h: the CUDA driver (libcuda.so.1) opened at run time, its entry points resolved once. */
#ifndef SCANFORGE_CUDA_DRIVER_H
#define SCANFORGE_CUDA_DRIVER_H

#include <cuda.h> /* types only: the library never links against libcuda */

#include "scanforge/scanforge.h"

/* The driver entry points scanforge uses, named after the API without its `cu` prefix.
 * Each is the ABI version that this build's cuda.h maps the plain name to (cuMemAlloc is
 * cuMemAlloc_v2, cuEventElapsedTime is cuEventElapsedTime_v2, ...), so the signatures
 * below are exactly the header's prototypes. */
typedef struct sf_cu {
  CUresult (*Init)(unsigned int flags);
  CUresult (*DriverGetVersion)(int *version);
  CUresult (*GetErrorName)(CUresult error, const char **name);
  CUresult (*GetErrorString)(CUresult error, const char **text);

  CUresult (*DeviceGet)(CUdevice *device, int ordinal);
  CUresult (*DeviceGetCount)(int *count);
  CUresult (*DeviceGetName)(char *name, int len, CUdevice device);
  CUresult (*DeviceGetAttribute)(int *value, CUdevice_attribute attribute, CUdevice device);
  CUresult (*DeviceTotalMem)(size_t *bytes, CUdevice device);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *context, CUdevice device);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice device);

  CUresult (*CtxGetCurrent)(CUcontext *context);
  CUresult (*CtxSetCurrent)(CUcontext context);
  CUresult (*CtxGetDevice)(CUdevice *device);
  CUresult (*CtxSynchronize)(void);

  CUresult (*ModuleLoadData)(CUmodule *module, const void *image);
  CUresult (*ModuleLoadDataEx)(CUmodule *module, const void *image, unsigned int num_options,
                               CUjit_option *options, void **option_values);
  CUresult (*ModuleUnload)(CUmodule module);
  CUresult (*ModuleGetGlobal)(CUdeviceptr *dptr, size_t *bytes, CUmodule module, const char *name);
  CUresult (*ModuleGetFunction)(CUfunction *function, CUmodule module, const char *name);
  CUresult (*FuncGetAttribute)(int *value, CUfunction_attribute attribute, CUfunction function);
  CUresult (*FuncSetAttribute)(CUfunction function, CUfunction_attribute attribute, int value);
  CUresult (*OccupancyMaxActiveBlocksPerMultiprocessor)(int *blocks, CUfunction function, int block_size,
                                                        size_t dynamic_shared);
  CUresult (*LaunchKernel)(CUfunction function, unsigned int grid_x, unsigned int grid_y,
                           unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                           unsigned int block_z, unsigned int shared_bytes, CUstream stream,
                           void **params, void **extra);

  CUresult (*MemAlloc)(CUdeviceptr *ptr, size_t bytes);
  CUresult (*MemFree)(CUdeviceptr ptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
  CUresult (*MemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
  CUresult (*MemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
  CUresult (*MemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
  CUresult (*MemsetD8)(CUdeviceptr dst, unsigned char value, size_t count);
  CUresult (*MemsetD32)(CUdeviceptr dst, unsigned int value, size_t count);
  CUresult (*MemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t count, CUstream stream);
  CUresult (*MemsetD32Async)(CUdeviceptr dst, unsigned int value, size_t count, CUstream stream);
  CUresult (*MemAllocAsync)(CUdeviceptr *ptr, size_t bytes, CUstream stream);
  CUresult (*MemFreeAsync)(CUdeviceptr ptr, CUstream stream);
  CUresult (*DeviceGetDefaultMemPool)(CUmemoryPool *pool, CUdevice device);
  CUresult (*MemPoolSetAttribute)(CUmemoryPool pool, CUmemPool_attribute attribute, void *value);
  CUresult (*MemPoolCreate)(CUmemoryPool *pool, const CUmemPoolProps *props);
  CUresult (*MemPoolDestroy)(CUmemoryPool pool);
  CUresult (*MemAllocFromPoolAsync)(CUdeviceptr *ptr, size_t bytes, CUmemoryPool pool, CUstream stream);
  CUresult (*PointerGetAttribute)(void *data, CUpointer_attribute attribute, CUdeviceptr ptr);

  CUresult (*StreamCreate)(CUstream *stream, unsigned int flags);
  CUresult (*StreamDestroy)(CUstream stream);
  CUresult (*StreamSynchronize)(CUstream stream);

  CUresult (*EventCreate)(CUevent *event, unsigned int flags);
  CUresult (*EventRecord)(CUevent event, CUstream stream);
  CUresult (*EventSynchronize)(CUevent event);
  CUresult (*EventElapsedTime)(float *milliseconds, CUevent start, CUevent end);
  CUresult (*EventDestroy)(CUevent event);

  int driver_version; /* cuDriverGetVersion: 13000 for CUDA 13.0 */
  const char *path;   /* the library that was opened, as it was named to dlopen */
} sf_cu;

/* Opens the driver on the first call (thread-safe, once per process), resolves every
 * entry point and runs cuInit(0); hands out the table, valid for the life of the process.
 * $SCANFORGE_CUDA_LIBRARY names the library to open instead of libcuda.so.1.
 * Fails, the same way on every call, with
 *   SF_ENODEVICE    the library could not be opened (the message has dlopen's reason), or
 *                   cuInit failed (no device, driver mismatch, ...: its CUresult is named);
 *   SF_EUNSUPPORTED the library lacks an entry point (a driver older than the headers). */
sf_status sf_cu_load(const sf_cu **cu);

/* SF_OK for CUDA_SUCCESS; otherwise sets the message "<call>: CUDA_ERROR_X: text" (or
 * "<call>: CUresult N: ..." when no driver can name it) and returns sf_cu_status(result). */
sf_status sf_cu_check(CUresult result, const char *call);

/* The status for a CUresult: SF_ENOMEM for out of memory, SF_ERESOURCE for a launch out
 * of resources, SF_ENODEVICE for no device, SF_ECUDA for the rest. */
sf_status sf_cu_status(CUresult result);

/* The driver's name ("CUDA_ERROR_INVALID_VALUE") and description of a result; fallbacks
 * when the driver is not loaded or does not know the code. Never NULL. */
const char *sf_cu_error_name(CUresult result);
const char *sf_cu_error_string(CUresult result);

#endif
