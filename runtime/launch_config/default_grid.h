/* default_grid.h: the variants compiled ahead of time (scanforge cache warm, scanforge variants). */
#ifndef SCANFORGE_DEFAULT_GRID_H
#define SCANFORGE_DEFAULT_GRID_H

#include "scanforge/scanforge.h"

/* The default variant grid, without duplicates: the variants the heuristics pick for the
 * shapes of docs/perf.md and MambaVision; the winners of the shipped tuning files made
 * for the current template set (what a tuned GPU runs); the words=1 module of those whose
 * shape's rows are off 16-byte alignment (docs/design-row-alignment.md); and the pairs=1 twin of every
 * backward that may take it (the launch plan chooses it by waves on the device:
 * docs/design-pairs.md). So a cache warmed with it serves those calls with no compile.
 * Writes up to `capacity` variants and returns how many there are (more than capacity:
 * some were left out), or -1 when out of memory. */
int sf_default_grid(sf_variant *variants, int capacity);

#endif
