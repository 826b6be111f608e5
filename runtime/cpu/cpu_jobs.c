/* cpu_jobs.c: the CPU scans' jobs run on threads of their own. */
#include "runtime/cpu/cpu_jobs.h"

void sf_cpu_run_jobs(void *jobs, size_t job_size, int count, void *(*worker)(void *), pthread_t *tids,
                     bool *started) {
  char *job = jobs;
  for (int i = 1; i < count; i++) started[i] = pthread_create(&tids[i], NULL, worker, job + i * job_size) == 0;
  worker(job);
  for (int i = 1; i < count; i++) {
    if (started[i])
      pthread_join(tids[i], NULL);
    else
      worker(job + i * job_size);
  }
}
