/* generator.c: runs a variant's template in the sandbox and collects the CUDA text. */
#include "generator/generator.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generator/sandbox.h"
#include "generator/template_compiler.h"
#include "generator/template_set.h"
#include "base/text_buffer.h"
#include "base/error.h"

enum { MAX_OUTPUT_BYTES = 16 << 20 };

/* One generation: what the functions handed to templates share. */
typedef struct generation {
  sf_sandbox *sandbox;
  sf_text_buffer output;
  bool rejected; /* the template called reject(): an invalid variant, not a broken template */
  /* Where the CUDA compiler believes the next output line comes from, counting from the
   * last #line directive (line 0: no directive yet), so that a directive is written only
   * where the output stops following one template's lines in order. */
  char line_template[256];
  long next_line;
  bool at_line_start;  /* the output ends with a newline (or is empty) */
  bool continued;      /* the last output line ends with a backslash: no directive fits */
  char last_char;      /* the last character written other than '\r' and '\n' */
} generation;

const char *sf_template_of(const sf_variant *v) {
  if (v->op == SF_OP_BWD) return v->split_states ? "scan_bwd_states.tpl" : "scan_bwd.tpl";
  return v->split_states ? "scan_fwd_states.tpl" : "scan_fwd.tpl";
}

const char *sf_kernel_name(sf_op op) { return op == SF_OP_FWD ? "sf_scan_fwd" : "sf_scan_bwd"; }

const char *sf_block_states_entry(sf_op op) {
  return op == SF_OP_FWD ? "sf_scan_fwd_inner_saves" : "sf_scan_bwd_block_states";
}

static generation *generation_of(lua_State *L) {
  return lua_touserdata(L, lua_upvalueindex(1));
}

/* Before an output line from `name`:`line` begins: a #line directive unless the compiler
 * already counts this line as that one. */
static void mark_line(generation *g, const char *name, long line) {
  if (g->continued || (g->next_line == line && strcmp(g->line_template, name) == 0)) return;
  char buf[300], directive[400];
  snprintf(directive, sizeof directive, "#line %ld \"%s\"\n", line, sf_template_line_name(name, buf, sizeof buf));
  sf_text_append_str(&g->output, directive);
  snprintf(g->line_template, sizeof g->line_template, "%s", name);
  g->next_line = line;
}

/* Appends text that template `name`'s line `line` produced, line by line. */
static void emit_from(generation *g, const char *name, long line, const char *text, size_t length) {
  while (length > 0) {
    const char *newline = memchr(text, '\n', length);
    size_t piece = newline ? (size_t)(newline - text) + 1 : length;
    /* A blank line needs no directive: the next line with text gets one if it needs it. */
    if (g->at_line_start && !(newline && strspn(text, " \t\r") == piece - 1)) mark_line(g, name, line);
    sf_text_append(&g->output, text, piece);
    /* The line's last character may come from an earlier piece, and CRLF templates put
     * a '\r' between a continuation's backslash and its newline. */
    for (size_t i = 0; i < piece; i++)
      if (text[i] != '\r' && text[i] != '\n') g->last_char = text[i];
    if (newline) {
      g->continued = g->last_char == '\\';
      g->last_char = '\0';
      g->next_line++;
    }
    g->at_line_start = newline != NULL;
    text += piece;
    length -= piece;
  }
}

/* _emit(name, line, ...): appends each string argument to the output; the text comes
 * from line `line` of template `name` (the template compiler writes these calls). */
static int lua_emit(lua_State *L) {
  generation *g = generation_of(L);
  const char *name = luaL_checkstring(L, 1);
  lua_Integer line = luaL_checkinteger(L, 2);
  int n = lua_gettop(L);
  for (int i = 3; i <= n; i++) {
    size_t length;
    const char *s = luaL_checklstring(L, i, &length);
    /* The source goes to NVRTC as a C string: a NUL would silently cut it short. */
    if (memchr(s, '\0', length))
      return luaL_error(L, "the template emits a NUL byte; generated CUDA source must be text");
    if (g->output.length + length > MAX_OUTPUT_BYTES)
      return luaL_error(L, "generated source exceeds %d bytes", MAX_OUTPUT_BYTES);
    emit_from(g, name, (long)line, s, length);
  }
  return 0;
}

