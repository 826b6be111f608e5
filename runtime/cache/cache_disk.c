/* cache_disk.c: the store as a whole: stat, list, prune (LRU by stamp), clear, eviction. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/cache/cache.h"
#include "runtime/cache/cache_entry.h"
#include "runtime/cache/cache_internal.h"
#include "runtime/cache/cache_lock.h"
#include "base/env.h"
#include "base/error.h"

enum { MANIFEST_READ_MAX = 1 << 20 };

/* Every file of one key in one subdir: an entry when its .bin is there, else leftovers
 * of a killed writer (temp files, a lock file, a lone manifest). */
typedef struct item {
  char subdir[NAME_MAX + 1];
  char hex[33];
  unsigned kinds; /* 1 << sf_entry_file for each file present */
  uint64_t bin_bytes, disk_bytes;
  sf_entry_header header;
  bool header_ok;
} item;

typedef struct scan {
  item *items;
  size_t count, cap;
} scan;

static bool has(const item *it, sf_entry_file kind) { return it->kinds & (1u << kind); }

static item *scan_slot(scan *s, const char *subdir, const char *hex) {
  /* Files of one key arrive together after the per-subdir sort: look at the last. */
  if (s->count && strcmp(s->items[s->count - 1].hex, hex) == 0 &&
      strcmp(s->items[s->count - 1].subdir, subdir) == 0)
    return &s->items[s->count - 1];
  if (s->count == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    item *grown = realloc(s->items, cap * sizeof *grown);
    if (!grown) return NULL;
    s->items = grown;
    s->cap = cap;
  }
  item *it = &s->items[s->count++];
  memset(it, 0, sizeof *it);
  snprintf(it->subdir, sizeof it->subdir, "%s", subdir);
  memcpy(it->hex, hex, 33);
  return it;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static sf_status scan_subdir(scan *s, const char *store, const char *subdir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", store, subdir);
  DIR *d = opendir(path);
  if (!d) return errno == ENOENT ? SF_OK : sf_fail(SF_ECACHE, "cannot read %s: %s", path, strerror(errno));
  char **names = NULL;
  size_t count = 0, cap = 0;
  sf_status status = SF_OK;
  for (struct dirent *de; (de = readdir(d));) {
    char hex[33];
    sf_entry_file kind;
    if (!sf_entry_parse_name(de->d_name, hex, &kind)) continue;
    if (count == cap) {
      cap = cap ? cap * 2 : 64;
      char **grown = realloc(names, cap * sizeof *grown);
      if (!grown) {
        status = sf_fail(SF_ENOMEM, "out of memory listing %s", path);
        break;
      }
      names = grown;
    }
    if (!(names[count] = strdup(de->d_name))) {
      status = sf_fail(SF_ENOMEM, "out of memory listing %s", path);
      break;
    }
    count++;
  }
  if (names) qsort(names, count, sizeof *names, by_name);
  for (size_t i = 0; i < count && status == SF_OK; i++) {
    char hex[33];
    sf_entry_file kind;
    sf_entry_parse_name(names[i], hex, &kind);
    struct stat st;
    if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) continue; /* just went */
    item *it = scan_slot(s, subdir, hex);
    if (!it) {
      status = sf_fail(SF_ENOMEM, "out of memory listing %s", path);
      break;
    }
    it->kinds |= 1u << kind;
    it->disk_bytes += (uint64_t)st.st_size;
    if (kind == SF_FILE_BIN) {
      it->bin_bytes = (uint64_t)st.st_size;
      char bin[sizeof path + NAME_MAX + 1];
      snprintf(bin, sizeof bin, "%s/%s", path, names[i]);
      it->header_ok = sf_entry_read_header(bin, &it->header);
    }
  }
  for (size_t i = 0; i < count; i++) free(names[i]);
  free(names);
  closedir(d);
  return status;
}

/* Reads every subdir of a store (<dir>/v1) into s (freed by the caller). */
static sf_status scan_store_at(const char *store, scan *s) {
  memset(s, 0, sizeof *s);
  DIR *d = opendir(store);
  if (!d) return sf_fail(SF_ECACHE, "cannot read %s: %s", store, strerror(errno));
  sf_status status = SF_OK;
  for (struct dirent *de; status == SF_OK && (de = readdir(d));) {
    struct stat st;
    if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISDIR(st.st_mode))
      continue;
    status = scan_subdir(s, store, de->d_name);
  }
  closedir(d);
  if (status != SF_OK) {
    free(s->items);
    s->items = NULL;
  }
  return status;
}

/* The writable cache's store. */
static sf_status scan_store(sf_cache *cache, scan *s) {
  memset(s, 0, sizeof *s);
  if (atomic_load(&cache->memory_only) || !cache->store)
    return sf_fail(SF_ECACHE, "the kernel cache is memory-only%s%s",
                   sf_cache_warning(cache) ? ": " : "",
                   sf_cache_warning(cache) ? sf_cache_warning(cache) : "");
  return scan_store_at(cache->store, s);
}

