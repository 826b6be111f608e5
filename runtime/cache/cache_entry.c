/* cache_entry.c: reading, verifying and atomically publishing one cache entry's files. */
#include "runtime/cache/cache_entry.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "base/error.h"

static const char entry_magic[8] = {'S', 'F', 'C', 'A', 'C', 'H', 'E', 1};

static const char *const file_suffix[SF_FILE_KIND_COUNT] = {
    [SF_FILE_BIN] = ".bin",
    [SF_FILE_JSON] = ".json",
    [SF_FILE_LOCK] = ".lock",
    [SF_FILE_BIN_TMP] = ".bin.tmp",
    [SF_FILE_JSON_TMP] = ".json.tmp",
};

bool sf_entry_path(char *buf, size_t cap, const char *dir, const char *hex, sf_entry_file kind) {
  int n = snprintf(buf, cap, "%s/%s%s", dir, hex, file_suffix[kind]);
  return n >= 0 && (size_t)n < cap;
}

bool sf_entry_parse_name(const char *name, char hex[33], sf_entry_file *kind) {
  for (int i = 0; i < 32; i++) {
    char ch = name[i];
    if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) return false;
  }
  for (int k = 0; k < SF_FILE_KIND_COUNT; k++) {
    if (strcmp(name + 32, file_suffix[k]) == 0) {
      memcpy(hex, name, 32);
      hex[32] = '\0';
      *kind = (sf_entry_file)k;
      return true;
    }
  }
  return false;
}

static void put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static void checksum_of(const void *data, size_t size, uint8_t out[16]) {
  XXH128_canonical_t canon;
  XXH128_canonicalFromHash(&canon, XXH3_128bits(data, size));
  memcpy(out, canon.digest, 16);
}

static void encode_header(const sf_entry_header *h, uint8_t out[SF_ENTRY_HEADER_SIZE]) {
  memset(out, 0, SF_ENTRY_HEADER_SIZE);
  memcpy(out, entry_magic, 8);
  out[8] = SF_ENTRY_HEADER_SIZE;
  put_u64(out + 16, h->size);
  memcpy(out + 24, h->key.bytes, 16);
  memcpy(out + 40, h->checksum, 16);
  put_u64(out + SF_ENTRY_STAMP_OFFSET, h->last_use_ns);
}

static bool decode_header(const uint8_t in[SF_ENTRY_HEADER_SIZE], sf_entry_header *h) {
  if (memcmp(in, entry_magic, 8) != 0) return false;
  if (in[8] != SF_ENTRY_HEADER_SIZE || in[9] || in[10] || in[11]) return false;
  h->size = get_u64(in + 16);
  memcpy(h->key.bytes, in + 24, 16);
  memcpy(h->checksum, in + 40, 16);
  h->last_use_ns = get_u64(in + SF_ENTRY_STAMP_OFFSET);
  return true;
}

/* Reads exactly n bytes at offset; false on a short read or an error. */
static bool read_exact(int fd, void *buf, size_t n, off_t offset) {
  uint8_t *p = buf;
  while (n > 0) {
    ssize_t got = pread(fd, p, n, offset);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= (size_t)got;
    offset += got;
  }
  return true;
}

/* The test hook's state: bytes entry writes may still put before failing with
 * injected_errno (0: no failure injected). */
static atomic_int injected_errno;
static atomic_uint_least64_t injected_budget;

void sf_entry_inject_write_failure(int err, uint64_t after_bytes) {
  atomic_store(&injected_budget, after_bytes);
  atomic_store(&injected_errno, err);
}

/* How much of n bytes may be written now; 0 with errno set once the injected budget is spent. */
static size_t write_allowance(size_t n) {
  const int err = atomic_load(&injected_errno);
  if (!err) return n;
  uint64_t budget = atomic_load(&injected_budget);
  if (budget == 0) {
    errno = err;
    return 0;
  }
  const size_t allowed = budget < n ? (size_t)budget : n;
  atomic_fetch_sub(&injected_budget, allowed);
  return allowed;
}

static bool write_all(int fd, const void *buf, size_t n) {
  const uint8_t *p = buf;
  while (n > 0) {
    const size_t allowed = write_allowance(n);
    if (allowed == 0) return false;
    ssize_t put = write(fd, p, allowed);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    p += put;
    n -= (size_t)put;
  }
  return true;
}

