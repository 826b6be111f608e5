/* test_tuning_lookup.c: nearest-bucket lookup, user entries over shipped defaults, and the embedded defaults. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/launch_config/tuning_database.h"
#include "runtime/launch_config/defaults.h"
#include "runtime/launch_config/lookup.h"

static sf_variant fwd_class(void) {
  sf_variant v = sf_variant_default();
  v.dstate = 16;
  v.has_D = v.has_delta_bias = v.softplus = true;
  return v;
}

/* The same call's backward. */
static sf_variant bwd_class(void) {
  sf_variant v = fwd_class();
  v.op = SF_OP_BWD;
  return v;
}

static sf_tune_entry entry(sf_variant cls, int64_t batch, int64_t dim, int64_t seqlen, int threads, int items,
                           int channels) {
  sf_tune_entry e;
  memset(&e, 0, sizeof e);
  e.variant = cls;
  e.variant.threads = threads, e.variant.items = items, e.variant.channels = channels;
  e.shape = (sf_tune_shape){batch, dim, seqlen, 1};
  e.seqlen_bucket = sf_tune_bucket(seqlen);
  e.rows_bucket = sf_tune_bucket(batch * dim);
  e.complete = true;
  return e;
}

static void add(sf_tune_section *s, sf_tune_entry e) {
  s->entries = realloc(s->entries, (size_t)(s->count + 1) * sizeof *s->entries);
  s->entries[s->count++] = e;
}

typedef struct knobs {
  int threads, items, channels;
} knobs;

static bool look(const sf_tune_table *t, sf_variant v, int64_t batch, int64_t dim, int groups, int64_t seqlen,
                 knobs *out) {
  v.threads = 1, v.items = 1, v.channels = 1;
  bool found = sf_tune_table_lookup(t, &v, false, batch, dim, groups, seqlen);
  *out = (knobs){v.threads, v.items, v.channels};
  return found;
}

Test(tuning_lookup, nearest_bucket_within_reach) {
  sf_tune_section user = {0};
  const sf_variant cls = fwd_class();
  add(&user, entry(cls, 8, 1536, 2048, 128, 16, 1)); /* L 11, rows 14 */
  add(&user, entry(cls, 64, 160, 196, 32, 8, 4));    /* L 8, rows 14 */
  add(&user, entry(cls, 1, 256, 1024, 64, 16, 2));   /* L 10, rows 8 */
  sf_tune_table *t;
  cr_assert_eq(sf_tune_table_build(&user, NULL, &t), SF_OK);
  cr_expect_eq(sf_tune_table_size(t), 3);
  knobs k;
  /* The exact bucket. */
  cr_assert(look(t, cls, 8, 1536, 1, 2000, &k));
  cr_expect(k.threads == 128 && k.items == 16 && k.channels == 1);
  /* L 4096 is one bucket up from 2048: still reached. */
  cr_assert(look(t, cls, 8, 1536, 1, 4096, &k));
  cr_expect_eq(k.threads, 128);
  /* L 8192 is two buckets up: out of reach, the heuristics decide. */
  cr_expect_not(look(t, cls, 8, 1536, 1, 8192, &k));
  /* rows 2^12 at L 196: two rows buckets from the MambaVision entry. */
  cr_assert(look(t, cls, 16, 256, 1, 196, &k));
  cr_expect(k.threads == 32 && k.channels == 4);
  /* rows 2^11 at L 196: three away, out of reach. */
  cr_expect_not(look(t, cls, 8, 256, 1, 196, &k));
  /* L 512 (bucket 9) between the L 8 and L 10 entries: (1, 256) rows 8 is 6 rows buckets
   * from the L 8 entry, so the L 10 entry is the one in reach. */
  cr_assert(look(t, cls, 1, 256, 1, 512, &k));
  cr_expect(k.threads == 64 && k.channels == 2);
  /* L 1024, rows 2^10: the L 11 entry is 4 rows buckets away (out of reach), the L 10
   * entry 2. */
  cr_assert(look(t, cls, 1, 1024, 1, 1024, &k));
  cr_expect_eq(k.threads, 64);
  sf_tune_table_free(t);
  free(user.entries);
}

