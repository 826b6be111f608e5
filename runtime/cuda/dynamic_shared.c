/* dynamic_shared.c: the dynamic shared memory a generated source declares. */
#include "runtime/cuda/dynamic_shared.h"

#include <stdlib.h>
#include <string.h>

int sf_source_dynamic_shared(const char *source) {
  const char *at = source ? strstr(source, SF_DYNAMIC_SHARED_SYMBOL "[") : NULL;
  if (!at) return 0;
  char *end;
  const long units = strtol(at + strlen(SF_DYNAMIC_SHARED_SYMBOL "["), &end, 10);
  if (*end != ']' || units <= 0 || units > (1 << 20)) return 0;
  return (int)(units * SF_DYNAMIC_SHARED_UNIT);
}
