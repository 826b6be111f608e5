/* test_cache.c: the kernel cache: round trips, one build across processes, damage,
 * unusable directories, eviction. Every test works in its own mkdtemp directory. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cache/cache.h"
#include "base/error.h"

/* ---- helpers ------------------------------------------------------------------------ */

/* What a build does, and counters visible across fork (shared memory). */
typedef struct builder {
  const char *text;        /* the bytes it builds */
  atomic_int *builds;      /* incremented on every build */
  atomic_int *started;     /* set when a build begins */
  int linger_ms;           /* sleep inside the build, to overlap with others */
  bool forever;            /* never return: a builder to be killed ... */
  pid_t parent;            /* ... or to end itself when the test process is gone */
  sf_status fail;          /* nonzero: fail with this */
} builder;

static sf_status build(void *user, void **data, size_t *size) {
  builder *b = user;
  atomic_fetch_add(b->builds, 1);
  if (b->started) atomic_store(b->started, 1);
  if (b->fail) return sf_fail(b->fail, "the build failed on purpose");
  for (;;) {
    if (b->linger_ms) {
      struct timespec ts = {b->linger_ms / 1000, (long)(b->linger_ms % 1000) * 1000000L};
      nanosleep(&ts, NULL);
    }
    if (!b->forever) break;
    if (getppid() != b->parent) _exit(9); /* the test failed before killing us */
  }
  size_t n = strlen(b->text);
  *data = malloc(n);
  memcpy(*data, b->text, n);
  *size = n;
  return SF_OK;
}

