/* test_sandbox.c: templates see only what the generator hands them, within time and memory. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "generator/generator.h"
#include "generator/sandbox.h"

/* Runs Lua code in a fresh sandbox and returns the status. */
static sf_status run_lua(const char *code) {
  sf_sandbox *sb;
  cr_assert_eq(sf_sandbox_open(NULL, &sb), SF_OK);
  sf_status st = sf_sandbox_load(sb, code, strlen(code), "test.lua");
  if (st == SF_OK) st = sf_sandbox_call(sb, 0);
  sf_sandbox_close(sb);
  return st;
}

static void expect_refused(const char *code, const char *must_mention) {
  sf_status st = run_lua(code);
  cr_expect_eq(st, SF_ETEMPLATE, "'%s' should fail, got %s", code, sf_status_name(st));
  cr_expect(strstr(sf_last_error(), must_mention) != NULL, "'%s': message should mention '%s', got: %s",
            code, must_mention, sf_last_error());
}

Test(sandbox, no_host_access) {
  char marker[] = "/tmp/scanforge_sandbox_XXXXXX";
  int fd = mkstemp(marker);
  cr_assert(fd >= 0);
  close(fd);
  unlink(marker);
  char code[512];
  snprintf(code, sizeof code, "os.execute('touch %s')", marker);
  expect_refused(code, "os");
  cr_expect_neq(access(marker, F_OK), 0, "os.execute must have no side effect");
  snprintf(code, sizeof code, "local f = io.open('%s', 'w') f:write('x') f:close()", marker);
  expect_refused(code, "io");
  cr_expect_neq(access(marker, F_OK), 0, "io.open must have no side effect");
  expect_refused("require('os')", "require");
  expect_refused("dofile('/etc/passwd')", "dofile");
  expect_refused("loadfile('/etc/passwd')", "loadfile");
  expect_refused("load('return 1')()", "load");
  expect_refused("debug.getregistry()", "debug");
  expect_refused("collectgarbage()", "collectgarbage");
  expect_refused("setmetatable({}, {})", "setmetatable");
  expect_refused("print('hi')", "print");
  expect_refused("pcall(error, 'x')", "pcall");
  expect_refused("string.dump(function() end)", "dump");
}

Test(sandbox, pure_library_functions_work) {
  cr_expect_eq(run_lua("assert(string.format('%d', 3) == '3') assert(math.max(1, 2) == 2) "
                       "local t = {3, 1, 2} table.sort(t) assert(t[1] == 1)"),
               SF_OK, "%s", sf_last_error());
}

Test(sandbox, infinite_loop_is_stopped) {
  expect_refused("while true do end", "instruction limit");
  expect_refused("local function f() return f() end f()", "instruction limit");
}

Test(sandbox, functions_that_loop_in_c_are_not_offered) {
  /* Each would run for hours outside the instruction count. */
  expect_refused("string.find(string.rep('a', 40), string.rep('a-', 12) .. 'b')", "find");
  expect_refused("local s = string.rep('a', 40) s:find(string.rep('a-', 12) .. 'b')", "find");
  expect_refused("local n = ('aaaa'):gsub('a', 'b')", "gsub");
  expect_refused("table.move({}, 1, 1e15, 1, {})", "move");
  expect_refused("('').dump(function() end)", "dump");
  cr_expect_eq(run_lua("assert(('abc'):upper() == 'ABC') assert(('%d'):format(7) == '7')"), SF_OK, "%s",
               sf_last_error());
}

Test(sandbox, string_work_in_c_counts_towards_the_limit, .timeout = 30) {
  /* string.rep loops n times in C even when the result is empty. */
  cr_expect_eq(run_lua("assert(string.rep('', math.maxinteger) == '')"), SF_OK, "%s", sf_last_error());
  expect_refused("local s = string.rep('', math.maxinteger, 'x')", "memory limit");
  /* One call over a long string is one VM instruction: charged by its bytes instead. */
  expect_refused("local s = string.rep('x', 1 << 23) for i = 1, 1e6 do local u = s:upper() end",
                 "instruction limit");
  cr_expect_eq(run_lua("assert(string.rep('ab', 3, ',') == 'ab,ab,ab') assert(('Ab'):lower() == 'ab')"), SF_OK,
               "%s", sf_last_error());
}

