/* occupancy.c: blocks an SM holds, from a kernel's resources and the architecture's limits. */
#include "runtime/compile/occupancy.h"

#include <stdbool.h>

#include "base/error.h"

/* Per-SM limits (CUDA C Programming Guide, "Compute Capabilities"; the occupancy
 * calculator's shared-memory reservation of 1 KB a block from sm_80 on). */
typedef struct sm_limits {
  int arch, threads, blocks, registers, shared_bytes, reserved_bytes, shared_unit;
} sm_limits;

static const sm_limits limits[] = {
    {75, 1024, 16, 65536, 64 * 1024, 0, 256},      {80, 2048, 32, 65536, 164 * 1024, 1024, 128},
    {86, 1536, 16, 65536, 100 * 1024, 1024, 128},  {89, 1536, 24, 65536, 100 * 1024, 1024, 128},
    {90, 2048, 32, 65536, 228 * 1024, 1024, 128},  {100, 2048, 32, 65536, 228 * 1024, 1024, 128},
};

/* Registers go to warps 256 at a time, from four sub-partitions of a quarter of the file
 * each: a warp's registers must fit in one. */
enum { WARP = 32, REGISTER_UNIT = 256, SUB_PARTITIONS = 4 };

static int round_up(int value, int unit) { return (value + unit - 1) / unit * unit; }

sf_status sf_occupancy_estimate(int arch, int block_threads, int registers, int shared_bytes, sf_occupancy *out) {
  const sm_limits *sm = NULL;
  for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++)
    if (limits[i].arch == arch) sm = &limits[i];
  if (!sm) return sf_fail(SF_EUNSUPPORTED, "occupancy: the limits of sm_%d are not known to scanforge", arch);
  if (block_threads < 1 || block_threads > 1024)
    return sf_fail(SF_EINVAL, "occupancy: threads a block must be 1 to 1024, got %d", block_threads);
  if (registers < 0 || registers > 255 || shared_bytes < 0)
    return sf_fail(SF_EINVAL, "occupancy: registers (0 to 255) and shared bytes (0 or more), got %d and %d", registers,
                   shared_bytes);
  const int warps = (block_threads + WARP - 1) / WARP;
  const int warp_registers = round_up((registers > 0 ? registers : 1) * WARP, REGISTER_UNIT);
  const int block_shared = round_up(shared_bytes + sm->reserved_bytes, sm->shared_unit);
  const int warps_by_registers = sm->registers / SUB_PARTITIONS / warp_registers * SUB_PARTITIONS;
  const bool block_fits = warp_registers * round_up(warps, SUB_PARTITIONS) <= sm->registers;
  *out = (sf_occupancy){
      .by_threads = sm->threads / (warps * WARP),
      .by_registers = block_fits ? warps_by_registers / warps : 0,
      .by_shared = block_shared > 0 ? sm->shared_bytes / block_shared : sm->blocks,
      .by_blocks = sm->blocks,
  };
  const struct { int blocks; const char *name; } bounds[] = {
      {out->by_blocks, "blocks per SM"}, {out->by_threads, "threads"},
      {out->by_registers, "registers"},  {out->by_shared, "shared memory"}};
  out->blocks = bounds[0].blocks, out->limited_by = bounds[0].name;
  for (int i = 1; i < 4; i++)
    if (bounds[i].blocks < out->blocks) out->blocks = bounds[i].blocks, out->limited_by = bounds[i].name;
  return SF_OK;
}
