/* consumer.c: a program outside scanforge's build, compiled against an installed copy
 * (scripts/test-install.sh): it uses only <scanforge/scanforge.h> and checks a few calls,
 * among them a forward scan on the CPU against the equations of docs/math.md. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <scanforge/scanforge.h>

enum { DIM = 2, L = 5, N = 3 };

static int failures;
static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "consumer: FAILED: %s (%s)\n", what, sf_last_error());
    failures++;
  }
}

int main(void) {
  check(strcmp(sf_status_name(SF_EINVAL), "SF_EINVAL") == 0, "sf_status_name");

  sf_variant v;
  check(sf_variant_parse("op=fwd,dstate=16,dtype=bf16", &v) == SF_OK, "sf_variant_parse");
  char spec[512];
  sf_variant_format(&v, spec, sizeof spec);
  check(strstr(spec, "dstate=16") && strstr(spec, "dtype=bf16"), "sf_variant_format");
  check(sf_variant_parse("dstate=0", &v) == SF_EINVAL && strstr(sf_last_error(), "dstate"),
        "a bad spec names its key");

  /* One batch row, fp32, variable B and C in one group, no optional inputs. */
  float u[DIM][L], delta[DIM][L], A[DIM][N], B[N][L], C[N][L], out[DIM][L];
  for (int d = 0; d < DIM; d++)
    for (int t = 0; t < L; t++) u[d][t] = 0.5f + 0.25f * d - 0.1f * t, delta[d][t] = 0.1f + 0.05f * t;
  for (int n = 0; n < N; n++) {
    for (int d = 0; d < DIM; d++) A[d][n] = -0.5f - 0.5f * n - 0.25f * d;
    for (int t = 0; t < L; t++) B[n][t] = 0.3f * (n + 1) - 0.05f * t, C[n][t] = 1.0f - 0.2f * n + 0.1f * t;
  }
  sf_scan_fwd_args args = {.batch = 1, .dim = DIM, .seqlen = L, .dstate = N, .groups = 1, .dtype = SF_FP32,
                           .u = u, .delta = delta, .A = &A[0][0], .B = B, .B_var = true, .C = C, .C_var = true,
                           .out = out};
  sf_context_options options = {.cache_memory_only = true};
  sf_context *ctx = NULL;
  check(sf_context_create(&options, &ctx) == SF_OK, "sf_context_create");
  sf_launch host = {.on_host = true, .host_threads = 1};
  check(ctx && sf_scan_fwd(ctx, &args, &host) == SF_OK, "sf_scan_fwd on the host");
  for (int d = 0; d < DIM; d++) {
    double h[N] = {0};
    for (int t = 0; t < L; t++) {
      double y = 0;
      for (int n = 0; n < N; n++) {
        h[n] = exp((double)delta[d][t] * A[d][n]) * h[n] + (double)delta[d][t] * B[n][t] * u[d][t];
        y += C[n][t] * h[n];
      }
      if (fabs(out[d][t] - y) > 1e-5 * (1 + fabs(y))) {
        fprintf(stderr, "consumer: out[%d][%d] = %g, expected %g\n", d, t, out[d][t], y);
        failures++;
      }
    }
  }
  sf_context_destroy(ctx);
  if (failures == 0) printf("consumer: scanforge works from the installed copy\n");
  return failures == 0 ? 0 : 1;
}
