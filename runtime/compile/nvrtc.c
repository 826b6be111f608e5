/* nvrtc.c: finds libnvrtc at run time, so scanforge loads where no CUDA toolkit exists. */
#include "runtime/compile/nvrtc.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/error.h"

/* Newest first: a newer NVRTC knows more GPUs. */
static const char *const library_names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
enum { NAME_COUNT = sizeof library_names / sizeof library_names[0] };

/* Each entry point by its NVRTC name and its slot in sf_nvrtc_api. */
static const struct {
  const char *symbol;
  size_t offset;
} entry_points[] = {
    {"nvrtcGetErrorString", offsetof(sf_nvrtc_api, GetErrorString)},
    {"nvrtcVersion", offsetof(sf_nvrtc_api, Version)},
    {"nvrtcGetNumSupportedArchs", offsetof(sf_nvrtc_api, GetNumSupportedArchs)},
    {"nvrtcGetSupportedArchs", offsetof(sf_nvrtc_api, GetSupportedArchs)},
    {"nvrtcCreateProgram", offsetof(sf_nvrtc_api, CreateProgram)},
    {"nvrtcDestroyProgram", offsetof(sf_nvrtc_api, DestroyProgram)},
    {"nvrtcCompileProgram", offsetof(sf_nvrtc_api, CompileProgram)},
    {"nvrtcGetPTXSize", offsetof(sf_nvrtc_api, GetPTXSize)},
    {"nvrtcGetPTX", offsetof(sf_nvrtc_api, GetPTX)},
    {"nvrtcGetCUBINSize", offsetof(sf_nvrtc_api, GetCUBINSize)},
    {"nvrtcGetCUBIN", offsetof(sf_nvrtc_api, GetCUBIN)},
    {"nvrtcGetProgramLogSize", offsetof(sf_nvrtc_api, GetProgramLogSize)},
    {"nvrtcGetProgramLog", offsetof(sf_nvrtc_api, GetProgramLog)},
};
enum { ENTRY_COUNT = sizeof entry_points / sizeof entry_points[0] };

/* The outcome of the one load, shared by every thread. The failure text is kept here
 * because the error message itself is per thread. */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static sf_nvrtc_api loaded;
static sf_status load_status = SF_EINTERNAL;
static char *load_failure; /* "tried: ..." text, NULL on success or out of memory */
static size_t load_failure_len;

/* Appends to load_failure; on out-of-memory the text is simply shorter. */
static void note(const char *fmt, ...) SF_PRINTF(1, 2);
static void note(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  int len = vsnprintf(NULL, 0, fmt, args);
  va_end(args);
  if (len < 0) return;
  char *grown = realloc(load_failure, load_failure_len + (size_t)len + 1);
  if (!grown) return;
  load_failure = grown;
  va_start(args, fmt);
  vsnprintf(load_failure + load_failure_len, (size_t)len + 1, fmt, args);
  va_end(args);
  load_failure_len += (size_t)len;
}

/* Opens one candidate and resolves every entry point; on success fills `loaded`. */
static int try_library(const char *path) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror(); /* it names the path already */
    if (why)
      note("\n  %s", why);
    else
      note("\n  %s: cannot open", path);
    return 0;
  }
  sf_nvrtc_api api;
  memset(&api, 0, sizeof api);
  for (int i = 0; i < ENTRY_COUNT; i++) {
    void *symbol = dlsym(handle, entry_points[i].symbol);
    if (!symbol) {
      /* An NVRTC too old for what we call (nvrtcGetCUBIN came with 11.1). */
      note("\n  %s: has no %s", path, entry_points[i].symbol);
      dlclose(handle);
      return 0;
    }
    memcpy((char *)&api + entry_points[i].offset, &symbol, sizeof symbol);
  }
  api.path = path;
  loaded = api;
  return 1;
}

/* Tries every name under one directory; the joined path is kept while it is loaded. */
static int try_directory(const char *dir) {
  if (!dir || !dir[0]) return 0;
  for (int i = 0; i < NAME_COUNT; i++) {
    size_t len = strlen(dir) + 1 + strlen(library_names[i]) + 1;
    char *path = malloc(len);
    if (!path) return 0;
    snprintf(path, len, "%s/%s", dir, library_names[i]);
    if (try_library(path)) return 1; /* `path` lives on in loaded.path */
    free(path);
  }
  return 0;
}

static int try_under_cuda_home(const char *home) {
  if (!home || !home[0]) return 0;
  static const char *const subdirs[] = {"lib64", "targets/x86_64-linux/lib"};
  for (size_t i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++) {
    char dir[4096];
    int len = snprintf(dir, sizeof dir, "%s/%s", home, subdirs[i]);
    if (len > 0 && (size_t)len < sizeof dir && try_directory(dir)) return 1;
  }
  return 0;
}

static void load_nvrtc(void) {
  sf_env_value forced, cuda_home;
  int found = 0;
  if (sf_env_get(SF_ENV_NVRTC_LIBRARY, &forced)) {
    /* The user named a library: try only that one, so a wrong name is not hidden. */
    char *copy = strdup(forced.text);
    found = copy && try_library(copy);
    if (!found) free(copy);
  } else {
    for (int i = 0; i < NAME_COUNT && !found; i++) found = try_library(library_names[i]);
    if (!found && sf_env_get(SF_ENV_CUDA_HOME, &cuda_home)) found = try_under_cuda_home(cuda_home.text);
    if (!found) found = try_under_cuda_home("/usr/local/cuda");
  }
  if (found) {
    free(load_failure);
    load_failure = NULL;
  }
  load_status = found ? SF_OK : SF_EUNSUPPORTED;
}

sf_status sf_nvrtc_load(const sf_nvrtc_api **api) {
  if (!api) return sf_fail(SF_EINVAL, "sf_nvrtc_load: api is NULL");
  *api = NULL;
  if (pthread_once(&load_once, load_nvrtc) != 0)
    return sf_fail(SF_EINTERNAL, "sf_nvrtc_load: pthread_once failed");
  if (load_status != SF_OK)
    return sf_fail(load_status,
                   "NVRTC not found (install the CUDA toolkit's NVRTC, or set CUDA_HOME or "
                   "SCANFORGE_NVRTC_LIBRARY); tried:%s",
                   load_failure ? load_failure : " (list lost: out of memory)");
  *api = &loaded;
  return SF_OK;
}
