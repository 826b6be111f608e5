/* cuda_context.c: retains each device's primary context once and makes it current on demand. */
#include "runtime/cuda/cuda_context.h"

#include <pthread.h>
#include <stdatomic.h>

#include "runtime/cuda/cuda_driver.h"
#include "base/error.h"

/* Published with release once retained, so later calls read them without the lock. */
static _Atomic(CUcontext) primary_contexts[SF_MAX_DEVICES];
static pthread_mutex_t retain_lock = PTHREAD_MUTEX_INITIALIZER;

static sf_status check_ordinal(const sf_cu *cu, int ordinal) {
  int count = 0;
  sf_status status = sf_cu_check(cu->DeviceGetCount(&count), "cuDeviceGetCount");
  if (status != SF_OK) return status;
  if (ordinal < 0 || ordinal >= count)
    return sf_fail(SF_EINVAL, "device ordinal %d: this process sees %d CUDA device%s",
                   ordinal, count, count == 1 ? "" : "s");
  if (ordinal >= SF_MAX_DEVICES)
    return sf_fail(SF_EUNSUPPORTED, "device ordinal %d: scanforge handles the first %d devices",
                   ordinal, SF_MAX_DEVICES);
  return SF_OK;
}

sf_status sf_cu_primary_context(int ordinal, CUcontext *context) {
  *context = NULL;
  const sf_cu *cu;
  sf_status status = sf_cu_load(&cu);
  if (status != SF_OK) return status;
  if (ordinal >= 0 && ordinal < SF_MAX_DEVICES) {
    CUcontext known = atomic_load_explicit(&primary_contexts[ordinal], memory_order_acquire);
    if (known) {
      *context = known;
      return SF_OK;
    }
  }
  if ((status = check_ordinal(cu, ordinal)) != SF_OK) return status;

  pthread_mutex_lock(&retain_lock);
  /* Another thread may have retained it while we waited: retain once only. */
  CUcontext ctx = atomic_load_explicit(&primary_contexts[ordinal], memory_order_relaxed);
  if (!ctx) {
    CUdevice device;
    status = sf_cu_check(cu->DeviceGet(&device, ordinal), "cuDeviceGet");
    if (status == SF_OK)
      status = sf_cu_check(cu->DevicePrimaryCtxRetain(&ctx, device), "cuDevicePrimaryCtxRetain");
    if (status == SF_OK)
      atomic_store_explicit(&primary_contexts[ordinal], ctx, memory_order_release);
  }
  pthread_mutex_unlock(&retain_lock);
  if (status != SF_OK) return sf_fail_context(status, "device %d", ordinal);
  *context = ctx;
  return SF_OK;
}

sf_status sf_cu_current_context(int ordinal, CUcontext *context) {
  *context = NULL;
  const sf_cu *cu;
  sf_status status = sf_cu_load(&cu);
  if (status != SF_OK) return status;
  CUcontext current = NULL;
  if ((status = sf_cu_check(cu->CtxGetCurrent(&current), "cuCtxGetCurrent")) != SF_OK)
    return status;
  if (current) { /* the caller's (TensorFlow's) choice wins */
    *context = current;
    return SF_OK;
  }
  CUcontext primary;
  if ((status = sf_cu_primary_context(ordinal, &primary)) != SF_OK) return status;
  if ((status = sf_cu_check(cu->CtxSetCurrent(primary), "cuCtxSetCurrent")) != SF_OK)
    return status;
  *context = primary;
  return SF_OK;
}
