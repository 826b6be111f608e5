/* device.c: what scanforge needs to know about a CUDA device, read through the driver. */
#include <stddef.h>
#include <string.h>

#include "runtime/cuda/cuda_driver.h"
#include "base/error.h"

sf_status sf_device_count(int *count) {
  if (!count) return sf_fail(SF_EINVAL, "sf_device_count: count is NULL");
  *count = 0;
  const sf_cu *cu;
  sf_status status = sf_cu_load(&cu);
  if (status != SF_OK) return status;
  return sf_cu_check(cu->DeviceGetCount(count), "cuDeviceGetCount");
}

/* The device of the calling thread's current context, and its ordinal. */
static sf_status current_device(const sf_cu *cu, CUdevice *device, int *ordinal) {
  CUcontext current = NULL;
  sf_status status = sf_cu_check(cu->CtxGetCurrent(&current), "cuCtxGetCurrent");
  if (status != SF_OK) return status;
  if (!current)
    return sf_fail(SF_EINVAL, "sf_device_get_info: ordinal -1 asks for the device of the "
                              "current CUDA context, and this thread has none");
  if ((status = sf_cu_check(cu->CtxGetDevice(device), "cuCtxGetDevice")) != SF_OK) return status;
  /* CUdevice is a handle, not promised to equal the ordinal: look the ordinal up. */
  int count = 0;
  if ((status = sf_cu_check(cu->DeviceGetCount(&count), "cuDeviceGetCount")) != SF_OK)
    return status;
  for (int i = 0; i < count; i++) {
    CUdevice candidate;
    if ((status = sf_cu_check(cu->DeviceGet(&candidate, i), "cuDeviceGet")) != SF_OK)
      return status;
    if (candidate == *device) {
      *ordinal = i;
      return SF_OK;
    }
  }
  return sf_fail(SF_EINTERNAL, "the current context's device is none of the %d devices", count);
}

static sf_status read_info(const sf_cu *cu, CUdevice device, sf_device_info *info) {
  static const struct {
    CUdevice_attribute attribute;
    size_t offset;
    const char *what;
  } attributes[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, offsetof(sf_device_info, cc_major), "cc major"},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, offsetof(sf_device_info, cc_minor), "cc minor"},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, offsetof(sf_device_info, sm_count), "SM count"},
      {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, offsetof(sf_device_info, l2_bytes), "L2 size"},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, offsetof(sf_device_info, max_shared_per_block),
       "shared memory per block"},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
       offsetof(sf_device_info, max_shared_per_block_optin), "opt-in shared memory per block"},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
       offsetof(sf_device_info, max_shared_per_sm), "shared memory per SM"},
      {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, offsetof(sf_device_info, max_registers_per_block),
       "registers per block"},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, offsetof(sf_device_info, max_threads_per_block),
       "threads per block"},
      {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, offsetof(sf_device_info, clock_khz), "clock rate"},
      {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, offsetof(sf_device_info, memory_clock_khz),
       "memory clock rate"},
      {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, offsetof(sf_device_info, memory_bus_width),
       "memory bus width"},
  };
  sf_status status = sf_cu_check(cu->DeviceGetName(info->name, (int)sizeof info->name, device),
                                 "cuDeviceGetName");
  if (status != SF_OK) return status;
  info->name[sizeof info->name - 1] = '\0';
  size_t total = 0;
  if ((status = sf_cu_check(cu->DeviceTotalMem(&total, device), "cuDeviceTotalMem")) != SF_OK)
    return status;
  info->total_memory = total;
  for (size_t i = 0; i < sizeof attributes / sizeof attributes[0]; i++) {
    int value = 0;
    status = sf_cu_check(cu->DeviceGetAttribute(&value, attributes[i].attribute, device),
                         "cuDeviceGetAttribute");
    if (status != SF_OK) return sf_fail_context(status, "%s", attributes[i].what);
    memcpy((char *)info + attributes[i].offset, &value, sizeof value);
  }
  info->driver_version = cu->driver_version;
  return SF_OK;
}

sf_status sf_device_get_info(int ordinal, sf_device_info *info) {
  if (!info) return sf_fail(SF_EINVAL, "sf_device_get_info: info is NULL");
  memset(info, 0, sizeof *info);
  if (ordinal < -1)
    return sf_fail(SF_EINVAL, "sf_device_get_info: ordinal %d: expected -1 or a device ordinal",
                   ordinal);
  const sf_cu *cu;
  sf_status status = sf_cu_load(&cu);
  if (status != SF_OK) return status;
  CUdevice device;
  if (ordinal == -1) {
    status = current_device(cu, &device, &ordinal);
  } else {
    int count = 0;
    status = sf_cu_check(cu->DeviceGetCount(&count), "cuDeviceGetCount");
    if (status == SF_OK && ordinal >= count)
      status = sf_fail(SF_EINVAL, "sf_device_get_info: ordinal %d: this process sees %d CUDA "
                                  "device%s", ordinal, count, count == 1 ? "" : "s");
    if (status == SF_OK) status = sf_cu_check(cu->DeviceGet(&device, ordinal), "cuDeviceGet");
  }
  if (status != SF_OK) return status;
  info->ordinal = ordinal;
  status = read_info(cu, device, info);
  if (status != SF_OK) return sf_fail_context(status, "device %d", ordinal);
  return SF_OK;
}
