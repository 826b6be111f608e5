/* heuristics.h: launch configuration for a shape when the tuning database has no entry. */
#ifndef SCANFORGE_HEURISTICS_H
#define SCANFORGE_HEURISTICS_H

#include <stdint.h>

#include "scanforge/scanforge.h"

/* Sets the launch knobs of a forward variant `v` (whose dtype, dstate and flags are set)
 * for a call of the given shape: split, threads, items, channels, states. */
void sf_heuristic_configure(sf_variant *v, int64_t batch, int64_t dim, int groups, int64_t seqlen);

/* Sets threads, items and channels of a backward variant: threads x items is the state
 * interval of the sequence; channels divides the channels of a group (dim / groups) so a
 * block's channels share their B and C rows. */
void sf_heuristic_configure_bwd(sf_variant *v, int64_t batch, int64_t dim, int groups, int64_t seqlen);

/* The forward's launch plan may halve a chosen split=state launch's items, down to this many,
 * when that saves a wave (fit_items, runtime/launch/scan.c); the default grid holds those twins. */
#define SF_FWD_FIT_MIN_ITEMS 8

#endif
