/* test_tuning_db.c: the tuning database: JSON round trip, mismatches, corrupt files, concurrent writers. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tuning/database_write.h"
#include "runtime/launch_config/select.h"
#include "tests/support/temp_dir.h"

static sf_tune_gpu gpu_named(const char *name, const char *templates) {
  sf_tune_gpu g;
  memset(&g, 0, sizeof g);
  snprintf(g.name, sizeof g.name, "%s", name);
  g.cc_major = 9;
  g.cc_minor = 0;
  g.sm_count = 132;
  g.memory = 85045379072ull;
  g.driver_version = 13000;
  snprintf(g.nvrtc, sizeof g.nvrtc, "13.0");
  snprintf(g.templates, sizeof g.templates, "%s", templates);
  return g;
}

/* An fp32 forward entry for (batch, dim, L) whose winner is (threads, items, channels). */
static sf_tune_entry entry_for(int64_t batch, int64_t dim, int64_t seqlen, int threads, int items, int channels) {
  sf_tune_entry e;
  memset(&e, 0, sizeof e);
  e.variant = sf_variant_default();
  e.variant.dstate = 16;
  e.variant.has_D = e.variant.has_delta_bias = e.variant.softplus = true;
  e.variant.threads = threads;
  e.variant.items = items;
  e.variant.channels = channels;
  e.shape = (sf_tune_shape){batch, dim, seqlen, 1};
  e.seqlen_bucket = sf_tune_bucket(seqlen);
  e.rows_bucket = sf_tune_bucket(batch * dim);
  e.default_knobs = (sf_tune_knobs){false, 32, 8, 4, 1, 0};
  e.winner_us = 10.5;
  e.default_us = 12.25;
  e.complete = true;
  return e;
}

static char *temp_dir(void) {
  char *dir = temp_dir_for_test("sf_tuning_db_");
  cr_assert(dir, "mkdtemp");
  return dir;
}

static char *path_in(const char *dir, const char *name) {
  char *p = malloc(strlen(dir) + strlen(name) + 2);
  sprintf(p, "%s/%s", dir, name);
  return p;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fputs(text, f);
  fclose(f);
}

Test(tuning_db, buckets_are_ceil_log2) {
  cr_expect_eq(sf_tune_bucket(1), 0);
  cr_expect_eq(sf_tune_bucket(2), 1);
  cr_expect_eq(sf_tune_bucket(49), 6);
  cr_expect_eq(sf_tune_bucket(64), 6);
  cr_expect_eq(sf_tune_bucket(65), 7);
  cr_expect_eq(sf_tune_bucket(64 * 160), 14);
  cr_expect_eq(sf_tune_bucket(16384), 14);
}

Test(tuning_db, flags_round_trip_and_reject_other_keys) {
  sf_variant v = sf_variant_default(), w = sf_variant_default();
  v.has_z = true, v.B_var = false, v.softplus = true;
  char flags[160];
  sf_tune_flags_format(&v, flags, sizeof flags);
  cr_assert_eq(sf_tune_flags_parse(flags, &w), SF_OK, "%s", sf_last_error());
  cr_expect(w.has_z && !w.B_var && w.softplus && w.C_var);
  cr_expect_eq(sf_tune_flags_parse("z=1,threads=64", &w), SF_EINVAL);
  cr_expect(strstr(sf_last_error(), "threads"));
}

