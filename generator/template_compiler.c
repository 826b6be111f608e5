/* template_compiler.c: template text ('@' Lua lines, $(expr) interpolation) to Lua code. */
#include "generator/template_compiler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text_buffer.h"
#include "base/error.h"

/* Appends s[0..n) as the body of a double-quoted Lua string. */
static void append_quoted(sf_text_buffer *b, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '\\') sf_text_append_str(b, "\\\\");
    else if (c == '"') sf_text_append_str(b, "\\\"");
    else if (c == '\n') sf_text_append_str(b, "\\n");
    else if (c == '\r') sf_text_append_str(b, "\\r");
    else if (c == '\t') sf_text_append_str(b, "\\t");
    else sf_text_append(b, &c, 1);
  }
}

/* Index just past the ')' closing the "$(" that starts at `open`, or 0 if unclosed.
 * Quoted Lua strings inside the expression may hold parentheses. */
static size_t find_close(const char *line, size_t length, size_t open) {
  int depth = 1; /* the '(' at `open` */
  char quote = 0;
  for (size_t i = open + 1; i < length; i++) {
    char c = line[i];
    if (quote) {
      if (c == '\\') i++;
      else if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '(') {
      depth++;
    } else if (c == ')' && --depth == 0) {
      return i + 1;
    }
  }
  return 0;
}

/* A text line becomes _emit("<template name>", <line>, "text", _text(expr), ...): the
 * generator learns where each piece of output comes from and writes #line directives. */
static sf_status compile_text_line(sf_text_buffer *out, const char *line, size_t length,
                                   bool newline, const char *name, int line_number) {
  char number[24];
  snprintf(number, sizeof number, "%d", line_number);
  sf_text_append_str(out, "_emit(\"");
  append_quoted(out, name, strlen(name));
  sf_text_append_str(out, "\", ");
  sf_text_append_str(out, number);
  sf_text_append_str(out, ", \"");
  size_t start = 0;
  for (size_t i = 0; i + 1 < length; i++) {
    if (line[i] != '$' || line[i + 1] != '(') continue;
    size_t close = find_close(line, length, i + 1);
    if (!close)
      return sf_fail(SF_ETEMPLATE, "%s:%d: '$(' without its closing ')'", name, line_number);
    if (close == i + 3)
      return sf_fail(SF_ETEMPLATE, "%s:%d: empty '$()'", name, line_number);
    append_quoted(out, line + start, i - start);
    sf_text_append_str(out, "\", _text(");
    sf_text_append(out, line + i + 2, close - 1 - (i + 2));
    sf_text_append_str(out, "), \"");
    start = close;
    i = close - 1;
  }
  append_quoted(out, line + start, length - start);
  sf_text_append_str(out, newline ? "\\n\")\n" : "\")\n");
  return SF_OK;
}

sf_status sf_template_compile(const char *text, size_t size, const char *name, char **lua_code,
                              size_t *lua_length) {
  sf_text_buffer out = {0};
  int line_number = 0;
  size_t pos = 0;
  while (pos < size) {
    line_number++;
    const char *line = text + pos;
    const char *newline = memchr(line, '\n', size - pos);
    size_t length = newline ? (size_t)(newline - line) : size - pos;
    size_t first = 0;
    while (first < length && (line[first] == ' ' || line[first] == '\t')) first++;
    if (first < length && line[first] == '@') {
      sf_text_append(&out, line + first + 1, length - first - 1);
      sf_text_append_str(&out, "\n");
    } else {
      sf_status st = compile_text_line(&out, line, length, newline != NULL, name, line_number);
      if (st != SF_OK) {
        free(out.data);
        return st;
      }
    }
    pos += length + (newline ? 1 : 0);
  }
  if (!out.data) sf_text_append_str(&out, "");
  if (out.failed) {
    free(out.data);
    return sf_fail(SF_ENOMEM, "%s: out of memory compiling the template", name);
  }
  *lua_code = out.data;
  *lua_length = out.length;
  return SF_OK;
}
