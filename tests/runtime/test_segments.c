/* test_segments.c: how the runtime cuts a sequence into segments scanned in parallel
 * (runtime/launch/segments.h), for a GPU that holds a given number of blocks at once. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "runtime/launch/kernel_params.h"
#include "runtime/launch/segments.h"

/* split=state, 8 lanes of 2 states, blocks of 8 steps, 8 channels: the few-channel shape */
static sf_variant state_split(void) {
  sf_variant v = sf_variant_default();
  v.split_states = true;
  v.dstate = 16, v.threads = 8, v.items = 8, v.channels = 8;
  return v;
}

static const double capacity = 8.0 * 132; /* 8 blocks an SM on 132 SMs */

Test(segments, none_for_the_time_split_one_interval_or_a_full_gpu) {
  sf_variant v = state_split();
  cr_expect_eq(sf_segments_for(&v, 32, 512, capacity, 0.5).count, 0, "one state interval: nothing to split");
  cr_expect_eq(sf_segments_for(&v, 600, 4096, capacity, 0.5).count, 0, "600 blocks fill over half of 1056");
  v.split_states = false;
  cr_expect_eq(sf_segments_for(&v, 32, 4096, capacity, 0.5).count, 0, "the time split has no carry pass");
}

Test(segments, few_channels_get_segments_shorter_than_an_interval) {
  sf_variant v = state_split();
  /* (1,256,1024,16): 32 blocks, 2 intervals of 512 -> 16 segments of the 64-step floor */
  sf_segments s = sf_segments_for(&v, 32, 1024, capacity, 0.5);
  cr_expect_eq(s.length, 64);
  cr_expect_eq(s.count, 16);
  /* a ragged end: 1000 steps are 16 segments, the last one 40 steps long */
  s = sf_segments_for(&v, 32, 1000, capacity, 0.5);
  cr_expect_eq(s.length, 64);
  cr_expect_eq(s.count, 16);
  /* never shorter than the variant's block of steps */
  v.items = 64;
  cr_expect_eq(sf_segments_for(&v, 32, 1024, capacity, 0.5).length, 64);
  v.items = 8;
  /* enough blocks to fill the GPU twice stop the halving: 300 blocks x 8 intervals fill
   * 1056 over twice already; 256 blocks do after one halving (256 x 16) */
  s = sf_segments_for(&v, 300, 4096, capacity, 0.5);
  cr_expect_eq(s.length, 512, "300 x 8 intervals: got %d", s.length);
  s = sf_segments_for(&v, 256, 4096, capacity, 0.5);
  cr_expect_eq(s.length, 256, "256 x 16 segments: got %d", s.length);
}

Test(segments, the_floor_can_be_moved_for_experiments) {
  sf_variant v = state_split();
  setenv("SCANFORGE_MIN_SEGMENT", "32", 1);
  const sf_segments s = sf_segments_for(&v, 32, 1024, capacity, 0.5);
  setenv("SCANFORGE_MIN_SEGMENT", "48", 1); /* not a power of two: ignored */
  const sf_segments ignored = sf_segments_for(&v, 32, 1024, capacity, 0.5);
  unsetenv("SCANFORGE_MIN_SEGMENT");
  cr_expect_eq(s.length, 32);
  cr_expect_eq(s.count, 32);
  cr_expect_eq(ignored.length, 64);
}

Test(segments, two_waves_and_the_grid_bound_the_count) {
  sf_variant v = state_split();
  /* (1,64,65536,16): 8 blocks, 128 intervals; halved while 8 x segments < 2 x 1056: 512 of
   * 128 steps (the carries' combine is linear in the segments, so their count is free) */
  const sf_segments s = sf_segments_for(&v, 8, 65536, capacity, 0.5);
  cr_expect_eq(s.count, 512);
  cr_expect_eq(s.length, 128);
  /* a grid z holds at most 65535 segments: past that, no segments at all */
  cr_expect_eq(sf_segments_for(&v, 1, (int64_t)512 * 70000, capacity, 0.5).count, 0);
}

