/* test_tune_gpu.c: a short tuning run of three entries on the GPU; winners at least as fast as the defaults, and checked (skips without a GPU). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/check/check.h"
#include "scanforge/scanforge.h"
#include "tests/support/gpu_fixture.h"
#include "runtime/launch_config/tuning_database.h"
#include "runtime/launch_config/lookup.h"
#include "runtime/launch_config/select.h"
#include "tuning/tuner.h"


/* MambaVision-T stage 3 forward (fp32), a bf16 forward of 1024 steps, a small backward. */
static const char entries[] =
    "64,160,196,8\n"
    "1,256,1024,16 dtype=bf16\n"
    "4,16,64,16 op=bwd\n";

static int entries_seen;
static void count_entry(void *user, const sf_tune_request *r, const sf_tune_entry *e, bool skipped, const char *failure) {
  (void)user, (void)r, (void)e;
  cr_expect_not(skipped, "a fresh database has nothing to skip");
  cr_expect_null(failure, "entry failed: %s", failure ? failure : "");
  entries_seen++;
}

static const sf_tune_candidate *find(const sf_tune_entry *e, sf_tune_knobs k) {
  for (int i = 0; i < e->candidate_count; i++)
    if (sf_tune_knobs_equal(&e->candidates[i].knobs, &k)) return &e->candidates[i];
  return NULL;
}