Test(tuning_db, json_round_trip_keeps_everything) {
  sf_tune_db db;
  sf_tune_db_init(&db);
  sf_tune_gpu h100 = gpu_named("NVIDIA H100 80GB HBM3", "0123456789abcdef");
  sf_tune_gpu h200 = gpu_named("NVIDIA H200", "0123456789abcdef");
  sf_tune_entry e = entry_for(8, 1536, 2048, 128, 16, 1);
  e.variant.dtype = SF_BF16;
  e.variant.has_z = true;
  snprintf(e.tuned_at, sizeof e.tuned_at, "2026-11-21T10:00:00Z");
  sf_tune_candidate c[2] = {
      {.knobs = {false, 128, 16, 1, 2, 4}, .ok = true, .median_us = 400.5, .min_us = 399, .p90_us = 402, .reps = 25,
       .error = 1.5e-3},
      {.knobs = {true, 8, 32, 4, 1, 0}, .ok = false, .why = "out of GPU resources: 300 registers", .error = -1},
  };
  e.candidates = c;
  e.candidate_count = 2;
  cr_assert_eq(sf_tune_db_put(&db, &h100, &e), SF_OK);
  sf_tune_entry small = entry_for(64, 160, 196, 32, 8, 4);
  small.variant.op = SF_OP_BWD;
  small.complete = false;
  cr_assert_eq(sf_tune_db_put(&db, &h200, &small), SF_OK);

  char *text = sf_tune_db_dump(&db, true);
  cr_assert(text);
  sf_tune_db back;
  cr_assert_eq(sf_tune_db_parse(text, strlen(text), "test", &back), SF_OK, "%s", sf_last_error());
  cr_assert_eq(back.count, 2);
  const sf_tune_section *s = sf_tune_db_find_section(&back, &h100);
  cr_assert(s && s->count == 1);
  const sf_tune_entry *r = &s->entries[0];
  cr_expect(r->variant.dtype == SF_BF16 && r->variant.has_z && r->variant.dstate == 16 && r->variant.op == SF_OP_FWD);
  cr_expect(r->variant.threads == 128 && r->variant.items == 16 && r->variant.channels == 1);
  cr_expect(r->shape.batch == 8 && r->shape.dim == 1536 && r->shape.seqlen == 2048 && r->shape.groups == 1);
  cr_expect(r->seqlen_bucket == 11 && r->rows_bucket == 14);
  const sf_tune_knobs want_default = {false, 32, 8, 4, 1, 0};
  cr_expect(sf_tune_knobs_equal(&r->default_knobs, &want_default));
  cr_expect_float_eq(r->winner_us, 10.5, 1e-9);
  cr_expect_float_eq(r->default_us, 12.25, 1e-9);
  cr_expect(r->complete);
  cr_expect_str_eq(r->tuned_at, "2026-11-21T10:00:00Z");
  cr_assert_eq(r->candidate_count, 2);
  cr_expect(r->candidates[0].ok && r->candidates[0].reps == 25);
  cr_expect(!r->candidates[0].knobs.split_states && r->candidates[0].knobs.states == 2 &&
            r->candidates[0].knobs.min_blocks == 4);
  cr_expect(r->candidates[1].knobs.split_states && r->candidates[1].knobs.threads == 8 && r->candidates[1].knobs.items == 32);
  cr_expect_float_eq(r->candidates[0].median_us, 400.5, 1e-9);
  cr_expect_float_eq(r->candidates[0].error, 1.5e-3, 1e-12);
  cr_expect(!r->candidates[1].ok);
  cr_expect_str_eq(r->candidates[1].why, "out of GPU resources: 300 registers");
  const sf_tune_section *s2 = sf_tune_db_find_section(&back, &h200);
  cr_assert(s2 && s2->count == 1);
  cr_expect(s2->entries[0].variant.op == SF_OP_BWD && !s2->entries[0].complete);

  /* Without candidates (shipped defaults): the winners stay. */
  char *bare = sf_tune_db_dump(&db, false);
  cr_expect(!strstr(bare, "candidates"));
  sf_tune_db bare_back;
  cr_assert_eq(sf_tune_db_parse(bare, strlen(bare), "bare", &bare_back), SF_OK, "%s", sf_last_error());
  cr_expect_eq(sf_tune_db_find_section(&bare_back, &h100)->entries[0].variant.threads, 128);
  sf_tune_db_free(&bare_back);
  free(bare);
  free(text);
  sf_tune_db_free(&back);
  sf_tune_db_free(&db);
}

