/* manifest_summary.c: reading a cache manifest (JSON, written by runtime/cache_entry.c) for `cache ls`. */
#include "cli/manifest_summary.h"

#include <stdio.h>
#include <string.h>

#include <jansson.h>

void manifest_summary(const char *manifest, char *buf, size_t cap) {
  buf[0] = '\0';
  if (!manifest) {
    snprintf(buf, cap, "(no manifest)");
    return;
  }
  json_t *root = json_loads(manifest, 0, NULL);
  json_t *inputs = json_object_get(root, "inputs");
  const char *name;
  json_t *value;
  size_t used = 0;
  /* Entries built while SCANFORGE_TEMPLATE_DIR was set say so first (older manifests
   * have no template_dir: built-in templates). */
  json_t *template_dir = json_object_get(inputs, "template_dir");
  if (template_dir)
    used = (size_t)snprintf(buf, cap, "[experimental templates: %s]",
                            json_is_string(template_dir) ? json_string_value(template_dir) : "(a long path)");
  if (used >= cap) used = cap - 1;
  json_object_foreach(inputs, name, value) {
    if (!json_is_string(value) || strcmp(name, "target") == 0 || strcmp(name, "templates") == 0 ||
        strcmp(name, "template_dir") == 0)
      continue;
    int n = snprintf(buf + used, cap - used, "%s%s=%s", used ? " " : "", name, json_string_value(value));
    if (n < 0 || (size_t)n >= cap - used) break; /* cut where buf ends */
    used += (size_t)n;
  }
  json_decref(root);
}
