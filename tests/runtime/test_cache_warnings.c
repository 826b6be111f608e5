/* test_cache_warnings.c: the cache's warning list keeps the memory-only fallback however
 * many other warnings came first; lock files get the cache's mode whatever the umask. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/cache/cache.h"
#include "runtime/cache/cache_internal.h"
#include "runtime/cache/cache_lock.h"
#include "tests/support/temp_dir.h"

Test(cache_warnings, memory_only_is_heard_after_many_other_warnings) {
  sf_cache *cache;
  sf_cache_options opt = {.memory_only = true};
  cr_assert_eq(sf_cache_open(&opt, &cache), SF_OK);
  for (int i = 0; i < 3 * SF_CACHE_WARNINGS_MAX; i++) {
    char text[64];
    snprintf(text, sizeof text, "damaged layer entry %d", i);
    sf_cache_warn(cache, text);
  }
  cr_expect_eq(sf_cache_warning_count(cache), SF_CACHE_WARNINGS_MAX - 1, "one slot stays free");
  sf_cache_degrade(cache, "the disk is full");
  const size_t n = sf_cache_warning_count(cache);
  cr_assert_eq(n, SF_CACHE_WARNINGS_MAX);
  cr_expect(strstr(sf_cache_warning_at(cache, n - 1), "the disk is full; keeping kernels in memory only"),
            "%s", sf_cache_warning_at(cache, n - 1));
  sf_cache_close(cache);
}

Test(cache_warnings, lock_file_takes_the_cache_mode_under_any_umask) {
  const char *dir = scratch_dir("sf_lock_mode_");
  cr_assert_not_null(dir);
  char path[512];
  snprintf(path, sizeof path, "%s/key.lock", dir);
  umask(022); /* would make 0660 into 0640: teammates could not open the lock */
  int fd = -1;
  cr_assert_eq(sf_key_lock_take(path, true, 0660, &fd), SF_KEY_LOCK_HELD);
  struct stat st;
  cr_assert_eq(fstat(fd, &st), 0);
  cr_expect_eq(st.st_mode & 07777, 0660u, "mode %o", (unsigned)(st.st_mode & 07777));
  close(fd);
}