Test(tuning_lookup, other_classes_do_not_match) {
  sf_tune_section user = {0};
  const sf_variant cls = fwd_class();
  add(&user, entry(cls, 8, 1536, 2048, 128, 16, 1));
  sf_tune_table *t;
  cr_assert_eq(sf_tune_table_build(&user, NULL, &t), SF_OK);
  knobs k;
  sf_variant other = cls;
  other.dtype = SF_BF16;
  cr_expect_not(look(t, other, 8, 1536, 1, 2048, &k), "dtype differs");
  other = cls;
  other.has_z = true;
  cr_expect_not(look(t, other, 8, 1536, 1, 2048, &k), "z differs");
  other = cls;
  other.dstate = 8;
  cr_expect_not(look(t, other, 8, 1536, 1, 2048, &k), "dstate differs");
  other = cls;
  other.op = SF_OP_BWD;
  cr_expect_not(look(t, other, 8, 1536, 1, 2048, &k), "op differs");
  cr_expect(look(t, cls, 8, 1536, 1, 2048, &k));
  sf_tune_table_free(t);
  free(user.entries);
}

Test(tuning_lookup, nearer_entry_wins_and_ties_prefer_the_same_length) {
  sf_tune_section user = {0};
  const sf_variant cls = fwd_class();
  add(&user, entry(cls, 1, 1024, 1024, 64, 16, 1));  /* L 10, rows 10 */
  add(&user, entry(cls, 1, 4096, 2048, 128, 16, 1)); /* L 11, rows 12 */
  add(&user, entry(cls, 1, 2048, 4096, 256, 16, 1)); /* L 12, rows 11 */
  sf_tune_table *t;
  cr_assert_eq(sf_tune_table_build(&user, NULL, &t), SF_OK);
  knobs k;
  /* Call L 11, rows 10: distances 2*1+0 = 2, 0+2 = 2, 2*1+1 = 3: the tie goes to the
   * entry of the same L. */
  cr_assert(look(t, cls, 1, 1024, 1, 2048, &k));
  cr_expect_eq(k.threads, 128);
  /* Call L 12, rows 11: the exact entry. */
  cr_assert(look(t, cls, 1, 2048, 1, 4096, &k));
  cr_expect_eq(k.threads, 256);
  sf_tune_table_free(t);
  free(user.entries);
}

Test(tuning_lookup, user_entries_replace_shipped_defaults) {
  sf_tune_section user = {0}, defaults = {0};
  const sf_variant cls = fwd_class();
  add(&user, entry(cls, 8, 1536, 2048, 128, 16, 1));
  add(&defaults, entry(cls, 8, 1536, 2048, 32, 16, 4)); /* the same key */
  add(&defaults, entry(cls, 64, 160, 196, 16, 8, 8));   /* only in the defaults */
  sf_tune_table *t;
  cr_assert_eq(sf_tune_table_build(&user, &defaults, &t), SF_OK);
  cr_expect_eq(sf_tune_table_size(t), 2);
  knobs k;
  cr_assert(look(t, cls, 8, 1536, 1, 2048, &k));
  cr_expect_eq(k.threads, 128, "the user's entry wins");
  cr_assert(look(t, cls, 64, 160, 1, 196, &k));
  cr_expect(k.threads == 16 && k.channels == 8, "the default fills the gap");
  sf_tune_table_free(t);
  cr_assert_eq(sf_tune_table_build(NULL, &defaults, &t), SF_OK);
  cr_assert(look(t, cls, 8, 1536, 1, 2048, &k));
  cr_expect_eq(k.threads, 32);
  sf_tune_table_free(t);
  free(user.entries);
  free(defaults.entries);
}

