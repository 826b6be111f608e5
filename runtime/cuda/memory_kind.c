/* memory_kind.c: host, device or managed memory, by the driver's pointer attributes. */
#include "runtime/cuda/memory_kind.h"

#include <stdint.h>

#include "runtime/cuda/cuda_driver.h"
#include "base/error.h"

sf_status sf_memory_kind_of(const void *ptr, sf_memory_kind *kind) {
  if (!kind) return sf_fail(SF_EINVAL, "sf_memory_kind_of: kind is NULL");
  *kind = SF_MEMORY_HOST;
  if (!ptr) return SF_OK;
  const sf_cu *cu;
  /* No driver: no device memory can exist in this process. */
  if (sf_cu_load(&cu) != SF_OK) {
    sf_clear_error();
    return SF_OK;
  }
  CUdeviceptr address = (CUdeviceptr)(uintptr_t)ptr;
  unsigned int type = 0;
  CUresult result = cu->PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address);
  /* INVALID_VALUE: memory the driver never allocated, mapped or registered (malloc). */
  if (result == CUDA_ERROR_INVALID_VALUE) return SF_OK;
  sf_status status = sf_cu_check(result, "cuPointerGetAttribute(MEMORY_TYPE)");
  if (status != SF_OK) return status;
  if (type == CU_MEMORYTYPE_HOST) return SF_OK;
  int managed = 0;
  status = sf_cu_check(cu->PointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, address),
                       "cuPointerGetAttribute(IS_MANAGED)");
  if (status != SF_OK) return status;
  *kind = managed ? SF_MEMORY_MANAGED : SF_MEMORY_DEVICE;
  return SF_OK;
}
