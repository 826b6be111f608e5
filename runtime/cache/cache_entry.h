/* cache_entry.h: one cache entry's files: the checked binary and its manifest. */
#ifndef SCANFORGE_CACHE_ENTRY_H
#define SCANFORGE_CACHE_ENTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "runtime/cache/cache.h"

/* <keyhex>.bin starts with a 64-byte header, all numbers little-endian:
 *   0  magic "SFCACHE\1"        8
 *   8  header size (64), u32    4   + 4 reserved
 *  16  payload size, u64        8
 *  24  key                     16
 *  40  XXH3-128 of the payload 16   (canonical byte order)
 *  56  last use, ns, u64        8   rewritten in place on disk hits
 * The checksum covers the payload; a damaged size or key shows as a mismatch with the
 * file's length or name, a damaged stamp only reorders eviction. */
enum { SF_ENTRY_HEADER_SIZE = 64, SF_ENTRY_STAMP_OFFSET = 56 };

typedef struct sf_entry_header {
  uint64_t size;
  sf_cache_key key;
  uint8_t checksum[16];
  uint64_t last_use_ns;
} sf_entry_header;

typedef enum sf_entry_state {
  SF_ENTRY_OK,
  SF_ENTRY_MISSING,
  SF_ENTRY_CORRUPT, /* unreadable, truncated, wrong key or checksum */
  SF_ENTRY_NOMEM
} sf_entry_state;

/* Reads the binary at bin_path and verifies it against `key` and its checksum. On
 * SF_ENTRY_OK *data is malloc'ed and, when stamp is nonzero, the entry's last use is
 * set to it; with stamp 0 the file is only opened for reading (a read-only layer). */
sf_entry_state sf_entry_load(const char *bin_path, const sf_cache_key *key, uint64_t stamp,
                             void **data, size_t *size);
/* Reads only the header (for listing and eviction); false when it is not well formed. */
bool sf_entry_read_header(const char *bin_path, sf_entry_header *out);

/* Writes <dir>/<hex>.json (the manifest, wrapping `inputs`) and then <dir>/<hex>.bin,
 * each through a temp file, fsync and rename, so a reader sees a whole entry or none.
 * Both get `mode` whatever the umask. The caller holds the key's lock: the temp names
 * are fixed per key. */
sf_status sf_entry_publish(const char *dir, const char *subdir, const sf_cache_key *key,
                           const void *data, size_t size, json_t *inputs, uint64_t stamp,
                           mode_t mode);

/* Test hook, not API: from now on entry files take only `after_bytes` more bytes in all,
 * then every write fails with errno `err` (ENOSPC: a disk that fills up). err 0 turns it
 * off. */
void sf_entry_inject_write_failure(int err, uint64_t after_bytes);

/* The names of an entry's files inside its directory. */
typedef enum sf_entry_file {
  SF_FILE_BIN, SF_FILE_JSON, SF_FILE_LOCK, SF_FILE_BIN_TMP, SF_FILE_JSON_TMP, SF_FILE_KIND_COUNT
} sf_entry_file;
/* Writes "<dir>/<hex><suffix>" into buf; false when it does not fit. */
bool sf_entry_path(char *buf, size_t cap, const char *dir, const char *hex, sf_entry_file kind);
/* The file kind a directory entry name belongs to, with its key's hex; false for other
 * names. */
bool sf_entry_parse_name(const char *name, char hex[33], sf_entry_file *kind);

#endif