static uint64_t stamp_of(const item *it) { return it->header_ok ? it->header.last_use_ns : 0; }

/* Oldest first; leftovers (no .bin) before any entry. */
static int by_age(const void *a, const void *b) {
  const item *x = a, *y = b;
  bool xe = has(x, SF_FILE_BIN), ye = has(y, SF_FILE_BIN);
  if (xe != ye) return xe ? 1 : -1;
  uint64_t sx = stamp_of(x), sy = stamp_of(y);
  return sx < sy ? -1 : sx > sy;
}

static int by_recent(const void *a, const void *b) { return by_age(b, a); }

/* Deletes every file of the item under its key's lock; a key someone is building is
 * left alone, and so, unless `all`, are leftovers that became an entry since the scan. */
static void remove_item(sf_cache *cache, const item *it, bool all, sf_cache_removed *removed) {
  char dir[4096], path[4096], lock[4096];
  snprintf(dir, sizeof dir, "%s/%s", cache->store, it->subdir);
  if (!sf_entry_path(lock, sizeof lock, dir, it->hex, SF_FILE_LOCK)) return;
  int fd;
  sf_key_lock_result r = sf_key_lock_take(lock, false, cache->policy.lock_mode, &fd);
  if (r == SF_KEY_LOCK_BUSY) removed->busy++;
  if (r != SF_KEY_LOCK_HELD) return;
  if (!all && !has(it, SF_FILE_BIN) && sf_entry_path(path, sizeof path, dir, it->hex, SF_FILE_BIN) &&
      access(path, F_OK) == 0) {
    sf_key_lock_drop(lock, fd);
    return;
  }
  /* The .bin first: without it the entry is gone even if we stop half-way. */
  static const sf_entry_file order[] = {SF_FILE_BIN, SF_FILE_JSON, SF_FILE_BIN_TMP,
                                        SF_FILE_JSON_TMP};
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
    if (sf_entry_path(path, sizeof path, dir, it->hex, order[i])) unlink(path);
  sf_key_lock_drop(lock, fd);
  if (has(it, SF_FILE_BIN)) removed->entries++;
  removed->bytes += it->disk_bytes;
}

static uint64_t total_bytes(const scan *s) {
  uint64_t total = 0;
  for (size_t i = 0; i < s->count; i++) total += s->items[i].disk_bytes;
  return total;
}

sf_status sf_cache_stat(sf_cache *cache, sf_cache_stats *out) {
  if (!cache || !out) return sf_fail(SF_EINVAL, "sf_cache_stat: cache and out must not be NULL");
  memset(out, 0, sizeof *out);
  out->dir = cache->root;
  out->max_bytes = cache->max_bytes;
  pthread_mutex_lock(&cache->mutex);
  out->memory_entries = cache->entry_count;
  out->memory_bytes = cache->memory_bytes;
  pthread_mutex_unlock(&cache->mutex);
  out->memory_only = atomic_load(&cache->memory_only);
  if (out->memory_only) return SF_OK;
  scan s;
  sf_status status = scan_store(cache, &s);
  if (status != SF_OK) return status;
  for (size_t i = 0; i < s.count; i++)
    if (has(&s.items[i], SF_FILE_BIN)) out->entries++;
  out->bytes = total_bytes(&s);
  free(s.items);
  return SF_OK;
}

/* The manifest's text, or NULL. */
static char *read_manifest(const char *store, const item *it) {
  char dir[4096], path[4096];
  snprintf(dir, sizeof dir, "%s/%s", store, it->subdir);
  if (!sf_entry_path(path, sizeof path, dir, it->hex, SF_FILE_JSON)) return NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return NULL;
  char *text = malloc(MANIFEST_READ_MAX + 1);
  size_t n = 0;
  ssize_t got = 0;
  while (text && n < MANIFEST_READ_MAX && (got = read(fd, text + n, MANIFEST_READ_MAX - n)) > 0)
    n += (size_t)got;
  close(fd);
  if (text && got < 0) {
    free(text);
    return NULL;
  }
  if (text) text[n] = '\0';
  return text;
}

/* Calls fn for each entry of a scanned store, most recent first; frees the scan. */
static void list_scanned(const char *store, scan s, sf_cache_list_fn fn, void *user) {
  if (s.count > 1) qsort(s.items, s.count, sizeof *s.items, by_recent); /* items is NULL when empty */
  for (size_t i = 0; i < s.count; i++) {
    const item *it = &s.items[i];
    if (!has(it, SF_FILE_BIN)) continue;
    char *manifest = read_manifest(store, it);
    sf_cache_entry e = {
        .subdir = it->subdir,
        .key_hex = it->hex,
        .size = it->bin_bytes >= SF_ENTRY_HEADER_SIZE ? it->bin_bytes - SF_ENTRY_HEADER_SIZE : 0,
        .disk_bytes = it->disk_bytes,
        .last_use_ns = stamp_of(it),
        .manifest = manifest,
        .header_ok = it->header_ok,
    };
    int stop = fn(user, &e);
    free(manifest);
    if (stop) break;
  }
  free(s.items);
}

