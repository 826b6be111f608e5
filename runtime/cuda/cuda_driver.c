/* cuda_driver.c: opens libcuda.so.1 with dlopen once per process and resolves the entry points. */
#include "runtime/cuda/cuda_driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/error.h"

/* Stringifies after macro expansion, so SF_CU_SYMBOL(cuMemAlloc) is "cuMemAlloc_v2":
 * the symbol whose ABI matches the prototype cuda.h gives the plain name. */
#define SF_CU_SYMBOL(fn) SF_CU_STRINGIFY(fn)
#define SF_CU_STRINGIFY(fn) #fn

/* dlsym hands out object pointers that we store into function pointer slots. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "function pointers must fit a void *");

typedef struct entry_point {
  size_t offset;        /* of the slot in sf_cu */
  const char *symbol;   /* the versioned name the header maps to */
  const char *fallback; /* an older name with the same signature, or NULL */
} entry_point;

#define SF_CU_ENTRY(field, fn) {offsetof(sf_cu, field), SF_CU_SYMBOL(fn), NULL}

static const entry_point entry_points[] = {
    SF_CU_ENTRY(Init, cuInit),
    SF_CU_ENTRY(DriverGetVersion, cuDriverGetVersion),
    SF_CU_ENTRY(GetErrorName, cuGetErrorName),
    SF_CU_ENTRY(GetErrorString, cuGetErrorString),
    SF_CU_ENTRY(DeviceGet, cuDeviceGet),
    SF_CU_ENTRY(DeviceGetCount, cuDeviceGetCount),
    SF_CU_ENTRY(DeviceGetName, cuDeviceGetName),
    SF_CU_ENTRY(DeviceGetAttribute, cuDeviceGetAttribute),
    SF_CU_ENTRY(DeviceTotalMem, cuDeviceTotalMem),
    SF_CU_ENTRY(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain),
    SF_CU_ENTRY(DevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease),
    SF_CU_ENTRY(CtxGetCurrent, cuCtxGetCurrent),
    SF_CU_ENTRY(CtxSetCurrent, cuCtxSetCurrent),
    SF_CU_ENTRY(CtxGetDevice, cuCtxGetDevice),
    SF_CU_ENTRY(CtxSynchronize, cuCtxSynchronize),
    SF_CU_ENTRY(ModuleLoadData, cuModuleLoadData),
    SF_CU_ENTRY(ModuleLoadDataEx, cuModuleLoadDataEx),
    SF_CU_ENTRY(ModuleUnload, cuModuleUnload),
    SF_CU_ENTRY(ModuleGetFunction, cuModuleGetFunction),
    SF_CU_ENTRY(ModuleGetGlobal, cuModuleGetGlobal),
    SF_CU_ENTRY(FuncGetAttribute, cuFuncGetAttribute),
    SF_CU_ENTRY(FuncSetAttribute, cuFuncSetAttribute),
    SF_CU_ENTRY(OccupancyMaxActiveBlocksPerMultiprocessor, cuOccupancyMaxActiveBlocksPerMultiprocessor),
    SF_CU_ENTRY(LaunchKernel, cuLaunchKernel),
    SF_CU_ENTRY(MemAlloc, cuMemAlloc),
    SF_CU_ENTRY(MemFree, cuMemFree),
    SF_CU_ENTRY(MemcpyHtoD, cuMemcpyHtoD),
    SF_CU_ENTRY(MemcpyDtoH, cuMemcpyDtoH),
    SF_CU_ENTRY(MemcpyDtoD, cuMemcpyDtoD),
    SF_CU_ENTRY(MemcpyDtoDAsync, cuMemcpyDtoDAsync),
    SF_CU_ENTRY(MemsetD8, cuMemsetD8),
    SF_CU_ENTRY(MemsetD32, cuMemsetD32),
    SF_CU_ENTRY(MemsetD8Async, cuMemsetD8Async),
    SF_CU_ENTRY(MemsetD32Async, cuMemsetD32Async),
    SF_CU_ENTRY(MemAllocAsync, cuMemAllocAsync),
    SF_CU_ENTRY(MemFreeAsync, cuMemFreeAsync),
    SF_CU_ENTRY(DeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool),
    SF_CU_ENTRY(MemPoolSetAttribute, cuMemPoolSetAttribute),
    SF_CU_ENTRY(MemPoolCreate, cuMemPoolCreate),
    SF_CU_ENTRY(MemPoolDestroy, cuMemPoolDestroy),
    SF_CU_ENTRY(MemAllocFromPoolAsync, cuMemAllocFromPoolAsync),
    SF_CU_ENTRY(PointerGetAttribute, cuPointerGetAttribute),
    SF_CU_ENTRY(StreamCreate, cuStreamCreate),
    SF_CU_ENTRY(StreamDestroy, cuStreamDestroy),
    SF_CU_ENTRY(StreamSynchronize, cuStreamSynchronize),
    SF_CU_ENTRY(EventCreate, cuEventCreate),
    SF_CU_ENTRY(EventRecord, cuEventRecord),
    SF_CU_ENTRY(EventSynchronize, cuEventSynchronize),
    /* _v2 arrived with CUDA 12.8; the original has the same signature, so older drivers
     * still serve the benchmarks. */
    {offsetof(sf_cu, EventElapsedTime), SF_CU_SYMBOL(cuEventElapsedTime), "cuEventElapsedTime"},
    SF_CU_ENTRY(EventDestroy, cuEventDestroy),
};

