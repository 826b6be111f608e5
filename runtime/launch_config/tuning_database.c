/* tuning_database.c: the tuning database in memory, read from JSON (jansson) and from its file; tuning/database_write.c writes it. */
#include "runtime/launch_config/tuning_database.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/cache/cache_dir.h"
#include "base/env.h"
#include "base/error.h"

/* ---- knobs ----------------------------------------------------------------------------- */

sf_tune_knobs sf_tune_knobs_of(const sf_variant *v) {
  return (sf_tune_knobs){v->split_states, v->threads, v->items, v->channels, v->states, v->min_blocks};
}

void sf_tune_knobs_apply(const sf_tune_knobs *k, sf_variant *v) {
  v->split_states = k->split_states;
  v->threads = k->threads;
  v->items = k->items;
  v->channels = k->channels;
  v->states = k->states;
  v->min_blocks = k->min_blocks;
}

bool sf_tune_knobs_equal(const sf_tune_knobs *a, const sf_tune_knobs *b) {
  return a->split_states == b->split_states && a->threads == b->threads && a->items == b->items &&
         a->channels == b->channels && a->states == b->states && a->min_blocks == b->min_blocks;
}

void sf_tune_knobs_spec(const sf_tune_knobs *k, char *buf, size_t cap) {
  snprintf(buf, cap, "split=%s,threads=%d,items=%d,channels=%d,states=%d,minblocks=%d",
           k->split_states ? "state" : "time", k->threads, k->items, k->channels, k->states, k->min_blocks);
}

void sf_tune_knobs_short(const sf_tune_knobs *k, char *buf, size_t cap) {
  int n = k->split_states ? snprintf(buf, cap, "st:%d/%d/%d", k->threads, k->items, k->channels)
                           : snprintf(buf, cap, "%d/%d/%d/%d", k->threads, k->items, k->channels, k->states);
  if (k->min_blocks > 0 && n >= 0 && (size_t)n < cap) snprintf(buf + n, cap - (size_t)n, "+b%d", k->min_blocks);
}

/* ---- buckets and keys ------------------------------------------------------------------ */

int sf_tune_bucket(int64_t value) {
  int k = 0;
  while (k < 62 && ((int64_t)1 << k) < value) k++;
  return k;
}

void sf_tune_flags_format(const sf_variant *v, char *buf, size_t cap) {
  snprintf(buf, cap, "z=%d,D=%d,delta_bias=%d,softplus=%d,B=%s,C=%s,deterministic=%d", v->has_z, v->has_D,
           v->has_delta_bias, v->softplus, v->B_var ? "var" : "fixed", v->C_var ? "var" : "fixed",
           v->deterministic);
}

sf_status sf_tune_flags_parse(const char *text, sf_variant *v) {
  static const char *allowed[] = {"z", "D", "delta_bias", "softplus", "B", "C", "deterministic"};
  /* Every key must be a flag: the spec parser would also take op, threads, ... */
  for (const char *p = text; *p;) {
    const char *eq = strchr(p, '='), *comma = strchr(p, ',');
    if (!eq || (comma && comma < eq)) return sf_fail(SF_EINVAL, "flags '%s': expected key=value pairs", text);
    bool known = false;
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
      known |= strlen(allowed[i]) == (size_t)(eq - p) && strncmp(p, allowed[i], (size_t)(eq - p)) == 0;
    if (!known)
      return sf_fail(SF_EINVAL, "flags '%s': key '%.*s' is not a flag (allowed: z, D, delta_bias, softplus, B, C, deterministic)",
                     text, (int)(eq - p), p);
    p = comma ? comma + 1 : p + strlen(p);
  }
  return sf_variant_apply(text, v);
}

static bool same_class(const sf_variant *a, const sf_variant *b) {
  return a->op == b->op && a->dstate == b->dstate && a->dtype == b->dtype && a->has_z == b->has_z &&
         a->has_D == b->has_D && a->has_delta_bias == b->has_delta_bias && a->softplus == b->softplus &&
         a->B_var == b->B_var && a->C_var == b->C_var && a->deterministic == b->deterministic;
}

bool sf_tune_entry_same_key(const sf_tune_entry *a, const sf_tune_entry *b) {
  return same_class(&a->variant, &b->variant) && a->block_states == b->block_states &&
         a->seqlen_bucket == b->seqlen_bucket && a->rows_bucket == b->rows_bucket;
}