Test(tune_gpu, three_entries_tuned_and_checked, .init = gpu_setup, .fini = gpu_teardown, .timeout = 900) {
  gpu_skip_without_device();
  char dir[] = "/tmp/sf_tune_gpu_XXXXXX";
  cr_assert(mkdtemp(dir));
  char db_path[256];
  snprintf(db_path, sizeof db_path, "%s/tuning.json", dir);

  sf_tune_request *requests = NULL;
  int count = 0;
  cr_assert_eq(sf_tune_parse_requests(entries, "test", &requests, &count), SF_OK, "%s", sf_last_error());
  cr_assert_eq(count, 3);
  sf_tune_options opt = {.db_path = db_path, .reps = 20, .warmup = 2, .entry_done = count_entry};
  sf_tune_summary sum;
  cr_assert_eq(sf_tune_run(gpu_ctx, requests, count, &opt, &sum), SF_OK, "%s", sf_last_error());
  cr_expect_eq(sum.tuned, 3, "tuned %d, failed %d, left %d", sum.tuned, sum.failed, sum.left);
  cr_expect_eq(sum.failed, 0);
  cr_expect_eq(sum.partial, 0);
  cr_expect_eq(entries_seen, 3);

  /* What the file holds for this GPU. */
  sf_tune_gpu gpu;
  cr_assert_eq(sf_tune_gpu_of_device(-1, &gpu), SF_OK, "%s", sf_last_error());
  sf_tune_db db;
  char *warning = NULL;
  cr_assert_eq(sf_tune_db_load(db_path, &db, &warning), SF_OK);
  cr_assert_null(warning, "%s", warning ? warning : "");
  const sf_tune_section *section = sf_tune_db_find_section(&db, &gpu);
  cr_assert(section, "no section for this GPU in %s", db_path);
  cr_assert_eq(section->count, 3);
  sf_tune_table *table;
  cr_assert_eq(sf_tune_table_build(section, NULL, &table), SF_OK);
  for (int i = 0; i < count; i++) {
    sf_tune_entry key = sf_tune_request_key(&requests[i]);
    const sf_tune_entry *e = sf_tune_section_find(section, &key);
    cr_assert(e, "entry %d missing", i);
    cr_expect(e->complete);
    /* The default was measured in the same run, and the winner is no slower. */
    cr_expect(e->default_us > 0, "entry %d: the default was not measured", i);
    cr_expect(e->winner_us > 0 && e->winner_us <= e->default_us, "entry %d: winner %.2f us, default %.2f us", i,
              e->winner_us, e->default_us);
    const sf_tune_candidate *w = find(e, sf_tune_knobs_of(&e->variant));
    const sf_tune_candidate *d = find(e, e->default_knobs);
    cr_assert(w && d, "entry %d: winner or default missing from the candidates", i);
    cr_expect(w->ok && w->reps >= 20, "entry %d: the winner was not fully measured", i);
    const double bar = e->variant.op == SF_OP_BWD ? sf_check_backward_bar(e->variant.dtype)
                                                  : sf_check_forward_bar(e->variant.dtype);
    cr_expect(w->error >= 0 && w->error <= bar, "entry %d: winner's check error %g (bar %g)", i, w->error, bar);
    cr_expect(d->ok, "entry %d: the heuristics' choice failed: %s", i, d->why);
    int measured = 0;
    for (int c = 0; c < e->candidate_count; c++) measured += e->candidates[c].ok;
    cr_expect(measured >= 2 || e->candidate_count == 1, "entry %d: %d of %d candidates measured", i, measured,
              e->candidate_count);

    /* The launch-time table gives this entry's shape the winner. */
    sf_variant v = requests[i].variant;
    cr_expect(sf_tune_table_lookup(table, &v, requests[i].block_states, requests[i].shape.batch, requests[i].shape.dim, requests[i].shape.groups,
                                   requests[i].shape.seqlen));
    const sf_tune_knobs got = sf_tune_knobs_of(&v), want = sf_tune_knobs_of(&e->variant);
    cr_expect(sf_tune_knobs_equal(&got, &want), "entry %d: the table gives another configuration", i);

    /* The winner passes a fresh check on another seed, on the entry's own shape. */
    char spec[128];
    sf_tune_knobs_spec(&want, spec, sizeof spec);
    const sf_launch launch = {.spec = spec};
    sf_check_shape shape = {.batch = requests[i].shape.batch, .dim = requests[i].shape.dim,
                            .seqlen = requests[i].shape.seqlen, .dstate = v.dstate, .groups = requests[i].shape.groups,
                            .dtype = v.dtype, .z = v.has_z, .D = v.has_D, .delta_bias = v.has_delta_bias,
                            .softplus = v.softplus, .B_fixed = !v.B_var, .C_fixed = !v.C_var};
    if (v.op == SF_OP_BWD) {
      sf_check_bwd_result r;
      cr_expect_eq(sf_check_bwd(gpu_ctx, &shape, &launch, 99, &r), SF_OK, "%s", sf_last_error());
      cr_expect(r.passed, "entry %d: the tuned backward %s fails its check", i, spec);
    } else {
      sf_check_result r;
      cr_expect_eq(sf_check_fwd(gpu_ctx, &shape, &launch, 99, &r), SF_OK, "%s", sf_last_error());
      cr_expect(r.passed, "entry %d: the tuned forward %s fails its check (out %g)", i, spec, r.out_error);
    }
  }
  sf_tune_table_free(table);

  /* A second run finds every entry there and measures nothing. */
  entries_seen = 0;
  sf_tune_summary again;
  opt.entry_done = NULL;
  cr_assert_eq(sf_tune_run(gpu_ctx, requests, count, &opt, &again), SF_OK, "%s", sf_last_error());
  cr_expect_eq(again.skipped, 3);
  cr_expect_eq(again.tuned, 0);

  /* `scanforge check` in a fresh process reads the database and runs the winner. */
  const sf_tune_entry *mv = &section->entries[0];
  for (int e = 0; e < section->count; e++)
    if (section->entries[e].shape.dim == 160) mv = &section->entries[e];
  /* The build's CLI, else one on PATH (a device bundle carries it there). */
  const char *cli = SCANFORGE_CLI_PATH[0] && access(SCANFORGE_CLI_PATH, X_OK) == 0 ? SCANFORGE_CLI_PATH : NULL;
  if (!cli && system("command -v scanforge >/dev/null 2>&1") == 0) cli = "scanforge";
  if (!cli) cr_log_warn("no scanforge CLI found: the check through a fresh process is left out");
  if (cli) {
    char command[1024], line[1024], expect[128];
    snprintf(command, sizeof command,
             "SCANFORGE_TUNING_DB=%s %s check --device gpu --shape 64,160,196,8 --D --delta-bias --softplus 2>&1",
             db_path, cli);
    /* The canonical spec check prints: "...,split=S,...,threads=T,items=I,channels=C,states=K,minblocks=M,...". */
    snprintf(expect, sizeof expect, "threads=%d,items=%d,channels=%d,states=%d,minblocks=%d,", mv->variant.threads,
             mv->variant.items, mv->variant.channels, mv->variant.states, mv->variant.min_blocks);
    FILE *p = popen(command, "r");
    cr_assert(p);
    bool ran_winner = false;
    const char *split = mv->variant.split_states ? "split=state" : "split=time";
    while (fgets(line, sizeof line, p))
      ran_winner |= strncmp(line, "variant", 7) == 0 && strstr(line, expect) && strstr(line, split);
    int status = pclose(p);
    cr_expect(ran_winner, "scanforge check did not run the tuned %s", expect);
    cr_expect_eq(status, 0, "scanforge check failed with the tuned variant");
  }
  sf_tune_db_free(&db);
  free(requests);
}
