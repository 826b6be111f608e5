/* env.c: the table of environment variables, their strict parsers, and the warnings of
 * bad values, each kept once per process for the caller to show (the library never
 * prints). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* secure_getenv */
#endif
#include "base/env.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "scanforge/scanforge.h"

enum { PATH_LIMIT = 4096, SHOWN_VALUE_MAX = 80, WARNING_MAX = 512 };

typedef enum kind {
  KIND_PATH,          /* any text shorter than PATH_LIMIT */
  KIND_ABSOLUTE_PATH, /* the same, starting with '/' */
  KIND_BYTES,         /* a byte count > 0 */
  KIND_BOOL,          /* on/off, 1/0, yes/no, true/false */
  KIND_CHOICE,        /* one of `choices` */
  KIND_POWER_OF_TWO   /* a power of two in [min, max] */
} kind;

typedef struct variable {
  const char *name;
  kind kind;
  const char *fallback; /* what is used instead of a bad value, for the warning */
  const char *const *choices;
  int64_t min, max;
} variable;

static const char *const cpu_kernel_choices[] = {"auto", "portable", NULL};

static const variable variables[SF_ENV_COUNT] = {
    [SF_ENV_CACHE_DIR] = {"SCANFORGE_CACHE_DIR", KIND_PATH, "the default directory"},
    [SF_ENV_XDG_CACHE_HOME] = {"XDG_CACHE_HOME", KIND_ABSOLUTE_PATH, "~/.cache"},
    [SF_ENV_CACHE_MAX_BYTES] = {"SCANFORGE_CACHE_MAX_BYTES", KIND_BYTES, "1 GiB"},
    [SF_ENV_TUNING] = {"SCANFORGE_TUNING", KIND_BOOL, "on"},
    [SF_ENV_TUNING_DB] = {"SCANFORGE_TUNING_DB", KIND_PATH, "tuning.json beside the kernel cache"},
    [SF_ENV_TEMPLATE_DIR] = {"SCANFORGE_TEMPLATE_DIR", KIND_PATH, "the built-in templates"},
    [SF_ENV_CPU_KERNELS] = {"SCANFORGE_CPU_KERNELS", KIND_CHOICE, "auto", cpu_kernel_choices},
    [SF_ENV_MIN_SEGMENT] = {"SCANFORGE_MIN_SEGMENT", KIND_POWER_OF_TWO, "64", NULL, 4, 512},
    [SF_ENV_NVRTC_LIBRARY] = {"SCANFORGE_NVRTC_LIBRARY", KIND_PATH, "the usual library names"},
    [SF_ENV_CUDA_HOME] = {"CUDA_HOME", KIND_PATH, "/usr/local/cuda only"},
    [SF_ENV_CUDA_LIBRARY] = {"SCANFORGE_CUDA_LIBRARY", KIND_PATH, "libcuda.so.1"},
    [SF_ENV_CACHE_PATH] = {"SCANFORGE_CACHE_PATH", KIND_PATH, "no read-only layers"},
    [SF_ENV_CACHE_TRUST_GROUP] = {"SCANFORGE_CACHE_TRUST_GROUP", KIND_BOOL,
                                  "off (group-writable directories stay untrusted)"},
    [SF_ENV_SEGMENTS] = {"SCANFORGE_SEGMENTS", KIND_BOOL, "on"},
    [SF_ENV_WORKSPACE_KEEP_BYTES] = {"SCANFORGE_WORKSPACE_KEEP_BYTES", KIND_BYTES, "1 GiB"},
};

const char *sf_env_name(sf_env_var var) {
  return (unsigned)var < SF_ENV_COUNT ? variables[var].name : "(unknown variable)";
}

/* ---- parsers: true with the value, or false ----------------------------------------- */

bool sf_env_parse_bytes(const char *text, uint64_t *out) {
  const char *p = text ? text : "";
  if (!isdigit((unsigned char)*p)) return false;
  uint64_t value = 0;
  for (; isdigit((unsigned char)*p); p++) {
    if (value > (UINT64_MAX - 9) / 10) return false;
    value = value * 10 + (uint64_t)(*p - '0');
  }
  int shift = 0;
  switch (toupper((unsigned char)*p)) {
  case 'K': shift = 10; break;
  case 'M': shift = 20; break;
  case 'G': shift = 30; break;
  case 'T': shift = 40; break;
  default: break;
  }
  if (shift) {
    p++;
    if (*p == 'i' || *p == 'I') p++;
  }
  if (*p == 'b' || *p == 'B') p++;
  if (*p != '\0' || value > ((uint64_t)INT64_MAX >> shift)) return false;
  *out = value << shift;
  return true;
}

/* A decimal integer with nothing around it (no sign, spaces or suffix). */
static bool parse_integer(const char *text, int64_t *out) {
  if (!isdigit((unsigned char)text[0])) return false;
  errno = 0;
  char *end;
  long long n = strtoll(text, &end, 10);
  if (errno == ERANGE || *end != '\0') return false;
  *out = n;
  return true;
}

