/* sandbox.h: a Lua 5.4 state that runs untrusted template code with bounded time and
 * memory and sees only what the generator hands it. */
#ifndef SCANFORGE_SANDBOX_H
#define SCANFORGE_SANDBOX_H

#include <lua.h>
#include <stddef.h>

#include "scanforge/scanforge.h"

typedef struct sf_sandbox sf_sandbox;

typedef struct sf_sandbox_limits {
  size_t max_bytes;            /* heap the Lua state may hold */
  long long max_instructions;  /* VM instructions per run */
} sf_sandbox_limits;

/* Default limits: 64 MiB and 200 million instructions (about a second). */
sf_sandbox_limits sf_sandbox_default_limits(void);

sf_status sf_sandbox_open(const sf_sandbox_limits *limits, sf_sandbox **out);
void sf_sandbox_close(sf_sandbox *sandbox);

/* The state, for registering what the generator hands to templates: push a value and
 * call sf_sandbox_set_global to place it in the templates' environment. */
lua_State *sf_sandbox_state(sf_sandbox *sandbox);
void sf_sandbox_set_global(sf_sandbox *sandbox, const char *name);

/* Loads `code` (text only, never bytecode) with the sandbox environment as its _ENV and
 * pushes the function. On a syntax error: SF_ETEMPLATE with the located message. */
sf_status sf_sandbox_load(sf_sandbox *sandbox, const char *code, size_t length, const char *chunk_name);

/* Calls the function on top of the stack with no arguments under the instruction budget,
 * leaving `results` values. Runtime errors, the instruction limit and the memory limit
 * give SF_ETEMPLATE with the message and a traceback. */
sf_status sf_sandbox_call(sf_sandbox *sandbox, int results);

#endif
