/* requests.c: what the tuner is asked to tune: the default grid of requests, an entries file
 * parsed into requests, a request's key and its one-line description. */
#include "tuning/tuner.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

static sf_variant request_class(sf_op op, sf_dtype dtype, int dstate, bool z) {
  sf_variant v = sf_variant_default();
  v.op = op;
  v.dtype = dtype;
  v.dstate = dstate;
  v.has_z = z;
  v.has_D = v.has_delta_bias = v.softplus = true;
  v.B_var = v.C_var = true;
  return v;
}

sf_tune_entry sf_tune_request_key(const sf_tune_request *r) {
  sf_tune_entry e;
  memset(&e, 0, sizeof e);
  e.variant = r->variant;
  e.block_states = r->block_states;
  e.shape = r->shape;
  e.seqlen_bucket = sf_tune_bucket(r->shape.seqlen);
  e.rows_bucket = sf_tune_bucket(r->shape.batch * r->shape.dim);
  return e;
}

int sf_tune_default_requests(sf_tune_request *out, int cap, bool with_bwd) {
  /* The reference rows (batch, dim, L, N, z), MambaVision's stages 3 and 4, large d_state
   * few channels over very long sequences and a batch-1 prefill (bench/rows_large_n.txt,
   * rows_long_l.txt, rows_mid.txt). */
  static const struct { int64_t batch, dim, seqlen; int dstate; bool z; } fp32_rows[] = {
      {1, 4, 16, 4, false},     {4, 16, 64, 16, false},    {16, 64, 256, 64, false},  {1, 256, 1024, 16, false},
      {1, 768, 1024, 16, false}, {64, 160, 196, 8, false}, {64, 320, 49, 8, false},   {64, 256, 196, 8, false},
      {64, 512, 49, 8, false},   {8, 1536, 2048, 16, true}, {4, 4096, 2048, 16, true}, {1, 1536, 16384, 16, true},
      {2, 1024, 4096, 64, false}, {2, 512, 2048, 128, false}, {1, 512, 2048, 256, false}, {1, 64, 65536, 16, false},
  };
  static const struct { int64_t batch, dim, seqlen; int dstate; bool z; } bf16_rows[] = {
      {8, 1536, 2048, 16, true}, {4, 4096, 2048, 16, true}, {1, 1536, 16384, 16, true}, {64, 160, 196, 8, false},
      {64, 320, 49, 8, false},   {64, 256, 196, 8, false},  {64, 512, 49, 8, false},
      {4, 1024, 2048, 32, true}, {4, 1024, 2048, 64, true}, {2, 512, 2048, 128, true}, {1, 64, 65536, 16, true},
      {1, 1536, 2048, 16, true},
  };
  int count = 0;
  /* pass 0 the forward, 1 the backward, 2 the backward on block states */
  for (int pass = 0; pass <= (with_bwd ? 2 : 0); pass++)
    for (int t = 0; t < 2; t++) {
      const size_t n = t == 0 ? sizeof fp32_rows / sizeof fp32_rows[0] : sizeof bf16_rows / sizeof bf16_rows[0];
      for (size_t i = 0; i < n; i++) {
        sf_tune_request r;
        const int64_t b = t == 0 ? fp32_rows[i].batch : bf16_rows[i].batch;
        const int64_t d = t == 0 ? fp32_rows[i].dim : bf16_rows[i].dim;
        const int64_t l = t == 0 ? fp32_rows[i].seqlen : bf16_rows[i].seqlen;
        const int n_state = t == 0 ? fp32_rows[i].dstate : bf16_rows[i].dstate;
        const bool z = t == 0 ? fp32_rows[i].z : bf16_rows[i].z;
        if (pass == 2 && l < 196) continue; /* training rows and the vision stages with states to save */
        r.variant = request_class(pass == 0 ? SF_OP_FWD : SF_OP_BWD, t == 0 ? SF_FP32 : SF_BF16, n_state, z);
        r.shape = (sf_tune_shape){b, d, l, 1};
        r.block_states = pass == 2;
        /* One request per key: a later shape of the same bucket adds nothing. */
        sf_tune_entry key = sf_tune_request_key(&r);
        bool seen = false;
        for (int k = 0; k < count && k < cap && !seen; k++) {
          sf_tune_entry other = sf_tune_request_key(&out[k]);
          seen = sf_tune_entry_same_key(&key, &other);
        }
        if (seen) continue;
        if (count < cap) out[count] = r;
        count++;
      }
    }
  return count;
}

void sf_tune_request_format(const sf_tune_request *r, char *buf, size_t cap) {
  const sf_variant *v = &r->variant;
  char shape[96];
  if (r->shape.groups > 1)
    snprintf(shape, sizeof shape, "%lld,%lld,%lld,%d,%d", (long long)r->shape.batch, (long long)r->shape.dim,
             (long long)r->shape.seqlen, v->dstate, r->shape.groups);
  else
    snprintf(shape, sizeof shape, "%lld,%lld,%lld,%d", (long long)r->shape.batch, (long long)r->shape.dim,
             (long long)r->shape.seqlen, v->dstate);
  snprintf(buf, cap, "%s op=%s,dtype=%s,z=%d,D=%d,delta_bias=%d,softplus=%d,B=%s,C=%s%s%s", shape,
           v->op == SF_OP_FWD ? "fwd" : "bwd", sf_dtype_name(v->dtype), v->has_z, v->has_D, v->has_delta_bias,
           v->softplus, v->B_var ? "var" : "fixed", v->C_var ? "var" : "fixed",
           v->deterministic ? ",deterministic=1" : "", r->block_states ? ",block_states=1" : "");
}

