/* template_set.h: the templates the generator reads, compiled in or from a directory. */
#ifndef SCANFORGE_TEMPLATE_SET_H
#define SCANFORGE_TEMPLATE_SET_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "scanforge/scanforge.h"

typedef struct sf_template_file {
  const char *name; /* file name, e.g. "scan_fwd.tpl" */
  const char *path; /* where the repository keeps it, e.g. "templates/scan_fwd.tpl" */
  const char *text;
  size_t size;
} sf_template_file;

/* Every file of templates/, embedded at build time; ends with a NULL name. */
extern const sf_template_file sf_builtin_templates[];

/* The directory named by SCANFORGE_TEMPLATE_DIR, or NULL when the built-in set is used. */
const char *sf_template_dir(void);

/* SF_OK when SCANFORGE_TEMPLATE_DIR is unset or names a directory; otherwise SF_ETEMPLATE
 * naming the variable and the path. sf_template_read and sf_template_set_hash check it. */
sf_status sf_template_dir_check(void);

/* The name generated sources give a template in their #line directives: its path in the
 * repository ("templates/scan_fwd.tpl", "runtime/launch/kernel_params.h"), the same on every
 * machine and whether or not SCANFORGE_TEMPLATE_DIR is set, so cache keys do not depend
 * on where the templates were read from. A file only a template directory has is
 * "templates/<name>". Never NULL. */
const char *sf_template_line_name(const char *name, char *buf, size_t cap);

/* Reads one template file by name from the active set into a new buffer (free() it).
 * Names are plain file names: no directories, no "..". */
sf_status sf_template_read(const char *name, char **text, size_t *size);

/* A 64-bit hash over the names and contents of the active template set. */
sf_status sf_template_set_hash(uint64_t *hash);

#endif
