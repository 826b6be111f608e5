/* test_cache_stress.c: one cache directory under fire for a few seconds: 16 processes
 * get and build entries through the cache API (synthetic bytes, checked on every get),
 * two run `scanforge cache warm` on overlapping grids (real NVRTC cubins), while others
 * run `scanforge cache clear` and `scanforge cache prune` in a loop. Afterwards every
 * entry verifies, no temporary, lock or lone manifest file is left, and no process saw
 * wrong bytes or failed. CPU only; about 10-30 s on 2 cores (docs/design-cache.md). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
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
#include "runtime/cache/cache_entry.h"
#include "base/error.h"
#include "tests/support/temp_dir.h"

#ifndef SCANFORGE_CLI_PATH
#define SCANFORGE_CLI_PATH "scanforge"
#endif

enum {
  API_WORKERS = 16,
  KEYS = 48,            /* the pool the API workers draw from: they overlap all the time */
  GETS_PER_OPEN = 8,    /* then the cache is closed and opened again: disk loads, not memory */
  WORK_SECONDS = 8,     /* how long the workers start new work */
  WORKER_BUDGET = 256 << 10, /* small: eviction runs all the time too */
};

static const char synthetic_subdir[] = "sm_stress";

/* ---- what every process shares --------------------------------------------------- */

typedef struct shared {
  atomic_int stop; /* the cleaners stop once the workers are done */
  atomic_long gets, built, from_disk, from_memory, cleaner_runs, warm_runs;
  atomic_int failures;
  atomic_flag failure_taken;
  char failure[2048]; /* the first failure's text */
} shared;

static shared *board;

static void record_failure(const char *fmt, ...) {
  atomic_fetch_add(&board->failures, 1);
  if (atomic_flag_test_and_set(&board->failure_taken)) return;
  va_list args;
  va_start(args, fmt);
  vsnprintf(board->failure, sizeof board->failure, fmt, args);
  va_end(args);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- synthetic entries: key n's bytes are known to every process ------------------- */

static size_t payload_size(int n) { return 512 + (size_t)((unsigned)n * 2654435761u % 20000u); }

static void fill_payload(int n, unsigned char *out, size_t size) {
  uint32_t x = 0x9e3779b9u * (uint32_t)(n + 1);
  for (size_t i = 0; i < size; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    out[i] = (unsigned char)x;
  }
}

static sf_cache_key key_of(int n) {
  const char source[] = "stress test entry";
  sf_cache_input in[] = {{"source", source, sizeof source}, {"n", &n, sizeof n}};
  return sf_cache_key_of(in, 2);
}

static sf_status build(void *user, void **data, size_t *size) {
  const int n = *(const int *)user;
  *size = payload_size(n);
  *data = malloc(*size);
  if (!*data) return sf_fail(SF_ENOMEM, "out of memory");
  fill_payload(n, *data, *size);
  return SF_OK;
}

/* True when `data` is key n's bytes. */
static bool payload_ok(int n, const void *data, size_t size) {
  if (size != payload_size(n)) return false;
  unsigned char *expected = malloc(size);
  fill_payload(n, expected, size);
  const bool same = memcmp(expected, data, size) == 0;
  free(expected);
  return same;
}

/* ---- the processes ------------------------------------------------------------------- */

static void api_worker(const char *dir, int id, double deadline) {
  unsigned seed = (unsigned)id * 7919u + 1;
  while (now_s() < deadline) {
    sf_cache_options opt = {.dir = dir, .max_bytes = WORKER_BUDGET};
    sf_cache *cache;
    if (sf_cache_open(&opt, &cache) != SF_OK) {
      record_failure("worker %d: cannot open the cache: %s", id, sf_last_error());
      return;
    }
    for (int g = 0; g < GETS_PER_OPEN; g++) {
      int n = (int)(rand_r(&seed) % KEYS);
      const sf_cache_key key = key_of(n);
      const void *data;
      size_t size;
      sf_cache_source where;
      sf_status s = sf_cache_get_or_build(cache, &key, synthetic_subdir, "{\"test\":\"stress\"}", build, &n, &data,
                                          &size, &where);
      atomic_fetch_add(&board->gets, 1);
      if (s != SF_OK) {
        record_failure("worker %d: key %d: %s: %s", id, n, sf_status_name(s), sf_last_error());
      } else if (!payload_ok(n, data, size)) {
        record_failure("worker %d: key %d: wrong bytes (%zu, from %s)", id, n, size, sf_cache_source_name(where));
      } else {
        atomic_fetch_add(where == SF_CACHE_BUILT       ? &board->built
                         : where == SF_CACHE_FROM_DISK ? &board->from_disk
                                                       : &board->from_memory,
                         1);
      }
    }
    /* Nothing here is a reason to give up the disk: a warning is a bug. */
    if (sf_cache_warning(cache)) record_failure("worker %d: %s", id, sf_cache_warning(cache));
    sf_cache_close(cache);
  }
}

/* Runs the CLI with `args` (NULL-terminated), its output into `log`; a failure is
 * recorded with what it printed. */
static void run_cli(const char *log, const char *const *args, const char *what) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(126);
    execv(SCANFORGE_CLI_PATH, (char *const *)args);
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) {
    record_failure("%s: cannot run %s", what, SCANFORGE_CLI_PATH);
    return;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  char printed[1024] = "";
  FILE *f = fopen(log, "r");
  if (f) {
    printed[fread(printed, 1, sizeof printed - 1, f)] = '\0';
    fclose(f);
  }
  record_failure("%s: %s %d, having printed: %s", what, WIFEXITED(status) ? "exit" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), printed[0] ? printed : "(nothing)");
}

