/* module.c: cuModuleLoadDataEx into the kernel table, with the kernel's resources checked at load. */
#include "runtime/cuda/module.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/cuda/dynamic_shared.h"
#include "runtime/cuda/cuda_driver.h"
#include "base/error.h"

/* The JIT error log kept for the message; ptxas errors are a few lines each. */
enum { JIT_LOG_BYTES = 16384 };

typedef struct load_job {
  const sf_cu *cu;
  const sf_module_request *request;
} load_job;

static const char *image_kind(const void *image, size_t size) {
  const unsigned char *p = image;
  if (size >= 4 && p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F') return "cubin";
  if (size >= 4 && p[0] == 0x50 && p[1] == 0xed && p[2] == 0x55 && p[3] == 0xba) return "fatbin";
  return "PTX";
}

/* Makes `context` current for a while, remembering the caller's context to put back. */
static sf_status enter_context(const sf_cu *cu, CUcontext context, CUcontext *previous) {
  sf_status status = sf_cu_check(cu->CtxGetCurrent(previous), "cuCtxGetCurrent");
  if (status == SF_OK && *previous != context)
    status = sf_cu_check(cu->CtxSetCurrent(context), "cuCtxSetCurrent");
  return status;
}

static sf_status leave_context(const sf_cu *cu, CUcontext context, CUcontext previous) {
  if (previous == context) return SF_OK;
  return sf_cu_check(cu->CtxSetCurrent(previous), "cuCtxSetCurrent (restoring the caller's)");
}

static sf_status load_image(const sf_cu *cu, const sf_module_request *rq, CUmodule *module) {
  const char *kind = image_kind(rq->image, rq->image_size);
  const void *image = rq->image;
  char *terminated = NULL;
  /* The driver finds the end of PTX by its NUL: give it one if the caller's text has none. */
  if (strcmp(kind, "PTX") == 0 && !memchr(rq->image, '\0', rq->image_size)) {
    terminated = malloc(rq->image_size + 1);
    if (!terminated) return sf_fail(SF_ENOMEM, "kernel %s: copying its PTX", rq->kernel_name);
    memcpy(terminated, rq->image, rq->image_size);
    terminated[rq->image_size] = '\0';
    image = terminated;
  }
  char *log = calloc(1, JIT_LOG_BYTES);
  if (!log) {
    free(terminated);
    return sf_fail(SF_ENOMEM, "kernel %s: JIT log buffer", rq->kernel_name);
  }
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, (void *)(uintptr_t)JIT_LOG_BYTES};
  CUresult result = cu->ModuleLoadDataEx(module, image, 2, options, values);
  sf_status status = SF_OK;
  if (result != CUDA_SUCCESS) {
    log[JIT_LOG_BYTES - 1] = '\0';
    status = sf_fail(sf_cu_status(result), "kernel %s (%s, %zu bytes): cuModuleLoadDataEx: %s: %s%s%s",
                     rq->kernel_name, kind, rq->image_size, sf_cu_error_name(result),
                     sf_cu_error_string(result), log[0] ? "\n" : "", log);
  }
  free(log);
  free(terminated);
  return status;
}

static sf_status function_attribute(const sf_cu *cu, CUfunction f, CUfunction_attribute attribute,
                                    int *value) {
  return sf_cu_check(cu->FuncGetAttribute(value, attribute, f), "cuFuncGetAttribute");
}

static sf_status device_attribute(const sf_cu *cu, CUdevice device, CUdevice_attribute attribute,
                                  int *value) {
  return sf_cu_check(cu->DeviceGetAttribute(value, attribute, device), "cuDeviceGetAttribute");
}

/* Whether a cubin or PTX image may hold `symbol`: its name is in the image (a cubin's string
 * table, PTX's declaration). A fatbin may be compressed, so it may always. */
static bool image_may_hold(const void *image, size_t size, const char *symbol) {
  if (strcmp(image_kind(image, size), "fatbin") == 0) return true;
  const size_t length = strlen(symbol);
  const unsigned char *p = image, *end = p + size;
  while (p && (size_t)(end - p) >= length) {
    if (memcmp(p, symbol, length) == 0) return true;
    p = memchr(p + 1, (unsigned char)symbol[0], (size_t)(end - p - 1));
  }
  return false;
}

