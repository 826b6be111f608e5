/* lookup.c: tuned configurations grouped by class, found by nearest shape bucket. */
#include "runtime/launch_config/lookup.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"

typedef struct row {
  int seqlen_bucket, rows_bucket;
  sf_tune_knobs knobs;
} row;

/* All entries of one (op, dstate, dtype, flags). */
typedef struct class_rows {
  uint64_t key;
  row *rows;
  int count;
} class_rows;

struct sf_tune_table {
  class_rows *classes;
  int class_count;
  int size;
};

/* op, dtype, dstate, flags and block states packed, so that finding a class is one compare. */
static uint64_t class_key(const sf_variant *v, bool block_states) {
  return (uint64_t)v->op | (uint64_t)v->dtype << 1 | (uint64_t)v->dstate << 3 | (uint64_t)v->has_z << 12 |
         (uint64_t)v->has_D << 13 | (uint64_t)v->has_delta_bias << 14 | (uint64_t)v->softplus << 15 |
         (uint64_t)v->B_var << 16 | (uint64_t)v->C_var << 17 | (uint64_t)v->deterministic << 18 |
         (uint64_t)block_states << 19;
}

static class_rows *find_class(const sf_tune_table *t, uint64_t key) {
  for (int i = 0; i < t->class_count; i++)
    if (t->classes[i].key == key) return &t->classes[i];
  return NULL;
}

static bool has_key(const sf_tune_section *s, const sf_tune_entry *e) {
  return s && sf_tune_section_find(s, e) != NULL;
}

/* Adds one entry; the rows array of each class was sized beforehand. */
static void add(sf_tune_table *t, const sf_tune_entry *e) {
  class_rows *c = find_class(t, class_key(&e->variant, e->block_states));
  c->rows[c->count++] = (row){e->seqlen_bucket, e->rows_bucket, sf_tune_knobs_of(&e->variant)};
  t->size++;
}

sf_status sf_tune_table_build(const sf_tune_section *user, const sf_tune_section *defaults, sf_tune_table **out) {
  *out = NULL;
  const sf_tune_section *parts[2] = {user, defaults};
  int total = 0;
  for (int p = 0; p < 2; p++) total += parts[p] ? parts[p]->count : 0;
  sf_tune_table *t = calloc(1, sizeof *t);
  uint64_t *keys = calloc((size_t)total + 1, sizeof *keys);
  int *counts = calloc((size_t)total + 1, sizeof *counts);
  if (!t || !keys || !counts) goto out_of_memory;
  /* First pass: the classes and how many rows each gets. */
  for (int p = 0; p < 2; p++)
    for (int i = 0; parts[p] && i < parts[p]->count; i++) {
      const sf_tune_entry *e = &parts[p]->entries[i];
      if (p == 1 && has_key(user, e)) continue;
      uint64_t key = class_key(&e->variant, e->block_states);
      int k = 0;
      while (k < t->class_count && keys[k] != key) k++;
      if (k == t->class_count) keys[t->class_count++] = key;
      counts[k]++;
    }
  t->classes = calloc((size_t)t->class_count + 1, sizeof *t->classes);
  if (!t->classes) goto out_of_memory;
  for (int k = 0; k < t->class_count; k++) {
    t->classes[k].key = keys[k];
    t->classes[k].rows = calloc((size_t)counts[k], sizeof(row));
    if (!t->classes[k].rows) goto out_of_memory;
  }
  for (int p = 0; p < 2; p++)
    for (int i = 0; parts[p] && i < parts[p]->count; i++)
      if (!(p == 1 && has_key(user, &parts[p]->entries[i]))) add(t, &parts[p]->entries[i]);
  free(keys);
  free(counts);
  *out = t;
  return SF_OK;
out_of_memory:
  free(keys);
  free(counts);
  sf_tune_table_free(t);
  return sf_fail(SF_ENOMEM, "tuning table: out of memory");
}

void sf_tune_table_free(sf_tune_table *t) {
  if (!t) return;
  for (int k = 0; t->classes && k < t->class_count; k++) free(t->classes[k].rows);
  free(t->classes);
  free(t);
}

int sf_tune_table_size(const sf_tune_table *t) { return t ? t->size : 0; }

/* Whether a configuration can run this call at all (the backward's launcher refuses the
 * others). */
static bool fits(const sf_variant *v, const row *r, int64_t dim, int groups, int64_t seqlen) {
  const sf_tune_knobs *k = &r->knobs;
  const int64_t per_group = groups > 0 ? dim / groups : dim;
  /* A block that shares one group's B and C rows needs whole groups of channels. */
  const bool shares_rows = v->op == SF_OP_BWD || k->split_states;
  if (shares_rows && (v->B_var || v->C_var) && per_group % k->channels != 0) return false;
  /* The split=time backward's threads x items are the state interval of L. */
  return v->op != SF_OP_BWD || k->split_states || (int64_t)k->threads * k->items == sf_scan_state_interval(seqlen);
}

static int absolute(int x) { return x < 0 ? -x : x; }

bool sf_tune_table_lookup(const sf_tune_table *t, sf_variant *v, bool block_states, int64_t batch, int64_t dim,
                          int groups, int64_t seqlen) {
  if (!t) return false;
  const class_rows *c = find_class(t, class_key(v, block_states));
  if (!c && v->deterministic) {
    /* A deterministic backward runs the same kernel but for where its sums go (partial
     * slots instead of atomics): without entries of its own it takes the default mode's
     * (docs/tuning.md, "Deterministic calls"). */
    sf_variant plain = *v;
    plain.deterministic = false;
    c = find_class(t, class_key(&plain, block_states));
  }
  if (!c) return false;
  const int lb = sf_tune_bucket(seqlen), rb = sf_tune_bucket(batch * dim);
  const row *best = NULL;
  int best_distance = 0, best_dl = 0;
  for (int i = 0; i < c->count; i++) {
    const row *r = &c->rows[i];
    const int dl = absolute(r->seqlen_bucket - lb), dr = absolute(r->rows_bucket - rb);
    if (dl > SF_TUNE_REACH_SEQLEN || dr > SF_TUNE_REACH_ROWS) continue;
    if (!fits(v, r, dim, groups, seqlen)) continue;
    const int distance = 2 * dl + dr;
    if (!best || distance < best_distance || (distance == best_distance && dl < best_dl)) {
      best = r;
      best_distance = distance;
      best_dl = dl;
    }
  }
  if (!best) return false;
  sf_tune_knobs_apply(&best->knobs, v);
  return true;
}