bool sf_tune_entry_copy(sf_tune_entry *dst, const sf_tune_entry *src) {
  *dst = *src;
  dst->candidates = NULL;
  if (src->candidate_count > 0 && src->candidates) {
    dst->candidates = malloc((size_t)src->candidate_count * sizeof *dst->candidates);
    if (!dst->candidates) return false;
    memcpy(dst->candidates, src->candidates, (size_t)src->candidate_count * sizeof *dst->candidates);
  } else {
    dst->candidate_count = 0;
  }
  return true;
}

void sf_tune_entry_free(sf_tune_entry *e) {
  if (!e) return;
  free(e->candidates);
  e->candidates = NULL;
  e->candidate_count = 0;
}

/* ---- the in-memory database ------------------------------------------------------------ */

void sf_tune_db_init(sf_tune_db *db) { memset(db, 0, sizeof *db); }

void sf_tune_db_free(sf_tune_db *db) {
  if (!db) return;
  for (int s = 0; s < db->count; s++) {
    for (int e = 0; e < db->sections[s].count; e++) sf_tune_entry_free(&db->sections[s].entries[e]);
    free(db->sections[s].entries);
  }
  free(db->sections);
  sf_tune_db_init(db);
}

bool sf_tune_gpu_same_device(const sf_tune_gpu *a, const sf_tune_gpu *b) {
  return strcmp(a->name, b->name) == 0 && a->cc_major == b->cc_major && a->cc_minor == b->cc_minor &&
         a->sm_count == b->sm_count && a->memory == b->memory;
}

bool sf_tune_gpu_equal(const sf_tune_gpu *a, const sf_tune_gpu *b) {
  return sf_tune_gpu_same_device(a, b) && a->driver_version == b->driver_version &&
         strcmp(a->nvrtc, b->nvrtc) == 0 && strcmp(a->templates, b->templates) == 0;
}

sf_tune_section *sf_tune_db_find_section(const sf_tune_db *db, const sf_tune_gpu *gpu) {
  for (int s = 0; s < db->count; s++)
    if (sf_tune_gpu_equal(&db->sections[s].gpu, gpu)) return &db->sections[s];
  return NULL;
}

sf_tune_entry *sf_tune_section_find(const sf_tune_section *s, const sf_tune_entry *key) {
  for (int e = 0; e < s->count; e++)
    if (sf_tune_entry_same_key(&s->entries[e], key)) return &s->entries[e];
  return NULL;
}

static bool grow(void **items, int *capacity, int needed, size_t item_size) {
  if (needed <= *capacity) return true;
  int next = *capacity ? 2 * *capacity : 8;
  while (next < needed) next *= 2;
  void *grown = realloc(*items, (size_t)next * item_size);
  if (!grown) return false;
  *items = grown;
  *capacity = next;
  return true;
}

sf_status sf_tune_db_put(sf_tune_db *db, const sf_tune_gpu *gpu, const sf_tune_entry *entry) {
  sf_tune_section *s = sf_tune_db_find_section(db, gpu);
  if (!s) {
    if (!grow((void **)&db->sections, &db->capacity, db->count + 1, sizeof *db->sections))
      return sf_fail(SF_ENOMEM, "tuning database: out of memory");
    s = &db->sections[db->count++];
    memset(s, 0, sizeof *s);
    s->gpu = *gpu;
  }
  sf_tune_entry copy;
  if (!sf_tune_entry_copy(&copy, entry)) return sf_fail(SF_ENOMEM, "tuning database: out of memory");
  sf_tune_entry *old = sf_tune_section_find(s, entry);
  if (old) {
    sf_tune_entry_free(old);
    *old = copy;
    return SF_OK;
  }
  if (!grow((void **)&s->entries, &s->capacity, s->count + 1, sizeof *s->entries)) {
    sf_tune_entry_free(&copy);
    return sf_fail(SF_ENOMEM, "tuning database: out of memory");
  }
  s->entries[s->count++] = copy;
  return SF_OK;
}

