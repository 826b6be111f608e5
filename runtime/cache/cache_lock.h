/* cache_lock.h: a per-key build lock shared by threads and processes (flock on a file). */
#ifndef SCANFORGE_CACHE_LOCK_H
#define SCANFORGE_CACHE_LOCK_H

#include <stdbool.h>
#include <sys/types.h>

typedef enum sf_key_lock_result {
  SF_KEY_LOCK_HELD,  /* *fd holds the lock on `path` */
  SF_KEY_LOCK_BUSY,  /* wait was false and someone else holds it */
  SF_KEY_LOCK_FAILED /* the thread's message says why (errno) */
} sf_key_lock_result;

/* Takes the exclusive lock on the file at `path`, creating it with `mode` (0660 where a
 * group shares the cache, so a teammate can open a lock file this user made). The kernel
 * drops a flock when its owner dies, so a killed builder never leaves a lock behind. */
sf_key_lock_result sf_key_lock_take(const char *path, bool wait, mode_t mode, int *fd);
/* Removes the lock file and releases the lock. */
void sf_key_lock_drop(const char *path, int fd);

#endif