Test(tuning_db, every_knob_round_trips_and_old_configs_get_defaults) {
  sf_tune_db db;
  sf_tune_db_init(&db);
  sf_tune_gpu g = gpu_named("GPU", "aa");
  sf_tune_entry e = entry_for(64, 160, 196, 8, 32, 4);
  sf_tune_knobs state_split = {true, 8, 32, 4, 1, 2};
  sf_tune_knobs_apply(&state_split, &e.variant);
  cr_assert_eq(sf_variant_validate(&e.variant), SF_OK, "%s", sf_last_error());
  cr_assert_eq(sf_tune_db_put(&db, &g, &e), SF_OK);
  char *text = sf_tune_db_dump(&db, true);
  cr_expect(strstr(text, "\"split\": \"state\""), "%s", text);
  sf_tune_db back;
  cr_assert_eq(sf_tune_db_parse(text, strlen(text), "t", &back), SF_OK, "%s", sf_last_error());
  const sf_tune_knobs got = sf_tune_knobs_of(&back.sections[0].entries[0].variant);
  cr_expect(sf_tune_knobs_equal(&got, &state_split));
  sf_tune_db_free(&back);
  free(text);
  sf_tune_db_free(&db);

  /* A configuration without "split" and "states": split=time, the default states. */
  const char *old =
      "{\"format\": \"scanforge-tuning\", \"version\": 1, \"sections\": [{\"gpu\": {\"name\": \"x\", "
      "\"compute_capability\": \"9.0\", \"sm_count\": 1, \"memory_bytes\": 1, \"driver_version\": 1, \"nvrtc\": \"1\","
      " \"templates\": \"a\"}, \"entries\": [{\"op\": \"fwd\", \"dstate\": 16, \"dtype\": \"fp32\", \"flags\": "
      "\"z=1\", \"seqlen_bucket\": 3, \"rows_bucket\": 3, \"shape\": {\"batch\": 1, \"dim\": 1, \"seqlen\": 8, "
      "\"groups\": 1}, \"winner\": {\"threads\": 32, \"items\": 8, \"channels\": 1}}]}]}";
  cr_assert_eq(sf_tune_db_parse(old, strlen(old), "old", &back), SF_OK, "%s", sf_last_error());
  const sf_variant *v = &back.sections[0].entries[0].variant;
  cr_expect(!v->split_states && v->states == sf_variant_default().states && v->min_blocks == 0 && v->threads == 32);
  /* It has no "default": written back (as a save does), it must still read. */
  char *again = sf_tune_db_dump(&back, true);
  cr_expect_null(strstr(again, "\"default\""), "%s", again);
  sf_tune_db reread;
  cr_expect_eq(sf_tune_db_parse(again, strlen(again), "again", &reread), SF_OK, "%s", sf_last_error());
  sf_tune_db_free(&reread);
  free(again);
  sf_tune_db_free(&back);
}

Test(tuning_db, compute_capability_is_major_dot_minor) {
  static const char *bad[] = {"9", "9.", ".0", "9.0x", " 9.0", "-1.0", "9.-1", "99999999999.0", "9.0.1", "100.0"};
  char text[1024];
  const char *format =
      "{\"format\": \"scanforge-tuning\", \"version\": 1, \"sections\": [{\"gpu\": {\"name\": \"x\", "
      "\"compute_capability\": \"%s\", \"sm_count\": 1, \"memory_bytes\": 1, \"driver_version\": 1, "
      "\"nvrtc\": \"1\", \"templates\": \"a\"}, \"entries\": []}]}";
  sf_tune_db db;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(text, sizeof text, format, bad[i]);
    cr_expect_eq(sf_tune_db_parse(text, strlen(text), "t", &db), SF_EINVAL, "'%s' accepted", bad[i]);
    cr_expect(strstr(sf_last_error(), "compute_capability"), "'%s': %s", bad[i], sf_last_error());
  }
  snprintf(text, sizeof text, format, "12.1");
  cr_assert_eq(sf_tune_db_parse(text, strlen(text), "t", &db), SF_OK, "%s", sf_last_error());
  sf_tune_db_free(&db);
}

Test(tuning_db, file_round_trip_and_same_key_replaces) {
  char *dir = temp_dir(), *path = path_in(dir, "sub/tuning.json");
  sf_tune_db add;
  sf_tune_db_init(&add);
  sf_tune_gpu g = gpu_named("GPU", "aa");
  sf_tune_entry e = entry_for(1, 256, 1024, 128, 16, 1);
  cr_assert_eq(sf_tune_db_put(&add, &g, &e), SF_OK);
  char *warning = NULL;
  cr_assert_eq(sf_tune_db_save(path, &add, &warning), SF_OK, "%s", sf_last_error());
  cr_expect_null(warning);
  /* Same key (L 1000 is in bucket 10 too), another winner: replaces. */
  sf_tune_db_free(&add);
  sf_tune_entry e2 = entry_for(1, 250, 1000, 64, 16, 2);
  cr_assert_eq(sf_tune_db_put(&add, &g, &e2), SF_OK);
  cr_assert_eq(sf_tune_db_save(path, &add, &warning), SF_OK, "%s", sf_last_error());
  sf_tune_db back;
  cr_assert_eq(sf_tune_db_load(path, &back, &warning), SF_OK);
  cr_expect_null(warning);
  cr_assert_eq(back.count, 1);
  cr_assert_eq(back.sections[0].count, 1);
  cr_expect_eq(back.sections[0].entries[0].variant.threads, 64);
  cr_expect_eq(back.sections[0].entries[0].variant.channels, 2);
  sf_tune_db_free(&back);
  sf_tune_db_free(&add);
}

