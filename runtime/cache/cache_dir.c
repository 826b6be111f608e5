/* cache_dir.c: resolving, creating and vetting the cache directory. */
#include "runtime/cache/cache_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/env.h"
#include "base/error.h"

static char *join(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 1;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s%s", a, b);
  return s;
}

/* The variable's value when it is set and usable (base/env.c says why not once). */
static const char *usable_env(sf_env_var var) {
  sf_env_value v;
  return sf_env_get(var, &v) ? v.text : NULL;
}

static const char *nonempty_env(const char *name) {
  const char *v = secure_getenv(name); /* set-user-ID programs ignore the environment */
  return v && v[0] ? v : NULL;
}

char *sf_cache_default_dir(void) {
  const char *dir = usable_env(SF_ENV_CACHE_DIR);
  if (dir) return join(dir, "");
  /* The XDG spec says relative values are to be ignored. */
  const char *xdg = usable_env(SF_ENV_XDG_CACHE_HOME);
  if (xdg) return join(xdg, "/scanforge");
  const char *home = nonempty_env("HOME");
  if (!home) {
    struct passwd pw, *found = NULL;
    char buf[4096];
    if (getpwuid_r(geteuid(), &pw, buf, sizeof buf, &found) == 0 && found && found->pw_dir &&
        found->pw_dir[0])
      return join(found->pw_dir, "/.cache/scanforge");
    sf_fail(SF_ECACHE, "no cache directory: neither SCANFORGE_CACHE_DIR, XDG_CACHE_HOME nor "
                       "HOME is set");
    return NULL;
  }
  return join(home, "/.cache/scanforge");
}

sf_cache_policy sf_cache_policy_of(bool shared, bool trust_group) {
  sf_cache_policy p = {.trust_group = trust_group, .dir_mode = 0700, .file_mode = 0600,
                       .lock_mode = 0600};
  if (shared) {
    p.dir_mode = 0755;
    p.file_mode = 0644;
  }
  if (trust_group) {
    p.dir_mode |= 0070;
    p.file_mode |= 0060;
    p.lock_mode |= 0060;
  }
  return p;
}

/* mkdir -p: each missing component is created with `mode`, whatever the umask (a layer
 * built under umask 077 would otherwise be unreadable by the users it is for). */
static sf_status make_dirs(const char *path, mode_t mode) {
  size_t n = strlen(path);
  char *p = malloc(n + 1);
  if (!p) return sf_fail(SF_ENOMEM, "out of memory");
  memcpy(p, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (p[i] != '/' && p[i] != '\0') continue;
    char saved = p[i];
    p[i] = '\0';
    if (mkdir(p, mode) == 0) {
      struct stat made; /* keeps a setgid bit inherited from a team directory */
      if (stat(p, &made) == 0 && (made.st_mode & 0777) != mode)
        chmod(p, (made.st_mode & 07000) | mode);
    } else if (errno != EEXIST) {
      sf_status s = sf_fail(SF_ECACHE, "cannot create %s: %s", p, strerror(errno));
      free(p);
      return s;
    }
    p[i] = saved;
  }
  free(p);
  return SF_OK;
}

static sf_status vet(const char *path, const struct stat *st, bool trust_group) {
  if (!S_ISDIR(st->st_mode)) return sf_fail(SF_ECACHE, "%s is not a directory", path);
  /* Root may write anything anyway: trusting its directories adds no one. */
  if (st->st_uid != geteuid() && st->st_uid != 0)
    return sf_fail(SF_ECACHE,
                   "%s is owned by uid %u, neither this user (uid %u) nor root: refusing to "
                   "load binaries someone else could have written",
                   path, (unsigned)st->st_uid, (unsigned)geteuid());
  if (st->st_mode & S_IWOTH)
    return sf_fail(SF_ECACHE,
                   "%s is writable by group or others (mode %04o, writable by everyone): "
                   "refusing to load binaries someone else could have written",
                   path, (unsigned)(st->st_mode & 07777));
  if ((st->st_mode & S_IWGRP) && !trust_group)
    return sf_fail(SF_ECACHE,
                   "%s is writable by group or others (mode %04o): refusing to load binaries "
                   "someone else could have written (SCANFORGE_CACHE_TRUST_GROUP=1 trusts "
                   "its group, gid %u)",
                   path, (unsigned)(st->st_mode & 07777), (unsigned)st->st_gid);
  return SF_OK;
}

sf_status sf_cache_dir_check(const char *path, bool trust_group, bool *missing) {
  struct stat st;
  if (missing) *missing = false;
  if (stat(path, &st) != 0) {
    if (missing) *missing = errno == ENOENT;
    return sf_fail(SF_ECACHE, "cannot use %s: %s", path, strerror(errno));
  }
  return vet(path, &st, trust_group);
}

sf_status sf_cache_dir_prepare(const char *path, const sf_cache_policy *policy) {
  struct stat st;
  /* One stat when it exists: this runs before every disk load. */
  if (stat(path, &st) != 0) {
    sf_status s = make_dirs(path, policy->dir_mode);
    if (s != SF_OK) return s;
    if (stat(path, &st) != 0)
      return sf_fail(SF_ECACHE, "cannot use %s: %s", path, strerror(errno));
  }
  return vet(path, &st, policy->trust_group);
}

sf_status sf_cache_dir_probe(const char *path) {
  char *probe = join(path, "/.probe.XXXXXX");
  if (!probe) return sf_fail(SF_ENOMEM, "out of memory");
  int fd = mkostemp(probe, O_CLOEXEC);
  if (fd < 0) {
    sf_status s = sf_fail(SF_ECACHE, "cannot write in %s: %s", path, strerror(errno));
    free(probe);
    return s;
  }
  close(fd);
  unlink(probe);
  free(probe);
  return SF_OK;
}

char *sf_cache_dir_resolve(const char *path, bool *missing) {
  *missing = false;
  char *real = realpath(path, NULL);
  if (!real) {
    *missing = errno == ENOENT;
    sf_fail(SF_ECACHE, "cannot resolve cache directory %s: %s", path, strerror(errno));
  }
  return real;
}
