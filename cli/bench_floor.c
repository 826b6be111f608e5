/* bench_floor.c: counting a pass's bytes and exps, and the floor they set:
 * max(bytes / copy bandwidth, exps / exp2 rate). */
#include "cli/bench_floor.h"

#include <math.h>

/* What a row's call moves at least: every input read once, every output written once. The
 * backward reads u, delta, z, dout, B, C (in T), A, D, delta_bias and the saved states, and
 * writes du, ddelta, dz (in T), dB, dC (fp32, as the C API writes them), dA, dD and
 * ddelta_bias (tuning/measure.c counts them). */
static double row_bytes(const bench_row *r, bool backward) {
  sf_measure_shape shape = bench_row_shape(r, backward);
  return sf_measure_call_bytes(&shape);
}

/* The floor of a pass: bytes over the copy bandwidth, or exps over the exp2 rate. */
void bench_set_floor(const bench_gpu *g, const bench_row *r, bool backward, bench_pass_result *out) {
  out->bytes = row_bytes(r, backward);
  out->exps = (double)r->batch * r->dim * r->seqlen * r->dstate;
  out->floor_ms = 1e3 * fmax(out->bytes / g->copy_bytes_per_s, out->exps / g->exp2_per_s);
}
