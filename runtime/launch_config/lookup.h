/* lookup.h: the immutable in-memory table of tuned configurations for one GPU, and its nearest-bucket lookup. */
#ifndef SCANFORGE_TUNING_LOOKUP_H
#define SCANFORGE_TUNING_LOOKUP_H

#include <stdbool.h>
#include <stdint.h>

#include "scanforge/scanforge.h"
#include "runtime/launch_config/tuning_database.h"

/* How far a tuned entry reaches: a call uses the nearest entry of its class (op, dstate,
 * dtype, flags) whose L bucket is at most SF_TUNE_REACH_SEQLEN away and whose rows
 * bucket (batch * dim) is at most SF_TUNE_REACH_ROWS away; nearest by
 * 2 * |L bucket difference| + |rows bucket difference|, ties to the smaller L difference,
 * then to the entry met first (the user's before the shipped defaults). Farther away, the
 * heuristics are a better guess than a configuration measured on another shape. */
#define SF_TUNE_REACH_SEQLEN 1
#define SF_TUNE_REACH_ROWS 2

typedef struct sf_tune_table sf_tune_table;

/* Builds a table from the entries of `user` then `defaults` (either may be NULL); a
 * default entry whose key a user entry has is left out. SF_ENOMEM when out of memory. */
sf_status sf_tune_table_build(const sf_tune_section *user, const sf_tune_section *defaults,
                              sf_tune_table **out);
void sf_tune_table_free(sf_tune_table *table);
/* Entries in the table. */
int sf_tune_table_size(const sf_tune_table *table);

/* Sets the knobs of `v` (op, dstate, dtype and flags set) from the nearest entry for a
 * call of this shape (among the block-states entries when `block_states`: a backward whose
 * forward saved states at a short interval), and returns true; returns false (v
 * unchanged) when no entry is near enough or none fits the call (a backward configuration must cover the call's state
 * interval exactly; a backward's or a split=state forward's channels must divide
 * dim / groups when B or C is variable). A deterministic backward with no entries of its
 * own class takes the default mode's entries.
 * No allocation, no lock. */
bool sf_tune_table_lookup(const sf_tune_table *table, sf_variant *v, bool block_states, int64_t batch,
                          int64_t dim, int groups, int64_t seqlen);

#endif
