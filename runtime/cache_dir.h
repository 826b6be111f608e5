/* cache_dir.h: where the cache lives and whether this user may trust and write it. */
#ifndef SCANFORGE_CACHE_DIR_H
#define SCANFORGE_CACHE_DIR_H

#include "scanforge/scanforge.h"

/* $SCANFORGE_CACHE_DIR, else $XDG_CACHE_HOME/scanforge, else ~/.cache/scanforge, as a
 * new string (free() it); NULL with the thread's message set when none can be found. */
char *sf_cache_default_dir(void);

/* Makes `path` a usable cache directory: creates it and its missing parents (mode 0700),
 * then checks it is a directory owned by this user that no other user may write: files
 * in it become code that runs in this process. SF_ECACHE says what is wrong. */
sf_status sf_cache_dir_prepare(const char *path);

/* Checks that files can be created in `path` (a read-only mount, a read-only directory
 * or a full disk say no). SF_ECACHE says why not. */
sf_status sf_cache_dir_probe(const char *path);

#endif
