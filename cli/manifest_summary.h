/* manifest_summary.h: the one-line summary `scanforge cache ls` gives of an entry's manifest. */
#ifndef SCANFORGE_CLI_MANIFEST_SUMMARY_H
#define SCANFORGE_CLI_MANIFEST_SUMMARY_H

#include <stddef.h>

/* The manifest's string inputs as "name=value ..." into buf (cap bytes, cap >= 1), the
 * target and the template-set hash left out, after "[experimental templates: DIR]" when
 * the entry was built from SCANFORGE_TEMPLATE_DIR's templates; cut where buf ends. A manifest
 * that is not JSON, or has no "inputs" object, gives ""; a NULL one "(no manifest)". */
void manifest_summary(const char *manifest, char *buf, size_t cap);

#endif
