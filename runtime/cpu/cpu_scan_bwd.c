/* cpu_scan_bwd.c: the backward selective scan on the CPU: blocks of channels (cpu_kernel.h)
 * split over threads, each thread's reductions in its own buffers, summed in a fixed order. */
#include "runtime/cpu/cpu_scan_bwd.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/cpu/cpu_jobs.h"
#include "runtime/cpu/cpu_kernel.h"
#include "base/error.h"
#include "runtime/args/scan_args.h"
#include "runtime/args/scan_bwd_args.h"


/* The reductions a thread keeps to itself: per channel (dA, fixed dB and dC: N wide; dD,
 * ddelta_bias: 1 wide) or per (batch, group) slot (variable dB and dC: N * L wide). */
enum { P_DA, P_DB_FIXED, P_DC_FIXED, P_DD, P_DDELTA_BIAS, P_DB_VAR, P_DC_VAR, PRIVATE };

/* One thread's blocks and its private share of the reductions. Its blocks cover the rows
 * [row_begin, row_end), which meet at most min(rows, dim) channels, consecutive modulo dim
 * from the first row's channel, and a consecutive range of (batch, group) slots: its
 * buffers cover only those, so they cost about one copy of each reduced gradient in all. */
typedef struct bwd_job {
  const sf_scan_bwd_args *a; /* resolved strides */
  const sf_cpu_kernels *k;
  sf_cpu_blocking blocking;
  int64_t block_begin, block_end;
  float *scratch; /* k->bwd_scratch floats of its own */

  int64_t chan_count, slot_count;
  sf_cpu_bwd_sink sink; /* zeroed private buffers, NULL when not asked for */
  float *memory;        /* the one allocation they point into */
} bwd_job;

static void run_job(const bwd_job *job) {
  for (int64_t i = job->block_begin; i < job->block_end; i++) {
    int64_t b, d0;
    int count;
    sf_cpu_block_at(&job->blocking, i, &b, &d0, &count);
    const bool slot_begins = i == job->block_begin || !sf_cpu_same_slot(&job->blocking, i - 1, i);
    const bool slot_ends = i + 1 == job->block_end || !sf_cpu_same_slot(&job->blocking, i, i + 1);
    job->k->bwd_block(job->a, &job->sink, b, d0, count, job->scratch, slot_begins, slot_ends);
  }
}

static void *worker(void *arg) {
  run_job(arg);
  return NULL;
}

/* The private buffer `which` of a sink. */
static float **own(sf_cpu_bwd_sink *sink, int which) {
  float **all[PRIVATE] = {&sink->dA, &sink->dB_fixed, &sink->dC_fixed, &sink->dD,
                          &sink->ddelta_bias, &sink->dB_var, &sink->dC_var};
  return all[which];
}

/* Sets the job's blocks [begin, end) and takes its zeroed private buffers, only for the
 * gradients asked for. */
static bool job_init(bwd_job *job, const sf_scan_bwd_args *a, const sf_cpu_kernels *k,
                     const sf_cpu_blocking *blocking, int64_t begin, int64_t end,
                     float *scratch) {
  const sf_scan_fwd_args *f = &a->fwd;
  const int64_t N = f->dstate, L = f->seqlen;
  *job = (bwd_job){.a = a, .k = k, .blocking = *blocking, .block_begin = begin,
                   .block_end = end, .scratch = scratch};
  if (begin == end) return true;
  /* The rows the blocks cover: from the first block's first to the last block's last. */
  int64_t b, d0;
  int count;
  sf_cpu_block_at(blocking, begin, &b, &d0, &count);
  const int64_t row_begin = b * f->dim + d0;
  sf_cpu_block_at(blocking, end - 1, &b, &d0, &count);
  const int64_t row_end = b * f->dim + d0 + count, rows = row_end - row_begin;

  job->sink.chan_first = row_begin % f->dim;
  job->chan_count = rows < f->dim ? rows : f->dim;
  if (f->B_var || f->C_var) {
    const int64_t per_group = f->dim / f->groups;
    const int64_t first = (row_begin / f->dim) * f->groups + (row_begin % f->dim) / per_group;
    const int64_t last = ((row_end - 1) / f->dim) * f->groups + ((row_end - 1) % f->dim) / per_group;
    job->sink.slot_first = first;
    job->slot_count = last - first + 1;
  }
  const size_t chans = (size_t)job->chan_count, slots = (size_t)job->slot_count;
  size_t sizes[PRIVATE] = {0};
  sizes[P_DA] = a->dA ? chans * N : 0;
  sizes[P_DB_FIXED] = a->dB && !f->B_var ? chans * N : 0;
  sizes[P_DC_FIXED] = a->dC && !f->C_var ? chans * N : 0;
  sizes[P_DD] = a->dD ? chans : 0;
  sizes[P_DDELTA_BIAS] = a->ddelta_bias ? chans : 0;
  sizes[P_DB_VAR] = a->dB && f->B_var ? slots * N * L : 0;
  sizes[P_DC_VAR] = a->dC && f->C_var ? slots * N * L : 0;
  size_t total = 0;
  for (int i = 0; i < PRIVATE; i++) total += sizes[i];
  if (total == 0) return true;
  job->memory = calloc(total, sizeof(float));
  if (!job->memory) return false;
  float *next = job->memory;
  for (int i = 0; i < PRIVATE; i++) {
    if (sizes[i]) *own(&job->sink, i) = next;
    next += sizes[i];
  }
  return true;
}