/* _text(v): the text of an interpolated $(expr); nil and tables are template bugs. */
static int lua_text(lua_State *L) {
  int type = lua_type(L, 1);
  if (type != LUA_TSTRING && type != LUA_TNUMBER && type != LUA_TBOOLEAN)
    return luaL_error(L, "$(...) produced a %s; expected a string, number or boolean",
                      luaL_typename(L, 1));
  luaL_tolstring(L, 1, NULL);
  return 1;
}

/* reject(key, message): the variant is valid for the C checks but not for this template. */
static int lua_reject(lua_State *L) {
  generation *g = generation_of(L);
  const char *key = luaL_checkstring(L, 1);
  const char *message = luaL_checkstring(L, 2);
  g->rejected = true;
  return luaL_error(L, "variant key '%s': %s", key, message);
}

/* Reads and translates template `name`, leaving the loaded chunk on the stack; raises a
 * Lua error (after freeing everything) on failure. */
static void load_template(lua_State *L, generation *g, const char *name, bool is_lua_module) {
  char *text = NULL, *code = NULL;
  size_t size, code_length;
  sf_status st = sf_template_read(name, &text, &size);
  if (st == SF_OK && !is_lua_module) {
    st = sf_template_compile(text, size, name, &code, &code_length);
    free(text);
    text = NULL;
  }
  if (st == SF_OK) {
    const char *chunk = is_lua_module ? text : code;
    size_t length = is_lua_module ? size : code_length;
    st = sf_sandbox_load(g->sandbox, chunk, length, name);
  }
  free(text);
  free(code);
  if (st != SF_OK) luaL_error(L, "%s", sf_last_error());
}

/* include(name): runs another template here, emitting into the same output. */
static int lua_include(lua_State *L) {
  generation *g = generation_of(L);
  const char *name = luaL_checkstring(L, 1);
  load_template(L, g, name, false);
  lua_call(L, 0, 0);
  /* A template whose last line has no newline must not glue the next line onto it. */
  if (!g->at_line_start) emit_from(g, name, g->next_line, "\n", 1);
  return 0;
}

/* import(name): runs the Lua module name..".lua" once and returns its value. */
static int lua_import(lua_State *L) {
  generation *g = generation_of(L);
  const char *name = luaL_checkstring(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, "scanforge.imported");
  if (lua_getfield(L, -1, name) != LUA_TNIL) return 1;
  lua_pop(L, 1);
  char file[256];
  snprintf(file, sizeof file, "%s.lua", name);
  load_template(L, g, file, true);
  lua_call(L, 0, 1);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, name);
  return 1;
}

static void set_function(generation *g, const char *name, lua_CFunction fn) {
  lua_State *L = sf_sandbox_state(g->sandbox);
  lua_pushlightuserdata(L, g);
  lua_pushcclosure(L, fn, 1);
  sf_sandbox_set_global(g->sandbox, name);
}

static void set_field_string(lua_State *L, const char *key, const char *value) {
  lua_pushstring(L, value);
  lua_setfield(L, -2, key);
}

static void set_field_int(lua_State *L, const char *key, int value) {
  lua_pushinteger(L, value);
  lua_setfield(L, -2, key);
}

static void set_field_bool(lua_State *L, const char *key, bool value) {
  lua_pushboolean(L, value);
  lua_setfield(L, -2, key);
}

