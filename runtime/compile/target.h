/* target.h: which binary to build for a device, given the architectures NVRTC knows. */
#ifndef SCANFORGE_TARGET_H
#define SCANFORGE_TARGET_H

#include <stdbool.h>
#include <stddef.h>

#include "scanforge/scanforge.h"

/* What NVRTC is asked to produce: a cubin for sm_<arch>, or PTX for compute_<arch> that
 * the driver compiles for the device when it loads it. arch is major * 10 + minor. */
typedef struct sf_target {
  int arch;
  bool use_ptx;
} sf_target;

/* Picks the target for a device of compute capability cc_major.cc_minor from the
 * architectures NVRTC supports (nvrtcGetSupportedArchs: 75, 80, ..., any order):
 *   - the device's own arch when NVRTC has it: a cubin;
 *   - else the highest arch at or below the device's: PTX, which the driver compiles (a
 *     device newer than this NVRTC, or one between the archs it lists);
 *   - SF_EUNSUPPORTED when every arch NVRTC knows is newer than the device.
 * A pure function. */
sf_status sf_target_arch(int cc_major, int cc_minor, const int *archs, int arch_count,
                         sf_target *target);

/* Writes "sm_90" or "compute_90" (NVRTC's --gpu-architecture value); returns the length
 * it needs, like snprintf. */
int sf_target_format(sf_target target, char *buf, size_t cap);

#endif