Test(tuning_lookup, backward_entries_must_fit_the_call) {
  sf_tune_section user = {0};
  const sf_variant cls = bwd_class();
  add(&user, entry(cls, 64, 160, 196, 32, 8, 4)); /* interval 256, channels 4 */
  sf_tune_table *t;
  cr_assert_eq(sf_tune_table_build(&user, NULL, &t), SF_OK);
  knobs k;
  cr_assert(look(t, cls, 64, 160, 1, 196, &k));
  cr_expect(k.threads * k.items == 256);
  /* L 100 (bucket 7) is in reach, but its interval is 128: 32 x 8 does not cover it. */
  cr_expect_not(look(t, cls, 64, 160, 1, 100, &k));
  /* dim 162: 4 does not divide the 162 channels of the group. */
  cr_expect_not(look(t, cls, 64, 162, 1, 196, &k));
  /* groups 2 of 160 channels: 80 per group, divisible by 4. */
  cr_expect(look(t, cls, 64, 160, 2, 196, &k));
  sf_tune_table_free(t);
  free(user.entries);
}

/* A split=state backward entry has no interval to match: it serves every length in reach. */
Test(tuning_lookup, state_split_backward_entries_serve_any_interval) {
  sf_tune_section user = {0};
  const sf_variant cls = bwd_class();
  sf_tune_entry e = entry(cls, 8, 1536, 2048, 8, 8, 8); /* lanes 8, items 8, channels 8 */
  e.variant.split_states = true;
  add(&user, e);
  sf_tune_table *t;
  cr_assert_eq(sf_tune_table_build(&user, NULL, &t), SF_OK);
  knobs k;
  cr_assert(look(t, cls, 8, 1536, 1, 2048, &k));
  cr_expect(k.threads == 8 && k.items == 8 && k.channels == 8);
  cr_expect(look(t, cls, 8, 1536, 1, 1500, &k), "interval 2048's neighbour 1500 is in reach too");
  sf_tune_table_free(t);
  free(user.entries);
}

Test(tuning_lookup, state_split_entries_need_whole_groups_of_channels) {
  sf_tune_section user = {0};
  const sf_variant cls = fwd_class();
  sf_tune_entry e = entry(cls, 64, 160, 196, 8, 32, 4);
  e.variant.split_states = true;
  add(&user, e);
  sf_tune_table *t;
  cr_assert_eq(sf_tune_table_build(&user, NULL, &t), SF_OK);
  knobs k;
  sf_variant v = cls;
  cr_assert(sf_tune_table_lookup(t, &v, false, 64, 160, 1, 196));
  cr_expect(v.split_states && v.threads == 8 && v.items == 32);
  (void)k;
  v = cls;
  cr_expect_not(sf_tune_table_lookup(t, &v, false, 64, 162, 1, 196), "4 channels do not divide 162");
  sf_tune_table_free(t);
  free(user.entries);
}

Test(tuning_lookup, empty_table_finds_nothing) {
  knobs k;
  cr_expect_not(look(NULL, fwd_class(), 1, 1, 1, 1, &k));
  sf_tune_table *t;
  cr_assert_eq(sf_tune_table_build(NULL, NULL, &t), SF_OK);
  cr_expect_not(look(t, fwd_class(), 1, 1, 1, 1, &k));
  sf_tune_table_free(t);
}

/* The generated tuning_defaults_data.c (cmake/embed_tuning_defaults.cmake) must hold exactly the JSON files of tuning/defaults/. */
Test(tuning_lookup, embedded_defaults_match_their_files) {
  char listing[4096];
  snprintf(listing, sizeof listing, "ls %s/tuning/defaults/ 2>/dev/null | grep '\\.json$'", SCANFORGE_SOURCE_DIR);
  FILE *ls = popen(listing, "r");
  cr_assert(ls);
  int files = 0;
  char name[256];
  while (fgets(name, sizeof name, ls)) {
    name[strcspn(name, "\n")] = '\0';
    files++;
    char path[4096];
    snprintf(path, sizeof path, "%s/tuning/defaults/%s", SCANFORGE_SOURCE_DIR, name);
    FILE *f = fopen(path, "rb");
    cr_assert(f);
    static char text[1 << 22];
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    const sf_tune_default_file *found = NULL;
    for (const sf_tune_default_file *d = sf_tune_default_files; d->name; d++)
      if (strcmp(d->name, name) == 0) found = d;
    cr_assert(found, "%s is not embedded: re-run cmake and rebuild", name);
    cr_expect(found->size == n && memcmp(found->text, text, n) == 0,
              "%s differs from its embedded copy: rebuild", name);
  }
  pclose(ls);
  int embedded = 0;
  for (const sf_tune_default_file *d = sf_tune_default_files; d->name; d++) embedded++;
  cr_expect_eq(embedded, files, "embedded files without a JSON file: re-run cmake and rebuild");
  sf_tune_db db;
  char *warning = NULL;
  cr_assert_eq(sf_tune_defaults_load(&db, &warning), SF_OK);
  cr_expect_null(warning, "a shipped file does not parse: %s", warning ? warning : "");
  sf_tune_db_free(&db);
}

