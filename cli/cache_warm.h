/* cache_warm.h: scanforge cache warm, the part of `scanforge cache` that fills the cache. */
#ifndef SCANFORGE_CLI_CACHE_WARM_H
#define SCANFORGE_CLI_CACHE_WARM_H

#include "runtime/cache/cache.h"

/* Compiles every variant of `grid` ("default" or a file of specs) for every target of
 * `arch_list` ("sm_80,sm_90") into the cache with `jobs` threads (<= 0: one per CPU),
 * printing progress on stderr and a summary on stdout. Returns the exit status. */
/* Checks --arch before anything is opened: 0 when valid, else the exit status. */
int cache_warm_check_arch(const char *arch_list);

int cache_warm(sf_cache *cache, const char *arch_list, const char *grid, int jobs);

#endif