/* The dynamic shared memory every launch of the module's kernels passes, 0 when the module
 * defines no SF_DYNAMIC_SHARED_SYMBOL (runtime/cuda/dynamic_shared.h). The figure is the
 * symbol's size, so reading it copies nothing: a load never waits on a stream, nor breaks
 * a stream capture. The driver is asked only when the image names the symbol: a failed
 * cuModuleGetGlobal is an API error, which compute-sanitizer reports in the caller's program. */
static sf_status read_dynamic_shared(const sf_cu *cu, const sf_module_request *rq, CUmodule module, int *bytes) {
  CUdeviceptr at;
  size_t size;
  *bytes = 0;
  if (!image_may_hold(rq->image, rq->image_size, SF_DYNAMIC_SHARED_SYMBOL)) return SF_OK;
  CUresult result = cu->ModuleGetGlobal(&at, &size, module, SF_DYNAMIC_SHARED_SYMBOL);
  if (result == CUDA_ERROR_NOT_FOUND) return SF_OK;
  sf_status status = sf_cu_check(result, "cuModuleGetGlobal(" SF_DYNAMIC_SHARED_SYMBOL ")");
  if (status == SF_OK) *bytes = (int)(size * SF_DYNAMIC_SHARED_UNIT);
  return status;
}

/* Reads what the kernel uses, checks it against the device of the current context and
 * opts in to the dynamic shared memory asked for (the request's, or the module's own,
 * whichever is more). */
static sf_status fit_to_device(const sf_cu *cu, const sf_module_request *rq, sf_kernel *k) {
  CUfunction f = k->function;
  sf_status status;
  if ((status = function_attribute(cu, f, CU_FUNC_ATTRIBUTE_NUM_REGS, &k->registers)) ||
      (status = function_attribute(cu, f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &k->static_shared)) ||
      (status = function_attribute(cu, f, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, &k->local_bytes)) ||
      (status = function_attribute(cu, f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                   &k->max_threads_per_block)) ||
      (status = function_attribute(cu, f, CU_FUNC_ATTRIBUTE_BINARY_VERSION, &k->binary_version)) ||
      (status = function_attribute(cu, f, CU_FUNC_ATTRIBUTE_PTX_VERSION, &k->ptx_version)))
    return status;

  CUdevice device;
  int shared_default, shared_optin, registers_per_block;
  if ((status = sf_cu_check(cu->CtxGetDevice(&device), "cuCtxGetDevice")) ||
      (status = device_attribute(cu, device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
                                 &shared_default)) ||
      (status = device_attribute(cu, device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                 &shared_optin)) ||
      (status = device_attribute(cu, device, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
                                 &registers_per_block)))
    return status;

  /* The driver's thread limit folds in registers (and launch bounds): zero means the
   * kernel cannot run at all on this device. */
  if (k->max_threads_per_block < 1 || k->registers > registers_per_block)
    return sf_fail(SF_ERESOURCE, "kernel %s: %d registers per thread leave room for %d threads "
                   "per block (device: %d registers per block)",
                   k->name, k->registers, k->max_threads_per_block, registers_per_block);
  const int dynamic = rq->dynamic_shared > k->dynamic_shared ? rq->dynamic_shared : k->dynamic_shared;
  long shared_needed = (long)k->static_shared + dynamic;
  if (shared_needed > shared_optin)
    return sf_fail(SF_ERESOURCE, "kernel %s: %d bytes of static and %d of dynamic shared memory "
                   "exceed the %d bytes a block may have on this device",
                   k->name, k->static_shared, dynamic, shared_optin);
  if (shared_needed > shared_default) {
    status = sf_cu_check(cu->FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                              dynamic),
                         "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    if (status != SF_OK) return status;
  }
  /* The driver's own figure, after any opt-in: what launches are held to. */
  status = function_attribute(cu, f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &k->max_dynamic_shared);
  if (status != SF_OK || rq->block_threads <= 0) return status;
  return sf_cu_check(cu->OccupancyMaxActiveBlocksPerMultiprocessor(&k->blocks_per_sm, f, rq->block_threads,
                                                                   (size_t)k->dynamic_shared),
                     "cuOccupancyMaxActiveBlocksPerMultiprocessor");
}