/* A split=state backward entry of the (8, 1536, 2048) shape with these knobs. */
static sf_tune_entry state_bwd_entry(sf_variant cls, int threads, int items, int channels) {
  sf_tune_entry e = entry(cls, 8, 1536, 2048, threads, items, channels);
  e.variant.split_states = true;
  return e;
}

/* Block-states entries (docs/design-block-states.md) are a class of their own: a backward
 * on block states finds them and nothing else, one at the default interval never does. */
Test(tuning_lookup, block_states_entries_are_a_class_of_their_own) {
  sf_tune_section user = {0};
  const sf_variant cls = bwd_class();
  add(&user, state_bwd_entry(cls, 2, 8, 16));
  sf_tune_table *t;
  cr_assert_eq(sf_tune_table_build(&user, NULL, &t), SF_OK);
  sf_variant v = cls;
  cr_expect_not(sf_tune_table_lookup(t, &v, true, 8, 1536, 1, 2048), "no block-states entry: the heuristics decide");
  sf_tune_table_free(t);

  sf_tune_entry block = state_bwd_entry(cls, 4, 16, 8);
  block.block_states = true;
  add(&user, block);
  cr_assert_eq(sf_tune_table_build(&user, NULL, &t), SF_OK);
  cr_expect_eq(sf_tune_table_size(t), 2, "the two entries' keys differ in block_states only");
  v = cls;
  cr_assert(sf_tune_table_lookup(t, &v, false, 8, 1536, 1, 2048));
  cr_expect(v.threads == 2 && v.items == 8 && v.channels == 16, "the default interval's entry");
  v = cls;
  cr_assert(sf_tune_table_lookup(t, &v, true, 8, 1536, 1, 2048));
  cr_expect(v.threads == 4 && v.items == 16 && v.channels == 8, "the block-states entry");
  sf_tune_table_free(t);
  free(user.entries);
}

Test(tuning_lookup, deterministic_calls_take_the_default_entries_unless_they_have_their_own) {
  sf_tune_section user = {0};
  const sf_variant cls = bwd_class();
  add(&user, state_bwd_entry(cls, 4, 8, 16));
  sf_tune_table *t;
  cr_assert_eq(sf_tune_table_build(&user, NULL, &t), SF_OK);
  sf_variant v = cls;
  v.deterministic = true;
  cr_assert(sf_tune_table_lookup(t, &v, false, 8, 1536, 1, 2048), "no deterministic entry: the default mode's");
  cr_expect(v.threads == 4 && v.items == 8 && v.channels == 16);
  cr_expect(v.deterministic, "the lookup sets knobs, never the function");
  v = cls;
  v.deterministic = true;
  cr_expect_not(sf_tune_table_lookup(t, &v, true, 8, 1536, 1, 2048), "nor a block-states one of either mode");
  sf_tune_table_free(t);

  sf_tune_entry own = state_bwd_entry(cls, 2, 16, 32);
  own.variant.deterministic = true;
  add(&user, own);
  cr_assert_eq(sf_tune_table_build(&user, NULL, &t), SF_OK);
  v = cls;
  v.deterministic = true;
  cr_assert(sf_tune_table_lookup(t, &v, false, 8, 1536, 1, 2048));
  cr_expect(v.threads == 2 && v.items == 16 && v.channels == 32, "its own entry first");
  v = cls;
  cr_assert(sf_tune_table_lookup(t, &v, false, 8, 1536, 1, 2048));
  cr_expect(v.threads == 4 && v.channels == 16, "the default call keeps the default entry");
  sf_tune_table_free(t);
  free(user.entries);
}

