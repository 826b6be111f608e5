/* sandbox.c: Lua state with an allow-listed environment, a byte cap and an instruction cap. */
#include "generator/sandbox.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

struct sf_sandbox {
  lua_State *L;
  sf_sandbox_limits limits;
  size_t bytes_in_use;
  long long instructions;
  int env_ref; /* registry reference of the templates' _ENV table */
};

enum { HOOK_INTERVAL = 1000 };

sf_sandbox_limits sf_sandbox_default_limits(void) {
  sf_sandbox_limits limits = {.max_bytes = 64u << 20, .max_instructions = 200000000LL};
  return limits;
}

/* Refusing an allocation makes Lua raise "not enough memory", which ends the run. */
static void *capped_alloc(void *ud, void *ptr, size_t old_size, size_t new_size) {
  sf_sandbox *sb = ud;
  size_t old_bytes = ptr ? old_size : 0;
  if (new_size == 0) {
    free(ptr);
    sb->bytes_in_use -= old_bytes;
    return NULL;
  }
  if (new_size > old_bytes && sb->bytes_in_use - old_bytes + new_size > sb->limits.max_bytes)
    return NULL;
  void *grown = realloc(ptr, new_size);
  if (grown) sb->bytes_in_use = sb->bytes_in_use - old_bytes + new_size;
  return grown;
}

static sf_sandbox *sandbox_of(lua_State *L) { return *(sf_sandbox **)lua_getextraspace(L); }

static void count_hook(lua_State *L, lua_Debug *ar) {
  sf_sandbox *sb = sandbox_of(L);
  sb->instructions += HOOK_INTERVAL;
  if (sb->instructions > sb->limits.max_instructions)
    luaL_error(L, "instruction limit exceeded (%I VM instructions): the template runs too long",
               (lua_Integer)sb->limits.max_instructions);
}

/* ---- string functions metered by the bytes they touch ------------------------------ */

/* A string function works in C in time that grows with its strings, while the count
 * hook sees one call: each costs one instruction per BYTES_PER_INSTRUCTION bytes (about
 * what they take in time), so a loop over a huge string still meets the limit. */
enum { BYTES_PER_INSTRUCTION = 4 };

static void charge(lua_State *L, unsigned long long bytes) {
  sf_sandbox *sb = sandbox_of(L);
  sb->instructions += (long long)(bytes / BYTES_PER_INSTRUCTION);
  if (sb->instructions > sb->limits.max_instructions)
    luaL_error(L, "instruction limit exceeded (%I VM instructions): the template runs too long",
               (lua_Integer)sb->limits.max_instructions);
}

/* Calls the library function the closure wraps (upvalue 1) with the closure's arguments. */
static int call_wrapped(lua_State *L, int results) {
  const int n = lua_gettop(L);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, n, results);
  return lua_gettop(L);
}

/* Calls the library function after charging for its string arguments. */
static int metered_call(lua_State *L) {
  unsigned long long bytes = 0;
  const int n = lua_gettop(L);
  for (int i = 1; i <= n; i++)
    if (lua_type(L, i) == LUA_TSTRING) bytes += lua_rawlen(L, i);
  charge(L, bytes);
  return call_wrapped(L, LUA_MULTRET);
}

/* string.rep: its C loop runs n times even when the result is empty, so its cost is
 * charged (and the result's size checked) before it starts. */
static int metered_rep(lua_State *L) {
  size_t length, separator;
  luaL_checklstring(L, 1, &length);
  const lua_Integer n = luaL_checkinteger(L, 2);
  luaL_optlstring(L, 3, "", &separator);
  if (n <= 0 || length + separator == 0) {
    lua_pushliteral(L, "");
    return 1;
  }
  const unsigned long long per_copy = length + separator;
  if ((unsigned long long)n > sandbox_of(L)->limits.max_bytes / per_copy + 1)
    return luaL_error(L, "string.rep: the result would exceed the template's memory limit");
  charge(L, (unsigned long long)n * per_copy);
  return call_wrapped(L, 1);
}

/* Replaces the string library's functions in the table at `index` by metered ones. */
static void meter_string_functions(lua_State *L, int index) {
  static const char *const metered[] = {"byte", "char", "format", "lower", "reverse", "sub", "upper", NULL};
  for (const char *const *name = metered; *name; name++) {
    lua_getfield(L, index, *name);
    lua_pushcclosure(L, metered_call, 1);
    lua_setfield(L, index, *name);
  }
  lua_getfield(L, index, "rep");
  lua_pushcclosure(L, metered_rep, 1);
  lua_setfield(L, index, "rep");
}

/* Copies the allow-listed fields of the table at `source_index` into a new table. */
static void copy_fields(lua_State *L, int source_index, const char *const *names) {
  lua_newtable(L);
  for (const char *const *name = names; *name; name++) {
    lua_getfield(L, source_index, *name);
    lua_setfield(L, -2, *name);
  }
}

/* The environment templates see: pure functions only. No load, dofile, loadfile,
 * require, print, io, os, debug, package, collectgarbage, metatables or pcall (a pcall
 * could swallow the limits' errors). Nor the functions that can loop in C for as long
 * as they like, out of the instruction count's sight: string.find, match, gmatch and
 * gsub (a pattern such as "a-a-a-...b" backtracks for hours on a short string) and
 * table.move (its range is not bounded by any table). */
