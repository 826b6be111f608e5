/* cpu_kernel_avx2.c: the CPU scan's block kernels with 8 channels per AVX2 vector and FMA;
 * run only where sf_cpu_kernels_select found both (the whole file is compiled for them). */
#include "runtime/cpu/cpu_kernel.h"

#ifdef SF_CPU_HAVE_AVX2_KERNELS
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC target("avx2,fma")
#endif
#define SF_VEC_AVX2 1
#define SF_CPU_KERNELS sf_cpu_kernels_avx2
#define SF_CPU_KERNELS_LABEL "avx2"
#include "runtime/cpu/cpu_kernel_impl.h"
#ifdef __clang__
#pragma clang attribute pop
#endif
#endif