/* The gated N = 256 bf16 backward: 32 lanes x 8 steps x 4 channels won only where 512
 * channels make one wave of it, and was 19-25% slower at 1024 channels on both GPUs
 * (docs/perf.md v22, v23). An entry reaches two rows buckets away, so the shipped files
 * hold guard entries at the larger shapes; this keeps a later edit from dropping them. */
Test(tuning_lookup, shipped_gated_n256_one_wave_launch_reaches_no_larger_shape) {
  sf_tune_db db;
  char *warning = NULL;
  cr_assert_eq(sf_tune_defaults_load(&db, &warning), SF_OK);
  sf_variant cls = sf_variant_default();
  cls.op = SF_OP_BWD, cls.dstate = 256, cls.dtype = SF_BF16;
  cls.has_z = cls.has_D = cls.has_delta_bias = cls.softplus = true;
  const struct { int64_t batch, dim, seqlen; } larger[] = {
      {2, 512, 2048}, {1, 1024, 2048}, {1, 1024, 4096}, {4, 512, 2048}, {2, 1024, 4096}};
  int one_wave_entries = 0;
  for (int s = 0; s < db.count; s++) {
    sf_tune_table *t;
    cr_assert_eq(sf_tune_table_build(&db.sections[s], NULL, &t), SF_OK);
    for (int block_states = 0; block_states <= 1; block_states++) {
      sf_variant v = cls;
      if (sf_tune_table_lookup(t, &v, block_states, 1, 512, 1, 2048) && v.items == 8 && v.channels == 4)
        one_wave_entries++;
      for (size_t i = 0; i < sizeof larger / sizeof larger[0]; i++) {
        v = cls;
        if (!sf_tune_table_lookup(t, &v, block_states, larger[i].batch, larger[i].dim, 1, larger[i].seqlen))
          continue; /* the heuristics decide: 32 x 4 x 8 */
        cr_expect(!(v.threads == 32 && v.items == 8 && v.channels == 4),
                  "%s, block_states=%d: (%lld,%lld,%lld) takes 32/8/4", db.sections[s].gpu.name, block_states,
                  (long long)larger[i].batch, (long long)larger[i].dim, (long long)larger[i].seqlen);
      }
    }
    sf_tune_table_free(t);
  }
  cr_expect_geq(one_wave_entries, 1, "the shipped files hold the 512-channel entry this guards");
  sf_tune_db_free(&db);
}

/* The 130M-sized backward past one wave (docs/perf.md v24): batch x dim in (16384, 32768]
 * takes 4 lanes x 8 steps x 16 channels at 6 blocks an SM in bf16 with block states and
 * in fp32 by default (measured 9-24% faster than the lanes twin the (8,1536) entry led
 * to); the other two modes keep the (8,1536) entry, whose launch the new one lost to on
 * (16,2048) and (8,4096) by 5-9%. */
