/* compile.h: CUDA source text -> cubin (or PTX) with NVRTC, and what ptxas said of it. */
#ifndef SCANFORGE_COMPILE_H
#define SCANFORGE_COMPILE_H

#include <stdbool.h>
#include <stddef.h>

#include "scanforge/scanforge.h"

/* One compiled binary and its metadata. Resource fields are the largest over the kernels
 * in the module (a generated source holds one) and -1 when unknown (always so for PTX). */
typedef struct sf_binary {
  void *data;          /* cubin (an ELF image) or NUL-terminated PTX text */
  size_t size;         /* bytes of data; for PTX, without the NUL */
  bool is_ptx;
  int arch;            /* 90 for sm_90 / compute_90 */
  int registers;       /* per thread */
  int spill_stores;    /* bytes */
  int spill_loads;     /* bytes */
  int shared_bytes;    /* static shared memory per block */
  int stack_bytes;     /* stack frame per thread */
  double compile_ms;   /* wall time of nvrtcCompileProgram */
  char *log;           /* the NVRTC log (warnings, ptxas report); "" when empty, never NULL */
} sf_binary;

/* Compiles `source` (named `source_name` in the log, e.g. "scan_fwd.cu") for sm_<arch>,
 * or to PTX for compute_<arch> when want_ptx. On success *out owns its buffers (free with
 * sf_binary_free). On failure *out is zeroed and the status says why: SF_EINVAL for an
 * arch NVRTC does not support (the message lists those it does), SF_ECOMPILE with the
 * NVRTC log and each source line an error points at, SF_EUNSUPPORTED when NVRTC is
 * absent, SF_ENOMEM. */
sf_status sf_compile(const char *source, const char *source_name, int arch, bool want_ptx,
                     sf_binary *out);
/* How many times this process has run nvrtcCompileProgram (tests read it to tell a
 * cache hit from a compile). */
unsigned long sf_compile_count(void);
/* The registers a thread and static shared bytes a block of one kernel of the module
 * (`entry`, e.g. "sf_scan_bwd"), from ptxas's report in b->log; SF_EINVAL naming the entry
 * when the log has no report of it (PTX, or another name). */
sf_status sf_binary_kernel_resources(const sf_binary *b, const char *entry, int *registers, int *shared_bytes);
/* Frees what *b owns and zeroes it; NULL or a zeroed binary is fine. */
void sf_binary_free(sf_binary *b);

/* The version of the NVRTC that was loaded. */
sf_status sf_nvrtc_version(int *major, int *minor);
/* Writes up to `capacity` supported archs (ascending, e.g. 75 80 ... 120) and sets *count
 * to how many there are, which may exceed capacity (call with capacity 0 to size). */
sf_status sf_nvrtc_archs(int *archs, int capacity, int *count);
/* The options passed to every compile besides the arch, space separated, for cache keys. */
const char *sf_compile_options_string(void);

#endif
