/* nvrtc.h: NVRTC opened at run time with dlopen, its entry points resolved once. */
#ifndef SCANFORGE_NVRTC_H
#define SCANFORGE_NVRTC_H

#include <nvrtc.h> /* types only: the library never links against libnvrtc */

#include "scanforge/scanforge.h"

/* The NVRTC entry points scanforge uses, named after the API without its prefix. */
typedef struct sf_nvrtc_api {
  const char *(*GetErrorString)(nvrtcResult result);
  nvrtcResult (*Version)(int *major, int *minor);
  nvrtcResult (*GetNumSupportedArchs)(int *count);
  nvrtcResult (*GetSupportedArchs)(int *archs);
  nvrtcResult (*CreateProgram)(nvrtcProgram *prog, const char *src, const char *name,
                               int num_headers, const char *const *headers,
                               const char *const *include_names);
  nvrtcResult (*DestroyProgram)(nvrtcProgram *prog);
  nvrtcResult (*CompileProgram)(nvrtcProgram prog, int num_options, const char *const *options);
  nvrtcResult (*GetPTXSize)(nvrtcProgram prog, size_t *size);
  nvrtcResult (*GetPTX)(nvrtcProgram prog, char *ptx);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram prog, size_t *size);
  nvrtcResult (*GetCUBIN)(nvrtcProgram prog, char *cubin);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram prog, size_t *size);
  nvrtcResult (*GetProgramLog)(nvrtcProgram prog, char *log);
  const char *path; /* the library that was opened, as it was named to dlopen */
} sf_nvrtc_api;

/* Opens NVRTC on the first call (thread-safe) and hands out the resolved entry points,
 * which stay valid for the life of the process. The search: $SCANFORGE_NVRTC_LIBRARY
 * alone when set; else libnvrtc.so.13, .so.12, .so by the loader's path, then the same
 * names under $CUDA_HOME/lib64, $CUDA_HOME/targets/x86_64-linux/lib, /usr/local/cuda/lib64
 * and /usr/local/cuda/targets/x86_64-linux/lib. Fails with SF_EUNSUPPORTED listing every
 * path tried and why it failed. */
sf_status sf_nvrtc_load(const sf_nvrtc_api **api);

#endif