Test(tuning_lookup, shipped_n16_entries_past_one_wave) {
  sf_tune_db db;
  char *warning = NULL;
  cr_assert_eq(sf_tune_defaults_load(&db, &warning), SF_OK);
  int spread = 0;
  for (int s = 0; s < db.count; s++) {
    sf_tune_table *t;
    cr_assert_eq(sf_tune_table_build(&db.sections[s], NULL, &t), SF_OK);
    for (int bf16 = 0; bf16 <= 1; bf16++) {
      for (int block_states = 0; block_states <= 1; block_states++) {
        sf_variant cls = sf_variant_default();
        cls.op = SF_OP_BWD, cls.dstate = 16, cls.dtype = bf16 ? SF_BF16 : SF_FP32;
        cls.has_z = cls.has_D = cls.has_delta_bias = cls.softplus = true;
        const bool measured_faster = bf16 ? block_states : !block_states;
        const struct { int64_t batch, dim; } shapes[] = {{12, 1536}, {16, 1536}, {16, 2048}, {8, 4096}};
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
          sf_variant v = cls;
          if (!sf_tune_table_lookup(t, &v, block_states, shapes[i].batch, shapes[i].dim, 1, 2048)) continue;
          const bool takes = v.threads == 4 && v.items == 8 && v.channels == 16 && v.min_blocks == 6;
          spread += takes;
          cr_expect_eq(takes, measured_faster, "%s, bf16=%d, block_states=%d, (%lld,%lld): %d/%d/%d+b%d",
                       db.sections[s].gpu.name, bf16, block_states, (long long)shapes[i].batch,
                       (long long)shapes[i].dim, v.threads, v.items, v.channels, v.min_blocks);
        }
      }
    }
    sf_tune_table_free(t);
  }
  cr_expect_geq(spread, 8, "the shipped files hold the bucket's entries");
  sf_tune_db_free(&db);
}

/* A launch the shipped files must give a call: on the GPU named `gpu` (NULL: every GPU
 * the files hold), the gated (z) or plain call of op, d_state and type over (batch, dim,
 * seqlen), by default or on block states. */
typedef struct shipped_launch {
  const char *gpu;
  sf_op op;
  int dstate;
  sf_dtype dtype;
  bool z;
  int64_t batch, dim, seqlen;
  bool block_states;
  int threads, items, channels, min_blocks;
} shipped_launch;

/* Looks every launch up in the embedded defaults, expects it; returns how many lookups ran. */
static int expect_shipped_launches(const shipped_launch *launches, size_t count) {
  sf_tune_db db;
  char *warning = NULL;
  cr_assert_eq(sf_tune_defaults_load(&db, &warning), SF_OK);
  int checked = 0;
  for (int s = 0; s < db.count; s++) {
    sf_tune_table *t;
    cr_assert_eq(sf_tune_table_build(&db.sections[s], NULL, &t), SF_OK);
    for (size_t i = 0; i < count; i++) {
      const shipped_launch *e = &launches[i];
      if (e->gpu && strcmp(db.sections[s].gpu.name, e->gpu) != 0) continue;
      sf_variant v = sf_variant_default();
      v.op = e->op, v.dstate = e->dstate, v.dtype = e->dtype, v.has_z = e->z;
      v.has_D = v.has_delta_bias = v.softplus = true;
      cr_assert(sf_tune_table_lookup(t, &v, e->block_states, e->batch, e->dim, 1, e->seqlen), "%s, launch %zu: no entry",
                db.sections[s].gpu.name, i);
      cr_expect(v.threads == e->threads && v.items == e->items && v.channels == e->channels &&
                    v.min_blocks == e->min_blocks,
                "%s, launch %zu: %d/%d/%d+b%d", db.sections[s].gpu.name, i, v.threads, v.items, v.channels, v.min_blocks);
      checked++;
    }
    sf_tune_table_free(t);
  }
  sf_tune_db_free(&db);
  return checked;
}

/* The gated bf16 backwards at N = 32 and 128, re-chosen on both GPUs after their dB/dC
 * terms became bf16 pairs (docs/perf.md v25): N = 32 over (4,1024,2048) takes 8 lanes x 16
 * steps x 8 channels, N = 128 over (2,512,2048) 8 x 8 x 16, both modes (9-25% faster where
 * they reach); (4,512,2048) at N = 128 keeps 16 lanes x 8 steps capped at 2 blocks an SM,
 * where 8 x 8 x 16 was 5-6% slower (a guard entry; 16 channels on the H100's block states,
 * 8 elsewhere). */