sf_status sf_tune_db_merge(sf_tune_db *into, const sf_tune_db *from) {
  for (int s = 0; s < from->count; s++)
    for (int e = 0; e < from->sections[s].count; e++) {
      sf_status st = sf_tune_db_put(into, &from->sections[s].gpu, &from->sections[s].entries[e]);
      if (st != SF_OK) return st;
    }
  return SF_OK;
}

const sf_tune_section *sf_tune_db_match(const sf_tune_db *db, const sf_tune_gpu *gpu, bool *other_templates) {
  const sf_tune_section *best = NULL;
  if (other_templates) *other_templates = false;
  for (int s = 0; s < db->count; s++) {
    const sf_tune_section *c = &db->sections[s];
    if (!sf_tune_gpu_same_device(&c->gpu, gpu)) continue;
    if (strcmp(c->gpu.templates, gpu->templates) != 0) {
      /* Other templates may reject or mis-serve these knobs: not used. */
      if (other_templates) *other_templates = true;
      continue;
    }
    if (c->gpu.driver_version == gpu->driver_version && strcmp(c->gpu.nvrtc, gpu->nvrtc) == 0) return c;
    if (!best) best = c;
  }
  return best;
}

/* ---- JSON: reading ------------------------------------------------------------------ */

/* Where in the file a value is, for messages: "sections[0].entries[3]". */
typedef struct place {
  const char *origin;
  char path[96];
} place;

static sf_status bad(const place *at, const char *key, const char *what) {
  return sf_fail(SF_EINVAL, "%s: %s%s%s: %s", at->origin, at->path, key ? "." : "", key ? key : "", what);
}

static sf_status get_int(const place *at, json_t *obj, const char *key, int64_t lo, int64_t hi, int64_t *out) {
  json_t *v = json_object_get(obj, key);
  if (!json_is_integer(v)) return bad(at, key, "expected an integer");
  if (json_integer_value(v) < lo || json_integer_value(v) > hi) return bad(at, key, "out of range");
  *out = json_integer_value(v);
  return SF_OK;
}

static sf_status get_small(const place *at, json_t *obj, const char *key, int lo, int hi, int *out) {
  int64_t v;
  sf_status st = get_int(at, obj, key, lo, hi, &v);
  if (st == SF_OK) *out = (int)v;
  return st;
}

static sf_status get_string(const place *at, json_t *obj, const char *key, char *buf, size_t cap) {
  json_t *v = json_object_get(obj, key);
  if (!json_is_string(v)) return bad(at, key, "expected a string");
  if (strlen(json_string_value(v)) >= cap) return bad(at, key, "too long");
  strcpy(buf, json_string_value(v));
  return SF_OK;
}

/* An optional number; `fallback` when absent. */
static sf_status get_number(const place *at, json_t *obj, const char *key, double fallback, double *out) {
  json_t *v = json_object_get(obj, key);
  *out = fallback;
  if (!v) return SF_OK;
  if (!json_is_number(v)) return bad(at, key, "expected a number");
  *out = json_number_value(v);
  return SF_OK;
}

/* "9.0": the whole text. (sscanf's %d would take signs, blanks, trailing text, and
 * overflow, which is undefined.) */
static bool parse_compute_capability(const char *text, int *major, int *minor) {
  char *end;
  if (!isdigit((unsigned char)text[0])) return false;
  long a = strtol(text, &end, 10);
  if (*end != '.' || !isdigit((unsigned char)end[1])) return false;
  long b = strtol(end + 1, &end, 10);
  if (*end != '\0' || a > 99 || b > 99) return false;
  *major = (int)a;
  *minor = (int)b;
  return true;
}

static sf_status parse_gpu(const place *at, json_t *j, sf_tune_gpu *g) {
  if (!json_is_object(j)) return bad(at, NULL, "expected an object");
  char cc[16];
  int64_t memory = 0;
  sf_status st = get_string(at, j, "name", g->name, sizeof g->name);
  if (st == SF_OK) st = get_string(at, j, "compute_capability", cc, sizeof cc);
  if (st == SF_OK && !parse_compute_capability(cc, &g->cc_major, &g->cc_minor))
    st = bad(at, "compute_capability", "expected MAJOR.MINOR, each 0..99");
  if (st == SF_OK) st = get_small(at, j, "sm_count", 1, 1 << 20, &g->sm_count);
  if (st == SF_OK) st = get_int(at, j, "memory_bytes", 0, INT64_MAX, &memory);
  if (st == SF_OK) st = get_small(at, j, "driver_version", 0, 1 << 30, &g->driver_version);
  if (st == SF_OK) st = get_string(at, j, "nvrtc", g->nvrtc, sizeof g->nvrtc);
  if (st == SF_OK) st = get_string(at, j, "templates", g->templates, sizeof g->templates);
  g->memory = (uint64_t)memory;
  return st;
}