static sf_status build_kernel(void *user, sf_kernel *k) {
  const load_job *job = user;
  const sf_cu *cu = job->cu;
  const sf_module_request *rq = job->request;
  CUcontext previous = NULL;
  sf_status status = enter_context(cu, rq->context, &previous);
  if (status != SF_OK) return status;
  status = load_image(cu, rq, &k->module);
  if (status == SF_OK) {
    status = sf_cu_check(cu->ModuleGetFunction(&k->function, k->module, rq->kernel_name),
                         "cuModuleGetFunction");
    if (status != SF_OK) sf_fail_context(status, "kernel %s", rq->kernel_name);
    k->dynamic_shared = 0;
    if (status == SF_OK && !rq->no_module_dynamic_shared)
      status = read_dynamic_shared(cu, rq, k->module, &k->dynamic_shared);
    if (status == SF_OK) status = fit_to_device(cu, rq, k);
    if (status != SF_OK) cu->ModuleUnload(k->module); /* nothing half-loaded stays behind */
  }
  sf_status restored = leave_context(cu, rq->context, previous);
  if (status == SF_OK && restored != SF_OK) {
    cu->ModuleUnload(k->module);
    status = restored;
  }
  return status;
}

sf_status sf_module_get(sf_kernel_table *table, const sf_module_request *request,
                        const sf_kernel **kernel) {
  if (!kernel) return sf_fail(SF_EINVAL, "sf_module_get: kernel is NULL");
  *kernel = NULL;
  if (!table || !request || !request->key || !request->kernel_name)
    return sf_fail(SF_EINVAL, "sf_module_get: %s is NULL",
                   !table ? "table" : !request ? "request" : !request->key ? "key" : "kernel_name");
  /* The launch path: an already loaded kernel costs one lock-free lookup. */
  const sf_kernel *found =
      sf_kernel_table_find(table, request->context, request->key, request->kernel_name);
  if (found) {
    *kernel = found;
    return SF_OK;
  }
  if (!request->context) return sf_fail(SF_EINVAL, "sf_module_get: context is NULL");
  if (!request->image || request->image_size == 0)
    return sf_fail(SF_EINVAL, "sf_module_get: kernel %s: no binary image given",
                   request->kernel_name);
  if (request->dynamic_shared < 0)
    return sf_fail(SF_EINVAL, "sf_module_get: dynamic_shared %d: expected >= 0",
                   request->dynamic_shared);
  load_job job = {NULL, request};
  sf_status status = sf_cu_load(&job.cu);
  if (status != SF_OK) return status;
  return sf_kernel_table_get_or_add(table, request->context, request->key, request->kernel_name,
                                    build_kernel, &job, kernel);
}

static void unload_kernel(void *user, const sf_kernel *k) {
  const sf_cu *cu = user;
  CUcontext previous = NULL;
  /* Errors are of no use here: at exit the driver may already be shutting down. */
  if (enter_context(cu, k->context, &previous) != SF_OK) return;
  cu->ModuleUnload(k->module);
  leave_context(cu, k->context, previous);
}

void sf_module_table_destroy(sf_kernel_table *table) {
  if (!table) return;
  const sf_cu *cu = NULL;
  /* Kernels exist only if the driver loaded; an empty table must not open it. */
  if (sf_kernel_table_count(table) > 0 && sf_cu_load(&cu) == SF_OK)
    sf_kernel_table_destroy(table, unload_kernel, (void *)cu);
  else
    sf_kernel_table_destroy(table, NULL, NULL);
}

sf_status sf_kernel_check_launch(const sf_kernel *kernel, unsigned block_threads,
                                 size_t dynamic_shared) {
  if (!kernel) return sf_fail(SF_EINVAL, "sf_kernel_check_launch: kernel is NULL");
  if (block_threads == 0)
    return sf_fail(SF_EINVAL, "kernel %s: a launch needs at least one thread per block",
                   kernel->name);
  if (block_threads > (unsigned)kernel->max_threads_per_block)
    return sf_fail(SF_ERESOURCE, "kernel %s: %u threads per block asked, at most %d fit "
                   "(%d registers per thread)",
                   kernel->name, block_threads, kernel->max_threads_per_block, kernel->registers);
  if (dynamic_shared > (size_t)kernel->max_dynamic_shared)
    return sf_fail(SF_ERESOURCE, "kernel %s: %zu bytes of dynamic shared memory asked, at most "
                   "%d allowed (static: %d bytes)",
                   kernel->name, dynamic_shared, kernel->max_dynamic_shared, kernel->static_shared);
  return SF_OK;
}
