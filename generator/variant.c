/* variant.c: the variant spec string: parsing, validation and the canonical form. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "scanforge/scanforge.h"

#define KEYS_ALLOWED \
  "op, split, dstate, dtype, threads, items, channels, states, minblocks, z, D, delta_bias, softplus, B, C, deterministic, pairs, words"

sf_variant sf_variant_default(void) {
  sf_variant v = {
      .op = SF_OP_FWD, .dstate = 16, .dtype = SF_FP32, .threads = 32, .items = 8,
      .channels = 1, .states = 4, .B_var = true, .C_var = true,
  };
  return v;
}

const char *sf_dtype_name(sf_dtype dtype) {
  switch (dtype) {
    case SF_FP32: return "fp32";
    case SF_FP16: return "fp16";
    case SF_BF16: return "bf16";
  }
  return "?";
}

int sf_dtype_size(sf_dtype dtype) { return dtype == SF_FP32 ? 4 : 2; }

static bool is_power_of_two(int x) { return x > 0 && (x & (x - 1)) == 0; }

static sf_status parse_int(const char *key, const char *value, int lo, int hi, int *out) {
  char *end = NULL;
  errno = 0;
  long x = strtol(value, &end, 10);
  if (value[0] == '\0' || *end != '\0' || errno == ERANGE || x < lo || x > hi)
    return sf_fail(SF_EINVAL, "variant key '%s': value '%s' is not an integer in %d..%d", key,
                   value, lo, hi);
  *out = (int)x;
  return SF_OK;
}

static sf_status parse_bool(const char *key, const char *value, bool *out) {
  if (strcmp(value, "0") == 0 || strcmp(value, "1") == 0) {
    *out = value[0] == '1';
    return SF_OK;
  }
  return sf_fail(SF_EINVAL, "variant key '%s': value '%s' is not allowed (allowed: 0 or 1)", key,
                 value);
}

static sf_status parse_layout(const char *key, const char *value, bool *is_var) {
  if (strcmp(value, "var") == 0 || strcmp(value, "fixed") == 0) {
    *is_var = value[0] == 'v';
    return SF_OK;
  }
  return sf_fail(SF_EINVAL, "variant key '%s': value '%s' is not allowed (allowed: var, fixed)",
                 key, value);
}

static sf_status set_key(sf_variant *v, const char *key, const char *value) {
  if (strcmp(key, "op") == 0) {
    if (strcmp(value, "fwd") == 0) v->op = SF_OP_FWD;
    else if (strcmp(value, "bwd") == 0) v->op = SF_OP_BWD;
    else return sf_fail(SF_EINVAL, "variant key 'op': value '%s' is not allowed (allowed: fwd, bwd)", value);
    return SF_OK;
  }
  if (strcmp(key, "split") == 0) {
    if (strcmp(value, "time") == 0) v->split_states = false;
    else if (strcmp(value, "state") == 0) v->split_states = true;
    else return sf_fail(SF_EINVAL, "variant key 'split': value '%s' is not allowed (allowed: time, state)", value);
    return SF_OK;
  }
  if (strcmp(key, "dtype") == 0) {
    if (strcmp(value, "fp32") == 0) v->dtype = SF_FP32;
    else if (strcmp(value, "fp16") == 0) v->dtype = SF_FP16;
    else if (strcmp(value, "bf16") == 0) v->dtype = SF_BF16;
    else return sf_fail(SF_EINVAL, "variant key 'dtype': value '%s' is not allowed (allowed: fp32, fp16, bf16)", value);
    return SF_OK;
  }
  if (strcmp(key, "dstate") == 0) return parse_int(key, value, 1, 256, &v->dstate);
  if (strcmp(key, "threads") == 0) return parse_int(key, value, 1, 1024, &v->threads);
  if (strcmp(key, "items") == 0) return parse_int(key, value, 1, 64, &v->items);
  if (strcmp(key, "channels") == 0) return parse_int(key, value, 1, 1024, &v->channels);
  if (strcmp(key, "states") == 0) return parse_int(key, value, 1, 16, &v->states);
  if (strcmp(key, "minblocks") == 0) return parse_int(key, value, 0, 32, &v->min_blocks);
  if (strcmp(key, "z") == 0) return parse_bool(key, value, &v->has_z);
  if (strcmp(key, "D") == 0) return parse_bool(key, value, &v->has_D);
  if (strcmp(key, "delta_bias") == 0) return parse_bool(key, value, &v->has_delta_bias);
  if (strcmp(key, "softplus") == 0) return parse_bool(key, value, &v->softplus);
  if (strcmp(key, "deterministic") == 0) return parse_bool(key, value, &v->deterministic);
  if (strcmp(key, "pairs") == 0) return parse_bool(key, value, &v->pairs);
  if (strcmp(key, "words") == 0) return parse_bool(key, value, &v->words);
  if (strcmp(key, "B") == 0) return parse_layout(key, value, &v->B_var);
  if (strcmp(key, "C") == 0) return parse_layout(key, value, &v->C_var);
  return sf_fail(SF_EINVAL, "variant: unknown key '%s' (allowed: " KEYS_ALLOWED ")", key);
}

/* Copies [begin, end) without surrounding blanks into buf (cap bytes); false (and the
 * first cap - 1 bytes) when it does not fit: a cut value could read as another one. */