/* "split", "states" and "minblocks" may be absent (files written before those knobs):
 * defaults. */
static sf_status parse_config(const place *at, json_t *j, sf_tune_knobs *k) {
  if (!json_is_object(j)) return bad(at, NULL, "expected an object");
  *k = sf_tune_knobs_of(&(sf_variant){0});
  k->states = sf_variant_default().states;
  sf_status st = get_small(at, j, "threads", 1, 1024, &k->threads);
  if (st == SF_OK) st = get_small(at, j, "items", 1, 64, &k->items);
  if (st == SF_OK) st = get_small(at, j, "channels", 1, 1024, &k->channels);
  if (st == SF_OK && json_object_get(j, "states")) st = get_small(at, j, "states", 1, 16, &k->states);
  if (st == SF_OK && json_object_get(j, "minblocks")) st = get_small(at, j, "minblocks", 0, 32, &k->min_blocks);
  json_t *split = json_object_get(j, "split");
  if (st == SF_OK && split) {
    if (json_is_string(split) && strcmp(json_string_value(split), "state") == 0) k->split_states = true;
    else if (!json_is_string(split) || strcmp(json_string_value(split), "time") != 0)
      st = bad(at, "split", "expected \"time\" or \"state\"");
  }
  return st;
}

static sf_status parse_candidate(const place *at, json_t *j, sf_tune_candidate *c) {
  memset(c, 0, sizeof *c);
  sf_status st = parse_config(at, j, &c->knobs);
  if (st != SF_OK) return st;
  json_t *failed = json_object_get(j, "failed");
  if (failed) {
    if (!json_is_string(failed)) return bad(at, "failed", "expected a string");
    snprintf(c->why, sizeof c->why, "%s", json_string_value(failed));
    c->error = -1;
    return SF_OK;
  }
  c->ok = true;
  st = get_number(at, j, "median_us", -1, &c->median_us);
  if (st == SF_OK && c->median_us < 0) st = bad(at, "median_us", "expected a number >= 0 (or 'failed')");
  if (st == SF_OK) st = get_number(at, j, "min_us", c->median_us, &c->min_us);
  if (st == SF_OK) st = get_number(at, j, "p90_us", c->median_us, &c->p90_us);
  if (st == SF_OK) st = get_number(at, j, "error", -1, &c->error);
  if (st == SF_OK) st = get_small(at, j, "reps", 0, 1 << 30, &c->reps);
  json_t *note = json_object_get(j, "note");
  if (st == SF_OK && json_is_string(note)) snprintf(c->why, sizeof c->why, "%s", json_string_value(note));
  return st;
}