Test(tuning_db, missing_file_is_empty_without_warning) {
  sf_tune_db db;
  char *warning = (char *)1;
  cr_assert_eq(sf_tune_db_load("/nonexistent/dir/tuning.json", &db, &warning), SF_OK);
  cr_expect_eq(db.count, 0);
  cr_expect_null(warning);
}

Test(tuning_db, other_version_is_ignored_with_a_warning) {
  char *dir = temp_dir(), *path = path_in(dir, "tuning.json");
  write_text(path, "{\"format\": \"scanforge-tuning\", \"version\": 2, \"sections\": []}");
  sf_tune_db db;
  char *warning = NULL;
  cr_assert_eq(sf_tune_db_load(path, &db, &warning), SF_OK);
  cr_expect_eq(db.count, 0);
  cr_assert(warning);
  cr_expect(strstr(warning, "version 2"), "%s", warning);
  cr_expect(strstr(warning, path), "%s", warning);
  free(warning);
}

Test(tuning_db, corrupt_files_are_ignored_with_a_warning) {
  static const char *bad[] = {
      "{\"format\": \"scanforge-tuning\", \"version\": 1, \"sections\": [",       /* truncated */
      "\x01\x02 not json at all",                                                 /* garbage */
      "{\"format\": \"something-else\", \"version\": 1, \"sections\": []}",       /* another format */
      "{\"format\": \"scanforge-tuning\", \"version\": 1, \"sections\": [{\"gpu\": {\"name\": \"x\"}, \"entries\": []}]}",
      "{\"format\": \"scanforge-tuning\", \"version\": 1, \"sections\": [{\"gpu\": {\"name\": \"x\", "
      "\"compute_capability\": \"9.0\", \"sm_count\": 1, \"memory_bytes\": 1, \"driver_version\": 1, \"nvrtc\": \"1\","
      " \"templates\": \"a\"}, \"entries\": [{\"op\": \"fwd\", \"dstate\": 16, \"dtype\": \"fp32\", \"flags\": "
      "\"z=1\", \"seqlen_bucket\": 3, \"rows_bucket\": 3, \"shape\": {\"batch\": 1, \"dim\": 1, \"seqlen\": 8, "
      "\"groups\": 1}, \"winner\": {\"threads\": 3, \"items\": 8, \"channels\": 1}}]}]}", /* threads=3 is no variant */
  };
  char *dir = temp_dir(), *path = path_in(dir, "tuning.json");
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_text(path, bad[i]);
    sf_tune_db db;
    char *warning = NULL;
    cr_assert_eq(sf_tune_db_load(path, &db, &warning), SF_OK, "case %zu", i);
    cr_expect_eq(db.count, 0, "case %zu", i);
    cr_expect(warning && strstr(warning, "ignored"), "case %zu: %s", i, warning ? warning : "(none)");
    free(warning);
  }
  /* Saving over a corrupt file replaces it, and says so. */
  sf_tune_db add;
  sf_tune_db_init(&add);
  sf_tune_gpu g = gpu_named("GPU", "aa");
  sf_tune_entry e = entry_for(1, 256, 1024, 128, 16, 1);
  cr_assert_eq(sf_tune_db_put(&add, &g, &e), SF_OK);
  write_text(path, "garbage");
  char *warning = NULL;
  cr_assert_eq(sf_tune_db_save(path, &add, &warning), SF_OK, "%s", sf_last_error());
  cr_expect(warning);
  free(warning);
  sf_tune_db back;
  cr_assert_eq(sf_tune_db_load(path, &back, &warning), SF_OK);
  cr_expect_null(warning);
  cr_expect_eq(back.count, 1);
  sf_tune_db_free(&back);
  sf_tune_db_free(&add);
}

/* In a fresh process (Criterion forks each test): the runtime reports a corrupt file once
 * through sf_tuning_warning and falls back to the heuristics. */