/* out (dim, width) = the jobs' per-channel buffers, summed in job order. */
static void reduce_channels(bwd_job *jobs, int threads, int which, int64_t dim, int64_t width,
                            float *out) {
  memset(out, 0, (size_t)dim * (size_t)width * sizeof(float));
  for (int i = 0; i < threads; i++) {
    const float *mine = *own(&jobs[i].sink, which);
    for (int64_t c = 0; mine && c < jobs[i].chan_count; c++) {
      float *dst = out + ((jobs[i].sink.chan_first + c) % dim) * width;
      for (int64_t x = 0; x < width; x++) dst[x] += mine[c * width + x];
    }
  }
}

/* out (slots, width) = the jobs' per-slot buffers, summed in job order. */
static void reduce_slots(bwd_job *jobs, int threads, int which, int64_t slots, int64_t width,
                         float *out) {
  memset(out, 0, (size_t)slots * (size_t)width * sizeof(float));
  for (int i = 0; i < threads; i++) {
    const float *mine = *own(&jobs[i].sink, which);
    float *dst = out + jobs[i].sink.slot_first * width;
    for (int64_t x = 0; mine && x < jobs[i].slot_count * width; x++) dst[x] += mine[x];
  }
}

static void free_jobs(bwd_job *jobs, int threads) {
  for (int i = 0; jobs && i < threads; i++) free(jobs[i].memory);
  free(jobs);
}

sf_status sf_cpu_scan_bwd(const sf_scan_bwd_args *args, int num_threads) {
  sf_scan_bwd_args a;
  sf_status st = sf_scan_bwd_prepare(args, &a);
  if (st != SF_OK) return sf_fail_context(st, "sf_cpu_scan_bwd");
  if (!sf_scan_bwd_has_work(&a)) return SF_OK;

  const sf_scan_fwd_args *f = &a.fwd;
  const sf_cpu_kernels *k = sf_cpu_kernels_select();
  const sf_cpu_blocking blocking = sf_cpu_blocking_of(f, k->lanes);
  const int64_t blocks = sf_cpu_block_count(&blocking, f->batch);
  const int threads = sf_cpu_thread_count(num_threads, blocks);
  /* Whole cache lines per thread, so that threads never write to the same line. */
  const size_t per_thread = (k->bwd_scratch(f) + 15) / 16 * 16;
  /* All memory is taken here, so workers cannot fail and need no error channel. */
  float *scratch = aligned_alloc(64, (size_t)threads * per_thread * sizeof(float));
  bwd_job *jobs = calloc((size_t)threads, sizeof *jobs);
  pthread_t *tids = malloc((size_t)threads * sizeof *tids);
  bool *started = malloc((size_t)threads * sizeof *started);
  bool ok = scratch && jobs && tids && started;

  /* Equal shares of blocks: blocks differ only in their count of channels. */
  const int64_t share = blocks / threads, extra = blocks % threads;
  int64_t begin = 0;
  for (int i = 0; ok && i < threads; i++) {
    const int64_t count = share + (i < extra);
    ok = job_init(&jobs[i], &a, k, &blocking, begin, begin + count,
                  scratch + (size_t)i * per_thread);
    begin += count;
  }
  if (!ok) {
    free(scratch), free_jobs(jobs, threads), free(tids), free(started);
    return sf_fail(SF_ENOMEM, "sf_cpu_scan_bwd: no memory for the scratch and reductions of %d "
                              "threads", threads);
  }

  sf_cpu_run_jobs(jobs, sizeof *jobs, threads, worker, tids, started);

  const int64_t N = f->dstate, slots = f->batch * f->groups, NL = N * f->seqlen;
  if (a.dA) reduce_channels(jobs, threads, P_DA, f->dim, N, a.dA);
  if (a.dD) reduce_channels(jobs, threads, P_DD, f->dim, 1, a.dD);
  if (a.ddelta_bias) reduce_channels(jobs, threads, P_DDELTA_BIAS, f->dim, 1, a.ddelta_bias);
  if (a.dB && f->B_var) reduce_slots(jobs, threads, P_DB_VAR, slots, NL, a.dB);
  if (a.dB && !f->B_var) reduce_channels(jobs, threads, P_DB_FIXED, f->dim, N, a.dB);
  if (a.dC && f->C_var) reduce_slots(jobs, threads, P_DC_VAR, slots, NL, a.dC);
  if (a.dC && !f->C_var) reduce_channels(jobs, threads, P_DC_FIXED, f->dim, N, a.dC);

  free(scratch), free_jobs(jobs, threads), free(tids), free(started);
  return SF_OK;
}