/* "B,D,L,N[,G]": positive integers. */
static bool parse_shape(const char *text, sf_tune_request *r) {
  long long f[5] = {0, 0, 0, 0, 1};
  int n = 0;
  const char *p = text;
  for (;;) {
    char *end;
    if (n == 5 || !isdigit((unsigned char)*p)) return false; /* a sixth number, or not a number */
    errno = 0;
    f[n++] = strtoll(p, &end, 10);
    if (errno == ERANGE) return false;
    if (*end == '\0') break;
    if (*end != ',') return false;
    p = end + 1;
  }
  if (n < 4) return false;
  for (int i = 0; i < 5; i++)
    if (f[i] < 1) return false;
  if (f[3] > 256 || f[4] > f[1] || f[1] % f[4] != 0 || f[0] > (1LL << 31) || f[1] > (1LL << 31) || f[2] > (1LL << 31))
    return false;
  r->shape = (sf_tune_shape){f[0], f[1], f[2], (int)f[4]};
  r->variant.dstate = (int)f[3];
  return true;
}

/* Applies "key=value,..." allowing op, dtype, the flags and block_states only. */
static sf_status apply_keys(const char *spec, sf_tune_request *r) {
  static const char *allowed[] = {"op", "dtype", "z", "D", "delta_bias", "softplus", "B", "C", "deterministic"};
  char copy[512], variant_keys[512] = "";
  snprintf(copy, sizeof copy, "%s", spec);
  for (char *rest = copy, *pair; (pair = strsep(&rest, ",")) != NULL;) {
    char *eq = strchr(pair, '=');
    if (!eq) return sf_fail(SF_EINVAL, "'%s' is not a key=value pair", pair);
    *eq = '\0';
    if (strcmp(pair, "block_states") == 0) { /* the request's, not the variant's */
      if (strcmp(eq + 1, "0") != 0 && strcmp(eq + 1, "1") != 0)
        return sf_fail(SF_EINVAL, "key 'block_states': expected 0 or 1, got '%s'", eq + 1);
      r->block_states = eq[1] == '1';
      continue;
    }
    bool ok = false;
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) ok |= strcmp(pair, allowed[i]) == 0;
    if (!ok)
      return sf_fail(SF_EINVAL, "key '%s' is not allowed in an entry (allowed: op, dtype, z, D, delta_bias, softplus, B, C, deterministic, block_states; N comes from the shape)", pair);
    size_t used = strlen(variant_keys);
    snprintf(variant_keys + used, sizeof variant_keys - used, "%s%s=%s", used ? "," : "", pair, eq + 1);
  }
  sf_status st = variant_keys[0] ? sf_variant_apply(variant_keys, &r->variant) : SF_OK;
  if (st == SF_OK && r->block_states && r->variant.op != SF_OP_BWD)
    st = sf_fail(SF_EINVAL, "key 'block_states': applies to op=bwd only");
  return st;
}

sf_status sf_tune_parse_requests(const char *text, const char *origin, sf_tune_request **out, int *count) {
  *out = NULL;
  *count = 0;
  int cap = 0, line_number = 0;
  sf_status st = SF_OK;
  for (const char *line = text; *line && st == SF_OK; line_number++) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char buf[512];
    if (len >= sizeof buf) {
      st = sf_fail(SF_EINVAL, "%s:%d: line too long", origin, line_number + 1);
      break;
    }
    memcpy(buf, line, len);
    buf[len] = '\0';
    line = end ? end + 1 : line + len;
    char *hash = strchr(buf, '#');
    if (hash) *hash = '\0';
    char *fields[3];
    int n = 0;
    for (char *rest = buf, *f; (f = strtok_r(n == 0 ? rest : NULL, " \t\r", &rest)) != NULL && n < 3;) fields[n++] = f;
    if (n == 0) continue;
    sf_tune_request r = {.variant = request_class(SF_OP_FWD, SF_FP32, 16, false)};
    if (n > 2 || !parse_shape(fields[0], &r)) {
      st = sf_fail(SF_EINVAL, "%s:%d: expected 'BATCH,DIM,L,N[,G] [KEY=VALUE,...]' with positive integers, N <= 256, G dividing DIM",
                   origin, line_number + 1);
      break;
    }
    if (n == 2 && apply_keys(fields[1], &r) != SF_OK) {
      st = sf_fail_context(SF_EINVAL, "%s:%d", origin, line_number + 1);
      break;
    }
    if (*count == cap) {
      cap = cap ? 2 * cap : 16;
      sf_tune_request *grown = realloc(*out, (size_t)cap * sizeof *grown);
      if (!grown) {
        st = sf_fail(SF_ENOMEM, "out of memory");
        break;
      }
      *out = grown;
    }
    (*out)[(*count)++] = r;
  }
  if (st == SF_OK && *count == 0) st = sf_fail(SF_EINVAL, "%s: no entries", origin);
  if (st != SF_OK) {
    free(*out);
    *out = NULL;
    *count = 0;
  }
  return st;
}
