/* select.c: the databases read once per process, a table per device, and the choice for each call. */
#include "runtime/launch_config/select.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "generator/template_set.h"
#include "runtime/compile/compile.h"
#include "runtime/cuda/cuda_context.h"
#include "base/env.h"
#include "runtime/cuda/cuda_driver.h"
#include "base/error.h"
#include "runtime/launch_config/defaults.h"
#include "runtime/launch_config/heuristics.h"
#include "runtime/launch_config/lookup.h"

/* ---- read once per process ------------------------------------------------------------ */

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool disabled;
static char *user_path;
static sf_tune_db user_db, defaults_db;

/* The first warning only: the caller shows it once. 0 none, 1 being written, 2 ready. */
static char warning_text[1024];
static atomic_int warning_state;

static void set_warning(const char *text) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&warning_state, &expected, 1)) return;
  snprintf(warning_text, sizeof warning_text, "%s", text);
  atomic_store(&warning_state, 2);
}

static bool env_says_off(void) {
  sf_env_value on;
  return sf_env_get(SF_ENV_TUNING, &on) && !on.number;
}

static void load(void) {
  if (env_says_off()) {
    disabled = true;
    return;
  }
  char *warning = NULL;
  user_path = sf_tune_db_default_path();
  if (user_path && sf_tune_db_load(user_path, &user_db, &warning) != SF_OK) sf_tune_db_init(&user_db);
  if (warning) set_warning(warning);
  free(warning);
  warning = NULL;
  if (sf_tune_defaults_load(&defaults_db, &warning) != SF_OK) sf_tune_db_init(&defaults_db);
  if (warning) set_warning(warning);
  free(warning);
}

bool sf_tune_enabled(void) {
  pthread_once(&load_once, load);
  return !disabled;
}

/* ---- the device's key ------------------------------------------------------------------- */

sf_status sf_tune_gpu_of_device(int ordinal, sf_tune_gpu *out) {
  memset(out, 0, sizeof *out);
  sf_device_info info;
  sf_status st = sf_device_get_info(ordinal, &info);
  if (st != SF_OK) return st;
  snprintf(out->name, sizeof out->name, "%s", info.name);
  out->cc_major = info.cc_major;
  out->cc_minor = info.cc_minor;
  out->sm_count = info.sm_count;
  out->memory = info.total_memory;
  out->driver_version = info.driver_version;
  int major = 0, minor = 0;
  if (sf_nvrtc_version(&major, &minor) == SF_OK)
    snprintf(out->nvrtc, sizeof out->nvrtc, "%d.%d", major, minor);
  else
    snprintf(out->nvrtc, sizeof out->nvrtc, "none");
  uint64_t hash = 0;
  st = sf_template_set_hash(&hash);
  if (st != SF_OK) return st;
  snprintf(out->templates, sizeof out->templates, "%016llx", (unsigned long long)hash);
  return SF_OK;
}

/* ---- a table per device, built on its first call ------------------------------------------ */

static pthread_mutex_t build_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(sf_tune_table *) tables[SF_MAX_DEVICES];
static atomic_int built[SF_MAX_DEVICES]; /* 1 once tables[d] is final (NULL: nothing tuned) */

static sf_tune_table *build_table(int ordinal) {
  sf_tune_gpu gpu;
  if (sf_tune_gpu_of_device(ordinal, &gpu) != SF_OK) return NULL;
  bool user_stale = false;
  const sf_tune_section *user = sf_tune_db_match(&user_db, &gpu, &user_stale);
  const sf_tune_section *defaults = sf_tune_db_match(&defaults_db, &gpu, NULL);
  if (!user && user_stale) {
    char text[768];
    snprintf(text, sizeof text,
             "tuning database %s: the entries for %s were measured with another template set and "
             "are not used (run 'scanforge tune' again)",
             user_path ? user_path : "", gpu.name);
    set_warning(text);
  }
  sf_tune_table *table = NULL;
  if ((user || defaults) && sf_tune_table_build(user, defaults, &table) != SF_OK) return NULL;
  return table;
}

/* The calling thread's device: its current context's, else device 0 (has_context false).
 * False when there is no driver or no such device. */
typedef struct calling_device {
  const sf_cu *cu;
  CUdevice device;
  bool has_context;
} calling_device;

static bool find_calling_device(calling_device *d) {
  if (sf_cu_load(&d->cu) != SF_OK) return false;
  CUcontext context = NULL;
  d->device = 0;
  if (d->cu->CtxGetCurrent(&context) != CUDA_SUCCESS) return false;
  d->has_context = context != NULL;
  if (context ? d->cu->CtxGetDevice(&d->device) != CUDA_SUCCESS : d->cu->DeviceGet(&d->device, 0) != CUDA_SUCCESS)
    return false;
  return d->device >= 0 && d->device < SF_MAX_DEVICES;
}

/* The device's table; NULL when nothing is tuned for it. */
static const sf_tune_table *table_of(const calling_device *d) {
  if (!atomic_load_explicit(&built[d->device], memory_order_acquire)) {
    pthread_mutex_lock(&build_lock);
    if (!atomic_load_explicit(&built[d->device], memory_order_relaxed)) {
      atomic_store_explicit(&tables[d->device], build_table(d->has_context ? -1 : 0), memory_order_relaxed);
      atomic_store_explicit(&built[d->device], 1, memory_order_release);
    }
    pthread_mutex_unlock(&build_lock);
  }
  return atomic_load_explicit(&tables[d->device], memory_order_relaxed);
}

const char *sf_tuning_warning(void) {
  pthread_once(&load_once, load);
  /* Entries measured with other templates are found when the device's table is built:
   * build it now, so that a caller hears of them before its first call, not after. */
  calling_device d;
  if (!disabled && find_calling_device(&d)) (void)table_of(&d);
  return atomic_load(&warning_state) == 2 ? warning_text : NULL;
}

/* The shared memory a block may opt in to on the device (0 when unknown), read once per
 * device: the heuristics' launches above 48 KB need it. */
static atomic_int shared_optin[SF_MAX_DEVICES]; /* the figure + 1; 0: not read yet */

static int shared_optin_of(const calling_device *d) {
  int known = atomic_load_explicit(&shared_optin[d->device], memory_order_relaxed);
  if (known == 0) {
    int bytes = 0;
    if (d->cu->DeviceGetAttribute(&bytes, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d->device) !=
        CUDA_SUCCESS)
      bytes = 0;
    known = bytes + 1;
    atomic_store_explicit(&shared_optin[d->device], known, memory_order_relaxed);
  }
  return known - 1;
}

int sf_current_device_shared_optin(void) {
  calling_device d;
  return find_calling_device(&d) ? shared_optin_of(&d) : 0;
}

/* ---- the choice ------------------------------------------------------------------------------ */

void sf_tune_configure(sf_variant *v, bool block_states, int64_t batch, int64_t dim, int groups, int64_t seqlen,
                       const sf_launch *launch) {
  calling_device d;
  const bool found = find_calling_device(&d);
  sf_heuristic_choose(v, batch, dim, groups, seqlen, found ? shared_optin_of(&d) : 0);
  if (launch && launch->untuned) return;
  pthread_once(&load_once, load);
  if (disabled || (user_db.count == 0 && defaults_db.count == 0)) return;
  sf_tune_table_lookup(found ? table_of(&d) : NULL, v, block_states, batch, dim, groups, seqlen);
}