static bool copy_trimmed(const char *begin, const char *end, char *buf, size_t cap) {
  while (begin < end && isspace((unsigned char)*begin)) begin++;
  while (end > begin && isspace((unsigned char)end[-1])) end--;
  size_t len = (size_t)(end - begin);
  bool fits = len < cap;
  if (!fits) len = cap - 1;
  memcpy(buf, begin, len);
  buf[len] = '\0';
  return fits;
}

sf_status sf_variant_parse(const char *spec, sf_variant *out) {
  if (!out) return sf_fail(SF_EINVAL, "sf_variant_parse: out must not be NULL");
  sf_variant v = sf_variant_default();
  sf_status st = sf_variant_apply(spec, &v);
  if (st == SF_OK) *out = v;
  return st;
}

sf_status sf_variant_apply(const char *spec, sf_variant *inout) {
  if (!spec || !inout) return sf_fail(SF_EINVAL, "sf_variant_apply: spec and variant must not be NULL");
  sf_variant v = *inout;
  char seen[32][32];
  int nseen = 0;
  const char *p = spec;
  while (*p) {
    const char *comma = strchr(p, ',');
    const char *end = comma ? comma : p + strlen(p);
    const char *eq = memchr(p, '=', (size_t)(end - p));
    char key[32], value[64];
    if (!eq) {
      copy_trimmed(p, end, value, sizeof value);
      if (value[0] == '\0' && !comma) break; /* trailing blanks */
      return sf_fail(SF_EINVAL, "variant: '%s' is not a key=value pair (in spec '%s')", value, spec);
    }
    if (!copy_trimmed(p, eq, key, sizeof key))
      return sf_fail(SF_EINVAL, "variant: key '%s...' is too long to be one (allowed: " KEYS_ALLOWED ")", key);
    if (!copy_trimmed(eq + 1, end, value, sizeof value))
      return sf_fail(SF_EINVAL, "variant key '%s': value '%s...' is too long (at most %zu characters)", key, value,
                     sizeof value - 1);
    for (int i = 0; i < nseen; i++)
      if (strcmp(seen[i], key) == 0)
        return sf_fail(SF_EINVAL, "variant: key '%s' is given twice (in spec '%s')", key, spec);
    if (nseen < 32) strcpy(seen[nseen++], key);
    sf_status st = set_key(&v, key, value);
    if (st != SF_OK) return st;
    p = comma ? comma + 1 : end;
  }
  sf_status st = sf_variant_validate(&v);
  if (st != SF_OK) return st;
  *inout = v;
  return SF_OK;
}

int sf_variant_block_threads(const sf_variant *v) { return v->threads * v->channels; }

bool sf_variant_same(const sf_variant *a, const sf_variant *b) {
  char sa[512], sb[512];
  sf_variant_format(a, sa, sizeof sa);
  sf_variant_format(b, sb, sizeof sb);
  return strcmp(sa, sb) == 0;
}

