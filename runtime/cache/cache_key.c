/* cache_key.c: cache keys (XXH3-128 over named inputs) and the manifest describing them. */
#include "runtime/cache/cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

/* Part of every key: a change to the entry format or the key's layout orphans old keys. */
static const char key_format[] = "scanforge-cache-v1";

static void hash_sized(XXH3_state_t *st, const void *data, size_t size) {
  uint8_t len[8];
  for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)size >> (8 * i));
  XXH3_128bits_update(st, len, sizeof len);
  if (size) XXH3_128bits_update(st, data, size);
}

sf_cache_key sf_cache_key_of(const sf_cache_input *inputs, size_t count) {
  XXH3_state_t st;
  XXH3_INITSTATE(&st);
  XXH3_128bits_reset(&st);
  hash_sized(&st, key_format, sizeof key_format - 1);
  for (size_t i = 0; i < count; i++) {
    const char *name = inputs[i].name ? inputs[i].name : "";
    hash_sized(&st, name, strlen(name));
    hash_sized(&st, inputs[i].data, inputs[i].size);
  }
  XXH128_canonical_t canon;
  XXH128_canonicalFromHash(&canon, XXH3_128bits_digest(&st));
  sf_cache_key key;
  memcpy(key.bytes, canon.digest, sizeof key.bytes);
  return key;
}

void sf_cache_key_hex(const sf_cache_key *key, char out[33]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 16; i++) {
    out[2 * i] = digits[key->bytes[i] >> 4];
    out[2 * i + 1] = digits[key->bytes[i] & 15];
  }
  out[32] = '\0';
}

/* Short printable text reads best as itself; anything else by size and hash. */
static bool readable(const sf_cache_input *in) {
  if (in->size > 200) return false;
  const unsigned char *p = in->data;
  for (size_t i = 0; i < in->size; i++)
    if (p[i] < 0x20 || p[i] > 0x7e) return false;
  return true;
}

static json_t *describe(const sf_cache_input *in) {
  if (readable(in)) return json_stringn(in->size ? in->data : "", in->size);
  XXH128_canonical_t canon;
  XXH128_canonicalFromHash(&canon, XXH3_128bits(in->data, in->size));
  sf_cache_key digest;
  memcpy(digest.bytes, canon.digest, sizeof digest.bytes);
  char hex[33];
  sf_cache_key_hex(&digest, hex);
  return json_pack("{sI ss}", "size", (json_int_t)in->size, "xxh3", hex);
}

char *sf_cache_manifest_of(const sf_cache_input *inputs, size_t count) {
  json_t *obj = json_object();
  if (!obj) return NULL;
  bool ok = true;
  for (size_t i = 0; i < count && ok; i++)
    ok = json_object_set_new(obj, inputs[i].name ? inputs[i].name : "", describe(&inputs[i])) == 0;
  char *text = ok ? json_dumps(obj, JSON_COMPACT) : NULL;
  json_decref(obj);
  return text;
}
