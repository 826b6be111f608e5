/* cache.c: opening the cache and get-or-build: memory table, then disk, then build once. */
#include "runtime/cache/cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "runtime/cache/cache_dir.h"
#include "runtime/cache/cache_entry.h"
#include "runtime/cache/cache_internal.h"
#include "runtime/cache/cache_lock.h"
#include "base/env.h"
#include "base/error.h"

enum { DEFAULT_MAX_BYTES = 1u << 30, SUBDIR_MAX = 64 };

const char *sf_cache_source_name(sf_cache_source source) {
  switch (source) {
  case SF_CACHE_FROM_MEMORY: return "memory";
  case SF_CACHE_FROM_DISK: return "disk";
  case SF_CACHE_BUILT: return "built";
  }
  return "unknown";
}

/* ---- warnings and stamps -------------------------------------------------------- */

/* Keeps `text` unless it is known. Past the last slots warnings are dropped (they are
 * repeats of a few kinds by then), but the last slot is kept for `essential` ones: the
 * memory-only fallback is always heard. */
static void warn(sf_cache *cache, const char *text, bool essential) {
  pthread_mutex_lock(&cache->warning_lock);
  size_t n = atomic_load(&cache->warning_count);
  bool known = false;
  for (size_t i = 0; i < n && !known; i++) known = strcmp(cache->warnings[i], text) == 0;
  const size_t room = essential ? SF_CACHE_WARNINGS_MAX : SF_CACHE_WARNINGS_MAX - 1;
  if (!known && n < room && (cache->warnings[n] = strdup(text)))
    atomic_store(&cache->warning_count, n + 1); /* after the slot: readers take no lock */
  pthread_mutex_unlock(&cache->warning_lock);
}

void sf_cache_warn(sf_cache *cache, const char *text) { warn(cache, text, false); }

void sf_cache_degrade(sf_cache *cache, const char *why) {
  char text[4096 + 64];
  snprintf(text, sizeof text, "kernel cache: %s; keeping kernels in memory only", why);
  warn(cache, text, true);
  atomic_store(&cache->memory_only, true);
}

size_t sf_cache_warning_count(const sf_cache *cache) {
  return cache ? atomic_load(&((sf_cache *)cache)->warning_count) : 0;
}

const char *sf_cache_warning_at(const sf_cache *cache, size_t index) {
  return index < sf_cache_warning_count(cache) ? cache->warnings[index] : NULL;
}

const char *sf_cache_warning(const sf_cache *cache) { return sf_cache_warning_at(cache, 0); }

uint64_t sf_cache_next_stamp(sf_cache *cache) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  uint64_t last = atomic_load(&cache->last_stamp);
  uint64_t next;
  do next = now > last ? now : last + 1;
  while (!atomic_compare_exchange_weak(&cache->last_stamp, &last, next));
  return next;
}

/* ---- opening -------------------------------------------------------------------- */

static void open_disk(sf_cache *cache, const char *dir) {
  cache->root = dir && dir[0] ? strdup(dir) : sf_cache_default_dir();
  if (!cache->root) {
    sf_cache_degrade(cache, sf_last_error());
    return;
  }
  /* The root is made, then resolved and vetted (as well as v1: whoever can write the root
   * can replace v1); from then on the cache uses only the resolved path. */
  bool missing;
  char *real = NULL;
  if (sf_cache_dir_prepare(cache->root, &cache->policy) != SF_OK ||
      !(real = sf_cache_dir_resolve(cache->root, &missing)) ||
      sf_cache_dir_check(real, cache->policy.trust_group, &missing) != SF_OK) {
    free(real);
    sf_cache_degrade(cache, sf_last_error());
    return;
  }
  free(cache->root);
  cache->root = real;
  size_t n = strlen(cache->root) + sizeof "/v1";
  cache->store = malloc(n);
  if (!cache->store) {
    sf_cache_degrade(cache, "out of memory");
    return;
  }
  snprintf(cache->store, n, "%s/v1", cache->root);
  if (sf_cache_dir_prepare(cache->store, &cache->policy) != SF_OK)
    sf_cache_degrade(cache, sf_last_error());
  else if (sf_cache_dir_probe(cache->store) != SF_OK) {
    char why[4096];
    snprintf(why, sizeof why, "%s%s", sf_last_error(),
             cache->layers.count ? "" : " (a directory filled ahead of time to be read only "
                                        "belongs in SCANFORGE_CACHE_PATH)");
    sf_cache_degrade(cache, why);
  }
}

