/* cpu_scan_bench.c: times sf_cpu_scan_fwd and sf_cpu_scan_bwd on MambaVision's fp32 call.
 *
 *   cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release && cmake --build build-rel --target scanforge
 *   cc -O2 -I. -Iruntime/include bench/cpu_scan_bench.c build-rel/libscanforge.a -lm -lpthread \
 *      -o /tmp/cpu_scan_bench && /tmp/cpu_scan_bench [reps] [threads] [batch,dim,L,N ...]
 *
 * Variable B and C (one group), D, delta_bias, softplus, no gate, as bench/tf_cpu_bench.py.
 * Prints the median and the least of `reps` runs (default 9) of each pass, in milliseconds;
 * SF_BENCH_CPU_TIME=1 times process CPU time instead of wall time, SF_BENCH_FWD_ONLY=1 skips
 * the backward. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/cpu/cpu_scan.h"
#include "runtime/cpu/cpu_scan_bwd.h"

/* Wall time, or with SF_BENCH_CPU_TIME set the process's CPU time (steadier on a shared
 * machine; with one thread it is the work itself). */
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(getenv("SF_BENCH_CPU_TIME") ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int by_value(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* Uniform in [lo, hi) from a small LCG: the numbers only need to be plausible. */
static float uniform(unsigned long long *s, float lo, float hi) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return lo + (hi - lo) * (float)((*s >> 40) * 0x1p-24);
}

static float *filled(size_t n, unsigned long long *s, float lo, float hi) {
  float *x = malloc(n * sizeof *x);
  if (!x) exit(1);
  for (size_t i = 0; i < n; i++) x[i] = uniform(s, lo, hi);
  return x;
}

static void bench(int batch, int dim, int L, int N, int reps, int threads) {
  unsigned long long s = 1;
  const size_t nu = (size_t)batch * dim * L, nbc = (size_t)batch * N * L;
  const size_t nsaved = (size_t)sf_scan_saved_states(L), ns = (size_t)batch * dim * N;
  float *u = filled(nu, &s, -2, 2), *delta = filled(nu, &s, -1, 1), *A = filled(dim * N, &s, -3, -0.3f);
  float *B = filled(nbc, &s, -2, 2), *C = filled(nbc, &s, -2, 2), *D = filled(dim, &s, -1, 1);
  float *bias = filled(dim, &s, -4.5f, -3.5f), *dout = filled(nu, &s, -1, 1);
  float *out = malloc(nu * 4), *saved = malloc(ns * nsaved * 4), *last = malloc(ns * 4);
  float *du = malloc(nu * 4), *ddelta = malloc(nu * 4), *dA = malloc(dim * N * 4);
  float *dB = malloc(nbc * 4), *dC = malloc(nbc * 4), *dD = malloc(dim * 4), *dbias = malloc(dim * 4);
  sf_scan_bwd_args a = {
      .fwd = {.batch = batch, .dim = dim, .seqlen = L, .dstate = N, .groups = 1, .dtype = SF_FP32,
              .delta_softplus = true, .u = u, .delta = delta, .A = A, .B = B, .B_var = true,
              .C = C, .C_var = true, .D = D, .delta_bias = bias, .out = out,
              .last_state = last, .saved_states = saved},
      .dout = dout, .du = du, .ddelta = ddelta, .dA = dA, .dB = dB, .dC = dC, .dD = dD,
      .ddelta_bias = dbias};
  double *fwd = malloc(reps * sizeof *fwd), *bwd = malloc(reps * sizeof *bwd);
  for (int r = -1; r < reps; r++) { /* one warm-up run */
    double t0 = now_ms();
    if (sf_cpu_scan_fwd(&a.fwd, threads) != SF_OK) exit(2);
    double t1 = now_ms();
    if (!getenv("SF_BENCH_FWD_ONLY") && sf_cpu_scan_bwd(&a, threads) != SF_OK) exit(3);
    double t2 = now_ms();
    if (r >= 0) fwd[r] = t1 - t0, bwd[r] = t2 - t1;
  }
  qsort(fwd, reps, sizeof *fwd, by_value), qsort(bwd, reps, sizeof *bwd, by_value);
  printf("%d,%d,%d,%d  fwd %8.2f ms  bwd %8.2f ms  (medians of %d, %d threads; min %.2f, %.2f)\n",
         batch, dim, L, N, fwd[reps / 2], bwd[reps / 2], reps, threads, fwd[0], bwd[0]);
  free(u), free(delta), free(A), free(B), free(C), free(D), free(bias), free(dout), free(out);
  free(saved), free(last), free(du), free(ddelta), free(dA), free(dB), free(dC), free(dD);
  free(dbias), free(fwd), free(bwd);
}

int main(int argc, char **argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 9, threads = argc > 2 ? atoi(argv[2]) : 2;
  static const char *defaults[] = {"64,160,196,8", "64,320,49,8", "8,160,196,8"};
  const int count = argc > 3 ? argc - 3 : 3;
  for (int i = 0; i < count; i++) {
    int b, d, L, N;
    if (sscanf(argc > 3 ? argv[3 + i] : defaults[i], "%d,%d,%d,%d", &b, &d, &L, &N) != 4) return 1;
    bench(b, d, L, N, reps < 1 ? 1 : reps, threads);
  }
  return 0;
}
