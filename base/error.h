/* error.h: the calling thread's last error message, set by every failing call. */
#ifndef SCANFORGE_ERROR_H
#define SCANFORGE_ERROR_H

#include <stdarg.h>

#include "scanforge/scanforge.h"

#if defined(__GNUC__)
#define SF_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define SF_PRINTF(fmt_index, first_arg)
#endif

/* Sets the thread's message to the formatted text and returns `status`, so that a
 * failure reads: return sf_fail(SF_EINVAL, "u: expected ..., got %d", x); */
sf_status sf_fail(sf_status status, const char *fmt, ...) SF_PRINTF(2, 3);
sf_status sf_failv(sf_status status, const char *fmt, va_list args);
/* Prepends "context: " to the thread's current message (keeps the status). */
sf_status sf_fail_context(sf_status status, const char *fmt, ...) SF_PRINTF(2, 3);
void sf_clear_error(void);

#endif