static bool parse_bool(const char *text, int64_t *out) {
  static const char *const yes[] = {"1", "on", "yes", "true"}, *const no[] = {"0", "off", "no", "false"};
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
    if (strcasecmp(text, yes[i]) == 0) return *out = 1, true;
    if (strcasecmp(text, no[i]) == 0) return *out = 0, true;
  }
  return false;
}

/* What a value of `v` looks like, for the warning. */
static void describe_expected(const variable *v, char *buf, size_t cap) {
  switch (v->kind) {
  case KIND_PATH: snprintf(buf, cap, "a path shorter than %d characters", PATH_LIMIT); break;
  case KIND_ABSOLUTE_PATH:
    snprintf(buf, cap, "an absolute path shorter than %d characters", PATH_LIMIT);
    break;
  case KIND_BYTES:
    snprintf(buf, cap, "a positive byte count such as 1048576, 512K, 64M or 1G");
    break;
  case KIND_BOOL: snprintf(buf, cap, "on or off (also 1/0, yes/no, true/false)"); break;
  case KIND_CHOICE: {
    size_t n = (size_t)snprintf(buf, cap, "one of");
    for (int i = 0; v->choices[i] && n < cap; i++)
      n += (size_t)snprintf(buf + n, cap - n, "%s %s", i ? "," : "", v->choices[i]);
    break;
  }
  case KIND_POWER_OF_TWO:
    snprintf(buf, cap, "a power of two from %lld to %lld", (long long)v->min, (long long)v->max);
    break;
  }
}

bool sf_env_parse(sf_env_var var, const char *text, sf_env_value *out, char *why, size_t cap) {
  if (cap) why[0] = '\0';
  if ((unsigned)var >= SF_ENV_COUNT || !text || !text[0]) return false;
  const variable *v = &variables[var];
  sf_env_value value = {.text = text, .number = 0};
  bool ok = false;
  uint64_t bytes;
  switch (v->kind) {
  case KIND_PATH: ok = strlen(text) < PATH_LIMIT; break;
  case KIND_ABSOLUTE_PATH: ok = text[0] == '/' && strlen(text) < PATH_LIMIT; break;
  case KIND_BYTES:
    ok = sf_env_parse_bytes(text, &bytes) && bytes > 0;
    value.number = (int64_t)bytes;
    break;
  case KIND_BOOL: ok = parse_bool(text, &value.number); break;
  case KIND_CHOICE:
    for (int i = 0; v->choices[i] && !ok; i++)
      if (strcmp(text, v->choices[i]) == 0) ok = true, value.number = i;
    break;
  case KIND_POWER_OF_TWO:
    ok = parse_integer(text, &value.number) && value.number >= v->min && value.number <= v->max &&
         (value.number & (value.number - 1)) == 0;
    break;
  }
  if (ok) {
    *out = value;
    return true;
  }
  char expected[256];
  describe_expected(v, expected, sizeof expected);
  const size_t length = strlen(text);
  snprintf(why, cap, "%s=\"%.*s%s\" is not usable: expected %s; using %s", v->name, SHOWN_VALUE_MAX, text,
           length > SHOWN_VALUE_MAX ? "..." : "", expected, v->fallback);
  return false;
}

/* ---- the warnings: the first bad value of each variable, kept for the process -------- */

static pthread_mutex_t warnings_lock = PTHREAD_MUTEX_INITIALIZER;
static char warnings[SF_ENV_COUNT][WARNING_MAX];
static int warning_count;
/* The joined texts handed out so far: each stays valid for the process; a new one is
 * made only when a warning was added, so there are at most SF_ENV_COUNT. */
static char *versions[SF_ENV_COUNT];
static int version_count, warnings_in_latest;

bool sf_env_get(sf_env_var var, sf_env_value *out) {
  if ((unsigned)var >= SF_ENV_COUNT) return false;
  const char *text = secure_getenv(variables[var].name);
  char why[WARNING_MAX];
  if (sf_env_parse(var, text, out, why, sizeof why)) return true;
  if (why[0]) {
    pthread_mutex_lock(&warnings_lock);
    if (!warnings[var][0]) {
      snprintf(warnings[var], sizeof warnings[var], "%s", why);
      warning_count++;
    }
    pthread_mutex_unlock(&warnings_lock);
  }
  return false;
}

const char *sf_environment_warning(void) {
  sf_env_value ignored;
  for (int var = 0; var < SF_ENV_COUNT; var++) sf_env_get((sf_env_var)var, &ignored);
  pthread_mutex_lock(&warnings_lock);
  if (warning_count > warnings_in_latest && version_count < SF_ENV_COUNT) {
    const size_t cap = (size_t)warning_count * WARNING_MAX;
    char *text = malloc(cap);
    if (text) {
      size_t n = 0;
      text[0] = '\0';
      for (int var = 0; var < SF_ENV_COUNT; var++)
        if (warnings[var][0]) n += (size_t)snprintf(text + n, cap - n, "%s%s", n ? "\n" : "", warnings[var]);
      versions[version_count++] = text;
      warnings_in_latest = warning_count;
    }
  }
  const char *latest = version_count ? versions[version_count - 1] : NULL;
  pthread_mutex_unlock(&warnings_lock);
  return latest;
}