static sf_status parse_entry(const place *at, json_t *j, sf_tune_entry *e) {
  memset(e, 0, sizeof *e);
  if (!json_is_object(j)) return bad(at, NULL, "expected an object");
  char op[8], dtype[8], flags[160];
  e->variant = sf_variant_default();
  sf_status st = get_string(at, j, "op", op, sizeof op);
  if (st == SF_OK) {
    if (strcmp(op, "fwd") == 0) e->variant.op = SF_OP_FWD;
    else if (strcmp(op, "bwd") == 0) e->variant.op = SF_OP_BWD;
    else st = bad(at, "op", "expected \"fwd\" or \"bwd\"");
  }
  if (st == SF_OK) st = get_small(at, j, "dstate", 1, 256, &e->variant.dstate);
  if (st == SF_OK) st = get_string(at, j, "dtype", dtype, sizeof dtype);
  if (st == SF_OK) {
    if (strcmp(dtype, "fp32") == 0) e->variant.dtype = SF_FP32;
    else if (strcmp(dtype, "fp16") == 0) e->variant.dtype = SF_FP16;
    else if (strcmp(dtype, "bf16") == 0) e->variant.dtype = SF_BF16;
    else st = bad(at, "dtype", "expected fp32, fp16 or bf16");
  }
  if (st == SF_OK) st = get_string(at, j, "flags", flags, sizeof flags);
  if (st == SF_OK && sf_tune_flags_parse(flags, &e->variant) != SF_OK) st = bad(at, "flags", sf_last_error());
  json_t *block_states = json_object_get(j, "block_states");
  if (st == SF_OK && block_states && !json_is_boolean(block_states)) st = bad(at, "block_states", "expected true or false");
  e->block_states = json_is_true(block_states);
  if (st == SF_OK && e->block_states && e->variant.op != SF_OP_BWD) st = bad(at, "block_states", "applies to op \"bwd\" only");
  if (st == SF_OK) st = get_small(at, j, "seqlen_bucket", 0, 62, &e->seqlen_bucket);
  if (st == SF_OK) st = get_small(at, j, "rows_bucket", 0, 62, &e->rows_bucket);
  json_t *shape = json_object_get(j, "shape");
  if (st == SF_OK && !json_is_object(shape)) st = bad(at, "shape", "expected an object");
  if (st == SF_OK) st = get_int(at, shape, "batch", 1, INT64_MAX, &e->shape.batch);
  if (st == SF_OK) st = get_int(at, shape, "dim", 1, INT64_MAX, &e->shape.dim);
  if (st == SF_OK) st = get_int(at, shape, "seqlen", 1, INT64_MAX, &e->shape.seqlen);
  if (st == SF_OK) st = get_small(at, shape, "groups", 1, 1 << 30, &e->shape.groups);
  json_t *winner = json_object_get(j, "winner"), *dflt = json_object_get(j, "default");
  sf_tune_knobs won;
  if (st == SF_OK) st = parse_config(at, winner, &won);
  if (st == SF_OK) sf_tune_knobs_apply(&won, &e->variant);
  if (st == SF_OK) st = get_number(at, winner, "median_us", 0, &e->winner_us);
  if (st == SF_OK && dflt) st = parse_config(at, dflt, &e->default_knobs);
  if (st == SF_OK && dflt) st = get_number(at, dflt, "median_us", 0, &e->default_us);
  if (st == SF_OK && sf_variant_validate(&e->variant) != SF_OK) st = bad(at, "winner", sf_last_error());
  json_t *complete = json_object_get(j, "complete"), *tuned = json_object_get(j, "tuned_at");
  e->complete = complete ? json_is_true(complete) : true;
  if (json_is_string(tuned)) snprintf(e->tuned_at, sizeof e->tuned_at, "%s", json_string_value(tuned));
  json_t *list = json_object_get(j, "candidates");
  if (st == SF_OK && list && !json_is_array(list)) st = bad(at, "candidates", "expected an array");
  if (st == SF_OK && json_array_size(list) > 0) {
    e->candidates = calloc(json_array_size(list), sizeof *e->candidates);
    if (!e->candidates) return sf_fail(SF_ENOMEM, "tuning database: out of memory");
    for (size_t i = 0; i < json_array_size(list) && st == SF_OK; i++) {
      place inner = *at;
      snprintf(inner.path, sizeof inner.path, "%s.candidates[%zu]", at->path, i);
      st = parse_candidate(&inner, json_array_get(list, i), &e->candidates[i]);
      e->candidate_count = (int)i + 1;
    }
  }
  if (st != SF_OK) sf_tune_entry_free(e);
  return st;
}