Test(segments, can_be_turned_off_for_experiments) {
  sf_variant v = state_split();
  const sf_segments on = sf_segments_for(&v, 32, 1024, capacity, 0.5);
  setenv("SCANFORGE_SEGMENTS", "off", 1);
  const sf_segments off = sf_segments_for(&v, 32, 1024, capacity, 0.5);
  unsetenv("SCANFORGE_SEGMENTS");
  cr_expect_gt(on.count, 0, "32 blocks leave the GPU idle: segments expected");
  cr_expect_eq(off.count, 0, "SCANFORGE_SEGMENTS=off: one walk per channel group, got %lld segments",
               (long long)off.count);
}

/* The combine's shape (kernel_params.h), which the host's launch and the kernel compute
 * alike: below SF_COMBINE_FILL pairs, the fewest lanes a (row, state), up to
 * SF_COMBINE_LANE_RUNS, whose runs hold SF_COMBINE_RUN_MAPS maps, else
 * SF_COMBINE_SHARED_RUNS threads; one from the fill on; blocks of SF_COMBINE_THREADS that
 * hold a whole number of pairs. */
Test(segments, combine_shape_follows_the_maps_and_the_fill) {
  cr_expect_eq(sf_combine_runs(1, 1), 1);
  cr_expect_eq(sf_combine_runs(1, SF_COMBINE_RUN_MAPS), 1);
  cr_expect_eq(sf_combine_runs(1, SF_COMBINE_RUN_MAPS + 1), 2);
  cr_expect_eq(sf_combine_runs(1536 * 16, 31), 4, "(1,1536,2048,16) forward: 31 maps in 4 runs of 8");
  cr_expect_eq(sf_combine_runs(1536 * 16, 63), SF_COMBINE_LANE_RUNS, "(1,1536,16384,16) forward: 63 maps in 8 lanes");
  cr_expect_eq(sf_combine_runs(1536 * 16, 65), SF_COMBINE_SHARED_RUNS);
  cr_expect_eq(sf_combine_runs(64 * 16, 511), SF_COMBINE_SHARED_RUNS, "(1,64,65536,16): runs chained in shared memory");
  cr_expect_eq(sf_combine_runs(SF_COMBINE_FILL - 1, 100), SF_COMBINE_SHARED_RUNS);
  cr_expect_eq(sf_combine_runs(SF_COMBINE_FILL, 100), 1);
  cr_expect_eq(sf_combine_runs(2 * 512 * 128, 8), 1, "(2,512,2048,128): one thread a pair (docs/design-segments.md)");
  static const long long states[] = {1, 512, 4096, 131071, 131072, 1LL << 22};
  static const int maps[] = {1, 7, 9, 31, 64, 255, 256, 257, 5000};
  for (size_t i = 0; i < sizeof states / sizeof states[0]; i++)
    for (size_t m = 0; m < sizeof maps / sizeof maps[0]; m++) {
      const int runs = sf_combine_runs(states[i], maps[m]);
      const bool lanes = runs >= 1 && runs <= SF_COMBINE_LANE_RUNS && (runs & (runs - 1)) == 0;
      cr_expect(runs == SF_COMBINE_SHARED_RUNS || lanes, "%lld states, %d maps: %d runs", states[i], maps[m], runs);
      cr_expect_eq(SF_COMBINE_THREADS % runs, 0, "%lld states: runs divide a block", states[i]);
    }
  /* The lane shapes (2 to SF_COMBINE_LANE_RUNS runs) keep every map of a run in registers:
   * carry_combine.tpl has no loop for a run longer than SF_COMBINE_RUN_MAPS. */
  for (int m = 1; m <= 4096; m++) {
    const int runs = sf_combine_runs(4096, m);
    if (runs > 1 && runs <= SF_COMBINE_LANE_RUNS)
      cr_expect_geq(runs * SF_COMBINE_RUN_MAPS, m, "%d maps in %d lanes: a run longer than the kept maps", m, runs);
  }
}
