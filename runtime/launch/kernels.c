/* kernels.c: variant -> source -> cached binary -> loaded kernel, with a lock-free fast path. */
#include "runtime/launch/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generator/generator.h"
#include "generator/template_set.h"
#include "runtime/compile/compile.h"
#include "runtime/cuda/cuda_driver.h"
#include "base/error.h"
#include "runtime/cuda/module.h"
#include "runtime/launch/workspace.h"

/* ---- the binary of a variant ------------------------------------------------------ */

typedef struct compile_job {
  const char *source;
  sf_target target;
} compile_job;

static sf_status compile_for_cache(void *user, void **data, size_t *size) {
  compile_job *job = user;
  sf_binary binary;
  sf_status st = sf_compile(job->source, "scan.cu", job->target.arch, job->target.use_ptx, &binary);
  if (st != SF_OK) return st;
  *data = binary.data; /* the cache takes the bytes; the rest of the record goes */
  *size = binary.size + (binary.is_ptx ? 1 : 0); /* PTX keeps its NUL for the driver */
  binary.data = NULL;
  sf_binary_free(&binary);
  return SF_OK;
}

sf_status sf_variant_binary(sf_cache *cache, sf_target target, const sf_variant *variant,
                            const void **data, size_t *size, sf_cache_source *where) {
  char *source;
  size_t source_length;
  sf_status st = sf_generate(variant, &source, &source_length);
  if (st != SF_OK) return st;
  int major = 0, minor = 0;
  st = sf_nvrtc_version(&major, &minor);
  if (st != SF_OK) {
    free(source);
    return st;
  }
  char target_name[32], nvrtc_version[32], spec[512];
  sf_target_format(target, target_name, sizeof target_name);
  snprintf(nvrtc_version, sizeof nvrtc_version, "%d.%d", major, minor);
  sf_variant_format(variant, spec, sizeof spec);
  const char *options = sf_compile_options_string();
  const char *kernel = sf_kernel_name(variant->op);
  /* Everything that changes the binary; the spec is there to explain entries. */
  const sf_cache_input inputs[] = {
      {"source", source, source_length},
      {"options", options, strlen(options)},
      {"target", target_name, strlen(target_name)},
      {"nvrtc", nvrtc_version, strlen(nvrtc_version)},
      {"kernel", kernel, strlen(kernel)},
      {"spec", spec, strlen(spec)},
  };
  const size_t count = sizeof inputs / sizeof inputs[0];
  sf_cache_key key = sf_cache_key_of(inputs, count);
  /* The manifest also says which template set made the source (not part of the key: the
   * source is), so that `scanforge cache ls` can tell entries from experiments. */
  uint64_t set_hash = 0;
  char templates[24] = "";
  if (sf_template_set_hash(&set_hash) == SF_OK) snprintf(templates, sizeof templates, "%016llx", (unsigned long long)set_hash);
  const char *template_dir = sf_template_dir();
  sf_cache_input described[sizeof inputs / sizeof inputs[0] + 2];
  size_t described_count = count;
  memcpy(described, inputs, sizeof inputs);
  if (templates[0]) described[described_count++] = (sf_cache_input){"templates", templates, strlen(templates)};
  if (template_dir) described[described_count++] = (sf_cache_input){"template_dir", template_dir, strlen(template_dir)};
  char *manifest = sf_cache_manifest_of(described, described_count);
  if (!manifest) {
    free(source);
    return sf_fail(SF_ENOMEM, "kernel cache manifest: out of memory");
  }
  compile_job job = {source, target};
  st = sf_cache_get_or_build(cache, &key, target_name, manifest, compile_for_cache, &job, data,
                             size, where);
  free(manifest);
  free(source);
  if (st != SF_OK) return sf_fail_context(st, "variant %s for %s", spec, target_name);
  return SF_OK;
}

/* ---- targets per device ----------------------------------------------------------- */

static sf_status compute_target(CUdevice device, sf_device_slot *slot) {
  const sf_cu *cu;
  sf_status st = sf_cu_load(&cu);
  if (st != SF_OK) return st;
  int major = 0, minor = 0, sms = 0;
  st = sf_cu_check(cu->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device), "cuDeviceGetAttribute");
  if (st == SF_OK) st = sf_cu_check(cu->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device), "cuDeviceGetAttribute");
  if (st == SF_OK) st = sf_cu_check(cu->DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device), "cuDeviceGetAttribute");
  if (st != SF_OK) return st;
  int archs[64], count = 0;
  st = sf_nvrtc_archs(archs, 64, &count);
  if (st != SF_OK) return st;
  st = sf_target_arch(major, minor, archs, count < 64 ? count : 64, &slot->target);
  slot->sm_count = sms;
  return st;
}

static sf_status current_device(CUcontext *context, CUdevice *device) {
  const sf_cu *cu;
  sf_status st = sf_cu_load(&cu);
  if (st == SF_OK) st = sf_cu_current_context(0, context);
  if (st == SF_OK) st = sf_cu_check(cu->CtxGetDevice(device), "cuCtxGetDevice");
  return st;
}