static atomic_int *shared_counter(void) {
  atomic_int *p = mmap(NULL, sizeof *p, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(p, MAP_FAILED);
  atomic_init(p, 0);
  return p;
}

static char *fresh_dir(void) {
  char tmpl[] = "/tmp/sf_cache_test_XXXXXX";
  cr_assert_not_null(mkdtemp(tmpl));
  return strdup(tmpl);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  chmod(path, 0700);
  return remove(path);
}

static void remove_tree(char *dir) {
  chmod(dir, 0700);
  nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
  free(dir);
}

static sf_cache *open_at(const char *dir, uint64_t max_bytes) {
  sf_cache_options opt = {.dir = dir, .max_bytes = max_bytes};
  sf_cache *c = NULL;
  cr_assert_eq(sf_cache_open(&opt, &c), SF_OK, "%s", sf_last_error());
  return c;
}

static sf_cache_key key_named(const char *name) {
  sf_cache_input in[] = {{"source", name, strlen(name)}, {"arch", "sm_90", 5}};
  return sf_cache_key_of(in, 2);
}

/* Gets key `name` (whose bytes are b->text) and checks the bytes. */
static sf_cache_source get(sf_cache *c, const char *name, builder *b) {
  sf_cache_key key = key_named(name);
  const void *data;
  size_t size;
  sf_cache_source where;
  sf_status s = sf_cache_get_or_build(c, &key, "sm_90", "{\"variant\":\"test\"}", build, b, &data,
                                      &size, &where);
  cr_assert_eq(s, SF_OK, "%s: %s", sf_status_name(s), sf_last_error());
  cr_assert_eq(size, strlen(b->text));
  cr_assert_eq(memcmp(data, b->text, size), 0);
  return where;
}

static void entry_path(char *buf, size_t cap, const char *dir, const char *name, const char *ext) {
  sf_cache_key key = key_named(name);
  char hex[33];
  sf_cache_key_hex(&key, hex);
  snprintf(buf, cap, "%s/v1/sm_90/%s%s", dir, hex, ext);
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

static int files_in(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/v1/sm_90", dir);
  int n = 0;
  DIR *d = opendir(path);
  if (!d) return 0;
  for (struct dirent *de; (de = readdir(d));)
    if (de->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

static const char payload[] = "\x7f" "ELF pretend cubin bytes, long enough to damage in the middle";

/* ---- keys and options ----------------------------------------------------------------- */

Test(cache, key_covers_names_sizes_and_order) {
  sf_cache_input a[] = {{"x", "ab", 2}, {"y", "c", 1}};
  sf_cache_input b[] = {{"x", "a", 1}, {"y", "bc", 2}};
  sf_cache_input c[] = {{"y", "c", 1}, {"x", "ab", 2}};
  sf_cache_input d[] = {{"z", "ab", 2}, {"y", "c", 1}};
  sf_cache_key ka = sf_cache_key_of(a, 2), kb = sf_cache_key_of(b, 2);
  sf_cache_key kc = sf_cache_key_of(c, 2), kd = sf_cache_key_of(d, 2);
  sf_cache_key ka2 = sf_cache_key_of(a, 2);
  cr_assert_eq(memcmp(&ka, &ka2, 16), 0, "the key must be deterministic");
  cr_assert_neq(memcmp(&ka, &kb, 16), 0);
  cr_assert_neq(memcmp(&ka, &kc, 16), 0);
  cr_assert_neq(memcmp(&ka, &kd, 16), 0);
  char hex[33];
  sf_cache_key_hex(&ka, hex);
  cr_assert_eq(strlen(hex), 32);
  cr_assert_eq(strspn(hex, "0123456789abcdef"), 32);
}

Test(cache, manifest_of_shows_short_text_and_hashes_the_rest) {
  char big[300];
  memset(big, 'x', sizeof big);
  sf_cache_input in[] = {{"arch", "sm_90", 5}, {"source", big, sizeof big}};
  char *m = sf_cache_manifest_of(in, 2);
  cr_assert_not_null(m);
  cr_assert_not_null(strstr(m, "\"arch\":\"sm_90\""), "%s", m);
  cr_assert_not_null(strstr(m, "\"size\":300"), "%s", m);
  cr_assert_null(strstr(m, "xxxxxxxx"), "%s", m);
  free(m);
}

Test(cache, parse_bytes) {
  uint64_t v;
  cr_assert_eq(sf_cache_parse_bytes("1048576", &v), SF_OK);
  cr_assert_eq(v, 1048576);
  cr_assert_eq(sf_cache_parse_bytes("64M", &v), SF_OK);
  cr_assert_eq(v, 64u << 20);
  cr_assert_eq(sf_cache_parse_bytes("2GiB", &v), SF_OK);
  cr_assert_eq(v, 2ull << 30);
  cr_assert_eq(sf_cache_parse_bytes("512k", &v), SF_OK);
  cr_assert_eq(v, 512u << 10);
  cr_assert_eq(sf_cache_parse_bytes("12X", &v), SF_EINVAL);
  cr_assert_eq(sf_cache_parse_bytes("", &v), SF_EINVAL);
  cr_assert_eq(sf_cache_parse_bytes("-1", &v), SF_EINVAL);
  cr_assert_eq(sf_cache_parse_bytes("99999999999999999999", &v), SF_EINVAL);
  cr_assert_not_null(strstr(sf_last_error(), "99999999999999999999"));
}

Test(cache, directory_from_the_environment) {
  char *dir = fresh_dir();
  char sub[4096];
  snprintf(sub, sizeof sub, "%s/from_env", dir);
  setenv("SCANFORGE_CACHE_DIR", sub, 1);
  setenv("SCANFORGE_CACHE_MAX_BYTES", "5M", 1);
  sf_cache *c = NULL;
  cr_assert_eq(sf_cache_open(NULL, &c), SF_OK);
  sf_cache_stats st;
  cr_assert_eq(sf_cache_stat(c, &st), SF_OK);
  cr_assert_str_eq(st.dir, sub);
  cr_assert_eq(st.max_bytes, 5u << 20);
  cr_assert_not(st.memory_only);
  cr_assert_null(sf_cache_warning(c));
  sf_cache_close(c);

  unsetenv("SCANFORGE_CACHE_DIR");
  setenv("XDG_CACHE_HOME", dir, 1);
  setenv("SCANFORGE_CACHE_MAX_BYTES", "lots", 1);
  cr_assert_eq(sf_cache_open(NULL, &c), SF_OK);
  cr_assert_eq(sf_cache_stat(c, &st), SF_OK);
  snprintf(sub, sizeof sub, "%s/scanforge", dir);
  cr_assert_str_eq(st.dir, sub);
  cr_assert_eq(st.max_bytes, 1u << 30);
  /* A bad value is the environment's warning (tests/runtime/test_env.c), not the cache's. */
  cr_assert_null(sf_cache_warning(c));
  cr_assert_not_null(sf_environment_warning());
  cr_assert_not_null(strstr(sf_environment_warning(), "SCANFORGE_CACHE_MAX_BYTES=\"lots\""));
  sf_cache_close(c);
  remove_tree(dir);
}

/* ---- getting entries -------------------------------------------------------------- */

Test(cache, round_trip_memory_then_disk) {
  char *dir = fresh_dir();
  builder b = {.text = payload, .builds = shared_counter()};
  sf_cache *c = open_at(dir, 0);
  cr_assert_null(sf_cache_warning(c));
  cr_assert_eq(get(c, "k", &b), SF_CACHE_BUILT);
  cr_assert_eq(get(c, "k", &b), SF_CACHE_FROM_MEMORY);
  sf_cache_close(c);

  char bin[4096], json[4096];
  entry_path(bin, sizeof bin, dir, "k", ".bin");
  entry_path(json, sizeof json, dir, "k", ".json");
  cr_assert(exists(bin), "no %s", bin);
  cr_assert(exists(json), "no %s", json);
  cr_assert_eq(files_in(dir), 2, "lock or temp files left behind");

  c = open_at(dir, 0);
  cr_assert_eq(get(c, "k", &b), SF_CACHE_FROM_DISK);
  sf_cache_close(c);
  cr_assert_eq(atomic_load(b.builds), 1);

  /* The manifest explains the entry: the caller's inputs and what the cache checks. */
  FILE *f = fopen(json, "r");
  char text[4096] = {0};
  cr_assert_gt(fread(text, 1, sizeof text - 1, f), 0);
  fclose(f);
  cr_assert_not_null(strstr(text, "\"variant\": \"test\""), "%s", text);
  cr_assert_not_null(strstr(text, "\"xxh3\""), "%s", text);
  cr_assert_not_null(strstr(text, "\"subdir\": \"sm_90\""), "%s", text);
  remove_tree(dir);
}

Test(cache, in_process_hit_touches_no_file) {
  char *dir = fresh_dir();
  builder b = {.text = payload, .builds = shared_counter()};
  sf_cache *c = open_at(dir, 0);
  cr_assert_eq(get(c, "k", &b), SF_CACHE_BUILT);
  char path[4096];
  snprintf(path, sizeof path, "%s/v1", dir);
  remove_tree(strdup(path)); /* the whole store is gone ... */
  cr_assert_eq(get(c, "k", &b), SF_CACHE_FROM_MEMORY); /* ... and the hit never noticed */
  cr_assert_eq(atomic_load(b.builds), 1);
  cr_assert_not(exists(path));
  sf_cache_close(c);
  remove_tree(dir);
}

Test(cache, memory_only_mode_writes_nothing) {
  char *dir = fresh_dir();
  builder b = {.text = payload, .builds = shared_counter()};
  sf_cache_options opt = {.dir = dir, .memory_only = true};
  sf_cache *c;
  cr_assert_eq(sf_cache_open(&opt, &c), SF_OK);
  cr_assert_null(sf_cache_warning(c), "asking for memory only is not worth a warning");
  cr_assert_eq(get(c, "k", &b), SF_CACHE_BUILT);
  cr_assert_eq(get(c, "k", &b), SF_CACHE_FROM_MEMORY);
  sf_cache_stats st;
  cr_assert_eq(sf_cache_stat(c, &st), SF_OK);
  cr_assert(st.memory_only);
  cr_assert_eq(st.memory_entries, 1);
  cr_assert_eq(st.memory_bytes, strlen(payload));
  sf_cache_close(c);
  char v1[4096];
  snprintf(v1, sizeof v1, "%s/v1", dir);
  cr_assert_not(exists(v1));
  remove_tree(dir);
}

Test(cache, failed_build_is_returned_and_not_kept) {
  char *dir = fresh_dir();
  builder b = {.text = payload, .builds = shared_counter(), .fail = SF_ECOMPILE};
  sf_cache *c = open_at(dir, 0);
  sf_cache_key key = key_named("k");
  const void *data;
  size_t size;
  sf_status s = sf_cache_get_or_build(c, &key, "sm_90", "{}", build, &b, &data, &size, NULL);
  cr_assert_eq(s, SF_ECOMPILE);
  cr_assert_str_eq(sf_last_error(), "the build failed on purpose");
  cr_assert_eq(files_in(dir), 0, "a failed build left files");
  b.fail = SF_OK;
  cr_assert_eq(get(c, "k", &b), SF_CACHE_BUILT);
  cr_assert_eq(atomic_load(b.builds), 2);
  sf_cache_close(c);
  remove_tree(dir);
}

Test(cache, bad_arguments_are_refused) {
  char *dir = fresh_dir();
  builder b = {.text = payload, .builds = shared_counter()};
  sf_cache *c = open_at(dir, 0);
  sf_cache_key key = key_named("k");
  const void *data;
  size_t size;
  cr_assert_eq(sf_cache_get_or_build(c, &key, "../up", "{}", build, &b, &data, &size, NULL),
               SF_EINVAL);
  cr_assert_not_null(strstr(sf_last_error(), "../up"));
  cr_assert_eq(sf_cache_get_or_build(c, &key, "sm_90", "[1,", build, &b, &data, &size, NULL),
               SF_EINVAL);
  cr_assert_not_null(strstr(sf_last_error(), "manifest_json"));
  cr_assert_eq(atomic_load(b.builds), 0);
  sf_cache_close(c);
  remove_tree(dir);
}

/* ---- one build across threads and processes ------------------------------------- */

typedef struct thread_arg {
  sf_cache *cache;
  builder *b;
  const void *data;
} thread_arg;

static void *thread_get(void *p) {
  thread_arg *a = p;
  sf_cache_key key = key_named("k");
  size_t size;
  if (sf_cache_get_or_build(a->cache, &key, "sm_90", "{}", build, a->b, &a->data, &size, NULL) !=
      SF_OK)
    a->data = NULL;
  return NULL;
}

Test(cache, threads_build_once) {
  char *dir = fresh_dir();
  builder b = {.text = payload, .builds = shared_counter(), .linger_ms = 50};
  sf_cache *c = open_at(dir, 0);
  pthread_t t[4];
  thread_arg a[4];
  for (int i = 0; i < 4; i++) {
    a[i] = (thread_arg){c, &b, NULL};
    pthread_create(&t[i], NULL, thread_get, &a[i]);
  }
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  cr_assert_eq(atomic_load(b.builds), 1);
  for (int i = 0; i < 4; i++) cr_assert_eq(a[i].data, a[0].data, "one shared buffer");
  cr_assert_not_null(a[0].data);
  sf_cache_close(c);
  remove_tree(dir);
}

/* A child that opens its own cache and gets key "k"; exits 0 when the bytes are right. */
static pid_t spawn_getter(const char *dir, builder *b, atomic_int *go) {
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid > 0) return pid;
  while (go && !atomic_load(go)) sched_yield();
  sf_cache_options opt = {.dir = dir};
  sf_cache *c;
  if (sf_cache_open(&opt, &c) != SF_OK || sf_cache_warning(c)) _exit(3);
  sf_cache_key key = key_named("k");
  const void *data;
  size_t size;
  if (sf_cache_get_or_build(c, &key, "sm_90", "{}", build, b, &data, &size, NULL) != SF_OK)
    _exit(4);
  if (size != strlen(b->text) || memcmp(data, b->text, size) != 0) _exit(5);
  sf_cache_close(c);
  _exit(0);
}

static int exit_code(pid_t pid) {
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

Test(cache, eight_processes_build_once) {
  char *dir = fresh_dir();
  atomic_int *go = shared_counter();
  builder b = {.text = payload, .builds = shared_counter(), .linger_ms = 100};
  pid_t pids[8];
  for (int i = 0; i < 8; i++) pids[i] = spawn_getter(dir, &b, go);
  atomic_store(go, 1); /* all at once */
  for (int i = 0; i < 8; i++) cr_assert_eq(exit_code(pids[i]), 0, "child %d failed", i);
  cr_assert_eq(atomic_load(b.builds), 1, "built %d times", atomic_load(b.builds));

  sf_cache *c = open_at(dir, 0);
  cr_assert_eq(get(c, "k", &b), SF_CACHE_FROM_DISK);
  sf_cache_close(c);
  cr_assert_eq(files_in(dir), 2, "lock or temp files left behind");
  remove_tree(dir);
}

Test(cache, builder_killed_holding_the_lock) {
  char *dir = fresh_dir();
  atomic_int *started = shared_counter();
  builder stuck = {.text = payload, .builds = shared_counter(), .started = started,
                   .linger_ms = 10, .forever = true, .parent = getpid()};
  pid_t first = spawn_getter(dir, &stuck, NULL);
  while (!atomic_load(started)) usleep(1000);

  /* A second process now waits for the lock the first one holds. */
  builder b = {.text = payload, .builds = shared_counter()};
  pid_t second = spawn_getter(dir, &b, NULL);
  char bin[4096];
  entry_path(bin, sizeof bin, dir, "k", ".bin");
  cr_assert_not(exists(bin), "an entry appeared before it was built");

  kill(first, SIGKILL);
  cr_assert_eq(exit_code(first), 100 + SIGKILL);
  cr_assert_eq(exit_code(second), 0, "the waiter did not recover the lock");
  cr_assert_eq(atomic_load(b.builds), 1);
  cr_assert(exists(bin));
  remove_tree(dir);
}

/* What a writer killed half-way through publishing leaves: its temp files and lock. */
Test(cache, writer_killed_mid_write_leaves_nothing_visible) {
  char *dir = fresh_dir();
  builder b = {.text = payload, .builds = shared_counter()};
  sf_cache *c = open_at(dir, 0);
  char sub[4096], path[4096];
  snprintf(sub, sizeof sub, "%s/v1/sm_90", dir);
  cr_assert_eq(mkdir(sub, 0700), 0);
  const char *leftovers[] = {".bin.tmp", ".json.tmp", ".lock"};
  for (int i = 0; i < 3; i++) {
    entry_path(path, sizeof path, dir, "k", leftovers[i]);
    FILE *f = fopen(path, "w");
    fputs("SFCACHE half written", f);
    fclose(f);
  }
  cr_assert_eq(get(c, "k", &b), SF_CACHE_BUILT);
  sf_cache_close(c);
  for (int i = 0; i < 3; i++) {
    entry_path(path, sizeof path, dir, "k", leftovers[i]);
    cr_assert_not(exists(path), "%s left behind", path);
  }
  cr_assert_eq(files_in(dir), 2);
  remove_tree(dir);
}

/* ---- damaged entries --------------------------------------------------------------- */

/* Builds "k", damages its .bin with `damage`, and checks the next open rebuilds it and
 * the one after reads the repaired entry. */
static void check_rebuilt_after(void (*damage)(const char *bin)) {
  char *dir = fresh_dir();
  builder b = {.text = payload, .builds = shared_counter()};
  sf_cache *c = open_at(dir, 0);
  cr_assert_eq(get(c, "k", &b), SF_CACHE_BUILT);
  sf_cache_close(c);
  char bin[4096];
  entry_path(bin, sizeof bin, dir, "k", ".bin");
  damage(bin);

  c = open_at(dir, 0);
  cr_assert_eq(get(c, "k", &b), SF_CACHE_BUILT, "the damaged entry was served");
  cr_assert_null(sf_cache_warning(c));
  sf_cache_close(c);
  c = open_at(dir, 0);
  cr_assert_eq(get(c, "k", &b), SF_CACHE_FROM_DISK);
  sf_cache_close(c);
  cr_assert_eq(atomic_load(b.builds), 2);
  remove_tree(dir);
}

static void flip_byte(const char *path, off_t at) {
  int fd = open(path, O_RDWR);
  cr_assert_geq(fd, 0);
  unsigned char byte;
  cr_assert_eq(pread(fd, &byte, 1, at), 1);
  byte ^= 0x10;
  cr_assert_eq(pwrite(fd, &byte, 1, at), 1);
  close(fd);
}

static off_t file_size(const char *path) {
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  return st.st_size;
}

static void truncate_tail(const char *bin) { cr_assert_eq(truncate(bin, file_size(bin) - 7), 0); }
static void truncate_to_header(const char *bin) { cr_assert_eq(truncate(bin, 20), 0); }
static void flip_payload(const char *bin) { flip_byte(bin, file_size(bin) - 10); }
static void flip_checksum(const char *bin) { flip_byte(bin, 45); }
static void flip_size(const char *bin) { flip_byte(bin, 16); }

Test(cache, truncated_entry_rebuilt) { check_rebuilt_after(truncate_tail); }
Test(cache, entry_cut_inside_header_rebuilt) { check_rebuilt_after(truncate_to_header); }
Test(cache, bit_flipped_payload_rebuilt) { check_rebuilt_after(flip_payload); }
Test(cache, bit_flipped_checksum_rebuilt) { check_rebuilt_after(flip_checksum); }
Test(cache, bit_flipped_size_rebuilt) { check_rebuilt_after(flip_size); }

Test(cache, entry_under_the_wrong_name_rebuilt) {
  char *dir = fresh_dir();
  builder other = {.text = "another kernel", .builds = shared_counter()};
  builder b = {.text = payload, .builds = shared_counter()};
  sf_cache *c = open_at(dir, 0);
  cr_assert_eq(get(c, "other", &other), SF_CACHE_BUILT);
  sf_cache_close(c);
  char from[4096], to[4096];
  entry_path(from, sizeof from, dir, "other", ".bin");
  entry_path(to, sizeof to, dir, "k", ".bin");
  cr_assert_eq(rename(from, to), 0);
  c = open_at(dir, 0);
  cr_assert_eq(get(c, "k", &b), SF_CACHE_BUILT);
  sf_cache_close(c);
  remove_tree(dir);
}

/* ---- directories that cannot or must not be used -------------------------------- */

/* The cache still works, in memory, and says why once. */
static void check_degraded(sf_cache *c, const char *why) {
  builder b = {.text = payload, .builds = shared_counter()};
  cr_assert_eq(get(c, "k", &b), SF_CACHE_BUILT);
  cr_assert_eq(get(c, "k", &b), SF_CACHE_FROM_MEMORY);
  const char *w = sf_cache_warning(c);
  cr_assert_not_null(w, "no warning");
  cr_assert_not_null(strstr(w, why), "warning \"%s\" does not say \"%s\"", w, why);
  sf_cache_stats st;
  cr_assert_eq(sf_cache_stat(c, &st), SF_OK);
  cr_assert(st.memory_only);
  cr_assert_eq(sf_cache_clear(c, NULL), SF_ECACHE, "no disk to clear");
  cr_assert_str_eq(sf_cache_warning(c), w, "one warning, unchanged");
}

Test(cache, read_only_directory_degrades) {
  char *dir = fresh_dir();
  cr_assert_eq(chmod(dir, 0555), 0);
  char probe[4096];
  snprintf(probe, sizeof probe, "%s/probe", dir);
  if (mkdir(probe, 0700) == 0) {
    /* Running as root: permissions do not stop writes; see uncreatable_directory. */
    rmdir(probe);
    remove_tree(dir);
    cr_skip_test("chmod 0555 does not stop this user (root) from writing");
  }
  sf_cache *c = open_at(dir, 0);
  check_degraded(c, "cannot");
  sf_cache_close(c);
  remove_tree(dir);
}

/* Works as root too: nothing can be created under a regular file. */
Test(cache, uncreatable_directory_degrades) {
  char *dir = fresh_dir();
  char file[4096], under[4200];
  snprintf(file, sizeof file, "%s/plain_file", dir);
  fclose(fopen(file, "w"));
  snprintf(under, sizeof under, "%s/cache", file);
  sf_cache *c = open_at(under, 0);
  check_degraded(c, "cannot create");
  sf_cache_close(c);
  remove_tree(dir);
}

Test(cache, missing_directory_created_private) {
  char *dir = fresh_dir();
  char deep[4096];
  snprintf(deep, sizeof deep, "%s/a/b/c", dir);
  builder b = {.text = payload, .builds = shared_counter()};
  sf_cache *c = open_at(deep, 0);
  cr_assert_null(sf_cache_warning(c), "%s", sf_cache_warning(c));
  cr_assert_eq(get(c, "k", &b), SF_CACHE_BUILT);
  sf_cache_close(c);
  struct stat st;
  cr_assert_eq(stat(deep, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0700);
  char bin[4096];
  entry_path(bin, sizeof bin, deep, "k", ".bin");
  cr_assert(exists(bin));
  remove_tree(dir);
}

Test(cache, group_writable_root_refused) {
  char *dir = fresh_dir();
  cr_assert_eq(chmod(dir, 0770), 0);
  sf_cache *c = open_at(dir, 0);
  check_degraded(c, "writable by group or others");
  sf_cache_close(c);
  char v1[4096];
  snprintf(v1, sizeof v1, "%s/v1", dir);
  cr_assert_not(exists(v1), "wrote into a refused directory");
  remove_tree(dir);
}

Test(cache, world_writable_subdir_refused) {
  char *dir = fresh_dir();
  char sub[4096];
  snprintf(sub, sizeof sub, "%s/v1", dir);
  cr_assert_eq(mkdir(sub, 0700), 0);
  snprintf(sub, sizeof sub, "%s/v1/sm_90", dir);
  cr_assert_eq(mkdir(sub, 0700), 0);
  cr_assert_eq(chmod(sub, 0777), 0);
  sf_cache *c = open_at(dir, 0);
  cr_assert_null(sf_cache_warning(c)); /* the root is fine ... */
  check_degraded(c, "writable by group or others"); /* ... sm_90 is not */
  sf_cache_close(c);
  cr_assert_eq(files_in(dir), 0);
  remove_tree(dir);
}

Test(cache, directory_of_another_user_refused) {
  char *dir = fresh_dir();
  uid_t other = geteuid() == 65534 ? 65533 : 65534;
  if (chown(dir, other, other) != 0) {
    remove_tree(dir);
    cr_skip_test("cannot give a directory to another user without root");
  }
  sf_cache *c = open_at(dir, 0);
  char why[64];
  snprintf(why, sizeof why, "owned by uid %u", (unsigned)other);
  check_degraded(c, why);
  sf_cache_close(c);
  remove_tree(dir);
}

/* ---- the disk as a whole ------------------------------------------------------------ */

static int collect(void *user, const sf_cache_entry *e) {
  char *order = user;
  /* Which test key the entry is, by its manifest's "variant". */
  const char *v = e->manifest ? strstr(e->manifest, "\"variant\": \"") : NULL;
  size_t n = strlen(order);
  order[n] = v ? v[12] : '?';
  order[n + 1] = '\0';
  return 0;
}

static void get_variant(sf_cache *c, const char *name, builder *b) {
  sf_cache_key key = key_named(name);
  char manifest[64];
  snprintf(manifest, sizeof manifest, "{\"variant\":\"%s\"}", name);
  const void *data;
  size_t size;
  cr_assert_eq(sf_cache_get_or_build(c, &key, "sm_90", manifest, build, b, &data, &size, NULL),
               SF_OK, "%s", sf_last_error());
}

Test(cache, eviction_removes_least_recently_used_first) {
  char *dir = fresh_dir();
  char big[2000];
  memset(big, 'k', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  builder b = {.text = big, .builds = shared_counter()};
  sf_cache *c = open_at(dir, 0);
  get_variant(c, "A", &b);
  get_variant(c, "B", &b);
  get_variant(c, "C", &b);
  sf_cache_stats st;
  cr_assert_eq(sf_cache_stat(c, &st), SF_OK);
  cr_assert_eq(st.entries, 3);
  uint64_t three = st.bytes;
  sf_cache_close(c);

  /* Room for three entries, not four; A is used again (a disk hit) so B is the oldest. */
  c = open_at(dir, three + three / 6);
  get_variant(c, "A", &b);
  cr_assert_eq(atomic_load(b.builds), 3, "A should have come from disk");
  get_variant(c, "D", &b);
  char order[8] = "";
  cr_assert_eq(sf_cache_list(c, collect, order), SF_OK);
  cr_assert_str_eq(order, "DAC", "most recent first, B evicted");
  cr_assert_eq(sf_cache_stat(c, &st), SF_OK);
  cr_assert_leq(st.bytes, st.max_bytes);
  sf_cache_close(c);
  remove_tree(dir);
}

Test(cache, prune_and_clear) {
  char *dir = fresh_dir();
  builder b = {.text = payload, .builds = shared_counter()};
  sf_cache *c = open_at(dir, 0);
  get_variant(c, "A", &b);
  get_variant(c, "B", &b);
  get_variant(c, "C", &b);
  sf_cache_stats st;
  cr_assert_eq(sf_cache_stat(c, &st), SF_OK);
  sf_cache_removed r;
  cr_assert_eq(sf_cache_prune(c, st.bytes, &r), SF_OK);
  cr_assert_eq(r.entries, 0, "within the budget: nothing to prune");
  cr_assert_eq(sf_cache_prune(c, st.bytes - 1, &r), SF_OK);
  cr_assert_eq(r.entries, 1);
  char order[8] = "";
  cr_assert_eq(sf_cache_list(c, collect, order), SF_OK);
  cr_assert_str_eq(order, "CB");

  /* A killed writer's leftovers go with clear. */
  char leftover[4096];
  entry_path(leftover, sizeof leftover, dir, "Z", ".bin.tmp");
  fclose(fopen(leftover, "w"));
  cr_assert_eq(sf_cache_clear(c, &r), SF_OK);
  cr_assert_eq(r.entries, 2);
  cr_assert_eq(r.busy, 0);
  cr_assert_eq(files_in(dir), 0);
  cr_assert_eq(sf_cache_stat(c, &st), SF_OK);
  cr_assert_eq(st.entries, 0);
  cr_assert_eq(st.bytes, 0);
  /* What this process holds stays valid. */
  cr_assert_eq(get(c, "A", &b), SF_CACHE_FROM_MEMORY);
  sf_cache_close(c);
  remove_tree(dir);
}

Test(cache, clear_leaves_a_key_being_built) {
  char *dir = fresh_dir();
  atomic_int *started = shared_counter();
  builder stuck = {.text = payload, .builds = shared_counter(), .started = started,
                   .linger_ms = 10, .forever = true, .parent = getpid()};
  pid_t child = spawn_getter(dir, &stuck, NULL);
  while (!atomic_load(started)) usleep(1000);
  sf_cache *c = open_at(dir, 0);
  sf_cache_removed r;
  cr_assert_eq(sf_cache_clear(c, &r), SF_OK);
  cr_assert_eq(r.busy, 1);
  char lock[4096];
  entry_path(lock, sizeof lock, dir, "k", ".lock");
  cr_assert(exists(lock), "the builder's lock was removed");
  kill(child, SIGKILL);
  exit_code(child);
  /* Its owner dead, the lock is free: clear now removes it. */
  cr_assert_eq(sf_cache_clear(c, &r), SF_OK);
  cr_assert_eq(r.busy, 0);
  cr_assert_not(exists(lock));
  sf_cache_close(c);
  remove_tree(dir);
}
