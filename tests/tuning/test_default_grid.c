/* test_default_grid.c: the grid compiled ahead of time holds what the runtime may run: the
 * heuristics' choices, the shipped winners of this template set and their pairs=1 twins. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generator/template_set.h"
#include "runtime/launch_config/default_grid.h"
#include "runtime/launch_config/defaults.h"
#include "runtime/launch_config/heuristics.h"

enum { CAPACITY = 2048 };
static sf_variant grid[CAPACITY];

static bool in_grid(const sf_variant *v, int count) {
  char want[512], have[512];
  sf_variant_format(v, want, sizeof want);
  for (int i = 0; i < count; i++) {
    sf_variant_format(&grid[i], have, sizeof have);
    if (strcmp(want, have) == 0) return true;
  }
  return false;
}

static int make_grid(void) {
  int count = sf_default_grid(grid, CAPACITY);
  cr_assert(count >= 0 && count <= CAPACITY, "%d variants", count);
  return count;
}

Test(default_grid, has_no_duplicates_and_every_variant_validates) {
  int count = make_grid();
  cr_assert_gt(count, 0);
  char a[512], b[512];
  for (int i = 0; i < count; i++) {
    cr_expect_eq(sf_variant_validate(&grid[i]), SF_OK, "%s", sf_last_error());
    sf_variant_format(&grid[i], a, sizeof a);
    for (int j = i + 1; j < count; j++) {
      sf_variant_format(&grid[j], b, sizeof b);
      cr_expect_str_neq(a, b, "variant %d and %d are the same", i, j);
    }
  }
}

Test(default_grid, holds_the_shipped_winners_of_this_template_set) {
  int count = make_grid();
  uint64_t hash;
  cr_assert_eq(sf_template_set_hash(&hash), SF_OK);
  char templates[24];
  snprintf(templates, sizeof templates, "%016" PRIx64, hash);
  sf_tune_db db;
  char *warning = NULL;
  cr_assert_eq(sf_tune_defaults_load(&db, &warning), SF_OK);
  free(warning);
  int current = 0;
  for (int s = 0; s < db.count; s++) {
    if (strcmp(db.sections[s].gpu.templates, templates) != 0) continue;
    for (int e = 0; e < db.sections[s].count; e++, current++) {
      char spec[512];
      sf_variant_format(&db.sections[s].entries[e].variant, spec, sizeof spec);
      cr_expect(in_grid(&db.sections[s].entries[e].variant, count), "%s (%s) is missing", spec,
                db.sections[s].gpu.name);
    }
  }
  cr_expect_gt(current, 0, "no shipped tuning file matches the template set %s", templates);
  sf_tune_db_free(&db);
}

Test(default_grid, every_backward_that_can_pair_has_its_twin) {
  int count = make_grid();
  int twins = 0;
  for (int i = 0; i < count; i++) {
    if (grid[i].pairs) {
      twins++;
      cr_expect(sf_variant_can_pair(&grid[i]));
      continue;
    }
    if (!sf_variant_can_pair(&grid[i])) continue;
    sf_variant twin = grid[i];
    twin.pairs = true;
    char spec[512];
    sf_variant_format(&grid[i], spec, sizeof spec);
    cr_expect(in_grid(&twin, count), "%s has no pairs=1 twin", spec);
  }
  cr_expect_gt(twins, 0);
  /* the Mamba-130M training backward's heuristic choice can pair: its twin is there */
  sf_variant v = sf_variant_default();
  v.op = SF_OP_BWD, v.dtype = SF_BF16, v.has_z = v.has_D = v.has_delta_bias = v.softplus = true;
  sf_heuristic_configure_bwd(&v, 8, 1536, 1, 2048);
  cr_assert(sf_variant_can_pair(&v));
  v.pairs = true;
  cr_expect(in_grid(&v, count));
}

/* The backward's launch plan may take a chosen launch's lanes twin (fit_lanes): every chosen
 * backward that has one finds it in the grid, with the twin's own pairs twin. */
Test(default_grid, every_chosen_backward_has_its_lanes_twin) {
  int count = make_grid();
  int checked = 0;
  sf_variant v = sf_variant_default();
  v.op = SF_OP_BWD, v.dtype = SF_BF16, v.has_z = v.has_D = v.has_delta_bias = v.softplus = true;
  sf_heuristic_configure_bwd(&v, 8, 1536, 1, 2048);
  sf_variant twin;
  cr_assert(sf_bwd_lanes_twin(&v, &twin), "the Mamba-130M training backward has a lanes twin");
  cr_expect(twin.threads == 2 * v.threads && twin.channels == v.channels / 2 && twin.items == v.items);
  cr_expect(in_grid(&twin, count));
  for (int i = 0; i < count; i++) {
    if (grid[i].pairs || !sf_bwd_lanes_twin(&grid[i], &twin)) continue;
    if (!in_grid(&twin, count)) continue; /* a twin's twin is not planned: a plan takes one step */
    checked++;
    cr_expect_geq(twin.dstate / twin.threads, SF_BWD_TWIN_MIN_STATES);
    if (sf_variant_can_pair(&twin)) {
      twin.pairs = true;
      char spec[512];
      sf_variant_format(&twin, spec, sizeof spec);
      cr_expect(in_grid(&twin, count), "%s is missing", spec);
    }
  }
  cr_expect_gt(checked, 0);
}

/* The forward's launch plan may take the chosen launch with half the items (fit_items). */
Test(default_grid, every_split_state_forward_has_its_half_items_twin) {
  int count = make_grid();
  int checked = 0;
  for (int i = 0; i < count; i++) {
    if (grid[i].op != SF_OP_FWD || !grid[i].split_states || grid[i].items <= SF_FWD_FIT_MIN_ITEMS) continue;
    sf_variant twin = grid[i], parent = grid[i];
    twin.items /= 2;
    parent.items *= 2;
    char spec[512];
    sf_variant_format(&grid[i], spec, sizeof spec);
    /* a twin is taken once, from the chosen launch: a twin's own twin is never needed */
    cr_expect(in_grid(&twin, count) || in_grid(&parent, count), "%s has no twin with half the items", spec);
    checked += in_grid(&twin, count);
  }
  cr_expect_gt(checked, 0);
}

/* A MambaVision call whose rows are off 16-byte alignment (L = 196 in bf16) runs the words=1
 * module (docs/design-row-alignment.md): a cache warmed with the grid serves it too. */
Test(default_grid, rows_off_alignment_find_their_words_module) {
  int count = make_grid();
  sf_variant v = sf_variant_default();
  v.dtype = SF_BF16, v.dstate = 8, v.has_D = v.has_delta_bias = v.softplus = true;
  sf_heuristic_configure(&v, 64, 160, 1, 196);
  cr_assert(v.split_states, "the heuristics stage this call's rows");
  v.words = true;
  char spec[512];
  sf_variant_format(&v, spec, sizeof spec);
  cr_expect(in_grid(&v, count), "%s is missing", spec);
  int words = 0;
  for (int i = 0; i < count; i++) words += grid[i].words;
  cr_expect_lt(words, count / 2, "words=1 only for the shapes that need it: %d of %d", words, count);
}