Test(tuning_db, runtime_reports_a_corrupt_file_once_and_runs_on) {
  char *dir = temp_dir(), *path = path_in(dir, "tuning.json");
  write_text(path, "{ this is not json");
  setenv("SCANFORGE_TUNING_DB", path, 1);
  const char *w1 = sf_tuning_warning();
  cr_assert(w1, "no warning for a corrupt database");
  cr_expect(strstr(w1, path), "%s", w1);
  cr_expect(strstr(w1, "ignored"), "%s", w1);
  const char *w2 = sf_tuning_warning();
  cr_expect_eq(w1, w2, "the warning is made once");
  static const float present = 0;
  sf_scan_fwd_args args = {.batch = 64, .dim = 160, .seqlen = 196, .dstate = 8, .groups = 1, .dtype = SF_FP32,
                           .B_var = true, .C_var = true, .D = &present, .delta_bias = &present};
  sf_variant v;
  cr_assert_eq(sf_scan_fwd_variant(&args, &(sf_launch){0}, &v), SF_OK, "%s", sf_last_error());
  cr_expect_eq(sf_variant_validate(&v), SF_OK);
}

Test(tuning_db, tuning_off_by_environment) {
  setenv("SCANFORGE_TUNING", "off", 1);
  cr_expect_not(sf_tune_enabled());
}

Test(tuning_db, default_path_follows_the_environment) {
  setenv("SCANFORGE_TUNING_DB", "/x/y/db.json", 1);
  char *p = sf_tune_db_default_path();
  cr_expect_str_eq(p, "/x/y/db.json");
  free(p);
  unsetenv("SCANFORGE_TUNING_DB");
  setenv("SCANFORGE_CACHE_DIR", "/some/cache", 1);
  p = sf_tune_db_default_path();
  cr_expect_str_eq(p, "/some/cache/tuning.json");
  free(p);
}

Test(tuning_db, sections_match_by_device_and_templates) {
  sf_tune_db db;
  sf_tune_db_init(&db);
  sf_tune_gpu here = gpu_named("NVIDIA H100 80GB HBM3", "1111");
  sf_tune_gpu other_gpu = gpu_named("NVIDIA H200", "1111");
  sf_tune_gpu fewer_sms = here;
  fewer_sms.sm_count = 114;
  sf_tune_gpu other_templates = gpu_named("NVIDIA H100 80GB HBM3", "2222");
  sf_tune_gpu other_driver = here;
  other_driver.driver_version = 12080;
  sf_tune_entry e = entry_for(1, 256, 1024, 128, 16, 1);
  bool stale = false;

  cr_assert_eq(sf_tune_db_put(&db, &other_gpu, &e), SF_OK);
  cr_assert_eq(sf_tune_db_put(&db, &fewer_sms, &e), SF_OK);
  cr_expect_null(sf_tune_db_match(&db, &here, &stale), "another GPU's section must not match");
  cr_expect_not(stale);

  cr_assert_eq(sf_tune_db_put(&db, &other_templates, &e), SF_OK);
  cr_expect_null(sf_tune_db_match(&db, &here, &stale), "other templates must not match");
  cr_expect(stale);

  cr_assert_eq(sf_tune_db_put(&db, &other_driver, &e), SF_OK);
  const sf_tune_section *m = sf_tune_db_match(&db, &here, &stale);
  cr_assert(m, "the same GPU under another driver is the fallback");
  cr_expect_eq(m->gpu.driver_version, 12080);

  cr_assert_eq(sf_tune_db_put(&db, &here, &e), SF_OK);
  m = sf_tune_db_match(&db, &here, &stale);
  cr_assert(m);
  cr_expect(sf_tune_gpu_equal(&m->gpu, &here), "the exact section wins");
  sf_tune_db_free(&db);
}

