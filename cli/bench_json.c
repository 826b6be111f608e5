/* bench_json.c: a row of `scanforge bench --json`: its shape and each pass's numbers. */
#include "cli/bench_json.h"

#include "cli/scan_common.h"

const char *const bench_pass_key[PASSES] = {"forward", "backward", "backward_deterministic"};

/* One pass as JSON (into j): variant, its launch's shape, times, bytes, floor. */
static void pass_json(json_t *j, const bench_pass_result *x) {
  char spec[512];
  json_object_set_new(j, "ok", json_boolean(x->ok));
  if (!x->ok) {
    json_object_set_new(j, "error", json_string(x->error));
    return;
  }
  sf_variant_format(&x->variant, spec, sizeof spec);
  json_object_set_new(j, "variant", json_string(spec));
  json_object_set_new(j, "threads", json_integer(x->variant.threads));
  json_object_set_new(j, "items", json_integer(x->variant.items));
  json_object_set_new(j, "channels", json_integer(x->variant.channels));
  json_object_set_new(j, "blocks", json_integer(x->shape.blocks));
  json_object_set_new(j, "blocks_per_sm", json_integer(x->shape.blocks_per_sm));
  json_object_set_new(j, "sm_count", json_integer(x->shape.sm_count));
  json_object_set_new(j, "segments", json_integer(x->shape.segments));
  json_object_set_new(j, "waves", json_real(bench_waves(&x->shape)));
  json_object_set_new(j, "kernel_origin", json_string(cli_origin_text(x->origin)));
  json_object_set_new(j, "kernel_load_ms", json_real(x->load_ms));
  json_object_set_new(j, "input_sets", json_integer(x->sets));
  json_object_set_new(j, "median_us", json_real(x->t.median * 1e3));
  json_object_set_new(j, "min_us", json_real(x->t.min * 1e3));
  json_object_set_new(j, "p90_us", json_real(x->t.p90 * 1e3));
  json_object_set_new(j, "bytes", json_real(x->bytes));
  json_object_set_new(j, "exps", json_real(x->exps));
  json_object_set_new(j, "gb_per_s", json_real(x->bytes / (x->t.median * 1e-3) / 1e9));
  json_object_set_new(j, "floor_us", json_real(x->floor_ms * 1e3));
  json_object_set_new(j, "percent_of_floor", json_real(100.0 * x->floor_ms / x->t.median));
}

/* A row: its shape, "ok" (every pass it timed ran), the forward's numbers at the top level
 * (as before the backward was timed), the backward's in "backward" and, with
 * --deterministic, "backward_deterministic" (with "cost": its time over the backward's). */
json_t *bench_row_json(const bench_row *r, const bench_row_result *res) {
  json_t *j = json_object();
  json_object_set_new(j, "batch", json_integer(r->batch));
  json_object_set_new(j, "dim", json_integer(r->dim));
  json_object_set_new(j, "seqlen", json_integer(r->seqlen));
  json_object_set_new(j, "dstate", json_integer(r->dstate));
  json_object_set_new(j, "z", json_boolean(r->z));
  json_object_set_new(j, "dtype", json_string(sf_dtype_name(r->dtype)));
  bool ok = true;
  for (int p = 0; p < PASSES; p++) ok = ok && (!res->pass[p].ran || res->pass[p].ok);
  if (res->pass[PASS_FWD].ran) pass_json(j, &res->pass[PASS_FWD]);
  json_object_set_new(j, "ok", json_boolean(ok)); /* after: the forward's "ok" is the row's */
  for (int p = PASS_BWD; p < PASSES; p++) {
    if (!res->pass[p].ran) continue;
    json_t *b = json_object();
    pass_json(b, &res->pass[p]);
    if (p == PASS_BWD_DET && res->pass[p].ok && res->pass[PASS_BWD].ok)
      json_object_set_new(b, "cost", json_real(res->pass[p].t.median / res->pass[PASS_BWD].t.median));
    json_object_set_new(j, bench_pass_key[p], b);
  }
  return j;
}
