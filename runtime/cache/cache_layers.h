/* cache_layers.h: read-only cache layers ($SCANFORGE_CACHE_PATH), searched before the
 * per-user cache and never written, pruned or cleared. */
#ifndef SCANFORGE_CACHE_LAYERS_H
#define SCANFORGE_CACHE_LAYERS_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/cache/cache.h"
#include "runtime/cache/cache_entry.h"

typedef struct sf_cache_layer {
  char *root;    /* as listed */
  char *store;   /* <root>/v1 */
  char *skipped; /* NULL: searched; else why not (also among the cache's warnings) */
  bool refused;  /* not searched (set even when `skipped` could not be allocated) */
} sf_cache_layer;

typedef struct sf_cache_layers {
  sf_cache_layer *items;
  size_t count;
} sf_cache_layers;

/* Reads the colon-separated `list` and vets each directory once, in order: one that is
 * missing, not absolute, untrusted or holds no v1 store is skipped with a warning. Fails
 * only with SF_ENOMEM. */
sf_status sf_cache_layers_open(sf_cache *cache, const char *list);
void sf_cache_layers_close(sf_cache_layers *layers);

/* Looks `key` up in <layer>/v1/<subdir> of each searched layer, first layer first, reading
 * only. SF_ENTRY_OK with the verified bytes (malloc'ed), SF_ENTRY_MISSING when no layer
 * has a good copy (an untrusted subdir or a damaged entry is passed over with a warning),
 * SF_ENTRY_NOMEM. */
sf_entry_state sf_cache_layers_load(sf_cache *cache, const char *subdir, const sf_cache_key *key,
                                    void **data, size_t *size);

#endif
