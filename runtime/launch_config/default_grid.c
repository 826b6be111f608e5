/* default_grid.c: the variants compiled ahead of time: the heuristics' choices, the shipped
 * tuning winners (each with its words=1 module where its shape's rows are off 16-byte
 * alignment), and the twins the launch plans may take instead (the backward's lanes twin
 * and pairs=1, the forward's half items). */
#include "runtime/launch_config/default_grid.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generator/generator.h"
#include "generator/template_set.h"
#include "runtime/launch_config/defaults.h"
#include "runtime/launch_config/heuristics.h"

/* The grid while it is built: grows as needed, so the count is exact. */
typedef struct grid {
  sf_variant *variants;
  int count, capacity;
  bool out_of_memory;
} grid;

/* Adds v unless the grid has it already. */
static void add_unique(grid *g, const sf_variant *v) {
  for (int i = 0; i < g->count; i++)
    if (sf_variant_same(&g->variants[i], v)) return;
  if (g->count == g->capacity) {
    int capacity = g->capacity ? 2 * g->capacity : 256;
    sf_variant *grown = realloc(g->variants, (size_t)capacity * sizeof *grown);
    if (!grown) {
      g->out_of_memory = true;
      return;
    }
    g->variants = grown, g->capacity = capacity;
  }
  g->variants[g->count++] = *v;
}

/* Adds v for a call of contiguous tensors of `seqlen` steps: with words=1 too when its rows
 * are not whole 16-byte copies (what sf_staged_rows_aligned finds for such tensors; the
 * launch then runs that module, docs/design-row-alignment.md). */
static void add_for_length(grid *g, const sf_variant *v, int64_t seqlen) {
  add_unique(g, v);
  if (!v->split_states || seqlen * sf_dtype_size(v->dtype) % 16 == 0) return;
  sf_variant words = *v;
  words.words = true;
  add_unique(g, &words);
}

static void add_heuristic_choices(grid *g) {
  static const sf_dtype dtypes[] = {SF_FP32, SF_FP16, SF_BF16};
  static const int dstates[] = {8, 16};
  /* (batch, dim, L) covering every heuristic branch: MambaVision stages, Mamba. */
  static const int64_t shapes[][3] = {{64, 320, 49},   {64, 160, 196},  {16, 64, 256},
                                      {1, 256, 1024},  {8, 1536, 2048}, {64, 160, 100},
                                      {4, 16, 64},     {1, 1536, 16384}};
  for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++)
    for (size_t s = 0; s < sizeof dstates / sizeof dstates[0]; s++)
      for (int gated = 0; gated <= 1; gated++)
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
          for (int op = SF_OP_FWD; op <= SF_OP_BWD; op++) {
            sf_variant v = sf_variant_default();
            v.op = (sf_op)op;
            v.dtype = dtypes[t];
            v.dstate = dstates[s];
            v.has_z = gated;
            v.has_D = v.has_delta_bias = v.softplus = true;
            if (op == SF_OP_FWD)
              sf_heuristic_configure(&v, shapes[k][0], shapes[k][1], 1, shapes[k][2]);
            else
              sf_heuristic_configure_bwd(&v, shapes[k][0], shapes[k][1], 1, shapes[k][2]);
            add_for_length(g, &v, shapes[k][2]);
          }
}

/* The shipped winners measured with this template set (the lookup skips the others). */
static void add_shipped_winners(grid *g) {
  uint64_t hash = 0;
  if (sf_template_set_hash(&hash) != SF_OK) return;
  char templates[24];
  snprintf(templates, sizeof templates, "%016" PRIx64, hash);
  sf_tune_db db;
  char *warning = NULL;
  sf_status st = sf_tune_defaults_load(&db, &warning);
  free(warning);
  if (st != SF_OK) return;
  for (int s = 0; s < db.count; s++) {
    if (strcmp(db.sections[s].gpu.templates, templates) != 0) continue;
    for (int e = 0; e < db.sections[s].count; e++)
      add_for_length(g, &db.sections[s].entries[e].variant, db.sections[s].entries[e].shape.seqlen);
  }
  sf_tune_db_free(&db);
}

int sf_default_grid(sf_variant *variants, int capacity) {
  grid g = {0};
  add_heuristic_choices(&g);
  add_shipped_winners(&g);
  const int chosen = g.count;
  for (int i = 0; i < chosen; i++) {
    sf_variant twin = g.variants[i], lanes;
    if (sf_bwd_lanes_twin(&twin, &lanes)) {
      add_unique(&g, &lanes);
      if (sf_variant_can_pair(&lanes)) { /* fit_pairs may pair the lanes twin after fit_lanes */
        lanes.pairs = true;
        add_unique(&g, &lanes);
      }
    }
    if (sf_variant_can_pair(&twin)) {
      twin.pairs = true;
      add_unique(&g, &twin);
    } else if (twin.op == SF_OP_FWD && twin.split_states && twin.items > SF_FWD_FIT_MIN_ITEMS) {
      twin.items /= 2;
      add_unique(&g, &twin);
    }
  }
  if (g.out_of_memory) {
    free(g.variants);
    return -1;
  }
  for (int i = 0; i < g.count && i < capacity; i++) variants[i] = g.variants[i];
  free(g.variants);
  return g.count;
}
