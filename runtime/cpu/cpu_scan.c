/* cpu_scan.c: the forward selective scan on the CPU: blocks of channels (cpu_kernel.h) split
 * over threads. */
#include "runtime/cpu/cpu_scan.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "runtime/cpu/cpu_jobs.h"
#include "runtime/cpu/cpu_kernel.h"
#include "base/error.h"
#include "runtime/args/scan_args.h"

typedef struct scan_job {
  const sf_scan_fwd_args *a; /* resolved strides */
  const sf_cpu_kernels *k;
  sf_cpu_blocking blocking;
  int64_t block_begin, block_end;
  float *scratch; /* k->fwd_scratch floats of its own */
} scan_job;

static void run_job(const scan_job *job) {
  for (int64_t i = job->block_begin; i < job->block_end; i++) {
    int64_t b, d0;
    int count;
    sf_cpu_block_at(&job->blocking, i, &b, &d0, &count);
    const bool slot_begins = i == job->block_begin || !sf_cpu_same_slot(&job->blocking, i - 1, i);
    job->k->fwd_block(job->a, b, d0, count, job->scratch, slot_begins);
  }
}

static void *worker(void *arg) {
  run_job(arg);
  return NULL;
}

sf_status sf_cpu_scan_fwd(const sf_scan_fwd_args *args, int num_threads) {
  sf_scan_fwd_args a;
  sf_status st = sf_scan_fwd_prepare(args, &a);
  if (st != SF_OK) return sf_fail_context(st, "sf_cpu_scan_fwd");
  if (!sf_scan_fwd_has_work(&a)) return SF_OK;

  const sf_cpu_kernels *k = sf_cpu_kernels_select();
  const sf_cpu_blocking blocking = sf_cpu_blocking_of(&a, k->lanes);
  const int64_t blocks = sf_cpu_block_count(&blocking, a.batch);
  const int threads = sf_cpu_thread_count(num_threads, blocks);
  /* Whole cache lines per thread, so that threads never write to the same line. */
  const size_t per_thread = (k->fwd_scratch(&a) + 15) / 16 * 16;
  /* All memory is taken here, so workers cannot fail and need no error channel. */
  float *scratch = aligned_alloc(64, (size_t)threads * per_thread * sizeof(float));
  scan_job *jobs = malloc((size_t)threads * sizeof *jobs);
  pthread_t *tids = malloc((size_t)threads * sizeof *tids);
  bool *started = malloc((size_t)threads * sizeof *started);
  if (!scratch || !jobs || !tids || !started) {
    free(scratch), free(jobs), free(tids), free(started);
    return sf_fail(SF_ENOMEM, "sf_cpu_scan_fwd: no memory for the scratch of %d threads",
                   threads);
  }

  /* Equal shares of blocks: blocks differ only in their count of channels. */
  const int64_t share = blocks / threads, extra = blocks % threads;
  int64_t begin = 0;
  for (int i = 0; i < threads; i++) {
    const int64_t count = share + (i < extra);
    jobs[i] = (scan_job){&a, k, blocking, begin, begin + count, scratch + (size_t)i * per_thread};
    begin += count;
  }
  sf_cpu_run_jobs(jobs, sizeof *jobs, threads, worker, tids, started);
  free(scratch), free(jobs), free(tids), free(started);
  return SF_OK;
}
