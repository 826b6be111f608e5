/* template_set.h: the templates the generator reads, compiled in or from a directory. */
#ifndef SCANFORGE_TEMPLATE_SET_H
#define SCANFORGE_TEMPLATE_SET_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "scanforge/scanforge.h"

typedef struct sf_template_file {
  const char *name; /* file name, e.g. "scan_fwd.tpl" */
  const char *text;
  size_t size;
} sf_template_file;

/* Every file of templates/, embedded at build time; ends with a NULL name. */
extern const sf_template_file sf_builtin_templates[];

/* The directory named by SCANFORGE_TEMPLATE_DIR, or NULL when the built-in set is used. */
const char *sf_template_dir(void);

/* Reads one template file by name from the active set into a new buffer (free() it).
 * Names are plain file names: no directories, no "..". */
sf_status sf_template_read(const char *name, char **text, size_t *size);

/* A 64-bit hash over the names and contents of the active template set. */
sf_status sf_template_set_hash(uint64_t *hash);

#endif
