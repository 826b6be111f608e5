/* cpu_kernel_portable.c: the CPU scan's block kernels for any machine: one channel per
 * block, libm's exp; and the run-time choice between these and the AVX2 ones. */
#include <stdlib.h>
#include <string.h>

#include "base/env.h"

#define SF_CPU_KERNELS sf_cpu_kernels_portable
#define SF_CPU_KERNELS_LABEL "portable"
#include "runtime/cpu/cpu_kernel_impl.h"

const sf_cpu_kernels *sf_cpu_kernels_select(void) {
  sf_env_value forced;
  if (sf_env_get(SF_ENV_CPU_KERNELS, &forced) && forced.number == SF_ENV_CPU_PORTABLE)
    return &sf_cpu_kernels_portable;
#ifdef SF_CPU_HAVE_AVX2_KERNELS
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &sf_cpu_kernels_avx2;
#endif
  return &sf_cpu_kernels_portable;
}