/* Written once under pthread_once, read-only afterwards. */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static sf_cu api;
static sf_status load_status;
static char load_message[1024];
/* Lets the error-name helpers use the driver without triggering a load themselves. */
static atomic_int api_ready;

static void load_driver(void) {
  sf_env_value override;
  const char *path = sf_env_get(SF_ENV_CUDA_LIBRARY, &override) ? override.text : "libcuda.so.1";
  /* RTLD_LOCAL: the driver's symbols stay out of the process namespace. */
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    load_status = SF_ENODEVICE;
    snprintf(load_message, sizeof load_message,
             "the CUDA driver library %s was not found or could not be opened (%s); "
             "install the NVIDIA driver or set SCANFORGE_CUDA_LIBRARY",
             path, why ? why : "no reason given");
    return;
  }
  for (size_t i = 0; i < sizeof entry_points / sizeof entry_points[0]; i++) {
    const entry_point *e = &entry_points[i];
    void *symbol = dlsym(handle, e->symbol);
    if (!symbol && e->fallback) symbol = dlsym(handle, e->fallback);
    if (!symbol) {
      load_status = SF_EUNSUPPORTED;
      snprintf(load_message, sizeof load_message,
               "the CUDA driver library %s lacks %s: the driver is older than the CUDA "
               "%d.%d headers scanforge was built with; update the NVIDIA driver",
               path, e->symbol, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
      return; /* the handle stays open: unloading a driver is never safe */
    }
    memcpy((char *)&api + e->offset, &symbol, sizeof symbol);
  }
  api.path = path;
  if (api.DriverGetVersion(&api.driver_version) != CUDA_SUCCESS) api.driver_version = 0;
  CUresult init = api.Init(0);
  if (init != CUDA_SUCCESS) {
    const char *name = NULL, *text = NULL;
    if (api.GetErrorName(init, &name) != CUDA_SUCCESS || !name) name = "CUDA error";
    if (api.GetErrorString(init, &text) != CUDA_SUCCESS || !text) text = "unknown error";
    /* Whatever cuInit says, the GPU path is unusable: one status for callers to test. */
    load_status = SF_ENODEVICE;
    snprintf(load_message, sizeof load_message, "cuInit: %s: %s (driver %s)", name, text, path);
    return;
  }
  load_status = SF_OK;
  atomic_store_explicit(&api_ready, 1, memory_order_release);
}

sf_status sf_cu_load(const sf_cu **cu) {
  if (cu) *cu = NULL;
  pthread_once(&load_once, load_driver);
  if (load_status != SF_OK) return sf_fail(load_status, "%s", load_message);
  if (cu) *cu = &api;
  return SF_OK;
}

sf_status sf_cu_status(CUresult result) {
  switch (result) {
  case CUDA_SUCCESS: return SF_OK;
  case CUDA_ERROR_OUT_OF_MEMORY: return SF_ENOMEM;
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return SF_ERESOURCE;
  case CUDA_ERROR_NO_DEVICE: return SF_ENODEVICE;
  default: return SF_ECUDA;
  }
}

static int driver_ready(void) { return atomic_load_explicit(&api_ready, memory_order_acquire); }

const char *sf_cu_error_name(CUresult result) {
  const char *name = NULL;
  if (driver_ready() && api.GetErrorName(result, &name) == CUDA_SUCCESS && name) return name;
  return result == CUDA_SUCCESS ? "CUDA_SUCCESS" : "unknown CUresult";
}

const char *sf_cu_error_string(CUresult result) {
  const char *text = NULL;
  if (driver_ready() && api.GetErrorString(result, &text) == CUDA_SUCCESS && text) return text;
  return driver_ready() ? "a result this driver does not describe" : "no driver loaded to describe it";
}

sf_status sf_cu_check(CUresult result, const char *call) {
  if (result == CUDA_SUCCESS) return SF_OK;
  const char *name = NULL;
  if (driver_ready() && api.GetErrorName(result, &name) == CUDA_SUCCESS && name)
    return sf_fail(sf_cu_status(result), "%s: %s: %s", call, name, sf_cu_error_string(result));
  /* No name to give: the number is what the reader can look up. */
  return sf_fail(sf_cu_status(result), "%s: CUresult %d: %s", call, (int)result,
                 sf_cu_error_string(result));
}
