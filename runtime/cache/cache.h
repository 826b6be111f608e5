/* cache.h: the kernel cache: key -> binary bytes, in memory and on disk, built once. */
#ifndef SCANFORGE_CACHE_H
#define SCANFORGE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scanforge/scanforge.h"

/* The store knows nothing of what it holds: the caller hashes everything that changes
 * the bytes into a key and passes a callback that builds them on a miss.
 *
 * Disk layout: <dir>/v1/<subdir>/<keyhex>.bin   header (checksum, recency stamp) + bytes
 *                              /<keyhex>.json  manifest: the key's inputs, readable
 *                              /<keyhex>.lock  per-key build lock (flock)
 * Thread-safe: one cache may be used from many threads. */
typedef struct sf_cache sf_cache;

/* ---- keys ----------------------------------------------------------------------- */

typedef struct sf_cache_key {
  uint8_t bytes[16]; /* XXH3-128 */
} sf_cache_key;

/* One named input of a key: the generated source, an option string, the arch, ... */
typedef struct sf_cache_input {
  const char *name;
  const void *data;
  size_t size;
} sf_cache_input;

/* Hashes the inputs in order, names and sizes included (so "ab"+"c" and "a"+"bc"
 * differ), together with the cache format version. */
sf_cache_key sf_cache_key_of(const sf_cache_input *inputs, size_t count);
/* 32 lowercase hex digits and a NUL. */
void sf_cache_key_hex(const sf_cache_key *key, char out[33]);
/* A manifest for sf_cache_get_or_build describing the same inputs: a JSON object with
 * short printable inputs as strings and the others as {"size": n, "xxh3": "hex"}.
 * Returns a new string (free() it) or NULL when out of memory. */
char *sf_cache_manifest_of(const sf_cache_input *inputs, size_t count);

/* ---- opening ---------------------------------------------------------------------- */

typedef struct sf_cache_options {
  /* The writable cache. NULL: $SCANFORGE_CACHE_DIR, else $XDG_CACHE_HOME/scanforge,
   * else ~/.cache/scanforge */
  const char *dir;
  /* Read-only layers searched, in order, before `dir`: a colon-separated list of
   * directories. NULL: $SCANFORGE_CACHE_PATH; "": none. */
  const char *read_only_path;
  bool memory_only;   /* never touch the disk (read-only layers included) */
  bool shared;        /* `dir` is a layer others will read (cache warm --into): new
                         directories 0755 and files 0644 instead of 0700 and 0600 */
  uint64_t max_bytes; /* disk budget; 0: $SCANFORGE_CACHE_MAX_BYTES, else 1 GiB */
} sf_cache_options;

/* Opens the cache (opt may be NULL for the defaults). Directories are trusted when
 * owned by this user or by root and writable by no one else (group-writable too with
 * $SCANFORGE_CACHE_TRUST_GROUP=1). A writable directory that cannot be created or
 * written, or is not trusted, is not an error: the cache runs memory-only (still reading
 * the read-only layers) and says why in its warnings; an untrusted or missing read-only
 * layer is skipped with a warning. Fails only with SF_ENOMEM. */
sf_status sf_cache_open(const sf_cache_options *opt, sf_cache **out);
/* Frees the cache and every buffer it handed out. NULL is a no-op. */
void sf_cache_close(sf_cache *cache);
/* The first warning for the user (why the cache went memory-only, a skipped layer, ...),
 * or NULL. The library never prints; the caller shows each warning once. */
const char *sf_cache_warning(const sf_cache *cache);
/* Every warning so far, oldest first: each text once, valid until sf_cache_close. New
 * ones may come later (a disk that fails while writing, a damaged layer entry). */
size_t sf_cache_warning_count(const sf_cache *cache);
const char *sf_cache_warning_at(const sf_cache *cache, size_t index);

/* ---- getting a binary ------------------------------------------------------------- */

/* Builds the bytes of a missing entry into a malloc'ed buffer that the cache then owns.
 * A failure's status and message are returned unchanged by sf_cache_get_or_build. */
typedef sf_status (*sf_cache_build_fn)(void *user, void **data, size_t *size);

typedef enum sf_cache_source {
  SF_CACHE_FROM_MEMORY = 0, /* this process had it: no file was touched */
  SF_CACHE_FROM_DISK = 1,   /* read from disk (a read-only layer or the writable cache),
                               checksum verified */
  SF_CACHE_BUILT = 2        /* the callback ran (and the result was published) */
} sf_cache_source;

