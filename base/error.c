/* error.c: status names and the per-thread last error message. */
#include "base/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A heap buffer per thread: thread-local storage stays one pointer wide, which matters
 * when the library is loaded with dlopen (the TensorFlow op). */
static _Thread_local char *tls_message;
static _Thread_local size_t tls_capacity;

static const char *const status_names[] = {
#define SF_STATUS_NAME(name, text) #name,
    SF_STATUS_LIST(SF_STATUS_NAME)
#undef SF_STATUS_NAME
};
static const char *const status_strings[] = {
#define SF_STATUS_TEXT(name, text) text,
    SF_STATUS_LIST(SF_STATUS_TEXT)
#undef SF_STATUS_TEXT
};
enum { STATUS_COUNT = sizeof(status_names) / sizeof(status_names[0]) };

const char *sf_status_name(sf_status status) {
  return (unsigned)status < STATUS_COUNT ? status_names[status] : "SF_UNKNOWN";
}

const char *sf_status_string(sf_status status) {
  return (unsigned)status < STATUS_COUNT ? status_strings[status] : "unknown status";
}

const char *sf_last_error(void) { return tls_message ? tls_message : ""; }

void sf_clear_error(void) {
  if (tls_message) tls_message[0] = '\0';
}

static void store_message(const char *text, size_t len) {
  if (len + 1 > tls_capacity) {
    char *grown = realloc(tls_message, len + 1);
    if (!grown) return; /* keep the old message rather than fail the failure path */
    tls_message = grown;
    tls_capacity = len + 1;
  }
  memcpy(tls_message, text, len);
  tls_message[len] = '\0';
}

sf_status sf_failv(sf_status status, const char *fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int len = vsnprintf(NULL, 0, fmt, copy);
  va_end(copy);
  if (len < 0) return status;
  char *text = malloc((size_t)len + 1);
  if (!text) return status;
  vsnprintf(text, (size_t)len + 1, fmt, args);
  store_message(text, (size_t)len);
  free(text);
  return status;
}

sf_status sf_fail(sf_status status, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  sf_failv(status, fmt, args);
  va_end(args);
  return status;
}

sf_status sf_fail_context(sf_status status, const char *fmt, ...) {
  char prefix[512];
  va_list args;
  va_start(args, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, args);
  va_end(args);
  const char *old = sf_last_error();
  size_t plen = strlen(prefix), olen = strlen(old);
  char *text = malloc(plen + 2 + olen + 1);
  if (!text) return status;
  memcpy(text, prefix, plen);
  memcpy(text + plen, ": ", 2);
  memcpy(text + plen + 2, old, olen + 1);
  store_message(text, plen + 2 + olen);
  free(text);
  return status;
}
