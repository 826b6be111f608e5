/* scanforge.h: the public C API of scanforge, the selective-scan kernel compiler.
 *
 * Error model: every call returns an sf_status; on failure the calling thread's last
 * error message (sf_last_error) names what went wrong: which argument, what was expected,
 * what came, or the NVRTC log, the CUresult, the errno. The library never prints, exits
 * or aborts. */
#ifndef SCANFORGE_SCANFORGE_H
#define SCANFORGE_SCANFORGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One list generates the enum, the names and the fixed strings. */
#define SF_STATUS_LIST(X)                                                        \
  X(SF_OK, "success")                                                            \
  X(SF_EINVAL, "invalid argument")                                               \
  X(SF_ETEMPLATE, "template error")                                              \
  X(SF_ECOMPILE, "kernel compilation failed")                                    \
  X(SF_ECACHE, "kernel cache error")                                             \
  X(SF_ECUDA, "CUDA driver error")                                               \
  X(SF_ENODEVICE, "no CUDA device or driver")                                    \
  X(SF_ENOMEM, "out of memory")                                                  \
  X(SF_ERESOURCE, "out of GPU resources")                                        \
  X(SF_EIO, "input/output error")                                                \
  X(SF_EUNSUPPORTED, "not supported")                                            \
  X(SF_EINTERNAL, "internal error")

typedef enum sf_status {
#define SF_STATUS_ENUM(name, text) name,
  SF_STATUS_LIST(SF_STATUS_ENUM)
#undef SF_STATUS_ENUM
} sf_status;

/* "SF_EINVAL" for SF_EINVAL. */
const char *sf_status_name(sf_status status);
/* A fixed one-line description of the status. */
const char *sf_status_string(sf_status status);
/* The detailed message of the calling thread's last failed call ("" if none). Valid
 * until this thread's next scanforge call. */
const char *sf_last_error(void);

/* ---- variants ---------------------------------------------------------------------
 * A variant names one generated kernel. It is written as a spec string, e.g.
 * "op=fwd,dstate=16,dtype=bf16,threads=32,items=8,z=1,D=1,delta_bias=1,softplus=1,B=var,C=var"
 * Omitted keys take defaults; sf_variant_format writes the canonical spec. */
typedef enum sf_op { SF_OP_FWD = 0, SF_OP_BWD = 1 } sf_op;
typedef enum sf_dtype { SF_FP32 = 0, SF_FP16 = 1, SF_BF16 = 2 } sf_dtype;

typedef struct sf_variant {
  sf_op op;
  int dstate;        /* N, 1..256 */
  sf_dtype dtype;    /* activation type T */
  int threads;       /* threads that scan one channel: a power of two, 1..1024 */
  int items;         /* time steps per thread per chunk; chunk = threads * items */
  int channels;      /* channels per block, each scanned by its own `threads` threads */
  bool has_z, has_D, has_delta_bias, softplus;
  bool B_var, C_var; /* true: (batch, G, N, L) in T; false: (dim, N) fp32 */
  bool deterministic; /* backward: fixed-order reductions, bitwise reproducible */
} sf_variant;

/* The default variant (every key at its default). */
sf_variant sf_variant_default(void);
/* Parses a spec string; keys not present keep their defaults. */
sf_status sf_variant_parse(const char *spec, sf_variant *out);
/* Checks every key and combination; names the key, the value and what is allowed. */
sf_status sf_variant_validate(const sf_variant *v);
/* Writes the canonical spec (every key, fixed order); returns the length it needs,
 * like snprintf. */
int sf_variant_format(const sf_variant *v, char *buf, size_t cap);
const char *sf_dtype_name(sf_dtype dtype);
/* Bytes per element of the activation type. */
int sf_dtype_size(sf_dtype dtype);

#ifdef __cplusplus
}
#endif
#endif
