/* test_occupancy.c: blocks an SM holds, from a kernel's resources (runtime/compile/occupancy.h). */
#include <criterion/criterion.h>
#include <string.h>

#include "runtime/compile/occupancy.h"

/* The estimate, which must succeed. */
static sf_occupancy estimate(int arch, int threads, int registers, int shared) {
  sf_occupancy o;
  cr_assert_eq(sf_occupancy_estimate(arch, threads, registers, shared, &o), SF_OK, "%s", sf_last_error());
  return o;
}

/* The tuned 130M bf16 backward on an H100 (docs/perf.md, v10): one warp a block, 255
 * registers, 32256 bytes of shared memory. The registers allow 8 blocks (8192 registers a
 * warp); shared memory with the driver's 1 KB a block allows 7 (7 x 33280 <= 233472). */
Test(occupancy, the_130m_backward_on_sm_90_is_held_to_7_by_shared_memory) {
  sf_occupancy o = estimate(90, 32, 255, 32256);
  cr_expect_eq(o.by_registers, 8);
  cr_expect_eq(o.by_shared, 7);
  cr_expect_eq(o.by_threads, 64);
  cr_expect_eq(o.by_blocks, 32);
  cr_expect_eq(o.blocks, 7);
  cr_expect_str_eq(o.limited_by, "shared memory");
  /* 4 KB less and the registers decide: 8 */
  o = estimate(90, 32, 255, 28160);
  cr_expect_eq(o.blocks, 8);
  cr_expect_str_eq(o.limited_by, "registers");
}

Test(occupancy, threads_and_the_block_cap_bind_small_kernels) {
  sf_occupancy o = estimate(90, 1024, 16, 0);
  cr_expect_eq(o.by_registers, 4);
  cr_expect_eq(o.blocks, 2);
  cr_expect_str_eq(o.limited_by, "threads");
  o = estimate(90, 32, 16, 0);
  cr_expect_eq(o.blocks, 32);
  cr_expect_str_eq(o.limited_by, "blocks per SM");
  /* Turing holds half the threads, reserves no shared memory, caps at 16 blocks */
  o = estimate(75, 256, 64, 16384);
  cr_expect_eq(o.by_threads, 4);
  cr_expect_eq(o.by_shared, 4);
  cr_expect_eq(o.by_registers, 4); /* 2048 registers a warp, 8 warps a block */
  cr_expect_eq(o.blocks, 4);
}

/* A warp's registers come from one of four sub-partitions of 16384: 130 registers are 4160
 * a warp, allocated as 4352, 3 warps a sub-partition -> 12 warps -> 3 blocks of 4 warps. */
Test(occupancy, registers_round_up_and_fill_four_sub_partitions) {
  sf_occupancy o = estimate(80, 128, 130, 0);
  cr_expect_eq(o.by_registers, 3);
  /* 190 registers: 6144 a warp, 2 a sub-partition -> 8 one-warp blocks (10 if the file were one pool) */
  o = estimate(90, 32, 190, 0);
  cr_expect_eq(o.by_registers, 8);
  /* 106 registers, two warps a block: 3584 a warp, 4 a sub-partition -> 16 warps -> 8 blocks */
  o = estimate(90, 64, 106, 0);
  cr_expect_eq(o.by_registers, 8);
}

/* 9300 bytes a block: 9472 in Turing's 256-byte units, 6 in 64 KB (9344 in 128-byte units
 * would give 7); sm_90 adds the 1 KB reserve and rounds to 128: 10368, 22 in 228 KB. */
Test(occupancy, shared_memory_rounds_to_each_architectures_unit) {
  sf_occupancy o = estimate(75, 32, 32, 9300);
  cr_expect_eq(o.by_shared, 6);
  o = estimate(90, 32, 32, 9300);
  cr_expect_eq(o.by_shared, 22);
}

Test(occupancy, unknown_architectures_and_bad_blocks_are_refused) {
  sf_occupancy o;
  cr_expect_eq(sf_occupancy_estimate(61, 32, 32, 0, &o), SF_EUNSUPPORTED);
  cr_expect(strstr(sf_last_error(), "sm_61") != NULL, "%s", sf_last_error());
  cr_expect_eq(sf_occupancy_estimate(90, 0, 32, 0, &o), SF_EINVAL);
  cr_expect_eq(sf_occupancy_estimate(90, 2048, 32, 0, &o), SF_EINVAL);
  cr_expect_eq(sf_occupancy_estimate(90, 32, 300, 0, &o), SF_EINVAL);
}