static void cleaner(const char *dir, const char *action, int id, double deadline) {
  char log[4096];
  snprintf(log, sizeof log, "%s/cleaner%d.log", dir, id);
  const char *clear[] = {SCANFORGE_CLI_PATH, "cache", "clear", NULL};
  const char *prune[] = {SCANFORGE_CLI_PATH, "cache", "prune", "--max-bytes", "64K", NULL};
  while (!atomic_load(&board->stop) && now_s() < deadline) {
    run_cli(log, strcmp(action, "clear") == 0 ? clear : prune, action);
    atomic_fetch_add(&board->cleaner_runs, 1);
    usleep(20000);
  }
}

static void warmer(const char *dir, const char *grid, int id, double deadline) {
  char log[4096];
  snprintf(log, sizeof log, "%s/warm%d.log", dir, id);
  const char *args[] = {SCANFORGE_CLI_PATH, "cache", "warm", "--arch", "sm_80", "--grid", grid, "--jobs", "1", NULL};
  while (now_s() < deadline) {
    run_cli(log, args, "cache warm");
    atomic_fetch_add(&board->warm_runs, 1);
  }
}

/* ---- checking the directory afterwards ------------------------------------------------- */

static bool parse_hex(const char hex[33], sf_cache_key *key) {
  for (int i = 0; i < 16; i++) {
    unsigned byte;
    if (sscanf(hex + 2 * i, "%2x", &byte) != 1) return false;
    key->bytes[i] = (uint8_t)byte;
  }
  return true;
}

/* The pool index of a synthetic key, or -1. */
static int index_of(const char hex[33]) {
  for (int n = 0; n < KEYS; n++) {
    const sf_cache_key key = key_of(n);
    char h[33];
    sf_cache_key_hex(&key, h);
    if (strcmp(h, hex) == 0) return n;
  }
  return -1;
}

/* Every file of one target folder: entries verify, nothing else is left. */
static int check_folder(const char *path, bool synthetic) {
  DIR *d = opendir(path);
  cr_assert_not_null(d, "%s: %s", path, strerror(errno));
  int entries = 0;
  for (struct dirent *de; (de = readdir(d));) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    char hex[33], file[4096 + 512];
    sf_entry_file kind;
    snprintf(file, sizeof file, "%s/%s", path, de->d_name);
    cr_assert(sf_entry_parse_name(de->d_name, hex, &kind), "a stray file: %s", file);
    cr_expect(kind == SF_FILE_BIN || kind == SF_FILE_JSON, "a temporary or lock file left: %s", file);
    if (kind == SF_FILE_JSON) {
      snprintf(file, sizeof file, "%s/%s.bin", path, hex);
      cr_expect_eq(access(file, F_OK), 0, "a manifest without its binary: %s.json", hex);
    }
    if (kind != SF_FILE_BIN) continue;
    sf_cache_key key;
    cr_assert(parse_hex(hex, &key));
    void *data = NULL;
    size_t size = 0;
    cr_expect_eq(sf_entry_load(file, &key, 0, &data, &size), SF_ENTRY_OK, "%s does not verify", file);
    if (synthetic) {
      const int n = index_of(hex);
      cr_expect_geq(n, 0, "%s: not a key of this test", file);
      if (n >= 0) cr_expect(payload_ok(n, data, size), "%s: the checksum holds but the bytes are not key %d's", file, n);
    }
    free(data);
    entries++;
  }
  closedir(d);
  return entries;
}

static void write_grid(const char *path, const char *const *specs, int count) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  for (int i = 0; i < count; i++) fprintf(f, "%s\n", specs[i]);
  fclose(f);
}