/* $SCANFORGE_CACHE_TRUST_GROUP on: group-writable cache directories are trusted (a bad
 * value is reported by sf_environment_warning). */
static bool trust_group(void) {
  sf_env_value env;
  return sf_env_get(SF_ENV_CACHE_TRUST_GROUP, &env) && env.number;
}

/* A bad $SCANFORGE_CACHE_MAX_BYTES is reported by sf_environment_warning. */
static uint64_t budget_of(uint64_t asked) {
  if (asked) return asked;
  sf_env_value env;
  return sf_env_get(SF_ENV_CACHE_MAX_BYTES, &env) ? (uint64_t)env.number : DEFAULT_MAX_BYTES;
}

sf_status sf_cache_open(const sf_cache_options *opt, sf_cache **out) {
  sf_cache_options defaults = {0};
  if (!opt) opt = &defaults;
  *out = NULL;
  sf_cache *cache = calloc(1, sizeof *cache);
  if (!cache) return sf_fail(SF_ENOMEM, "out of memory opening the kernel cache");
  cache->bucket_count = 64;
  cache->buckets = calloc(cache->bucket_count, sizeof *cache->buckets);
  if (!cache->buckets) {
    free(cache);
    return sf_fail(SF_ENOMEM, "out of memory opening the kernel cache");
  }
  pthread_mutex_init(&cache->mutex, NULL);
  pthread_cond_init(&cache->changed, NULL);
  pthread_mutex_init(&cache->warning_lock, NULL);
  atomic_init(&cache->memory_only, opt->memory_only);
  atomic_init(&cache->warning_count, 0);
  atomic_init(&cache->last_stamp, 0);
  cache->no_disk = opt->memory_only;
  cache->policy = sf_cache_policy_of(opt->shared, !opt->memory_only && trust_group());
  if (!opt->memory_only) {
    sf_env_value env;
    const char *layers = opt->read_only_path                          ? opt->read_only_path
                         : sf_env_get(SF_ENV_CACHE_PATH, &env) ? env.text
                                                               : NULL;
    if (sf_cache_layers_open(cache, layers) != SF_OK) {
      sf_cache_close(cache);
      return sf_fail(SF_ENOMEM, "out of memory opening the kernel cache");
    }
    open_disk(cache, opt->dir);
  }
  cache->max_bytes = budget_of(opt->max_bytes);
  *out = cache;
  return SF_OK;
}

void sf_cache_close(sf_cache *cache) {
  if (!cache) return;
  for (size_t b = 0; b < cache->bucket_count; b++) {
    for (sf_mem_entry *e = cache->buckets[b], *next; e; e = next) {
      next = e->next;
      free(e->data);
      free(e->subdir);
      free(e);
    }
  }
  free(cache->buckets);
  pthread_cond_destroy(&cache->changed);
  pthread_mutex_destroy(&cache->mutex);
  for (size_t i = 0; i < atomic_load(&cache->warning_count); i++) free(cache->warnings[i]);
  pthread_mutex_destroy(&cache->warning_lock);
  sf_cache_layers_close(&cache->layers);
  free(cache->store);
  free(cache->root);
  free(cache);
}

/* ---- the in-process table (callers hold the mutex) ------------------------------ */

static size_t bucket_of(const sf_cache *cache, const sf_cache_key *key) {
  uint64_t h;
  memcpy(&h, key->bytes, sizeof h); /* the key is a hash already */
  return (size_t)(h & (cache->bucket_count - 1));
}

static sf_mem_entry *table_find(sf_cache *cache, const sf_cache_key *key, const char *subdir) {
  for (sf_mem_entry *e = cache->buckets[bucket_of(cache, key)]; e; e = e->next)
    if (memcmp(e->key.bytes, key->bytes, 16) == 0 && strcmp(e->subdir, subdir) == 0) return e;
  return NULL;
}