Test(tuning_lookup, shipped_packed_terms_entries) {
  const sf_op B = SF_OP_BWD;
  static const shipped_launch launches[] = {
      {NULL, B, 32, SF_BF16, true, 4, 1024, 2048, false, 8, 16, 8, 0},
      {NULL, B, 32, SF_BF16, true, 4, 1024, 2048, true, 8, 16, 8, 0},
      {NULL, B, 32, SF_BF16, true, 8, 1024, 2048, false, 8, 16, 8, 0},
      {NULL, B, 32, SF_BF16, true, 8, 1024, 2048, true, 8, 16, 8, 0},
      {NULL, B, 32, SF_BF16, true, 4, 1024, 1024, false, 8, 16, 8, 0},
      {NULL, B, 32, SF_BF16, true, 4, 1024, 1024, true, 8, 16, 8, 0},
      {NULL, B, 128, SF_BF16, true, 2, 512, 2048, false, 8, 8, 16, 0},
      {NULL, B, 128, SF_BF16, true, 2, 512, 2048, true, 8, 8, 16, 0},
      {NULL, B, 128, SF_BF16, true, 2, 512, 4096, false, 8, 8, 16, 0},
      {NULL, B, 128, SF_BF16, true, 2, 512, 4096, true, 8, 8, 16, 0},
      {NULL, B, 128, SF_BF16, true, 4, 512, 2048, false, 16, 8, 8, 2},
      {"NVIDIA H200", B, 128, SF_BF16, true, 4, 512, 2048, true, 16, 8, 8, 2},
      {"NVIDIA H100 80GB HBM3", B, 128, SF_BF16, true, 4, 512, 2048, true, 16, 8, 16, 2}};
  cr_expect_eq(expect_shipped_launches(launches, sizeof launches / sizeof launches[0]), 24,
               "the shipped files hold the H100 and H200 sections");
}

/* The gated bf16 backwards at N = 64 and 256 and the gated bf16 forward at N = 256,
 * re-chosen on both GPUs by a sweep of neighbouring launches (docs/perf.md v26): N = 64 over
 * (4,1024,2048) takes 8 lanes x 8 steps x 8 channels in both modes (8-12% faster where it
 * reaches), while (8,1024,2048) keeps the launches the old entry led to (a guard entry:
 * with 8 channels the plan's lanes twin was 9-10% slower there); N = 256 over (1,512,2048)
 * takes 32 x 8 x 8 capped at one block an SM by default (4-5% faster) and keeps 32 x 8 x 4
 * at two on block states. The forward at N = 256 over (1,512,2048) takes 32 x 16 x 8 capped
 * at two (5-13% faster), also at (1,256,2048), which the H200's file led to split=time. */
Test(tuning_lookup, shipped_large_n_neighbour_entries) {
  const sf_op B = SF_OP_BWD, F = SF_OP_FWD;
  static const shipped_launch launches[] = {
      {NULL, B, 64, SF_BF16, true, 4, 1024, 2048, false, 8, 8, 8, 0},
      {NULL, B, 64, SF_BF16, true, 4, 1024, 2048, true, 8, 8, 8, 0},
      {NULL, B, 64, SF_BF16, true, 2, 1024, 2048, false, 8, 8, 8, 0},
      {NULL, B, 64, SF_BF16, true, 4, 1024, 4096, true, 8, 8, 8, 0},
      {NULL, B, 64, SF_BF16, true, 8, 1024, 2048, false, 8, 8, 16, 0},
      {NULL, B, 64, SF_BF16, true, 8, 1024, 2048, true, 8, 8, 32, 0},
      {NULL, B, 256, SF_BF16, true, 1, 512, 2048, false, 32, 8, 8, 1},
      {NULL, B, 256, SF_BF16, true, 1, 256, 2048, false, 32, 8, 8, 1},
      {NULL, B, 256, SF_BF16, true, 1, 512, 2048, true, 32, 8, 4, 2},
      {NULL, F, 256, SF_BF16, true, 1, 512, 2048, false, 32, 16, 8, 2},
      {NULL, F, 256, SF_BF16, true, 1, 256, 2048, false, 32, 16, 8, 2},
      {NULL, F, 256, SF_BF16, true, 2, 512, 2048, false, 32, 16, 8, 2}};
  cr_expect_eq(expect_shipped_launches(launches, sizeof launches / sizeof launches[0]), 24,
               "the shipped files hold the H100 and H200 sections");
}

