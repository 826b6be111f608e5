/* text_buffer.c: a growable byte buffer that remembers an allocation failure. */
#include "base/text_buffer.h"

#include <stdlib.h>
#include <string.h>

void sf_text_append(sf_text_buffer *b, const char *s, size_t n) {
  if (b->failed) return;
  if (b->length + n + 1 > b->capacity) {
    size_t capacity = b->capacity ? b->capacity : 4096;
    while (capacity < b->length + n + 1) capacity *= 2;
    char *grown = realloc(b->data, capacity);
    if (!grown) {
      b->failed = true;
      return;
    }
    b->data = grown;
    b->capacity = capacity;
  }
  memcpy(b->data + b->length, s, n);
  b->length += n;
  b->data[b->length] = '\0';
}

void sf_text_append_str(sf_text_buffer *b, const char *s) { sf_text_append(b, s, strlen(s)); }

void sf_text_free(sf_text_buffer *b) {
  free(b->data);
  *b = (sf_text_buffer){0};
}
