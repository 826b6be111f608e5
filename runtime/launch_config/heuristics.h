/* heuristics.h: launch configuration for a shape when the tuning database has no entry. */
#ifndef SCANFORGE_HEURISTICS_H
#define SCANFORGE_HEURISTICS_H

#include <stdbool.h>
#include <stdint.h>

#include "scanforge/scanforge.h"

/* Sets the launch knobs of a forward variant `v` (whose dtype, dstate and flags are set)
 * for a call of the given shape: split, threads, items, channels, states. */
void sf_heuristic_configure(sf_variant *v, int64_t batch, int64_t dim, int groups, int64_t seqlen);

/* The heuristics' whole choice for a call, forward or backward by v->op: the configuration
 * below (sf_heuristic_configure or sf_heuristic_configure_bwd), then, where the device lets a
 * block opt in to `shared_optin` bytes, the launches above 48 KB
 * (sf_heuristic_large_shared_fwd or sf_heuristic_large_shared_bwd). */
void sf_heuristic_choose(sf_variant *v, int64_t batch, int64_t dim, int groups, int64_t seqlen, int shared_optin);

/* Sets threads, items and channels of a backward variant: threads x items is the state
 * interval of the sequence; channels divides the channels of a group (dim / groups) so a
 * block's channels share their B and C rows. */
void sf_heuristic_configure_bwd(sf_variant *v, int64_t batch, int64_t dim, int groups, int64_t seqlen);

/* On a GPU whose blocks may opt in to at least SF_LARGE_SHARED_MIN bytes of shared
 * memory (`shared_optin`, the device's figure; H100, H200), a backward at N = 64, 128 or
 * 256 over 1024 steps or more takes a launch whose arrays exceed 48 KB
 * (docs/design-dynamic-shared.md) in place of what sf_heuristic_configure_bwd chose:
 * 8 states a lane, blocks of 8 steps (4 at N = 256), 16 channels a block at N = 64 and 8
 * above; registers capped for 2 blocks an SM at N = 128 and 256, but not with the gate at
 * N = 256 (one block fits). Nothing changes elsewhere, or when the channels of a group do
 * not divide. */
#define SF_LARGE_SHARED_MIN (200 << 10)
void sf_heuristic_large_shared_bwd(sf_variant *v, int64_t batch, int64_t dim, int groups, int64_t seqlen,
                                   int shared_optin);

/* The same for the forward (a variant sf_heuristic_configure set up): at N = 32 to 256
 * over 1024 steps or more, however few the channels, lanes of 4 states (N / 4 lanes up
 * to 32) or 8 (32 lanes at N = 256), blocks of 32 steps (16 at N = 256) and 1024 / N
 * channels (or the most, a power of two, that divide a group), registers capped for 2
 * blocks an SM: with many channels few enough blocks that the sequence needs no segments,
 * with few the runtime's segments supply them. Nothing changes where a block would not
 * fill a warp. */
void sf_heuristic_large_shared_fwd(sf_variant *v, int64_t batch, int64_t dim, int groups, int64_t seqlen,
                                   int shared_optin);

/* The forward's launch plan may halve a chosen split=state launch's items, down to this many,
 * when that saves a wave (fit_items, runtime/launch/scan.c); the default grid holds those twins. */
#define SF_FWD_FIT_MIN_ITEMS 8

/* The backward's launch plan may take a chosen split=state launch's lanes twin when its
 * blocks need more than one wave (fit_lanes, runtime/launch/scan_bwd_gpu.c; the default
 * grid holds those twins too): twice the lanes a channel and half the channels a block,
 * so as many threads a block, each lane keeping at least SF_BWD_TWIN_MIN_STATES states.
 * True, with *twin set, when v has one. */
#define SF_BWD_TWIN_MIN_STATES 4
bool sf_bwd_lanes_twin(const sf_variant *v, sf_variant *twin);
/* What one of the twin's blocks takes over one of v's, for the plan's comparison: 0.57-0.60
 * measured on the H200 for 2 -> 4 lanes at N = 16, both dtypes, with and without block
 * states (docs/perf.md, v13). */
#define SF_BWD_TWIN_BLOCK_COST 0.6

/* The backward's launch plan may spread a chosen split=state launch that runs in one wave
 * with few warps an SM (fit_spread, runtime/launch/scan_bwd_gpu.c): its spread twin has
 * twice the lanes a channel at the same channels a block (blocks twice as large, each lane
 * keeping half the states, at least SF_BWD_TWIN_MIN_STATES) and registers capped so that
 * `blocks_per_sm` blocks fit an SM. True, with *twin set, when v has one. */
bool sf_bwd_spread_twin(const sf_variant *v, int blocks_per_sm, sf_variant *twin);
/* Only launches of at most this many warps an SM are spread, only up to this many lanes a
 * channel, and the twin may spill at most this many bytes a thread more than the launch it
 * replaces. Measured on the H200 (docs/perf.md, v14): 2 -> 4 lanes at 6 warps an SM (the
 * Mamba-130M training backward) ran 8-15% faster, also with 4 bytes of spills; 8 -> 16
 * lanes at N = 64 ran 11% slower (the sums over lanes grow with the lanes), and a launch
 * that spilled 192 bytes 50% slower. */
#define SF_BWD_SPREAD_MAX_WARPS 8
#define SF_BWD_SPREAD_MAX_LANES 4
#define SF_BWD_SPREAD_MAX_SPILL 64

/* The backward's launch plan may cap a chosen split=state launch's registers when its
 * blocks spill a little past one wave (sf_main_launch_fit_cap, runtime/launch/main_launch.c;
 * the forward's plan does not: its one such row, (64,512,49,8) bf16, ran no faster capped):
 * the capped twin is the same launch with `min_blocks` raised to `blocks_per_sm`, the
 * blocks an SM that hold the call in one wave. True, with *twin set, when that is a
 * stronger cap than v's own. */
bool sf_capped_twin(const sf_variant *v, int blocks_per_sm, sf_variant *twin);
/* Only when the twin needs at most SF_CAP_MAX_GROWTH times the blocks an SM the launch
 * holds now, and spills at most SF_CAP_MAX_SPILL bytes a thread more. Measured on the
 * H100 (docs/perf.md, v28): the MambaVision (64,256,196,8) backward at 1.29 waves, capped
 * from 12 to 16 blocks an SM (fp32, 16 bytes more local memory a thread) 21% faster, 18%
 * with block states, and from 6 to 8 in bf16 24% faster; capping to twice the blocks an
 * SM (the (64,512,49,8) rows at 1.94 waves, 2 states a lane, 32 bytes more spills) 8-85%
 * slower. The forward (64,512,49,8) bf16 capped from 12 to 16: -0.2%, +3.6% with block
 * states. */
#define SF_CAP_MAX_GROWTH (4.0 / 3.0)
#define SF_CAP_MAX_SPILL 16

#endif
