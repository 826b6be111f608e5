/* test_cache_full_disk.c: a disk that fills up while the cache writes: the kernel is
 * still returned and served from memory, the cache says so once, no partial file stays,
 * and what was on disk before is kept. Through the write hook (ENOSPC injected), and on
 * a real 64 KiB tmpfs where mounting one is allowed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* unshare */
#endif
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "runtime/cache/cache.h"
#include "runtime/cache/cache_entry.h"
#include "base/error.h"
#include "tests/support/temp_dir.h"

enum { PAYLOAD_BYTES = 16 << 10 };

/* The bytes of key number n: different for every n, so a mix-up shows. */
static void fill_payload(int n, unsigned char *out, size_t size) {
  for (size_t i = 0; i < size; i++) out[i] = (unsigned char)(n * 131 + i * 7 + (i >> 8));
}

static sf_status build(void *user, void **data, size_t *size) {
  const int n = *(const int *)user;
  *data = malloc(PAYLOAD_BYTES);
  if (!*data) return sf_fail(SF_ENOMEM, "out of memory");
  fill_payload(n, *data, PAYLOAD_BYTES);
  *size = PAYLOAD_BYTES;
  return SF_OK;
}

static sf_status must_not_build(void *user, void **data, size_t *size) {
  (void)user, (void)data, (void)size;
  return sf_fail(SF_EINTERNAL, "the entry should have come from the disk");
}

static sf_cache_key key_of(int n) {
  sf_cache_input in[] = {{"n", &n, sizeof n}};
  return sf_cache_key_of(in, 1);
}

/* Gets key n, checks its bytes, returns where they came from. */
static sf_cache_source get(sf_cache *c, int n, sf_cache_build_fn fn) {
  sf_cache_key key = key_of(n);
  const void *data;
  size_t size;
  sf_cache_source where;
  sf_status s = sf_cache_get_or_build(c, &key, "sm_90", "{\"test\":\"full disk\"}", fn, &n, &data, &size, &where);
  cr_assert_eq(s, SF_OK, "key %d: %s: %s", n, sf_status_name(s), sf_last_error());
  unsigned char expected[PAYLOAD_BYTES];
  fill_payload(n, expected, sizeof expected);
  cr_assert_eq(size, sizeof expected, "key %d", n);
  cr_assert_eq(memcmp(data, expected, size), 0, "key %d: wrong bytes", n);
  return where;
}

static sf_cache *open_at(const char *dir) {
  sf_cache_options opt = {.dir = dir, .max_bytes = 1u << 30};
  sf_cache *c = NULL;
  cr_assert_eq(sf_cache_open(&opt, &c), SF_OK, "%s", sf_last_error());
  return c;
}

/* Files in <dir>/v1/sm_90: counts of entries (.bin), manifests (.json) and anything else. */
typedef struct listing {
  int bins, manifests, others;
  char other[256];
} listing;

static listing list_files(const char *dir) {
  listing l = {0};
  char path[4096];
  snprintf(path, sizeof path, "%s/v1/sm_90", dir);
  DIR *d = opendir(path);
  cr_assert_not_null(d, "%s: %s", path, strerror(errno));
  for (struct dirent *de; (de = readdir(d));) {
    const char *name = de->d_name, *dot = strchr(name, '.');
    if (name[0] == '.') continue;
    if (dot && strcmp(dot, ".bin") == 0) l.bins++;
    else if (dot && strcmp(dot, ".json") == 0) l.manifests++;
    else snprintf(l.other, sizeof l.other, "%s", name), l.others++;
  }
  closedir(d);
  return l;
}

/* One entry goes to disk; then writes fail after `after_bytes`; the next keys come back
 * from memory with one warning, and the disk holds exactly the first entry. */
