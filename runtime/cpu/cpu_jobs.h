/* cpu_jobs.h: the CPU scans' jobs run on threads of their own. */
#ifndef SCANFORGE_CPU_JOBS_H
#define SCANFORGE_CPU_JOBS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* Runs worker(job i) for the `count` jobs of `job_size` bytes at `jobs`: job 0 on the
 * calling thread, each other on a thread of its own, and here too any job whose thread
 * could not be started. tids and started have room for `count` (taken by the caller with
 * the rest of its memory, so nothing here can fail). Returns when every job is done. */
void sf_cpu_run_jobs(void *jobs, size_t job_size, int count, void *(*worker)(void *), pthread_t *tids,
                     bool *started);

#endif