/* The `variant` table templates read. */
static void push_variant(lua_State *L, const sf_variant *v, const char *spec) {
  lua_newtable(L);
  set_field_string(L, "spec", spec);
  set_field_string(L, "op", v->op == SF_OP_FWD ? "fwd" : "bwd");
  set_field_string(L, "split", v->split_states ? "state" : "time");
  set_field_string(L, "dtype", sf_dtype_name(v->dtype));
  set_field_string(L, "kernel_name", sf_kernel_name(v->op));
  set_field_int(L, "dstate", v->dstate);
  set_field_int(L, "threads", v->threads);
  set_field_int(L, "items", v->items);
  set_field_int(L, "channels", v->channels);
  set_field_int(L, "states", v->states);
  set_field_int(L, "min_blocks", v->min_blocks);
  set_field_bool(L, "z", v->has_z);
  set_field_bool(L, "D", v->has_D);
  set_field_bool(L, "delta_bias", v->has_delta_bias);
  set_field_bool(L, "softplus", v->softplus);
  set_field_bool(L, "B_var", v->B_var);
  set_field_bool(L, "C_var", v->C_var);
  set_field_bool(L, "deterministic", v->deterministic);
  set_field_bool(L, "pairs", v->pairs);
  set_field_bool(L, "words", v->words);
}

static sf_status run_template(generation *g, const sf_variant *v, const char *spec, const char *name,
                              const char *text, size_t size) {
  lua_State *L = sf_sandbox_state(g->sandbox);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, "scanforge.imported");
  set_function(g, "_emit", lua_emit);
  set_function(g, "_text", lua_text);
  set_function(g, "reject", lua_reject);
  set_function(g, "include", lua_include);
  set_function(g, "import", lua_import);
  push_variant(L, v, spec);
  sf_sandbox_set_global(g->sandbox, "variant");

  char *code;
  size_t code_length;
  sf_status st = sf_template_compile(text, size, name, &code, &code_length);
  if (st != SF_OK) return st;
  st = sf_sandbox_load(g->sandbox, code, code_length, name);
  free(code);
  if (st != SF_OK) return st;
  st = sf_sandbox_call(g->sandbox, 0);
  if (st != SF_OK && g->rejected) {
    /* Keep the first line only ("variant key 'x': ..."), without the template's location. */
    const char *message = strstr(sf_last_error(), "variant key");
    char first_line[1024];
    snprintf(first_line, sizeof first_line, "%s", message ? message : sf_last_error());
    first_line[strcspn(first_line, "\n")] = '\0';
    return sf_fail(SF_EINVAL, "%s (spec %s)", first_line, spec);
  }
  if (st != SF_OK) return sf_fail_context(st, "template %s for %s", name, spec);
  return SF_OK;
}

sf_status sf_generate_from_text(const sf_variant *variant, const char *name, const char *text, size_t size,
                                const struct sf_sandbox_limits *limits, char **source, size_t *length) {
  if (!variant || !name || (!text && size) || !source || !length)
    return sf_fail(SF_EINVAL, "sf_generate_from_text: variant, name, text, source and length must not be NULL");
  sf_status st = sf_variant_validate(variant);
  if (st != SF_OK) return st;
  char spec[512];
  sf_variant_format(variant, spec, sizeof spec);

  generation g = {0};
  st = sf_sandbox_open(limits, &g.sandbox);
  if (st != SF_OK) return st;
  sf_text_append_str(&g.output, "// Generated by scanforge from its templates: do not edit.\n// variant: ");
  sf_text_append_str(&g.output, spec);
  sf_text_append_str(&g.output, "\n// template: ");
  sf_text_append_str(&g.output, name);
  sf_text_append_str(&g.output, "\n");
  g.at_line_start = true;
  st = run_template(&g, variant, spec, name, text ? text : "", size);
  sf_sandbox_close(g.sandbox);
  if (st == SF_OK && g.output.failed) st = sf_fail(SF_ENOMEM, "sf_generate: out of memory");
  if (st != SF_OK) {
    sf_text_free(&g.output);
    return st;
  }
  *source = g.output.data;
  *length = g.output.length;
  return SF_OK;
}

sf_status sf_generate(const sf_variant *variant, char **source, size_t *length) {
  if (!variant || !source || !length)
    return sf_fail(SF_EINVAL, "sf_generate: variant, source and length must not be NULL");
  sf_status st = sf_variant_validate(variant);
  if (st != SF_OK) return st;
  const char *name = sf_template_of(variant);
  char *text;
  size_t size;
  st = sf_template_read(name, &text, &size);
  if (st != SF_OK) return st;
  st = sf_generate_from_text(variant, name, text, size, NULL, source, length);
  free(text);
  return st;
}