Test(cache_stress, many_writers_against_clear_and_prune, .timeout = 300) {
  char *base = temp_dir_for_test("sf_cache_stress_");
  cr_assert_not_null(base);
  char dir[1024], grid_a[1024], grid_b[1024];
  snprintf(dir, sizeof dir, "%s/cache", base);
  snprintf(grid_a, sizeof grid_a, "%s/grid_a.txt", base);
  snprintf(grid_b, sizeof grid_b, "%s/grid_b.txt", base);
  /* Two small grids sharing a variant: both warmers compile it. */
  const char *const specs[] = {
      "op=fwd,split=state,dstate=8,dtype=fp32,threads=4,items=16,channels=16,states=1,minblocks=0,z=0,D=1,"
      "delta_bias=1,softplus=1,B=var,C=var,deterministic=0",
      "op=fwd,split=time,dstate=8,dtype=fp32,threads=32,items=8,channels=4,states=1,minblocks=0,z=0,D=1,"
      "delta_bias=1,softplus=1,B=var,C=var,deterministic=0"};
  write_grid(grid_a, specs, 1);
  write_grid(grid_b, specs, 2);
  setenv("SCANFORGE_CACHE_DIR", dir, 1); /* for the CLI's clear, prune and warm */
  unsetenv("SCANFORGE_CACHE_MAX_BYTES");

  board = mmap(NULL, sizeof *board, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(board, MAP_FAILED);
  memset(board, 0, sizeof *board);
  atomic_flag_clear(&board->failure_taken);

  /* The cache exists before anyone races to create it (that race is tested elsewhere). */
  sf_cache *cache;
  sf_cache_options opt = {.dir = dir};
  cr_assert_eq(sf_cache_open(&opt, &cache), SF_OK);
  sf_cache_close(cache);

  const double deadline = now_s() + WORK_SECONDS;
  pid_t workers[API_WORKERS + 2], cleaners[2];
  int worker_count = 0;
  for (int i = 0; i < API_WORKERS + 2; i++) {
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
      if (i < API_WORKERS) api_worker(dir, i, deadline);
      else warmer(base, i == API_WORKERS ? grid_a : grid_b, i, deadline);
      _exit(0);
    }
    workers[worker_count++] = pid;
  }
  for (int i = 0; i < 2; i++) {
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
      /* They stop a little before the workers, so that what is left afterwards is more
       * than one clear leaves. */
      cleaner(base, i == 0 ? "clear" : "prune", i, deadline - 2);
      _exit(0);
    }
    cleaners[i] = pid;
  }
  for (int i = 0; i < worker_count; i++) {
    int status;
    cr_assert_eq(waitpid(workers[i], &status, 0), workers[i]);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "worker %d ended with status %#x", i, status);
  }
  atomic_store(&board->stop, 1);
  for (int i = 0; i < 2; i++) {
    int status;
    cr_assert_eq(waitpid(cleaners[i], &status, 0), cleaners[i]);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "cleaner %d ended with status %#x", i, status);
  }

  cr_log_info("%ld gets (%ld built, %ld from disk, %ld from memory), %ld clear/prune runs, %ld warm runs",
              atomic_load(&board->gets), atomic_load(&board->built), atomic_load(&board->from_disk),
              atomic_load(&board->from_memory), atomic_load(&board->cleaner_runs), atomic_load(&board->warm_runs));
  cr_expect_eq(atomic_load(&board->failures), 0, "%d failures; the first: %s", atomic_load(&board->failures),
               board->failure);
  cr_expect_gt(atomic_load(&board->gets), API_WORKERS, "every worker got something");
  cr_expect_gt(atomic_load(&board->cleaner_runs), 2, "the cleaners ran");
  cr_expect_gt(atomic_load(&board->warm_runs), 1, "the warmers ran");

  /* Afterwards: whatever is left is whole. */
  char path[2048];
  snprintf(path, sizeof path, "%s/v1", dir);
  DIR *d = opendir(path);
  cr_assert_not_null(d);
  int entries = 0;
  for (struct dirent *de; (de = readdir(d));) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    char folder[2048 + 256];
    snprintf(folder, sizeof folder, "%s/%s", path, de->d_name);
    struct stat st;
    cr_assert_eq(lstat(folder, &st), 0);
    cr_expect(S_ISDIR(st.st_mode), "a stray file in v1: %s", folder);
    if (S_ISDIR(st.st_mode)) entries += check_folder(folder, strcmp(de->d_name, synthetic_subdir) == 0);
  }
  closedir(d);
  cr_log_info("%d entries left, all verified", entries);
  munmap(board, sizeof *board);
  free(base);
}
