/* bench_table.c: the text tables of `scanforge bench`: time, GB/s and the floor per row. */
#include "cli/bench_table.h"

#include <stdio.h>

void bench_table_header(bench_pass p, bool with_det) {
  printf("%s\n", p == PASS_FWD ? "forward" : "backward (every gradient: du, ddelta, dz with z, dA, dB, dC, dD, ddelta_bias)");
  printf("%-20s %-5s %-9s %6s %9s %9s %9s %8s %9s %7s", "shape B,D,L,N", "type", "t/i/c", "waves", "time us", "min us",
         "p90 us", "GB/s", "floor us", "% floor");
  if (with_det) printf(" %9s %8s", "det us", "det cost");
  printf("\n");
}

/* The row's line of pass p's table (with the deterministic columns for the backward when
 * it was timed). */
void bench_table_row(const bench_row *r, const bench_row_result *res, bench_pass p) {
  const bench_pass_result *x = &res->pass[p];
  char label[96], config[32];
  bench_row_label(r, label, sizeof label);
  if (!x->ok) {
    printf("%-20s %-5s error: %s\n", label, sf_dtype_name(r->dtype), x->error);
    fflush(stdout);
    return;
  }
  snprintf(config, sizeof config, "%d/%d/%d%s", x->variant.threads, x->variant.items, x->variant.channels,
           x->variant.pairs ? "p" : ""); /* p: pairs=1, chosen by the launch plan or the spec */
  printf("%-20s %-5s %-9s %6.2f %9.1f %9.1f %9.1f %8.0f %9.1f %7.1f", label, sf_dtype_name(r->dtype), config,
         bench_waves(&x->shape), x->t.median * 1e3, x->t.min * 1e3, x->t.p90 * 1e3, x->bytes / (x->t.median * 1e-3) / 1e9,
         x->floor_ms * 1e3, 100.0 * x->floor_ms / x->t.median);
  const bench_pass_result *det = &res->pass[PASS_BWD_DET];
  if (p == PASS_BWD && det->ran) {
    if (det->ok)
      printf(" %9.1f %7.2fx", det->t.median * 1e3, det->t.median / x->t.median);
    else
      printf(" %9s %8s  (deterministic: %s)", "error", "-", det->error);
  }
  printf("\n");
  fflush(stdout);
}
