/* occupancy.h: how many blocks of a kernel one SM holds at once, from its threads a block,
 * registers a thread and static shared memory a block, by the architecture's limits and
 * the allocation rules of NVIDIA's occupancy calculator. An estimate for `scanforge
 * compile` on a machine without the GPU; with one, the driver's
 * cuOccupancyMaxActiveBlocksPerMultiprocessor is the authority (`scanforge bench`). */
#ifndef SCANFORGE_OCCUPANCY_H
#define SCANFORGE_OCCUPANCY_H

#include "scanforge/scanforge.h"

typedef struct sf_occupancy {
  int blocks;                /* an SM holds: the least of the four below */
  int by_threads;            /* threads an SM holds / threads a block */
  int by_registers;          /* the register file: 256 registers a warp at a time, in 4 sub-partitions */
  int by_shared;             /* shared memory an SM holds / (a block's + what the driver reserves) */
  int by_blocks;             /* the most blocks an SM holds */
  const char *limited_by;    /* "threads", "registers", "shared memory" or "blocks per SM" */
} sf_occupancy;

/* The occupancy of a kernel on sm_<arch> (major * 10 + minor). SF_EUNSUPPORTED for an
 * architecture whose limits scanforge does not know, SF_EINVAL for a block of no thread
 * or more than 1024, or registers over 255. */
sf_status sf_occupancy_estimate(int arch, int block_threads, int registers, int shared_bytes, sf_occupancy *out);

#endif
