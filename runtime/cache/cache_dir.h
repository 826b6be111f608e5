/* cache_dir.h: where the cache lives and whether this user may trust and write it. */
#ifndef SCANFORGE_CACHE_DIR_H
#define SCANFORGE_CACHE_DIR_H

#include <stdbool.h>
#include <sys/types.h>

#include "scanforge/scanforge.h"

/* How cache directories are vetted and what permissions new files get.
 * Trusted: a directory owned by this user or by root that no one else may write; a
 * group-writable one only when trust_group ($SCANFORGE_CACHE_TRUST_GROUP=1). */
typedef struct sf_cache_policy {
  bool trust_group;
  mode_t dir_mode;  /* new directories: 0700 private, 0755 a layer others read */
  mode_t file_mode; /* new entries: 0600 private, 0644 a layer others read */
  mode_t lock_mode; /* lock files: 0600, 0660 when the group shares the cache */
} sf_cache_policy;

/* The policy of a cache: private to this user, or `shared` (a layer others will read);
 * with trust_group, directories and files are group-writable so the team can share them. */
sf_cache_policy sf_cache_policy_of(bool shared, bool trust_group);

/* $SCANFORGE_CACHE_DIR, else $XDG_CACHE_HOME/scanforge, else ~/.cache/scanforge, as a
 * new string (free() it); NULL with the thread's message set when none can be found. */
char *sf_cache_default_dir(void);

/* Checks that an existing `path` is a trusted directory (see sf_cache_policy): files in
 * it become code that runs in this process. A symbolic link is followed and its target
 * vetted (only someone who may write the vetted parent could have put it there).
 * SF_ECACHE says what is wrong; *missing (may be NULL) is set when it does not exist. */
sf_status sf_cache_dir_check(const char *path, bool trust_group, bool *missing);

/* The path with every symbolic link, "." and ".." resolved (malloc'd), or NULL with the
 * error set (*missing: it does not exist). The cache vets this path and then reads and
 * writes only through it, so a link on the way that is swapped after the vetting cannot
 * redirect where kernels come from. */
char *sf_cache_dir_resolve(const char *path, bool *missing);

/* Makes `path` a usable cache directory: creates it and its missing parents with the
 * policy's dir_mode, then checks it as sf_cache_dir_check does. */
sf_status sf_cache_dir_prepare(const char *path, const sf_cache_policy *policy);

/* Checks that files can be created in `path` (a read-only mount, a read-only directory
 * or a full disk say no). SF_ECACHE says why not. */
sf_status sf_cache_dir_probe(const char *path);

#endif
