/* text_buffer.h: a growable byte buffer that remembers an allocation failure. */
#ifndef SCANFORGE_TEXT_BUFFER_H
#define SCANFORGE_TEXT_BUFFER_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sf_text_buffer {
  char *data; /* NUL-terminated once anything was appended */
  size_t length, capacity;
  bool failed; /* an allocation failed: the content is incomplete */
} sf_text_buffer;

void sf_text_append(sf_text_buffer *b, const char *s, size_t n);
void sf_text_append_str(sf_text_buffer *b, const char *s);
void sf_text_free(sf_text_buffer *b);

#endif
