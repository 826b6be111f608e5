/* env.h: every environment variable scanforge reads, parsed strictly; a bad value falls
 * back to the default and leaves one warning for the caller to show (docs/design-env.md). */
#ifndef SCANFORGE_ENV_H
#define SCANFORGE_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum sf_env_var {
  SF_ENV_CACHE_DIR,       /* path: the kernel cache directory */
  SF_ENV_XDG_CACHE_HOME,  /* absolute path: the cache's parent when SCANFORGE_CACHE_DIR is unset */
  SF_ENV_CACHE_MAX_BYTES, /* byte count > 0: the disk cache's budget */
  SF_ENV_TUNING,          /* boolean: use the tuning database */
  SF_ENV_TUNING_DB,       /* path: the tuning database */
  SF_ENV_TEMPLATE_DIR,    /* path: read the templates from this directory */
  SF_ENV_CPU_KERNELS,     /* "auto" or "portable": the CPU scan's block kernels */
  SF_ENV_MIN_SEGMENT,     /* power of two, 4..512: the shortest scanning segment */
  SF_ENV_NVRTC_LIBRARY,   /* path or library name: the NVRTC to load */
  SF_ENV_CUDA_HOME,       /* path: where to look for NVRTC after the usual names */
  SF_ENV_CUDA_LIBRARY,    /* path or library name: the CUDA driver to load */
  SF_ENV_CACHE_PATH,      /* colon-separated directories: read-only cache layers */
  SF_ENV_CACHE_TRUST_GROUP, /* boolean: trust group-writable cache directories */
  SF_ENV_SEGMENTS,        /* boolean: scan segments of the sequence in parallel when it pays */
  SF_ENV_WORKSPACE_KEEP_BYTES, /* byte count > 0: device workspace memory kept between calls */
  SF_ENV_COUNT
} sf_env_var;

/* SF_ENV_CPU_KERNELS' values, in the order sf_env_get returns them. */
enum { SF_ENV_CPU_AUTO = 0, SF_ENV_CPU_PORTABLE = 1 };

/* A usable value: `text` is the variable's text (paths, names); `number` the parsed
 * number (byte counts, integers), 0/1 for booleans, the index of a choice. */
typedef struct sf_env_value {
  const char *text;
  int64_t number;
} sf_env_value;

/* The variable's name, e.g. "SCANFORGE_CACHE_MAX_BYTES". */
const char *sf_env_name(sf_env_var var);

/* Reads the variable now. True with *out filled when it is set to a usable value; false
 * when it is unset or empty (use the default) or bad: then the default is to be used too,
 * and the first bad value of each variable is kept as a warning for
 * sf_environment_warning. Secure: ignored in set-user-ID programs (secure_getenv). */
bool sf_env_get(sf_env_var var, sf_env_value *out);

/* Parses `text` as a value of `var` without reading the environment or warning: true
 * with *out filled, else false with the warning's text in why (names the variable, the
 * value, what was expected and the default used). Empty text is "unset": false, why "". */
bool sf_env_parse(sf_env_var var, const char *text, sf_env_value *out, char *why, size_t cap);

/* A byte count: digits, then optionally K, M, G or T (binary units, an optional "i" and
 * "B"): "1048576", "512K", "64MiB", "1G". False when it is not one or exceeds INT64_MAX. */
bool sf_env_parse_bytes(const char *text, uint64_t *out);

#endif
