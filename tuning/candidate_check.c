/* candidate_check.c: a candidate checked against the float64 reference on a small shape
 * before it is timed, the verdicts remembered across the run's entries. */
#include "tuning/run_state.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/check/check.h"

/* The small shape a candidate is checked on: its configuration over more than one block
 * and, where the chunk allows, more than one chunk, kept small so the float64 reference
 * is quick (docs/tuning.md). */
static sf_check_shape check_shape_for(const sf_tune_request *r, const sf_variant *v) {
  const int64_t L = r->shape.seqlen, G = r->shape.groups;
  sf_check_shape c = {.batch = 2, .dstate = v->dstate, .groups = (int)G, .dtype = v->dtype, .z = v->has_z,
                      .D = v->has_D, .delta_bias = v->has_delta_bias, .softplus = v->softplus,
                      .B_fixed = !v->B_var, .C_fixed = !v->C_var, .deterministic = v->deterministic};
  if (v->op == SF_OP_BWD) {
    /* The backward needs the call's state interval and channels dividing each group. */
    const int64_t interval = sf_scan_state_interval(L);
    c.seqlen = L < interval + interval / 2 + 1 ? L : interval + interval / 2 + 1;
    c.dim = (int64_t)v->channels * G;
    /* a block-states request: checked on the entry point it will be timed on */
    if (r->block_states) c.state_interval = sf_scan_bwd_block_interval(v, c.seqlen);
  } else {
    /* split=time scans chunks of threads x items steps; split=state blocks of items. */
    const int64_t chunk = v->split_states ? v->items : (int64_t)v->threads * v->items;
    const int64_t cap = 2 * chunk + 7 < 600 ? 2 * chunk + 7 : 600;
    c.seqlen = L < cap ? L : cap;
    if (v->split_states) {
      c.dim = 2 * (int64_t)v->channels * G; /* two blocks, each within one group */
    } else {
      c.dim = v->channels + (v->channels > 1 ? v->channels / 2 : 1); /* a full block and a partial one */
      c.dim = (c.dim + G - 1) / G * G;
    }
  }
  return c;
}

void sf_tuner_knob_spec(const sf_variant *v, char *buf, size_t cap) {
  const sf_tune_knobs k = sf_tune_knobs_of(v);
  sf_tune_knobs_spec(&k, buf, cap);
}

/* Checks the candidate; returns SF_OK when the check ran (its verdict in *passed),
 * otherwise the call's status (e.g. SF_ERESOURCE). */
sf_status sf_tuner_check_candidate(run_state *s, const sf_tune_request *r, const sf_variant *v, bool *passed,
                                   double *error, char *why, size_t why_cap) {
  char spec[256], full[512];
  sf_tuner_knob_spec(v, spec, sizeof spec);
  sf_variant_format(v, full, sizeof full);
  const sf_check_shape shape = check_shape_for(r, v);
  for (int i = 0; i < s->memo_count; i++) {
    const check_memo *m = &s->memos[i];
    if (strcmp(m->spec, full) == 0 && m->dim == shape.dim && m->seqlen == shape.seqlen &&
        m->state_interval == shape.state_interval) {
      *passed = m->passed;
      *error = m->error;
      snprintf(why, why_cap, "%s", m->why);
      return SF_OK;
    }
  }
  const sf_launch launch = {.spec = spec};
  const uint64_t seed = 0x7a11u + (uint64_t)s->memo_count;
  sf_status st;
  double bar;
  if (v->op == SF_OP_BWD) {
    sf_check_bwd_result res;
    st = sf_check_bwd(s->measure_ctx, &shape, &launch, seed, &res);
    *error = 0;
    for (int i = 0; st == SF_OK && i < res.count; i++)
      if (!(res.grads[i].error <= *error)) *error = res.grads[i].error; /* NaN sticks */
    *passed = st == SF_OK && res.passed;
    bar = res.bar;
  } else {
    sf_check_result res;
    st = sf_check_fwd(s->measure_ctx, &shape, &launch, seed, &res);
    *error = fmax(res.out_error, fmax(res.last_state_error, res.saved_error));
    if (isnan(res.out_error) || isnan(res.last_state_error) || isnan(res.saved_error)) *error = NAN;
    *passed = st == SF_OK && res.passed;
    bar = res.bar;
  }
  if (st != SF_OK) return st;
  why[0] = '\0';
  if (!*passed)
    snprintf(why, why_cap, "failed the check on %lldx%lldx%lld: error %.3g over the bar %.0e", (long long)shape.batch,
             (long long)shape.dim, (long long)shape.seqlen, *error, bar);
  if (s->memo_count == s->memo_cap) {
    int cap = s->memo_cap ? 2 * s->memo_cap : 64;
    check_memo *grown = realloc(s->memos, (size_t)cap * sizeof *grown);
    if (!grown) return SF_OK; /* not remembering costs time only */
    s->memos = grown;
    s->memo_cap = cap;
  }
  check_memo *m = &s->memos[s->memo_count++];
  snprintf(m->spec, sizeof m->spec, "%s", full);
  m->dim = shape.dim;
  m->seqlen = shape.seqlen;
  m->state_interval = shape.state_interval;
  m->passed = *passed;
  m->error = *error;
  snprintf(m->why, sizeof m->why, "%s", why);
  return SF_OK;
}
