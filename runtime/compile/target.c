/* target.c: cubin for the device's own arch, else PTX for the newest arch below it. */
#include "runtime/compile/target.h"

#include <stdio.h>

#include "base/error.h"

sf_status sf_target_arch(int cc_major, int cc_minor, const int *archs, int arch_count,
                         sf_target *target) {
  if (!target) return sf_fail(SF_EINVAL, "sf_target_arch: target is NULL");
  target->arch = 0;
  target->use_ptx = false;
  if (cc_major < 1 || cc_minor < 0 || cc_minor > 9)
    return sf_fail(SF_EINVAL, "sf_target_arch: compute capability %d.%d is not one", cc_major,
                   cc_minor);
  if (!archs || arch_count < 1)
    return sf_fail(SF_EINVAL, "sf_target_arch: NVRTC reported no supported architectures");
  int device = cc_major * 10 + cc_minor;
  int below = 0, oldest = archs[0];
  for (int i = 0; i < arch_count; i++) {
    if (archs[i] == device) {
      target->arch = device;
      return SF_OK;
    }
    if (archs[i] < device && archs[i] > below) below = archs[i];
    if (archs[i] < oldest) oldest = archs[i];
  }
  if (below == 0)
    return sf_fail(SF_EUNSUPPORTED, "device sm_%d is older than every architecture this NVRTC "
                   "supports (the oldest is sm_%d)", device, oldest);
  /* PTX for compute_XY runs on any device of compute capability >= X.Y: the driver
   * compiles it for the device when the module is loaded. */
  target->arch = below;
  target->use_ptx = true;
  return SF_OK;
}

int sf_target_format(sf_target target, char *buf, size_t cap) {
  return snprintf(buf, cap, "%s_%d", target.use_ptx ? "compute" : "sm", target.arch);
}
