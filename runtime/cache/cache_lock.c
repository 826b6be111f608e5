/* cache_lock.c: per-key lock files; the holder may delete the file it holds. */
#include "runtime/cache/cache_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"

/* Lock files are unlinked by their holder on release so they do not pile up. A waiter may
 * then wake up holding a file no longer at `path`; it sees that the inode at `path`
 * differs from its own and tries again. So at any time at most one process holds the
 * lock file that `path` names. */
sf_key_lock_result sf_key_lock_take(const char *path, bool wait, mode_t mode, int *fd_out) {
  for (;;) {
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode);
    /* The umask must not narrow a shared cache's lock files (0660 for a team): whoever
     * creates one gives it the cache's mode. Only the owner can; others leave it be. */
    struct stat created;
    if (fd >= 0 && fstat(fd, &created) == 0 && created.st_uid == geteuid() &&
        (created.st_mode & 07777) != mode)
      (void)fchmod(fd, mode);
    if (fd < 0) {
      sf_fail(SF_ECACHE, "cannot open lock file %s: %s", path, strerror(errno));
      return SF_KEY_LOCK_FAILED;
    }
    int rc;
    do rc = flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB));
    while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      int err = errno;
      close(fd);
      if (err == EWOULDBLOCK) return SF_KEY_LOCK_BUSY;
      sf_fail(SF_ECACHE, "cannot lock %s: %s", path, strerror(err));
      return SF_KEY_LOCK_FAILED;
    }
    struct stat held, named;
    if (fstat(fd, &held) == 0 && stat(path, &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino) {
      *fd_out = fd;
      return SF_KEY_LOCK_HELD;
    }
    close(fd); /* the previous holder removed it: lock the current file instead */
  }
}

void sf_key_lock_drop(const char *path, int fd) {
  unlink(path); /* while still holding it: see sf_key_lock_take */
  close(fd);
}