sf_status sf_tune_db_parse(const char *text, size_t length, const char *origin, sf_tune_db *out) {
  sf_tune_db_init(out);
  json_error_t error;
  json_t *root = json_loadb(text, length, JSON_REJECT_DUPLICATES, &error);
  if (!root) return sf_fail(SF_EINVAL, "%s: not JSON: line %d column %d: %s", origin, error.line, error.column, error.text);
  place at = {origin, ""};
  sf_status st = SF_OK;
  json_t *format = json_object_get(root, "format"), *version = json_object_get(root, "version");
  json_t *sections = json_object_get(root, "sections");
  if (!json_is_object(root) || !json_is_string(format) || strcmp(json_string_value(format), SF_TUNE_DB_FORMAT) != 0)
    st = sf_fail(SF_EINVAL, "%s: not a scanforge tuning database (no \"format\": \"%s\")", origin, SF_TUNE_DB_FORMAT);
  else if (!json_is_integer(version))
    st = sf_fail(SF_EINVAL, "%s: no integer \"version\"", origin);
  else if (json_integer_value(version) != SF_TUNE_DB_VERSION)
    st = sf_fail(SF_EINVAL, "%s: format version %lld, this build reads version %d", origin,
                 (long long)json_integer_value(version), SF_TUNE_DB_VERSION);
  else if (!json_is_array(sections))
    st = bad(&at, "sections", "expected an array");
  for (size_t s = 0; st == SF_OK && s < json_array_size(sections); s++) {
    json_t *sec = json_array_get(sections, s);
    snprintf(at.path, sizeof at.path, "sections[%zu].gpu", s);
    sf_tune_gpu gpu;
    memset(&gpu, 0, sizeof gpu);
    st = json_is_object(sec) ? parse_gpu(&at, json_object_get(sec, "gpu"), &gpu) : bad(&at, NULL, "expected an object");
    json_t *entries = json_object_get(sec, "entries");
    if (st == SF_OK && !json_is_array(entries)) {
      snprintf(at.path, sizeof at.path, "sections[%zu]", s);
      st = bad(&at, "entries", "expected an array");
    }
    for (size_t e = 0; st == SF_OK && e < json_array_size(entries); e++) {
      snprintf(at.path, sizeof at.path, "sections[%zu].entries[%zu]", s, e);
      sf_tune_entry entry;
      st = parse_entry(&at, json_array_get(entries, e), &entry);
      if (st == SF_OK) {
        st = sf_tune_db_put(out, &gpu, &entry);
        sf_tune_entry_free(&entry);
      }
    }
  }
  json_decref(root);
  if (st != SF_OK) sf_tune_db_free(out);
  return st;
}

/* ---- files --------------------------------------------------------------------------- */

char *sf_tune_db_default_path(void) {
  sf_env_value named;
  if (sf_env_get(SF_ENV_TUNING_DB, &named)) return strdup(named.text);
  char *dir = sf_cache_default_dir();
  if (!dir) return NULL;
  size_t n = strlen(dir) + sizeof "/tuning.json";
  char *path = malloc(n);
  if (path) snprintf(path, n, "%s/tuning.json", dir);
  free(dir);
  if (!path) sf_fail(SF_ENOMEM, "out of memory");
  return path;
}

static char *format_warning(const char *fmt, const char *a, const char *b) {
  size_t n = strlen(fmt) + strlen(a) + strlen(b) + 1;
  char *w = malloc(n);
  if (w) snprintf(w, n, fmt, a, b);
  return w;
}

/* The whole file into a new NUL-terminated buffer; NULL with errno set on failure. */
static char *read_all(int fd, size_t *length) {
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    if (n + 1 >= cap) {
      char *grown = realloc(buf, cap *= 2);
      if (!grown) {
        free(buf);
        errno = ENOMEM;
        return NULL;
      }
      buf = grown;
    }
    ssize_t got = read(fd, buf + n, cap - n - 1);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      int err = errno;
      free(buf);
      errno = err;
      return NULL;
    }
    if (got == 0) break;
    n += (size_t)got;
  }
  if (buf) buf[n] = '\0';
  *length = n;
  return buf;
}

sf_status sf_tune_db_load(const char *path, sf_tune_db *out, char **warning) {
  sf_tune_db_init(out);
  if (warning) *warning = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return SF_OK; /* nothing tuned yet */
    if (warning) *warning = format_warning("tuning database %s cannot be read (%s): ignored", path, strerror(errno));
    return SF_OK;
  }
  size_t length = 0;
  char *text = read_all(fd, &length);
  int err = errno;
  close(fd);
  if (!text) {
    if (warning) *warning = format_warning("tuning database %s cannot be read (%s): ignored", path, strerror(err));
    return SF_OK;
  }
  sf_status st = sf_tune_db_parse(text, length, path, out);
  free(text);
  if (st == SF_ENOMEM) return st;
  if (st != SF_OK && warning) *warning = format_warning("tuning database %s%s: ignored", sf_last_error(), "");
  return SF_OK;
}