bool sf_entry_read_header(const char *bin_path, sf_entry_header *out) {
  int fd = open(bin_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  uint8_t raw[SF_ENTRY_HEADER_SIZE];
  bool ok = read_exact(fd, raw, sizeof raw, 0) && decode_header(raw, out);
  close(fd);
  return ok;
}

sf_entry_state sf_entry_load(const char *bin_path, const sf_cache_key *key, uint64_t stamp,
                             void **data, size_t *size) {
  /* Read-write so that the hit can refresh the recency stamp; read-only will do. */
  int fd = stamp ? open(bin_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW) : -1;
  bool writable = fd >= 0;
  if (fd < 0 && (!stamp || errno != ENOENT)) fd = open(bin_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return errno == ENOENT ? SF_ENTRY_MISSING : SF_ENTRY_CORRUPT;

  sf_entry_state state = SF_ENTRY_CORRUPT;
  uint8_t raw[SF_ENTRY_HEADER_SIZE];
  sf_entry_header h;
  struct stat st;
  void *buf = NULL;
  if (fstat(fd, &st) != 0 || !read_exact(fd, raw, sizeof raw, 0) || !decode_header(raw, &h))
    goto done;
  if (memcmp(h.key.bytes, key->bytes, 16) != 0) goto done;
  if ((uint64_t)st.st_size < SF_ENTRY_HEADER_SIZE ||
      (uint64_t)st.st_size - SF_ENTRY_HEADER_SIZE != h.size || h.size > SIZE_MAX - 1)
    goto done;
  buf = malloc(h.size ? (size_t)h.size : 1);
  if (!buf) {
    state = SF_ENTRY_NOMEM;
    goto done;
  }
  if (!read_exact(fd, buf, (size_t)h.size, SF_ENTRY_HEADER_SIZE)) goto done;
  uint8_t sum[16];
  checksum_of(buf, (size_t)h.size, sum);
  if (memcmp(sum, h.checksum, 16) != 0) goto done;

  if (stamp && writable) {
    /* Best effort: a lost stamp only makes the entry look older to eviction. */
    uint8_t le[8];
    put_u64(le, stamp);
    (void)!pwrite(fd, le, sizeof le, SF_ENTRY_STAMP_OFFSET);
  }
  *data = buf;
  *size = (size_t)h.size;
  buf = NULL;
  state = SF_ENTRY_OK;
done:
  free(buf);
  close(fd);
  return state;
}

/* Writes the parts to tmp_path, flushes them to the disk and renames over path. */
static sf_status write_atomically(const char *tmp_path, const char *path, const void *a,
                                  size_t a_size, const void *b, size_t b_size, mode_t mode) {
  int fd = open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return sf_fail(SF_EIO, "cannot create %s: %s", tmp_path, strerror(errno));
  bool ok = fchmod(fd, mode) == 0 && write_all(fd, a, a_size) && write_all(fd, b, b_size) &&
            fsync(fd) == 0;
  int err = errno;
  if (close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && rename(tmp_path, path) == 0) return SF_OK;
  if (ok) err = errno;
  unlink(tmp_path);
  return sf_fail(SF_EIO, "cannot write %s: %s", path, strerror(err));
}

/* The manifest: what the cache knows of the entry, then the caller's inputs. */
static char *manifest_text(const char *subdir, const sf_cache_key *key, size_t size,
                           const uint8_t sum[16], json_t *inputs) {
  char key_hex[33], sum_hex[33], created[32];
  sf_cache_key sum_key;
  memcpy(sum_key.bytes, sum, 16);
  sf_cache_key_hex(key, key_hex);
  sf_cache_key_hex(&sum_key, sum_hex);
  time_t now = time(NULL);
  struct tm utc;
  gmtime_r(&now, &utc);
  strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &utc);

  json_t *m = json_object();
  if (!m) return NULL;
  json_object_set_new(m, "format", json_integer(1));
  json_object_set_new(m, "key", json_string(key_hex));
  json_object_set_new(m, "subdir", json_string(subdir));
  json_object_set_new(m, "size", json_integer((json_int_t)size));
  json_object_set_new(m, "xxh3", json_string(sum_hex));
  json_object_set_new(m, "created", json_string(created));
  json_object_set(m, "inputs", inputs);
  char *text = json_object_size(m) == 7 ? json_dumps(m, JSON_INDENT(2)) : NULL;
  json_decref(m);
  return text;
}

static sf_status sync_directory(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return sf_fail(SF_EIO, "cannot open %s: %s", dir, strerror(errno));
  int rc = fsync(fd);
  int err = errno;
  close(fd);
  return rc == 0 ? SF_OK : sf_fail(SF_EIO, "cannot sync %s: %s", dir, strerror(err));
}

sf_status sf_entry_publish(const char *dir, const char *subdir, const sf_cache_key *key,
                           const void *data, size_t size, json_t *inputs, uint64_t stamp,
                           mode_t mode) {
  char hex[33];
  sf_cache_key_hex(key, hex);
  char bin[4096], bin_tmp[4096], json[4096], json_tmp[4096];
  if (!sf_entry_path(bin, sizeof bin, dir, hex, SF_FILE_BIN) ||
      !sf_entry_path(bin_tmp, sizeof bin_tmp, dir, hex, SF_FILE_BIN_TMP) ||
      !sf_entry_path(json, sizeof json, dir, hex, SF_FILE_JSON) ||
      !sf_entry_path(json_tmp, sizeof json_tmp, dir, hex, SF_FILE_JSON_TMP))
    return sf_fail(SF_ECACHE, "cache path too long: %s", dir);

  sf_entry_header h = {.size = size, .key = *key, .last_use_ns = stamp};
  checksum_of(data, size, h.checksum);
  uint8_t raw[SF_ENTRY_HEADER_SIZE];
  encode_header(&h, raw);

  char *text = manifest_text(subdir, key, size, h.checksum, inputs);
  if (!text) return sf_fail(SF_ENOMEM, "out of memory writing the cache manifest");
  /* The manifest goes first: the .bin's arrival is what makes the entry visible. */
  sf_status status = write_atomically(json_tmp, json, text, strlen(text), "\n", 1, mode);
  free(text);
  if (status == SF_OK) {
    status = write_atomically(bin_tmp, bin, raw, sizeof raw, data, size, mode);
    if (status != SF_OK) unlink(json); /* no manifest without its binary (a full disk) */
  }
  if (status == SF_OK) status = sync_directory(dir);
  return status;
}
