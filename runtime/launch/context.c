/* context.c: creating and destroying an sf_context. */
#include "runtime/launch/context.h"

#include <stdlib.h>

#include "base/error.h"
#include "runtime/cuda/module.h"
#include "runtime/launch/workspace.h"

sf_status sf_context_create(const sf_context_options *options, sf_context **out) {
  if (!out) return sf_fail(SF_EINVAL, "sf_context_create: out must not be NULL");
  *out = NULL;
  sf_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return sf_fail(SF_ENOMEM, "sf_context_create: out of memory");
  sf_cache_options cache_options = {0};
  if (options) {
    cache_options.dir = options->cache_dir;
    cache_options.memory_only = options->cache_memory_only;
    cache_options.max_bytes = options->cache_max_bytes;
  }
  sf_status st = sf_cache_open(&cache_options, &ctx->cache);
  ctx->owns_cache = true;
  if (st == SF_OK) st = sf_kernel_table_create(SF_MODULE_TABLE_DEFAULT_CAPACITY, &ctx->kernels);
  if (st != SF_OK) {
    sf_cache_close(ctx->cache);
    free(ctx);
    return st;
  }
  pthread_mutex_init(&ctx->device_lock, NULL);
  *out = ctx;
  return SF_OK;
}

sf_status sf_context_create_sharing_cache(sf_context *parent, sf_context **out) {
  if (!parent || !out) return sf_fail(SF_EINVAL, "sf_context_create_sharing_cache: parent and out must not be NULL");
  *out = NULL;
  sf_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return sf_fail(SF_ENOMEM, "sf_context_create_sharing_cache: out of memory");
  ctx->cache = parent->cache;
  ctx->owns_cache = false;
  sf_status st = sf_kernel_table_create(SF_MODULE_TABLE_DEFAULT_CAPACITY, &ctx->kernels);
  if (st != SF_OK) {
    free(ctx);
    return st;
  }
  pthread_mutex_init(&ctx->device_lock, NULL);
  *out = ctx;
  return SF_OK;
}

void sf_context_destroy(sf_context *ctx) {
  if (!ctx) return;
  const sf_cu *cu;
  for (int d = 0; d < SF_MAX_DEVICES; d++)
    if (ctx->devices[d].workspace_pool && sf_cu_load(&cu) == SF_OK)
      sf_workspace_pool_destroy(cu, ctx->devices[d].workspace_pool);
  sf_module_table_destroy(ctx->kernels);
  if (ctx->owns_cache) sf_cache_close(ctx->cache);
  pthread_mutex_destroy(&ctx->device_lock);
  free(ctx);
}

const char *sf_context_warning(const sf_context *ctx) {
  return ctx ? sf_cache_warning(ctx->cache) : NULL;
}

size_t sf_context_warning_count(const sf_context *ctx) {
  return ctx ? sf_cache_warning_count(ctx->cache) : 0;
}

const char *sf_context_warning_at(const sf_context *ctx, size_t index) {
  return ctx ? sf_cache_warning_at(ctx->cache, index) : NULL;
}
