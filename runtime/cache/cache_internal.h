/* cache_internal.h: the cache object, shared by cache.c (lookups) and cache_disk.c. */
#ifndef SCANFORGE_CACHE_INTERNAL_H
#define SCANFORGE_CACHE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "runtime/cache/cache.h"
#include "runtime/cache/cache_dir.h"
#include "runtime/cache/cache_layers.h"

enum { SF_CACHE_WARNINGS_MAX = 16 };

/* One key held in this process: building (another thread waits) or ready. */
typedef struct sf_mem_entry {
  struct sf_mem_entry *next;
  sf_cache_key key;
  char *subdir;
  void *data;
  size_t size;
  bool ready;
} sf_mem_entry;

struct sf_cache {
  char *root;           /* the resolved directory, NULL when none could be found */
  char *store;          /* <root>/v1: the layout version this code reads and writes */
  uint64_t max_bytes;
  sf_cache_policy policy; /* trust rule and the modes of what it creates */
  bool no_disk;           /* asked for memory only: read-only layers are not read either */
  atomic_bool memory_only;
  sf_cache_layers layers; /* read-only, searched before <store> */
  atomic_uint_least64_t last_stamp;

  /* Warnings, each text once, in order; a slot is set before the count covers it. */
  pthread_mutex_t warning_lock;
  char *warnings[SF_CACHE_WARNINGS_MAX];
  atomic_size_t warning_count;

  pthread_mutex_t mutex; /* guards the table below */
  pthread_cond_t changed; /* an entry became ready or was dropped */
  sf_mem_entry **buckets;
  size_t bucket_count, entry_count;
  uint64_t memory_bytes;
};

/* Stops using the disk and adds `why` to the warnings. */
void sf_cache_degrade(sf_cache *cache, const char *why);
/* Adds a warning for the user unless the same text was given before. */
void sf_cache_warn(sf_cache *cache, const char *text);
/* A recency stamp: ns since the epoch, strictly increasing within the process. */
uint64_t sf_cache_next_stamp(sf_cache *cache);
/* Brings the disk under the budget after a publish; failures are ignored. */
void sf_cache_evict(sf_cache *cache);

#endif