/* The H200's fp32 backward at N = 128 over (2,512,2048) on block states: 32 lanes x 8 steps x
 * 8 channels capped at one block an SM instead of two, 5% faster on the seven fp32 rows
 * around it (docs/perf.md v26); by default it keeps 16 x 8 x 16 capped at two, which the
 * one-block launch lost to by 21-22% on four of those rows. Measured on the H200 only: the
 * H100 keeps its entries. */
Test(tuning_lookup, shipped_h200_fp32_n128_block_states_entry) {
  static const shipped_launch launches[] = {
      {"NVIDIA H200", SF_OP_BWD, 128, SF_FP32, false, 2, 512, 2048, true, 32, 8, 8, 1},
      {"NVIDIA H200", SF_OP_BWD, 128, SF_FP32, false, 4, 512, 2048, true, 32, 8, 8, 1},
      {"NVIDIA H200", SF_OP_BWD, 128, SF_FP32, false, 2, 512, 2048, false, 16, 8, 16, 2}};
  cr_expect_eq(expect_shipped_launches(launches, sizeof launches / sizeof launches[0]), 3,
               "the shipped files hold an H200 section");
}

/* The H200's gated N = 16 backward over (4,1536,2048), rows bucket 13 (4097 to 8192
 * channels), both types and modes: 4 lanes x 8 steps x 16 channels uncapped instead of the
 * (8,1536) entry's 2 x 8 x 16 capped at 8, which reached it (docs/perf.md v32: 3-19% faster
 * by default and 8-22% with block states on nine rows it reaches); and its bf16 forward.
 * (8,1536) keeps its own entries, and (2,1536) in bf16 the (1,1536) ones, met before them
 * at the same distance. */
Test(tuning_lookup, shipped_h200_n16_small_batch_entries) {
  static const shipped_launch launches[] = {
      {"NVIDIA H200", SF_OP_BWD, 16, SF_BF16, true, 4, 1536, 2048, false, 4, 8, 16, 0},
      {"NVIDIA H200", SF_OP_BWD, 16, SF_BF16, true, 4, 1536, 2048, true, 4, 8, 16, 0},
      {"NVIDIA H200", SF_OP_BWD, 16, SF_FP32, true, 4, 1536, 2048, false, 4, 8, 16, 0},
      {"NVIDIA H200", SF_OP_BWD, 16, SF_FP32, true, 4, 1536, 2048, true, 4, 8, 16, 0},
      {"NVIDIA H200", SF_OP_BWD, 16, SF_FP32, true, 2, 1536, 2048, false, 4, 8, 16, 0},
      {"NVIDIA H200", SF_OP_BWD, 16, SF_BF16, true, 8, 1024, 2048, true, 4, 8, 16, 0},
      {"NVIDIA H200", SF_OP_BWD, 16, SF_BF16, true, 8, 1536, 2048, false, 2, 8, 16, 8},
      {"NVIDIA H200", SF_OP_BWD, 16, SF_FP32, true, 8, 1536, 2048, true, 2, 8, 16, 8},
      {"NVIDIA H200", SF_OP_BWD, 16, SF_BF16, true, 2, 1536, 2048, false, 4, 8, 16, 2},
      /* the bf16 forward there: 4 lanes x 32 steps x 16 channels uncapped, one wave without
       * segments (143 us against 180 for the (8,1536) entry's launch with them) */
      {"NVIDIA H200", SF_OP_FWD, 16, SF_BF16, true, 4, 1536, 2048, false, 4, 32, 16, 0},
      {"NVIDIA H200", SF_OP_FWD, 16, SF_BF16, true, 8, 1024, 2048, false, 4, 32, 16, 0},
      {"NVIDIA H200", SF_OP_FWD, 16, SF_BF16, true, 8, 1536, 2048, false, 4, 16, 32, 2},
      {"NVIDIA H200", SF_OP_FWD, 16, SF_BF16, true, 2, 1536, 2048, false, 4, 16, 32, 8}};
  cr_expect_eq(expect_shipped_launches(launches, sizeof launches / sizeof launches[0]), 13,
               "the shipped files hold an H200 section");
}
