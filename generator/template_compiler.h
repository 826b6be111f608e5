/* template_compiler.h: turns template text into the Lua code that emits it. */
#ifndef SCANFORGE_TEMPLATE_COMPILER_H
#define SCANFORGE_TEMPLATE_COMPILER_H

#include <stddef.h>

#include "scanforge/scanforge.h"

/* The template format (docs/templates.md):
 *   - a line whose first non-blank character is '@' is Lua code (the rest of the line);
 *   - every other line is CUDA text, emitted as is, except that $(expr) is replaced by the
 *     value of the Lua expression expr (parentheses inside expr must balance).
 * Line N of the template is line N of the Lua code, so Lua errors carry template lines.
 * Emitted text goes through the function `_emit(name, line, text...)`, which is told the
 * template's name and line so that the generator can write #line directives; values go
 * through `_text(value)`.
 * Returns a new NUL-terminated buffer (free() it). */
sf_status sf_template_compile(const char *text, size_t size, const char *name, char **lua_code,
                              size_t *lua_length);

#endif
