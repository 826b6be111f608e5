/* cache_warm.c: scanforge cache warm: compile a variant grid for a list of targets ahead of time. */
#include "cli/cache_warm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "runtime/compile/compile.h"
#include "runtime/launch/kernels.h"
#include "runtime/launch_config/default_grid.h"

enum { MAX_TARGETS = 32, MAX_VARIANTS = 4096 };

/* "sm_80,sm_90,compute_90" -> targets; every arch must be one NVRTC supports. */
static int parse_targets(const char *list, sf_target *targets, int *count) {
  int archs[64], n_archs = 0;
  if (sf_nvrtc_archs(archs, 64, &n_archs) != SF_OK) return cli_fail("cache warm", "NVRTC is not available");
  char *copy = strdup(list), *save = NULL;
  *count = 0;
  for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int arch = 0;
    bool ptx = strncmp(tok, "compute_", 8) == 0;
    if ((!ptx && sscanf(tok, "sm_%d", &arch) != 1) || (ptx && sscanf(tok, "compute_%d", &arch) != 1) || arch <= 0) {
      fprintf(stderr, "scanforge cache warm: --arch: expected a list such as sm_75,sm_80,sm_90, got '%s'\n", tok);
      free(copy);
      return 2;
    }
    bool supported = false;
    for (int i = 0; i < n_archs && i < 64; i++) supported = supported || archs[i] == arch;
    if (!supported || *count == MAX_TARGETS) {
      fprintf(stderr, "scanforge cache warm: --arch: %s is not an architecture this NVRTC supports (see scanforge compile --list-archs)\n", tok);
      free(copy);
      return 2;
    }
    targets[(*count)++] = (sf_target){.arch = arch, .use_ptx = ptx};
  }
  free(copy);
  if (*count == 0) {
    fprintf(stderr, "scanforge cache warm: --arch: no architecture given\n");
    return 2;
  }
  return 0;
}

/* A grid file: one spec a line, '#' comments, blank lines ignored. */
static int read_grid(const char *path, sf_variant *variants, int *count) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "scanforge cache warm: --grid: cannot open '%s'\n", path);
    return 2;
  }
  char line[1024];
  int lineno = 0;
  *count = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    line[strcspn(line, "#\r\n")] = '\0';
    char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (!*p) continue;
    if (*count == MAX_VARIANTS || sf_variant_parse(p, &variants[*count]) != SF_OK) {
      fprintf(stderr, "scanforge cache warm: %s:%d: %s\n", path, lineno,
                      *count == MAX_VARIANTS ? "too many variants" : sf_last_error());
      fclose(f);
      return 2;
    }
    (*count)++;
  }
  fclose(f);
  return 0;
}

typedef struct warm_job {
  sf_cache *cache;
  const sf_variant *variants;
  const sf_target *targets;
  int n_variants, n_targets;
  pthread_mutex_t lock;
  int next, done, built, from_cache, failed;
  struct timespec start;
} warm_job;

static double seconds_since(const struct timespec *start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) * 1e-9;
}

static void *warm_worker(void *arg) {
  warm_job *job = arg;
  const int total = job->n_variants * job->n_targets;
  for (;;) {
    pthread_mutex_lock(&job->lock);
    int task = job->next++;
    pthread_mutex_unlock(&job->lock);
    if (task >= total) return NULL;
    const sf_variant *v = &job->variants[task / job->n_targets];
    sf_target target = job->targets[task % job->n_targets];
    const void *data;
    size_t size;
    sf_cache_source where;
    sf_status st = sf_variant_binary(job->cache, target, v, &data, &size, &where);
    char spec[512], name[32];
    sf_variant_format(v, spec, sizeof spec);
    sf_target_format(target, name, sizeof name);
    pthread_mutex_lock(&job->lock);
    job->done++;
    if (st != SF_OK) {
      job->failed++;
      fprintf(stderr, "failed   %-12s %s: %s\n", name, spec, sf_last_error());
    } else {
      where == SF_CACHE_BUILT ? job->built++ : job->from_cache++;
      double elapsed = seconds_since(&job->start);
      double eta = elapsed / job->done * (total - job->done);
      fprintf(stderr, "[%4d/%d] %-8s %-12s %s (%zu bytes; ETA %.0f s)\n", job->done, total,
              where == SF_CACHE_BUILT ? "compiled" : "cached", name, spec, size, eta);
    }
    pthread_mutex_unlock(&job->lock);
  }
}

int cache_warm_check_arch(const char *arch_list) {
  sf_target targets[MAX_TARGETS];
  int n_targets = 0;
  return parse_targets(arch_list, targets, &n_targets);
}

int cache_warm(sf_cache *cache, const char *arch_list, const char *grid, int jobs) {
  sf_target targets[MAX_TARGETS];
  int n_targets = 0;
  int rc = parse_targets(arch_list, targets, &n_targets);
  if (rc) return rc;
  sf_variant *variants = malloc(MAX_VARIANTS * sizeof *variants);
  if (!variants) return cli_fail("cache warm", "out of memory");
  int n_variants = 0;
  if (!grid || strcmp(grid, "default") == 0) {
    n_variants = sf_default_grid(variants, MAX_VARIANTS);
    if (n_variants < 0 || n_variants > MAX_VARIANTS) {
      free(variants);
      return n_variants < 0 ? cli_fail("cache warm", "out of memory")
                            : cli_fail("cache warm", "the default grid has more variants than it can hold");
    }
  } else if ((rc = read_grid(grid, variants, &n_variants))) {
    free(variants);
    return rc;
  }
  if (jobs <= 0) jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (jobs < 1) jobs = 1;
  if (jobs > 64) jobs = 64;
  warm_job job = {.cache = cache, .variants = variants, .targets = targets,
                  .n_variants = n_variants, .n_targets = n_targets};
  pthread_mutex_init(&job.lock, NULL);
  clock_gettime(CLOCK_MONOTONIC, &job.start);
  pthread_t threads[64];
  int started = 0;
  for (int i = 0; i < jobs; i++)
    if (pthread_create(&threads[i], NULL, warm_worker, &job) == 0) started++;
  if (started == 0) warm_worker(&job);
  for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
  printf("warmed %d variants x %d targets in %.1f s: %d compiled, %d already cached, %d failed\n",
         n_variants, n_targets, seconds_since(&job.start), job.built, job.from_cache, job.failed);
  pthread_mutex_destroy(&job.lock);
  free(variants);
  return job.failed ? 1 : 0;
}
