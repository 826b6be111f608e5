/* cache_layers.c: read-only cache layers: parsing $SCANFORGE_CACHE_PATH, vetting each
 * directory with the trust rule, and looking keys up in them without writing. */
#include "runtime/cache/cache_layers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cache/cache_dir.h"
#include "runtime/cache/cache_internal.h"
#include "base/error.h"

static void skip(sf_cache *cache, sf_cache_layer *layer, const char *why) {
  char text[4096];
  snprintf(text, sizeof text, "kernel cache: skipping read-only layer %s (SCANFORGE_CACHE_PATH): %s",
           layer->root, why);
  layer->skipped = strdup(text);
  layer->refused = true; /* even when strdup failed: never search it */
  sf_cache_warn(cache, text);
}

/* Lookups go through the resolved root (`root` stays as listed, for messages). */
static bool use_resolved(sf_cache_layer *layer, const char *real) {
  size_t n = strlen(real) + sizeof "/v1";
  char *store = malloc(n);
  if (!store) return false;
  snprintf(store, n, "%s/v1", real);
  free(layer->store);
  layer->store = store;
  return true;
}

/* Decides once whether a layer is searched: its root and v1 must be trusted directories. */
static void vet_layer(sf_cache *cache, sf_cache_layer *layer) {
  bool missing;
  char *real = NULL;
  if (layer->root[0] != '/') {
    skip(cache, layer, "not an absolute path");
  } else if (!(real = sf_cache_dir_resolve(layer->root, &missing)) ||
             sf_cache_dir_check(real, cache->policy.trust_group, &missing) != SF_OK) {
    skip(cache, layer, missing ? "the directory does not exist" : sf_last_error());
  } else if (!use_resolved(layer, real)) {
    skip(cache, layer, "out of memory");
  } else if (sf_cache_dir_check(layer->store, cache->policy.trust_group, &missing) != SF_OK) {
    skip(cache, layer, missing ? "it holds no kernels (no v1 directory; fill it with "
                                 "`scanforge cache warm --into DIR`)"
                               : sf_last_error());
  }
  free(real);
}

static sf_status add_layer(sf_cache *cache, const char *root, size_t length) {
  sf_cache_layers *layers = &cache->layers;
  sf_cache_layer *grown = realloc(layers->items, (layers->count + 1) * sizeof *grown);
  if (!grown) return sf_fail(SF_ENOMEM, "out of memory reading SCANFORGE_CACHE_PATH");
  layers->items = grown;
  sf_cache_layer *layer = &grown[layers->count];
  memset(layer, 0, sizeof *layer);
  layer->root = strndup(root, length);
  layer->store = malloc(length + sizeof "/v1");
  if (!layer->root || !layer->store) {
    free(layer->root);
    free(layer->store);
    return sf_fail(SF_ENOMEM, "out of memory reading SCANFORGE_CACHE_PATH");
  }
  snprintf(layer->store, length + sizeof "/v1", "%s/v1", layer->root);
  layers->count++;
  vet_layer(cache, layer);
  return SF_OK;
}

sf_status sf_cache_layers_open(sf_cache *cache, const char *list) {
  /* Like $PATH: empty elements (a leading, doubled or trailing ':') are ignored. */
  for (const char *p = list ? list : ""; *p;) {
    size_t length = strcspn(p, ":");
    if (length > 0) {
      sf_status s = add_layer(cache, p, length);
      if (s != SF_OK) return s;
    }
    p += length;
    if (*p == ':') p++;
  }
  return SF_OK;
}

void sf_cache_layers_close(sf_cache_layers *layers) {
  for (size_t i = 0; i < layers->count; i++) {
    free(layers->items[i].root);
    free(layers->items[i].store);
    free(layers->items[i].skipped);
  }
  free(layers->items);
  layers->items = NULL;
  layers->count = 0;
}

sf_entry_state sf_cache_layers_load(sf_cache *cache, const char *subdir, const sf_cache_key *key,
                                    void **data, size_t *size) {
  char hex[33];
  sf_cache_key_hex(key, hex);
  for (size_t i = 0; i < cache->layers.count; i++) {
    const sf_cache_layer *layer = &cache->layers.items[i];
    if (layer->refused) continue;
    char dir[4096], bin[4096], text[4096 + 256];
    int n = snprintf(dir, sizeof dir, "%s/%s", layer->store, subdir);
    if (n < 0 || (size_t)n >= sizeof dir || !sf_entry_path(bin, sizeof bin, dir, hex, SF_FILE_BIN))
      continue;
    /* A layer without this target is an ordinary miss; an untrusted one is worth a word. */
    bool missing;
    if (sf_cache_dir_check(dir, cache->policy.trust_group, &missing) != SF_OK) {
      if (!missing) {
        snprintf(text, sizeof text, "kernel cache: skipping %s in read-only layer %s: %s", subdir,
                 layer->root, sf_last_error());
        sf_cache_warn(cache, text);
      }
      continue;
    }
    /* Stamp 0: opened for reading only, the recency stamp is left as it is. */
    sf_entry_state st = sf_entry_load(bin, key, 0, data, size);
    if (st == SF_ENTRY_OK || st == SF_ENTRY_NOMEM) return st;
    if (st == SF_ENTRY_CORRUPT) {
      snprintf(text, sizeof text, "kernel cache: ignoring %s in read-only layer %s: damaged or "
               "unreadable (rebuild the layer with `scanforge cache warm --into`)", bin, layer->root);
      sf_cache_warn(cache, text);
    }
  }
  return SF_ENTRY_MISSING;
}
