/* select.h: the launch configuration of a call: the tuning database for this GPU, else the heuristics. */
#ifndef SCANFORGE_TUNING_SELECT_H
#define SCANFORGE_TUNING_SELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "scanforge/scanforge.h"
#include "runtime/launch_config/tuning_database.h"

/* Sets threads, items and channels of `v` (op, dstate, dtype and flags set) for a call of
 * this shape on the GPU of the calling thread's current context (device 0 when none is
 * current): the nearest tuned entry (runtime/launch_config/lookup.h) of the user's database, then of
 * the shipped defaults, else the heuristics. The databases are read once per process (the
 * first call) and a table is built once per device; after that a call reads no file,
 * takes no lock and allocates nothing. The heuristics (for a backward, with the device's
 * shared memory: sf_current_device_shared_optin) alone decide when launch->untuned
 * is set, when $SCANFORGE_TUNING is "off" (or 0, no, false), or when no GPU is there. */
void sf_tune_configure(sf_variant *v, bool block_states, int64_t batch, int64_t dim, int groups, int64_t seqlen,
                       const sf_launch *launch);

/* The bytes of shared memory a block may opt in to on the calling thread's device (its
 * current context's, else device 0), read once per device; 0 without a GPU. The heuristics
 * take launches above 48 KB only where it is large enough (sf_heuristic_large_shared_bwd,
 * sf_heuristic_large_shared_fwd). */
int sf_current_device_shared_optin(void);

/* Whether $SCANFORGE_TUNING leaves the database on. */
bool sf_tune_enabled(void);

/* The key of the device `ordinal` (-1: the current context's device): its identity, the
 * driver, the NVRTC that is loaded ("none" without one) and the active template set. */
sf_status sf_tune_gpu_of_device(int ordinal, sf_tune_gpu *out);

#endif