sf_status sf_cache_list(sf_cache *cache, sf_cache_list_fn fn, void *user) {
  if (!cache || !fn) return sf_fail(SF_EINVAL, "sf_cache_list: cache and fn must not be NULL");
  scan s;
  sf_status status = scan_store(cache, &s);
  if (status != SF_OK) return status;
  list_scanned(cache->store, s, fn, user);
  return SF_OK;
}

/* ---- read-only layers: looked at, never changed ------------------------------------ */

size_t sf_cache_layer_count(const sf_cache *cache) { return cache ? cache->layers.count : 0; }

sf_status sf_cache_layer_info_of(const sf_cache *cache, size_t index, sf_cache_layer_info *out) {
  if (!cache || !out) return sf_fail(SF_EINVAL, "sf_cache_layer_info_of: cache and out must not be NULL");
  if (index >= cache->layers.count)
    return sf_fail(SF_EINVAL, "layer index: expected 0..%zu, got %zu",
                   cache->layers.count ? cache->layers.count - 1 : 0, index);
  out->dir = cache->layers.items[index].root;
  out->skipped = cache->layers.items[index].skipped;
  return SF_OK;
}

/* Scans a searched layer's store. */
static sf_status scan_layer(sf_cache *cache, size_t index, scan *s) {
  memset(s, 0, sizeof *s);
  sf_cache_layer_info info = {0};
  sf_status status = sf_cache_layer_info_of(cache, index, &info);
  if (status != SF_OK) return status;
  if (info.skipped) return sf_fail(SF_ECACHE, "%s", info.skipped);
  return scan_store_at(cache->layers.items[index].store, s);
}

sf_status sf_cache_layer_stat(sf_cache *cache, size_t index, sf_cache_stats *out) {
  if (!out) return sf_fail(SF_EINVAL, "sf_cache_layer_stat: out must not be NULL");
  memset(out, 0, sizeof *out);
  scan s;
  sf_status status = scan_layer(cache, index, &s);
  if (status != SF_OK) return status;
  out->dir = cache->layers.items[index].root;
  for (size_t i = 0; i < s.count; i++)
    if (has(&s.items[i], SF_FILE_BIN)) out->entries++;
  out->bytes = total_bytes(&s);
  free(s.items);
  return SF_OK;
}

sf_status sf_cache_layer_list(sf_cache *cache, size_t index, sf_cache_list_fn fn, void *user) {
  if (!fn) return sf_fail(SF_EINVAL, "sf_cache_layer_list: fn must not be NULL");
  scan s;
  sf_status status = scan_layer(cache, index, &s);
  if (status != SF_OK) return status;
  list_scanned(cache->layers.items[index].store, s, fn, user);
  return SF_OK;
}

sf_status sf_cache_prune(sf_cache *cache, uint64_t max_bytes, sf_cache_removed *out) {
  sf_cache_removed removed = {0};
  if (out) *out = removed;
  if (!cache) return sf_fail(SF_EINVAL, "sf_cache_prune: cache must not be NULL");
  scan s;
  sf_status status = scan_store(cache, &s);
  if (status != SF_OK) return status;
  if (s.count > 1) qsort(s.items, s.count, sizeof *s.items, by_age);
  uint64_t total = total_bytes(&s);
  for (size_t i = 0; i < s.count; i++) {
    const item *it = &s.items[i];
    /* Leftovers of killed writers always go; entries only while over the budget. */
    if (has(it, SF_FILE_BIN) && total <= max_bytes) break;
    sf_cache_removed before = removed;
    remove_item(cache, it, false, &removed);
    if (removed.bytes != before.bytes) total -= it->disk_bytes;
  }
  free(s.items);
  if (out) *out = removed;
  return SF_OK;
}

sf_status sf_cache_clear(sf_cache *cache, sf_cache_removed *out) {
  sf_cache_removed removed = {0};
  if (out) *out = removed;
  if (!cache) return sf_fail(SF_EINVAL, "sf_cache_clear: cache must not be NULL");
  scan s;
  sf_status status = scan_store(cache, &s);
  if (status != SF_OK) return status;
  for (size_t i = 0; i < s.count; i++) remove_item(cache, &s.items[i], true, &removed);
  free(s.items);
  if (out) *out = removed;
  return SF_OK;
}

void sf_cache_evict(sf_cache *cache) {
  scan s;
  if (scan_store(cache, &s) != SF_OK) return;
  uint64_t total = total_bytes(&s);
  free(s.items);
  if (total > cache->max_bytes) sf_cache_prune(cache, cache->max_bytes, NULL);
}

sf_status sf_cache_parse_bytes(const char *text, uint64_t *out) {
  if (sf_env_parse_bytes(text, out)) return SF_OK;
  return sf_fail(SF_EINVAL, "expected a byte count such as 1048576, 512K, 64M or 1G, got \"%s\"",
                 text ? text : "(null)");
}