static void fill_up_after(uint64_t after_bytes) {
  char *dir = temp_dir_for_test("sf_full_disk_");
  cr_assert_not_null(dir);
  sf_cache *c = open_at(dir);
  cr_assert_eq(get(c, 1, build), SF_CACHE_BUILT);

  sf_entry_inject_write_failure(ENOSPC, after_bytes);
  cr_expect_eq(get(c, 2, build), SF_CACHE_BUILT, "the kernel is returned although it cannot be stored");
  const char *warning = sf_cache_warning(c);
  cr_assert_not_null(warning, "a full disk is worth a warning");
  cr_expect(strstr(warning, "No space left on device"), "%s", warning);
  cr_expect(strstr(warning, "memory only"), "%s", warning);
  cr_expect_eq(get(c, 2, build), SF_CACHE_FROM_MEMORY);
  cr_expect_eq(get(c, 3, build), SF_CACHE_BUILT);
  cr_expect_eq(get(c, 1, build), SF_CACHE_FROM_MEMORY, "what this process had stays");
  cr_expect_eq(sf_cache_warning(c), warning, "one warning");
  sf_cache_stats st;
  cr_assert_eq(sf_cache_stat(c, &st), SF_OK);
  cr_expect(st.memory_only);
  cr_expect_eq(st.memory_entries, 3u);
  sf_cache_close(c);

  sf_entry_inject_write_failure(0, 0);
  const listing l = list_files(dir);
  cr_expect_eq(l.bins, 1, "the entry written before the disk filled up stays");
  cr_expect_eq(l.manifests, 1, "no manifest without its binary");
  cr_expect_eq(l.others, 0, "no temporary or lock file left: %s", l.other);
  c = open_at(dir);
  cr_expect_eq(get(c, 1, must_not_build), SF_CACHE_FROM_DISK, "the earlier entry still verifies");
  cr_expect_null(sf_cache_warning(c), "with space again the disk is used again");
  cr_expect_eq(get(c, 2, build), SF_CACHE_BUILT);
  sf_cache_close(c);
  free(dir);
}

Test(cache_full_disk, the_manifest_cannot_be_written) { fill_up_after(0); }

Test(cache_full_disk, the_binary_is_cut_off_half_way) {
  /* The manifest (well under 4 KiB) fits; the 16 KiB binary does not. */
  fill_up_after(4096 + PAYLOAD_BYTES / 2);
}

/* A real full filesystem: a 64 KiB tmpfs in a mount namespace of this test's own. */
Test(cache_full_disk, a_real_64k_tmpfs) {
  char *dir = temp_dir_for_test("sf_tmpfs_");
  cr_assert_not_null(dir);
  if (unshare(CLONE_NEWNS) != 0) cr_skip_test("no mount namespace here (%s): the injected ENOSPC tests cover this", strerror(errno));
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
      mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0700") != 0)
    cr_skip_test("cannot mount a tmpfs here (%s): the injected ENOSPC tests cover this", strerror(errno));

  sf_cache *c = open_at(dir);
  cr_assert_null(sf_cache_warning(c), "%s", sf_cache_warning(c));
  int n = 1;
  for (; n <= 16 && !sf_cache_warning(c); n++) cr_expect_eq(get(c, n, build), SF_CACHE_BUILT);
  const char *warning = sf_cache_warning(c);
  cr_assert_not_null(warning, "64 KiB cannot hold 16 entries of 16 KiB");
  cr_expect(strstr(warning, "No space left on device"), "%s", warning);
  for (int k = 1; k < n; k++) cr_expect_eq(get(c, k, build), SF_CACHE_FROM_MEMORY, "key %d is kept", k);
  cr_expect_eq(get(c, n, build), SF_CACHE_BUILT);
  cr_expect_eq(sf_cache_warning(c), warning, "one warning");
  sf_cache_close(c);

  const listing l = list_files(dir);
  cr_expect_eq(l.bins, n - 2, "every entry but the one that did not fit");
  cr_expect_eq(l.manifests, l.bins, "no manifest without its binary");
  cr_expect_eq(l.others, 0, "no temporary or lock file left: %s", l.other);
  c = open_at(dir);
  for (int k = 1; k < n - 1; k++) cr_expect_eq(get(c, k, must_not_build), SF_CACHE_FROM_DISK, "key %d verifies", k);
  sf_cache_close(c);
  umount2(dir, MNT_DETACH);
  free(dir);
}