const char *sf_cache_source_name(sf_cache_source source);

/* Returns the bytes of `key`: from memory, else from <subdir> of the first read-only
 * layer that has it, else from <subdir> of the writable cache (each verified), else
 * from `build`, which then runs once across all threads and processes sharing the
 * directory. `subdir` is a plain name such as "sm_90"; `manifest_json` is a JSON object
 * (see sf_cache_manifest_of) stored beside the entry. *data stays valid until
 * sf_cache_close. A corrupt disk entry is removed and rebuilt; a disk that fails while
 * writing sends the cache memory-only with a warning: neither is an error. `where` may
 * be NULL. */
sf_status sf_cache_get_or_build(sf_cache *cache, const sf_cache_key *key, const char *subdir,
                                const char *manifest_json, sf_cache_build_fn build, void *user,
                                const void **data, size_t *size, sf_cache_source *where);

/* ---- looking after the disk ------------------------------------------------------ */

typedef struct sf_cache_stats {
  const char *dir;          /* the resolved root directory (owned by the cache) */
  bool memory_only;         /* asked for, or degraded to (see sf_cache_warning) */
  uint64_t entries, bytes;  /* on disk: entries and their bytes, manifests included */
  uint64_t max_bytes;       /* the disk budget */
  uint64_t memory_entries, memory_bytes; /* held by this process */
} sf_cache_stats;

sf_status sf_cache_stat(sf_cache *cache, sf_cache_stats *out);

typedef struct sf_cache_entry {
  const char *subdir;   /* "sm_90" */
  const char *key_hex;
  uint64_t size;        /* bytes of the binary */
  uint64_t disk_bytes;  /* binary file + manifest */
  uint64_t last_use_ns; /* recency stamp: ns since the epoch of the last publish or disk hit */
  const char *manifest; /* the manifest's text, or NULL when missing or unreadable */
  bool header_ok;       /* the header is well formed (the payload is checked on load) */
} sf_cache_entry;

/* Calls fn for every disk entry, most recently used first; a nonzero return stops. */
typedef int (*sf_cache_list_fn)(void *user, const sf_cache_entry *entry);
sf_status sf_cache_list(sf_cache *cache, sf_cache_list_fn fn, void *user);

typedef struct sf_cache_removed {
  uint64_t entries, bytes; /* removed */
  uint64_t busy;           /* skipped: being built by someone right now */
} sf_cache_removed;

/* ---- read-only layers ------------------------------------------------------------
 * stat, list, prune and clear above work on the writable cache; read-only layers are
 * only looked at, through these. */

typedef struct sf_cache_layer_info {
  const char *dir;     /* as listed in $SCANFORGE_CACHE_PATH (owned by the cache) */
  const char *skipped; /* NULL: searched; else the warning saying why not */
} sf_cache_layer_info;

/* How many read-only layers were listed (skipped ones included), in search order. */
size_t sf_cache_layer_count(const sf_cache *cache);
sf_status sf_cache_layer_info_of(const sf_cache *cache, size_t index, sf_cache_layer_info *out);
/* The entries and bytes of layer `index` (dir, entries, bytes; the rest zero). SF_ECACHE
 * for a skipped layer. */
sf_status sf_cache_layer_stat(sf_cache *cache, size_t index, sf_cache_stats *out);
/* Its entries, as sf_cache_list; nothing is written (no stamp is refreshed). */
sf_status sf_cache_layer_list(sf_cache *cache, size_t index, sf_cache_list_fn fn, void *user);

/* Removes least recently used entries until the disk holds at most max_bytes. `out`
 * may be NULL. */
sf_status sf_cache_prune(sf_cache *cache, uint64_t max_bytes, sf_cache_removed *out);
/* Removes every disk entry, leftovers of killed writers included. The entries this
 * process holds in memory stay valid. */
sf_status sf_cache_clear(sf_cache *cache, sf_cache_removed *out);

/* Parses a byte count: "1048576", "512K", "64M", "1G", "2GiB" (binary units).
 * SF_EINVAL names the text when it is not one. */
sf_status sf_cache_parse_bytes(const char *text, uint64_t *out);

#endif
