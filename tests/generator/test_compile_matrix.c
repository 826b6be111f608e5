/* test_compile_matrix.c: every variant of the matrix generates and compiles cleanly for sm_75 and sm_90. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "generator/generator.h"
#include "runtime/compile/compile.h"

/* Two compiles at a time: CI machines have two cores shared with other jobs. */
enum { WORKERS = 2, MAX_SPECS = 128, SPEC_CHARS = 256 };
static const int archs[] = {75, 90};
enum { ARCH_COUNT = sizeof archs / sizeof archs[0] };

typedef struct job {
  char spec[SPEC_CHARS];
  int arch;
  char *problem; /* NULL when it generated and compiled with a clean log */
} job;

typedef struct matrix {
  job *jobs;
  int count;
  atomic_int next;
} matrix;

/* dstate 1..256 for each dtype with every flag on, then all 2^6 flag combinations at
 * dstate 16 in bf16 (B and C "var" are loaded in T, so a 16-bit type exercises the most). */
static int build_specs(char specs[][SPEC_CHARS]) {
  static const int dstates[] = {1, 3, 4, 8, 16, 32, 64, 128, 256};
  static const char *const dtypes[] = {"fp32", "fp16", "bf16"};
  int n = 0;
  for (size_t d = 0; d < sizeof dstates / sizeof dstates[0]; d++)
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++)
      snprintf(specs[n++], SPEC_CHARS, "op=fwd,dstate=%d,dtype=%s,z=1,D=1,delta_bias=1,softplus=1",
               dstates[d], dtypes[t]);
  for (int bits = 0; bits < 64; bits++)
    snprintf(specs[n++], SPEC_CHARS,
             "op=fwd,dstate=16,dtype=bf16,z=%d,D=%d,delta_bias=%d,softplus=%d,B=%s,C=%s",
             bits & 1, (bits >> 1) & 1, (bits >> 2) & 1, (bits >> 3) & 1,
             (bits & 16) ? "var" : "fixed", (bits & 32) ? "var" : "fixed");
  return n;
}

static char *describe(const char *what, const char *detail) {
  size_t length = strlen(what) + strlen(detail) + 3;
  char *text = malloc(length);
  if (text) snprintf(text, length, "%s: %s", what, detail);
  return text;
}

/* Generates and compiles one job; leaves a description of what went wrong, if anything. */
static void run_job(job *j) {
  sf_variant variant;
  char *source = NULL;
  size_t length;
  if (sf_variant_parse(j->spec, &variant) != SF_OK || sf_variant_validate(&variant) != SF_OK) {
    j->problem = describe("bad spec", sf_last_error());
    return;
  }
  if (sf_generate(&variant, &source, &length) != SF_OK) {
    j->problem = describe("generation failed", sf_last_error());
    return;
  }
  sf_binary binary;
  sf_status status = sf_compile(source, "scan_fwd.cu", j->arch, false, &binary);
  free(source);
  if (status != SF_OK) {
    j->problem = describe(sf_status_name(status), sf_last_error());
    return;
  }
  if (strstr(binary.log, "warning")) j->problem = describe("warning in the NVRTC log", binary.log);
  sf_binary_free(&binary);
}

static void *worker(void *arg) {
  matrix *m = arg;
  for (int i; (i = atomic_fetch_add(&m->next, 1)) < m->count;) run_job(&m->jobs[i]);
  return NULL;
}

static double seconds_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

Test(compile_matrix, every_variant_compiles_without_warnings, .timeout = 900) {
  static char specs[MAX_SPECS][SPEC_CHARS];
  int spec_count = build_specs(specs);
  cr_assert_leq(spec_count, MAX_SPECS);

  matrix m = {.jobs = calloc((size_t)spec_count * ARCH_COUNT, sizeof(job)), .count = 0};
  cr_assert_not_null(m.jobs);
  for (int s = 0; s < spec_count; s++)
    for (int a = 0; a < ARCH_COUNT; a++) {
      memcpy(m.jobs[m.count].spec, specs[s], SPEC_CHARS);
      m.jobs[m.count++].arch = archs[a];
    }
  atomic_init(&m.next, 0);

  double start = seconds_now();
  pthread_t threads[WORKERS];
  for (int w = 0; w < WORKERS; w++) cr_assert_eq(pthread_create(&threads[w], NULL, worker, &m), 0);
  for (int w = 0; w < WORKERS; w++) pthread_join(threads[w], NULL);
  double elapsed = seconds_now() - start;
  /* Reported, not asserted: CI watches that the matrix stays well under ten minutes. */
  fprintf(stderr, "compile matrix: %d compiles (%d specs x %d archs) on %d workers in %.1f s\n",
          m.count, spec_count, ARCH_COUNT, WORKERS, elapsed);

  int failures = 0;
  for (int i = 0; i < m.count; i++) {
    if (!m.jobs[i].problem) continue;
    if (failures++ < 5) /* the first few in full; the count says the rest */
      cr_log_error("%s for sm_%d: %s", m.jobs[i].spec, m.jobs[i].arch, m.jobs[i].problem);
    free(m.jobs[i].problem);
  }
  free(m.jobs);
  cr_assert_eq(failures, 0, "%d of %d compiles failed or warned (the first are logged above)", failures,
               m.count);
}