static void build_environment(lua_State *L) {
  static const char *const base_names[] = {"assert", "error", "ipairs", "next", "pairs",
                                           "rawequal", "rawget", "rawlen", "rawset", "select",
                                           "tonumber", "tostring", "type", NULL};
  static const char *const string_names[] = {"byte", "char", "format", "len", "lower", "rep",
                                             "reverse", "sub", "upper", NULL};
  static const char *const table_names[] = {"concat", "insert", "pack", "remove", "sort",
                                            "unpack", NULL};
  static const char *const math_names[] = {"abs", "ceil", "exp", "floor", "fmod", "huge",
                                           "log", "max", "maxinteger", "min", "mininteger",
                                           "modf", "pi", "sqrt", "tointeger", "type", "ult",
                                           NULL};
  lua_newtable(L); /* env */
  int env = lua_gettop(L);
  lua_pushglobaltable(L);
  int globals = lua_gettop(L);
  for (const char *const *name = base_names; *name; name++) {
    lua_getfield(L, globals, *name);
    lua_setfield(L, env, *name);
  }
  struct { const char *name; const char *const *fields; } libraries[] = {
      {"string", string_names}, {"table", table_names}, {"math", math_names}};
  for (size_t i = 0; i < sizeof libraries / sizeof libraries[0]; i++) {
    lua_getfield(L, globals, libraries[i].name);
    copy_fields(L, lua_gettop(L), libraries[i].fields);
    if (libraries[i].fields == string_names) meter_string_functions(L, lua_gettop(L));
    lua_setfield(L, env, libraries[i].name);
    lua_pop(L, 1);
  }
  lua_pop(L, 1); /* globals */
  /* Methods of strings ("x"):f() look up the strings' metatable, whose __index is the
   * whole string library: make it the templates' subset too. */
  lua_pushliteral(L, "");
  lua_getmetatable(L, -1);
  lua_getfield(L, env, "string");
  lua_setfield(L, -2, "__index");
  lua_pop(L, 2);
}

sf_status sf_sandbox_open(const sf_sandbox_limits *limits, sf_sandbox **out) {
  sf_sandbox *sb = calloc(1, sizeof *sb);
  if (!sb) return sf_fail(SF_ENOMEM, "sandbox: out of memory");
  sb->limits = limits ? *limits : sf_sandbox_default_limits();
  sb->L = lua_newstate(capped_alloc, sb);
  if (!sb->L) {
    free(sb);
    return sf_fail(SF_ENOMEM, "sandbox: cannot create a Lua state");
  }
  *(sf_sandbox **)lua_getextraspace(sb->L) = sb;
  /* Only these libraries are opened at all; the environment then copies a subset. */
  luaL_requiref(sb->L, LUA_GNAME, luaopen_base, 1);
  luaL_requiref(sb->L, LUA_STRLIBNAME, luaopen_string, 1);
  luaL_requiref(sb->L, LUA_TABLIBNAME, luaopen_table, 1);
  luaL_requiref(sb->L, LUA_MATHLIBNAME, luaopen_math, 1);
  lua_pop(sb->L, 4);
  build_environment(sb->L);
  sb->env_ref = luaL_ref(sb->L, LUA_REGISTRYINDEX);
  *out = sb;
  return SF_OK;
}

void sf_sandbox_close(sf_sandbox *sandbox) {
  if (!sandbox) return;
  lua_close(sandbox->L);
  free(sandbox);
}

lua_State *sf_sandbox_state(sf_sandbox *sandbox) { return sandbox->L; }

void sf_sandbox_set_global(sf_sandbox *sandbox, const char *name) {
  lua_State *L = sandbox->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, sandbox->env_ref);
  lua_insert(L, -2);
  lua_setfield(L, -2, name);
  lua_pop(L, 1);
}

sf_status sf_sandbox_load(sf_sandbox *sandbox, const char *code, size_t length, const char *chunk_name) {
  lua_State *L = sandbox->L;
  char name[256];
  snprintf(name, sizeof name, "=%s", chunk_name);
  if (luaL_loadbufferx(L, code, length, name, "t") != LUA_OK) {
    sf_status st = sf_fail(SF_ETEMPLATE, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    return st;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, sandbox->env_ref);
  if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1); /* a chunk's first upvalue is _ENV */
  return SF_OK;
}

static int traceback_handler(lua_State *L) {
  const char *message = lua_tostring(L, 1);
  if (!message) message = luaL_tolstring(L, 1, NULL);
  luaL_traceback(L, L, message, 1);
  return 1;
}

sf_status sf_sandbox_call(sf_sandbox *sandbox, int results) {
  lua_State *L = sandbox->L;
  int function_index = lua_gettop(L);
  lua_pushcfunction(L, traceback_handler);
  lua_insert(L, function_index);
  sandbox->instructions = 0;
  lua_sethook(L, count_hook, LUA_MASKCOUNT, HOOK_INTERVAL);
  int rc = lua_pcall(L, 0, results, function_index);
  lua_sethook(L, NULL, 0, 0);
  lua_remove(L, function_index);
  if (rc == LUA_OK) return SF_OK;
  sf_status st;
  if (rc == LUA_ERRMEM)
    st = sf_fail(SF_ETEMPLATE, "template exceeded its memory limit (%zu bytes)", sandbox->limits.max_bytes);
  else
    st = sf_fail(SF_ETEMPLATE, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "(error object)");
  lua_pop(L, 1);
  return st;
}
