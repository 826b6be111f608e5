/* kernel_table.c: fixed-size open addressing; entries published with release, never moved or removed. */
#include "runtime/cuda/kernel_table.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

typedef struct entry {
  uint64_t hash; /* compared first: most probes of a miss stop here */
  sf_kernel kernel;
  char name[]; /* kernel.name points here */
} entry;

struct sf_kernel_table {
  size_t mask;          /* capacity - 1 */
  size_t limit;         /* most entries: a quarter stays empty so every probe run ends */
  atomic_size_t count;  /* written under `lock` */
  pthread_mutex_t lock; /* serialises insertions (and the builds), never taken by find */
  _Atomic(entry *) slots[];
};

/* FNV-1a over the bytes, finished with a multiply-shift mix to spread the low bits. */
static uint64_t hash_bytes(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t hash_kernel(CUcontext context, const uint8_t *key, const char *name) {
  uintptr_t ctx = (uintptr_t)context;
  uint64_t h = 0xcbf29ce484222325ull;
  h = hash_bytes(h, &ctx, sizeof ctx);
  h = hash_bytes(h, key, SF_KERNEL_KEY_BYTES);
  h = hash_bytes(h, name, strlen(name));
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

static int same_kernel(const entry *e, uint64_t hash, CUcontext context, const uint8_t *key,
                       const char *name) {
  return e->hash == hash && e->kernel.context == context &&
         memcmp(e->kernel.key, key, SF_KERNEL_KEY_BYTES) == 0 && strcmp(e->name, name) == 0;
}

sf_status sf_kernel_table_create(size_t capacity, sf_kernel_table **table) {
  *table = NULL;
  if (capacity < 4 || capacity > ((size_t)1 << 24))
    return sf_fail(SF_EINVAL, "kernel table capacity %zu: expected 4 .. %zu", capacity,
                   (size_t)1 << 24);
  size_t size = 4;
  while (size < capacity) size *= 2;
  sf_kernel_table *t = calloc(1, sizeof *t + size * sizeof t->slots[0]);
  if (!t) return sf_fail(SF_ENOMEM, "kernel table of %zu slots: out of memory", size);
  t->mask = size - 1;
  t->limit = size - size / 4;
  atomic_init(&t->count, 0);
  for (size_t i = 0; i < size; i++) atomic_init(&t->slots[i], NULL);
  if (pthread_mutex_init(&t->lock, NULL) != 0) {
    free(t);
    return sf_fail(SF_EINTERNAL, "kernel table: pthread_mutex_init failed");
  }
  *table = t;
  return SF_OK;
}

void sf_kernel_table_destroy(sf_kernel_table *table, sf_kernel_release_fn release, void *user) {
  if (!table) return;
  for (size_t i = 0; i <= table->mask; i++) {
    entry *e = atomic_load_explicit(&table->slots[i], memory_order_acquire);
    if (!e) continue;
    if (release) release(user, &e->kernel);
    free(e);
  }
  pthread_mutex_destroy(&table->lock);
  free(table);
}

static entry *find_entry(const sf_kernel_table *t, uint64_t hash, CUcontext context,
                         const uint8_t *key, const char *name) {
  /* Linear probing; entries are never removed, so an empty slot ends the search. The
   * acquire load pairs with the release store of the inserter: a non-NULL entry is seen
   * fully written. */
  for (size_t i = hash & t->mask;; i = (i + 1) & t->mask) {
    entry *e = atomic_load_explicit((_Atomic(entry *) *)&t->slots[i], memory_order_acquire);
    if (!e) return NULL;
    if (same_kernel(e, hash, context, key, name)) return e;
  }
}

const sf_kernel *sf_kernel_table_find(const sf_kernel_table *table, CUcontext context,
                                      const uint8_t key[SF_KERNEL_KEY_BYTES], const char *name) {
  if (!table || !key || !name) return NULL;
  entry *e = find_entry(table, hash_kernel(context, key, name), context, key, name);
  return e ? &e->kernel : NULL;
}

/* Builds and publishes a new entry; the caller holds the lock and saw no entry. */
static sf_status add_entry(sf_kernel_table *t, uint64_t hash, CUcontext context,
                           const uint8_t *key, const char *name, sf_kernel_build_fn build,
                           void *user, entry **out) {
  size_t count = atomic_load_explicit(&t->count, memory_order_relaxed);
  if (count >= t->limit)
    return sf_fail(SF_ERESOURCE, "kernel table full: %zu kernels loaded (table of %zu slots)",
                   count, t->mask + 1);
  size_t name_len = strlen(name);
  entry *e = calloc(1, sizeof *e + name_len + 1);
  if (!e) return sf_fail(SF_ENOMEM, "kernel table entry for %s: out of memory", name);
  memcpy(e->name, name, name_len + 1);
  e->hash = hash;
  sf_kernel *k = &e->kernel;
  k->context = context;
  memcpy(k->key, key, SF_KERNEL_KEY_BYTES);
  k->name = e->name;
  sf_status status = build(user, k);
  if (status != SF_OK) {
    free(e);
    return status;
  }
  /* The identity is the table's, whatever the builder wrote. */
  k->context = context;
  memcpy(k->key, key, SF_KERNEL_KEY_BYTES);
  k->name = e->name;

  size_t i = hash & t->mask;
  while (atomic_load_explicit(&t->slots[i], memory_order_relaxed)) i = (i + 1) & t->mask;
  atomic_store_explicit(&t->slots[i], e, memory_order_release);
  atomic_store_explicit(&t->count, count + 1, memory_order_relaxed);
  *out = e;
  return SF_OK;
}

sf_status sf_kernel_table_get_or_add(sf_kernel_table *table, CUcontext context,
                                     const uint8_t key[SF_KERNEL_KEY_BYTES], const char *name,
                                     sf_kernel_build_fn build, void *user,
                                     const sf_kernel **kernel) {
  if (!kernel) return sf_fail(SF_EINVAL, "sf_kernel_table_get_or_add: kernel is NULL");
  *kernel = NULL;
  if (!table || !key || !name || !build)
    return sf_fail(SF_EINVAL, "sf_kernel_table_get_or_add: %s is NULL",
                   !table ? "table" : !key ? "key" : !name ? "name" : "build");
  if (!name[0]) return sf_fail(SF_EINVAL, "sf_kernel_table_get_or_add: empty kernel name");
  uint64_t hash = hash_kernel(context, key, name);
  entry *e = find_entry(table, hash, context, key, name);
  if (e) {
    *kernel = &e->kernel;
    return SF_OK;
  }
  pthread_mutex_lock(&table->lock);
  /* Look again under the lock: another thread may have built it while we waited. */
  e = find_entry(table, hash, context, key, name);
  sf_status status = e ? SF_OK : add_entry(table, hash, context, key, name, build, user, &e);
  pthread_mutex_unlock(&table->lock);
  if (status == SF_OK) *kernel = &e->kernel;
  return status;
}

size_t sf_kernel_table_count(const sf_kernel_table *table) {
  return table ? atomic_load_explicit(&((sf_kernel_table *)table)->count, memory_order_relaxed) : 0;
}