static sf_status device_slot(sf_context *ctx, CUdevice device, const sf_device_slot **out) {
  if (device < 0 || device >= SF_MAX_DEVICES)
    return sf_fail(SF_EUNSUPPORTED, "CUDA device %d: scanforge handles devices 0..%d", (int)device, SF_MAX_DEVICES - 1);
  sf_device_slot *slot = &ctx->devices[device];
  if (!atomic_load_explicit(&slot->ready, memory_order_acquire)) {
    pthread_mutex_lock(&ctx->device_lock);
    sf_status st = SF_OK;
    if (!atomic_load_explicit(&slot->ready, memory_order_relaxed)) {
      st = compute_target(device, slot);
      const sf_cu *cu;
      if (st == SF_OK && sf_cu_load(&cu) == SF_OK) sf_workspace_pool_create(cu, device, &slot->workspace_pool);
      if (st == SF_OK) atomic_store_explicit(&slot->ready, 1, memory_order_release);
    }
    pthread_mutex_unlock(&ctx->device_lock);
    if (st != SF_OK) return st;
  }
  *out = slot;
  return SF_OK;
}

/* The slot of the calling thread's current device. */
static sf_status current_slot(sf_context *ctx, const sf_device_slot **slot) {
  CUcontext context;
  CUdevice device;
  sf_status st = current_device(&context, &device);
  if (st == SF_OK) st = device_slot(ctx, device, slot);
  return st;
}

sf_status sf_context_target(sf_context *ctx, sf_target *target) {
  const sf_device_slot *slot;
  sf_status st = current_slot(ctx, &slot);
  if (st == SF_OK) *target = slot->target;
  return st;
}

sf_status sf_context_workspace_pool(sf_context *ctx, CUmemoryPool *pool) {
  const sf_device_slot *slot;
  sf_status st = current_slot(ctx, &slot);
  if (st == SF_OK) *pool = slot->workspace_pool;
  return st;
}

sf_status sf_context_sm_count(sf_context *ctx, int *sm_count) {
  const sf_device_slot *slot;
  sf_status st = current_slot(ctx, &slot);
  if (st == SF_OK) *sm_count = slot->sm_count;
  return st;
}

/* ---- loaded kernels --------------------------------------------------------------- */

/* The in-process key of a (variant, target): packed fields, so that the launch path
 * needs neither the generator nor a hash of the source. Every field of sf_variant is in
 * it (a field left out would hand one variant's kernel to another). */
static void variant_key(const sf_variant *v, sf_target target, uint8_t key[SF_KERNEL_KEY_BYTES]) {
  uint64_t packed = (uint64_t)v->op | (uint64_t)v->dtype << 1 | (uint64_t)v->dstate << 3 |
                    (uint64_t)v->threads << 12 | (uint64_t)v->items << 23 |
                    (uint64_t)v->channels << 30 | (uint64_t)v->has_z << 41 |
                    (uint64_t)v->has_D << 42 | (uint64_t)v->has_delta_bias << 43 |
                    (uint64_t)v->softplus << 44 | (uint64_t)v->B_var << 45 |
                    (uint64_t)v->C_var << 46 | (uint64_t)v->deterministic << 47 |
                    (uint64_t)v->states << 48 | (uint64_t)v->split_states << 53 |
                    (uint64_t)v->min_blocks << 54 | (uint64_t)v->pairs << 60 |
                    (uint64_t)v->words << 61;
  uint32_t arch = (uint32_t)target.arch | (target.use_ptx ? 1u << 16 : 0u);
  memcpy(key, &packed, 8);
  memcpy(key + 8, &arch, 4);
  memcpy(key + 12, "SFv1", 4);
}

sf_status sf_kernel_for_variant(sf_context *ctx, const sf_variant *variant,
                                const sf_kernel **kernel, sf_kernel_origin *origin) {
  return sf_kernel_for_variant_entry(ctx, variant, sf_kernel_name(variant->op), kernel, origin);
}

static sf_status kernel_for(sf_context *ctx, const sf_variant *variant, const char *entry, bool helper,
                            const sf_kernel **kernel, sf_kernel_origin *origin) {
  CUcontext context;
  CUdevice device;
  const sf_device_slot *slot;
  sf_status st = current_device(&context, &device);
  if (st == SF_OK) st = device_slot(ctx, device, &slot);
  if (st != SF_OK) return st;
  uint8_t key[SF_KERNEL_KEY_BYTES];
  variant_key(variant, slot->target, key);
  const char *name = entry;
  const sf_kernel *found = sf_kernel_table_find(ctx->kernels, context, key, name);
  if (found) {
    *kernel = found;
    if (origin) *origin = SF_KERNEL_LOADED;
    return SF_OK;
  }
  const void *image;
  size_t size;
  sf_cache_source where;
  st = sf_variant_binary(ctx->cache, slot->target, variant, &image, &size, &where);
  if (st != SF_OK) return st;
  sf_module_request request = {
      .context = context, .key = key, .kernel_name = name, .image = image, .image_size = size,
      .block_threads = helper ? 0 : sf_variant_block_threads(variant), .no_module_dynamic_shared = helper};
  st = sf_module_get(ctx->kernels, &request, kernel);
  if (st != SF_OK) return st;
  if (origin)
    *origin = where == SF_CACHE_BUILT       ? SF_KERNEL_COMPILED
              : where == SF_CACHE_FROM_DISK ? SF_KERNEL_FROM_DISK
                                            : SF_KERNEL_FROM_MEMORY;
  return SF_OK;
}

sf_status sf_kernel_for_variant_entry(sf_context *ctx, const sf_variant *variant, const char *entry,
                                      const sf_kernel **kernel, sf_kernel_origin *origin) {
  return kernel_for(ctx, variant, entry, false, kernel, origin);
}

sf_status sf_kernel_for_variant_helper(sf_context *ctx, const sf_variant *variant, const char *entry,
                                       const sf_kernel **kernel) {
  return kernel_for(ctx, variant, entry, true, kernel, NULL);
}