static void table_grow(sf_cache *cache) {
  size_t count = cache->bucket_count * 2;
  sf_mem_entry **grown = calloc(count, sizeof *grown);
  if (!grown) return; /* longer chains, still correct */
  sf_mem_entry **old = cache->buckets;
  size_t old_count = cache->bucket_count;
  cache->buckets = grown;
  cache->bucket_count = count;
  for (size_t b = 0; b < old_count; b++) {
    for (sf_mem_entry *e = old[b], *next; e; e = next) {
      next = e->next;
      size_t i = bucket_of(cache, &e->key);
      e->next = grown[i];
      grown[i] = e;
    }
  }
  free(old);
}

static sf_mem_entry *table_add(sf_cache *cache, const sf_cache_key *key, const char *subdir) {
  sf_mem_entry *e = calloc(1, sizeof *e);
  if (!e || !(e->subdir = strdup(subdir))) {
    free(e);
    return NULL;
  }
  if (cache->entry_count >= cache->bucket_count) table_grow(cache);
  e->key = *key;
  size_t i = bucket_of(cache, key);
  e->next = cache->buckets[i];
  cache->buckets[i] = e;
  cache->entry_count++;
  return e;
}

static void table_remove(sf_cache *cache, sf_mem_entry *gone) {
  for (sf_mem_entry **p = &cache->buckets[bucket_of(cache, &gone->key)]; *p; p = &(*p)->next) {
    if (*p == gone) {
      *p = gone->next;
      cache->entry_count--;
      free(gone->subdir);
      free(gone);
      return;
    }
  }
}

/* ---- the disk and the build ------------------------------------------------------ */

static bool valid_subdir(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > SUBDIR_MAX || s[0] == '.') return false;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
          ch == '_' || ch == '-' || ch == '.'))
      return false;
  }
  return true;
}

typedef struct request {
  const sf_cache_key *key;
  const char *subdir;
  const char *manifest_json;
  sf_cache_build_fn build;
  void *user;
} request;

static sf_status run_build(const request *r, json_t **inputs, void **data, size_t *size) {
  json_error_t err;
  *inputs = json_loads(r->manifest_json ? r->manifest_json : "{}", 0, &err);
  if (!*inputs || !json_is_object(*inputs)) {
    json_decref(*inputs);
    *inputs = NULL;
    return sf_fail(SF_EINVAL, "manifest_json: expected a JSON object: %s",
                   err.text[0] ? err.text : "not an object");
  }
  *data = NULL;
  *size = 0;
  sf_status s = r->build(r->user, data, size);
  if (s == SF_OK && !*data && *size)
    s = sf_fail(SF_EINTERNAL, "cache build callback returned no data for %zu bytes", *size);
  if (s != SF_OK) {
    free(*data);
    *data = NULL;
    json_decref(*inputs);
    *inputs = NULL;
  }
  return s;
}

/* Builds without the disk (memory-only mode, or the disk just failed). */
static sf_status build_only(const request *r, void **data, size_t *size, sf_cache_source *where) {
  json_t *inputs;
  sf_status s = run_build(r, &inputs, data, size);
  json_decref(inputs);
  *where = SF_CACHE_BUILT;
  return s;
}

/* The disk path of a key missing from memory: the read-only layers; else load; else lock,
 * load again (someone may have built it meanwhile), build and publish. */