Test(sandbox, unbounded_allocation_is_stopped) {
  expect_refused("local t = {} for i = 1, 1e9 do t[i] = i end", "memory limit");
  expect_refused("local s = string.rep('x', 1 << 28)", "memory limit");
}

Test(sandbox, bytecode_is_refused) {
  const char bytecode[] = "\x1bLua\x54\x00";
  sf_sandbox *sb;
  cr_assert_eq(sf_sandbox_open(NULL, &sb), SF_OK);
  cr_expect_eq(sf_sandbox_load(sb, bytecode, sizeof bytecode - 1, "bytecode"), SF_ETEMPLATE);
  sf_sandbox_close(sb);
}

Test(sandbox, errors_carry_the_location) {
  expect_refused("\n\nlocal x = nil + 1", "test.lua:3:");
}

/* A template directory whose scan_fwd.tpl misbehaves: generation fails cleanly. */
static void generate_with_template(const char *template_text, sf_status expected, const char *must_mention) {
  char dir[] = "/tmp/scanforge_templates_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char path[512];
  snprintf(path, sizeof path, "%s/scan_fwd.tpl", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(template_text, f);
  fclose(f);
  setenv("SCANFORGE_TEMPLATE_DIR", dir, 1);
  sf_variant v = sf_variant_default();
  char *source = NULL;
  size_t length;
  sf_status st = sf_generate(&v, &source, &length);
  unsetenv("SCANFORGE_TEMPLATE_DIR");
  unlink(path);
  rmdir(dir);
  cr_expect_eq(st, expected, "got %s: %s", sf_status_name(st), sf_last_error());
  cr_expect(strstr(sf_last_error(), must_mention) != NULL, "message should mention '%s', got: %s",
            must_mention, sf_last_error());
  free(source);
}

Test(sandbox, template_directory_misbehaving_templates) {
  generate_with_template("@ os.execute('true')\n", SF_ETEMPLATE, "scan_fwd.tpl:1:");
  generate_with_template("@ while true do end\n", SF_ETEMPLATE, "instruction limit");
  generate_with_template("int x = $(undefined_name);\n", SF_ETEMPLATE, "nil");
  generate_with_template("int x = $(1 + ;\n", SF_ETEMPLATE, "closing");
  generate_with_template("@ include('../etc/passwd')\n", SF_ETEMPLATE, "plain file name");
}

Test(sandbox, template_directory_overrides_builtin) {
  char dir[] = "/tmp/scanforge_templates_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char path[512];
  snprintf(path, sizeof path, "%s/scan_fwd.tpl", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs("// N=$(variant.dstate) items=$(variant.items)\n@ for i = 1, 3 do\nx$(i);\n@ end\n", f);
  fclose(f);
  setenv("SCANFORGE_TEMPLATE_DIR", dir, 1);
  sf_variant v = sf_variant_default();
  v.dstate = 5;
  char *source = NULL;
  size_t length;
  sf_status st = sf_generate(&v, &source, &length);
  unsetenv("SCANFORGE_TEMPLATE_DIR");
  unlink(path);
  rmdir(dir);
  cr_assert_eq(st, SF_OK, "%s", sf_last_error());
  /* Each x comes from line 3: a #line directive before each says so. */
  cr_expect(strstr(source, "#line 1 \"templates/scan_fwd.tpl\"\n// N=5 items=8\n"
                           "#line 3 \"templates/scan_fwd.tpl\"\nx1;\n#line 3 \"templates/scan_fwd.tpl\"\nx2;\n"
                           "#line 3 \"templates/scan_fwd.tpl\"\nx3;\n") != NULL,
            "got:\n%s", source);
  free(source);
}