/* Two processes each add entries one save at a time to the same file: none is lost. */
Test(tuning_db, concurrent_writers_keep_every_entry) {
  enum { PER_WRITER = 30 };
  char *dir = temp_dir(), *path = path_in(dir, "tuning.json");
  pid_t pids[2];
  for (int w = 0; w < 2; w++) {
    pids[w] = fork();
    cr_assert(pids[w] >= 0);
    if (pids[w] == 0) {
      sf_tune_gpu g = gpu_named("GPU", "aa");
      int failures = 0;
      for (int i = 0; i < PER_WRITER; i++) {
        sf_tune_db add;
        sf_tune_db_init(&add);
        /* Writer w takes the L buckets 1..30 with dstate 1 + w: distinct keys. */
        sf_tune_entry e = entry_for(1, 64, (int64_t)1 << (i + 1), 32, 8, 4);
        e.variant.dstate = 1 + w;
        char *warning = NULL;
        failures += sf_tune_db_put(&add, &g, &e) != SF_OK || sf_tune_db_save(path, &add, &warning) != SF_OK ||
                    warning != NULL;
        sf_tune_db_free(&add);
      }
      _exit(failures ? 1 : 0);
    }
  }
  for (int w = 0; w < 2; w++) {
    int status = 0;
    cr_assert_eq(waitpid(pids[w], &status, 0), pids[w]);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d failed", w);
  }
  sf_tune_db back;
  char *warning = NULL;
  cr_assert_eq(sf_tune_db_load(path, &back, &warning), SF_OK);
  cr_expect_null(warning);
  cr_assert_eq(back.count, 1);
  cr_expect_eq(back.sections[0].count, 2 * PER_WRITER, "entries lost: %d of %d kept", back.sections[0].count,
               2 * PER_WRITER);
  sf_tune_db_free(&back);
}

/* block_states: kept through JSON (absent when false), part of the key, the backward's only. */
Test(tuning_db, block_states_round_trips_and_is_part_of_the_key) {
  sf_tune_db db;
  sf_tune_db_init(&db);
  sf_tune_gpu h200 = gpu_named("NVIDIA H200", "0123456789abcdef");
  sf_tune_entry plain = entry_for(8, 1536, 2048, 2, 8, 16);
  plain.variant.op = SF_OP_BWD;
  plain.variant.split_states = true;
  sf_tune_entry block = plain;
  block.block_states = true;
  block.variant.threads = 4;
  cr_expect_not(sf_tune_entry_same_key(&plain, &block));
  cr_assert_eq(sf_tune_db_put(&db, &h200, &plain), SF_OK);
  cr_assert_eq(sf_tune_db_put(&db, &h200, &block), SF_OK);
  cr_assert_eq(db.sections[0].count, 2, "neither replaced the other");
  char *text = sf_tune_db_dump(&db, false);
  cr_assert(text);
  cr_expect(strstr(text, "\"block_states\": true"), "%s", text);
  cr_expect_null(strstr(text, "\"block_states\": false"), "absent when false: %s", text);
  sf_tune_db back;
  cr_assert_eq(sf_tune_db_parse(text, strlen(text), "test", &back), SF_OK, "%s", sf_last_error());
  const sf_tune_section *s = sf_tune_db_find_section(&back, &h200);
  cr_assert(s && s->count == 2);
  const sf_tune_entry *found = sf_tune_section_find(s, &block);
  cr_assert(found && found->block_states && found->variant.threads == 4);
  found = sf_tune_section_find(s, &plain);
  cr_assert(found && !found->block_states && found->variant.threads == 2);
  sf_tune_db_free(&back);

  /* A forward entry with block_states, or a value that is not a boolean: refused, named. */
  sf_tune_db only_block;
  sf_tune_db_init(&only_block);
  cr_assert_eq(sf_tune_db_put(&only_block, &h200, &block), SF_OK);
  free(text);
  text = sf_tune_db_dump(&only_block, false);
  sf_tune_db_free(&only_block);
  const char *bad[] = {"\"op\": \"bwd\"", "\"block_states\": true"};
  char *fwd = strdup(text), *at = strstr(fwd, bad[0]);
  cr_assert(at);
  memcpy(at, "\"op\": \"fwd\"", strlen(bad[0]));
  cr_expect_neq(sf_tune_db_parse(fwd, strlen(fwd), "fwd", &back), SF_OK);
  cr_expect(strstr(sf_last_error(), "block_states"), "%s", sf_last_error());
  char *word = strdup(text);
  at = strstr(word, bad[1]);
  cr_assert(at);
  memcpy(at, "\"block_states\": 1   ", strlen(bad[1]));
  cr_expect_neq(sf_tune_db_parse(word, strlen(word), "word", &back), SF_OK);
  cr_expect(strstr(sf_last_error(), "true or false"), "%s", sf_last_error());
  free(fwd);
  free(word);
  free(text);
  sf_tune_db_free(&db);
}