static sf_status fetch(sf_cache *cache, const request *r, void **data, size_t *size,
                       sf_cache_source *where) {
  if (!cache->no_disk) {
    /* Read even when the writable cache is refused: that is what the layers are for. */
    sf_entry_state layer = sf_cache_layers_load(cache, r->subdir, r->key, data, size);
    *where = SF_CACHE_FROM_DISK;
    if (layer == SF_ENTRY_OK) return SF_OK;
    if (layer == SF_ENTRY_NOMEM) return sf_fail(SF_ENOMEM, "out of memory reading the kernel cache");
  }
  if (atomic_load(&cache->memory_only)) return build_only(r, data, size, where);
  char hex[33], dir[4096], bin[4096], json[4096], lock[4096];
  sf_cache_key_hex(r->key, hex);
  int n = snprintf(dir, sizeof dir, "%s/%s", cache->store, r->subdir);
  if (n < 0 || (size_t)n >= sizeof dir || !sf_entry_path(bin, sizeof bin, dir, hex, SF_FILE_BIN) ||
      !sf_entry_path(json, sizeof json, dir, hex, SF_FILE_JSON) ||
      !sf_entry_path(lock, sizeof lock, dir, hex, SF_FILE_LOCK)) {
    sf_cache_degrade(cache, "cache directory path too long");
    return build_only(r, data, size, where);
  }

  /* Vetted before anything in it is read: a file there becomes code in this process. */
  if (sf_cache_dir_prepare(dir, &cache->policy) != SF_OK) {
    sf_cache_degrade(cache, sf_last_error());
    return build_only(r, data, size, where);
  }
  *where = SF_CACHE_FROM_DISK;
  sf_entry_state st = sf_entry_load(bin, r->key, sf_cache_next_stamp(cache), data, size);
  if (st == SF_ENTRY_OK) return SF_OK;
  if (st == SF_ENTRY_NOMEM) return sf_fail(SF_ENOMEM, "out of memory reading %s", bin);

  int fd;
  if (sf_key_lock_take(lock, true, cache->policy.lock_mode, &fd) != SF_KEY_LOCK_HELD) {
    sf_cache_degrade(cache, sf_last_error());
    return build_only(r, data, size, where);
  }
  st = sf_entry_load(bin, r->key, sf_cache_next_stamp(cache), data, size);
  if (st == SF_ENTRY_OK || st == SF_ENTRY_NOMEM) {
    sf_key_lock_drop(lock, fd);
    return st == SF_ENTRY_OK ? SF_OK : sf_fail(SF_ENOMEM, "out of memory reading %s", bin);
  }
  if (st == SF_ENTRY_CORRUPT) {
    /* Damaged (a bad disk, a stray edit): drop it and build afresh. */
    unlink(bin);
    unlink(json);
  }

  json_t *inputs;
  *where = SF_CACHE_BUILT;
  sf_status s = run_build(r, &inputs, data, size);
  if (s == SF_OK) {
    if (sf_entry_publish(dir, r->subdir, r->key, *data, *size, inputs,
                         sf_cache_next_stamp(cache), cache->policy.file_mode) != SF_OK)
      sf_cache_degrade(cache, sf_last_error()); /* the bytes are good: serve them */
    json_decref(inputs);
  }
  sf_key_lock_drop(lock, fd);
  if (s == SF_OK && !atomic_load(&cache->memory_only)) sf_cache_evict(cache);
  return s;
}

sf_status sf_cache_get_or_build(sf_cache *cache, const sf_cache_key *key, const char *subdir,
                                const char *manifest_json, sf_cache_build_fn build, void *user,
                                const void **data, size_t *size, sf_cache_source *where) {
  if (!cache || !key || !subdir || !build || !data || !size)
    return sf_fail(SF_EINVAL, "sf_cache_get_or_build: cache, key, subdir, build, data and size "
                              "must not be NULL");
  if (!valid_subdir(subdir))
    return sf_fail(SF_EINVAL, "subdir: expected a plain name of letters, digits, '_', '-', '.' "
                              "(at most %d, not starting with '.'), got \"%s\"",
                   SUBDIR_MAX, subdir);
  sf_cache_source source_ignored;
  if (!where) where = &source_ignored;

  pthread_mutex_lock(&cache->mutex);
  sf_mem_entry *e;
  /* Another thread building the same key: wait for it instead of building twice. */
  while ((e = table_find(cache, key, subdir)) && !e->ready)
    pthread_cond_wait(&cache->changed, &cache->mutex);
  if (e) {
    *data = e->data;
    *size = e->size;
    *where = SF_CACHE_FROM_MEMORY;
    pthread_mutex_unlock(&cache->mutex);
    return SF_OK;
  }
  e = table_add(cache, key, subdir);
  pthread_mutex_unlock(&cache->mutex);
  if (!e) return sf_fail(SF_ENOMEM, "out of memory in the kernel cache");

  request r = {key, subdir, manifest_json, build, user};
  void *bytes = NULL;
  size_t length = 0;
  sf_status s = fetch(cache, &r, &bytes, &length, where);

  pthread_mutex_lock(&cache->mutex);
  if (s == SF_OK) {
    e->data = bytes;
    e->size = length;
    e->ready = true;
    cache->memory_bytes += length;
    *data = bytes;
    *size = length;
  } else {
    table_remove(cache, e);
  }
  pthread_cond_broadcast(&cache->changed);
  pthread_mutex_unlock(&cache->mutex);
  return s;
}