bool sf_variant_can_pair(const sf_variant *v) {
  return v->op == SF_OP_BWD && v->split_states && v->B_var && v->C_var && v->channels % 2 == 0 && v->threads < 32;
}

sf_status sf_variant_validate(const sf_variant *v) {
  if (!v) return sf_fail(SF_EINVAL, "sf_variant_validate: variant must not be NULL");
  if (v->op != SF_OP_FWD && v->op != SF_OP_BWD)
    return sf_fail(SF_EINVAL, "variant key 'op': value %d is not allowed (allowed: fwd, bwd)", (int)v->op);
  if (v->dstate < 1 || v->dstate > 256)
    return sf_fail(SF_EINVAL, "variant key 'dstate': value %d is out of range (allowed: 1..256)", v->dstate);
  if (v->dtype != SF_FP32 && v->dtype != SF_FP16 && v->dtype != SF_BF16)
    return sf_fail(SF_EINVAL, "variant key 'dtype': value %d is not allowed (allowed: fp32, fp16, bf16)", (int)v->dtype);
  if (!is_power_of_two(v->threads) || v->threads > 1024)
    return sf_fail(SF_EINVAL, "variant key 'threads': value %d is not allowed (allowed: a power of two, 1..1024)", v->threads);
  if (v->items < 1 || v->items > 64)
    return sf_fail(SF_EINVAL, "variant key 'items': value %d is out of range (allowed: 1..64)", v->items);
  if (v->channels < 1 || v->threads * v->channels > 1024)
    return sf_fail(SF_EINVAL,
                   "variant keys 'threads' and 'channels': threads x channels = %d x %d is not "
                   "allowed (allowed: channels >= 1 and threads x channels <= 1024, the block size)",
                   v->threads, v->channels);
  if (v->threads < 32 && (v->threads * v->channels) % 32 != 0)
    return sf_fail(SF_EINVAL,
                   "variant keys 'threads' and 'channels': threads x channels = %d x %d must fill "
                   "whole warps (a multiple of 32) when threads < 32",
                   v->threads, v->channels);
  if (v->states < 1 || v->states > 16)
    return sf_fail(SF_EINVAL, "variant key 'states': value %d is out of range (allowed: 1..16)", v->states);
  if (v->min_blocks < 0 || v->min_blocks > 32)
    return sf_fail(SF_EINVAL, "variant key 'minblocks': value %d is out of range (allowed: 0..32)", v->min_blocks);
  if (v->deterministic && v->op != SF_OP_BWD)
    return sf_fail(SF_EINVAL, "variant key 'deterministic': value 1 applies to op=bwd only (the forward is always deterministic)");
  if (v->pairs && (v->op != SF_OP_BWD || !v->split_states))
    return sf_fail(SF_EINVAL, "variant key 'pairs': value 1 applies to op=bwd with split=state only");
  if (v->words && !v->split_states)
    return sf_fail(SF_EINVAL, "variant key 'words': value 1 applies to split=state only (the time split stages no rows)");
  return SF_OK;
}

int sf_variant_format(const sf_variant *v, char *buf, size_t cap) {
  /* words=1 only when set: the specs of aligned calls (all but a few) read as before it */
  return snprintf(buf, cap,
                  "op=%s,split=%s,dstate=%d,dtype=%s,threads=%d,items=%d,channels=%d,states=%d,minblocks=%d,z=%d,D=%d,"
                  "delta_bias=%d,softplus=%d,B=%s,C=%s,deterministic=%d,pairs=%d%s",
                  v->op == SF_OP_FWD ? "fwd" : "bwd", v->split_states ? "state" : "time", v->dstate, sf_dtype_name(v->dtype),
                  v->threads, v->items, v->channels, v->states, v->min_blocks, v->has_z, v->has_D, v->has_delta_bias,
                  v->softplus, v->B_var ? "var" : "fixed", v->C_var ? "var" : "fixed",
                  v->deterministic, v->pairs, v->words ? ",words=1" : "");
}
