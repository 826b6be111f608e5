/* test_template_lines.c: generated sources carry #line directives naming template files and
 * lines, so NVRTC's errors point at templates (also through included ones); a template
 * directory that is missing is an error. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generator/generator.h"
#include "generator/template_set.h"
#include "runtime/compile/compile.h"
#include "base/error.h"
#include "scanforge/scanforge.h"
#include "tests/support/temp_dir.h"

static char *generate(const char *spec) {
  sf_variant v;
  cr_assert_eq(sf_variant_parse(spec, &v), SF_OK, "%s", sf_last_error());
  char *source = NULL;
  size_t length = 0;
  cr_assert_eq(sf_generate(&v, &source, &length), SF_OK, "%s: %s", spec, sf_last_error());
  return source;
}

/* Line `number` (1-based) of `text` into buf, without its newline; false past the end. */
static bool nth_line(const char *text, long number, char *buf, size_t cap) {
  for (long i = 1; i < number; i++) {
    text = strchr(text, '\n');
    if (!text) return false;
    text++;
  }
  if (!*text) return false;
  size_t length = strcspn(text, "\n");
  snprintf(buf, cap, "%.*s", (int)length, text);
  return true;
}

/* The template file name of a #line path: "templates/dtype.tpl" -> "dtype.tpl". */
static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* Walks the generated source as the compiler counts its lines and checks every line that
 * comes from a template line without $(...) or '@': it must be that template line. Blank
 * lines are skipped. */
static void check_lines_follow_templates(const char *spec) {
  char *source = generate(spec);
  char file[256] = "", template_line[4096], line[4096];
  long number = 0;
  int directives = 0, compared = 0;
  for (const char *p = source; *p;) {
    size_t length = strcspn(p, "\n");
    snprintf(line, sizeof line, "%.*s", (int)length, p);
    p += length + (p[length] == '\n');
    long directed;
    char named[256];
    if (sscanf(line, "#line %ld \"%255[^\"]\"", &directed, named) == 2) {
      cr_assert_neq(named[0], '/', "%s: a #line names an absolute path: %s", spec, line);
      cr_assert(strncmp(named, "templates/", 10) == 0 || strcmp(named, "runtime/launch/kernel_params.h") == 0,
                "%s: unexpected #line file %s", spec, named);
      snprintf(file, sizeof file, "%s", named);
      number = directed;
      directives++;
      continue;
    }
    /* A blank line may come from anywhere: the generator writes no directive for it. */
    const bool blank = line[strspn(line, " \t\r")] == '\0';
    if (number > 0 && !blank) {
      char *text;
      size_t size;
      cr_assert_eq(sf_template_read(base_name(file), &text, &size), SF_OK, "%s", sf_last_error());
      cr_assert(nth_line(text, number, template_line, sizeof template_line), "%s: %s has no line %ld", spec, file,
                number);
      free(text);
      const char *first = template_line + strspn(template_line, " \t");
      if (!strstr(template_line, "$(") && *first != '@') {
        cr_assert_str_eq(line, template_line, "%s: the line counted as %s:%ld", spec, file, number);
        compared++;
      }
    }
    if (number > 0) number++;
  }
  cr_expect_gt(directives, 3, "%s", spec);
  cr_expect_gt(compared, 50, "%s", spec);
  free(source);
}

Test(template_lines, each_line_counts_as_its_template_line) {
  check_lines_follow_templates("op=fwd,split=time,dtype=bf16,z=1,D=1");
  check_lines_follow_templates("op=fwd,split=state,dstate=16,threads=4,items=16,channels=16,dtype=fp16");
  check_lines_follow_templates("op=bwd,split=time,threads=32,items=8,dtype=fp32,z=1");
  check_lines_follow_templates("op=bwd,split=state,dstate=16,threads=4,items=16,channels=8,states=4,dtype=bf16,deterministic=1");
}

Test(template_lines, header_names_the_template) {
  char *source = generate("op=bwd,split=state,dstate=16,threads=4,items=16,channels=8,states=4");
  cr_expect_not_null(strstr(source, "\n// template: scan_bwd_states.tpl\n"), "%.300s", source);
  cr_expect_not_null(strstr(source, "#line 1 \"runtime/launch/kernel_params.h\"\n"));
  cr_expect_not_null(strstr(source, "\"templates/dtype.tpl\"\n"), "the included dtype.tpl is not named");
  free(source);
}

/* Copies built-in template `name` into `dir` with `inserted` as a new line after the first
 * line that starts with `after`; returns the inserted line's number. */
static long copy_with_line(const char *dir, const char *name, const char *after, const char *inserted) {
  char *text;
  size_t size;
  cr_assert_eq(sf_template_read(name, &text, &size), SF_OK, "%s", sf_last_error());
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  long number = 0, inserted_at = 0;
  for (const char *p = text; *p;) {
    size_t length = strcspn(p, "\n");
    fprintf(f, "%.*s\n", (int)length, p);
    number++;
    if (!inserted_at && strncmp(p, after, strlen(after)) == 0) {
      fprintf(f, "%s\n", inserted);
      inserted_at = ++number;
    }
    p += length + (p[length] == '\n');
  }
  fclose(f);
  free(text);
  cr_assert_gt(inserted_at, 0, "%s has no line starting with %s", name, after);
  return inserted_at;
}

/* Generates `spec` with the templates of `dir` and compiles it; returns NVRTC's message. */
static char *compile_failure(const char *dir, const char *spec) {
  cr_assert_eq(setenv("SCANFORGE_TEMPLATE_DIR", dir, 1), 0);
  char *source = generate(spec);
  sf_binary binary;
  sf_status status = sf_compile(source, "scan.cu", 80, false, &binary);
  free(source);
  cr_assert_eq(status, SF_ECOMPILE, "%s: %s", sf_status_name(status), sf_last_error());
  return strdup(sf_last_error());
}

Test(template_lines, nvrtc_error_names_the_broken_template_line) {
  char *dir = temp_dir_for_test("sf_template_lines_");
  cr_assert_not_null(dir);
  long line = copy_with_line(dir, "scan_fwd.tpl", "extern \"C\" __global__", "  broken_template_name_42 = 1;");
  char *message = compile_failure(dir, "op=fwd,split=time,dstate=16");
  char log_place[64], quoted_place[96];
  snprintf(log_place, sizeof log_place, "templates/scan_fwd.tpl(%ld): error", line);
  snprintf(quoted_place, sizeof quoted_place, "at templates/scan_fwd.tpl:%ld:   broken_template_name_42 = 1;", line);
  cr_expect_not_null(strstr(message, log_place), "expected '%s' in: %s", log_place, message);
  cr_expect_not_null(strstr(message, quoted_place), "expected '%s' in: %s", quoted_place, message);
  free(message);
  free(dir);
}

Test(template_lines, nvrtc_error_names_an_included_template_line) {
  char *dir = temp_dir_for_test("sf_template_lines_");
  cr_assert_not_null(dir);
  long line = copy_with_line(dir, "dtype.tpl", "typedef float elem_t;", "static int broken_dtype_43 = undeclared_dtype_thing_43;");
  char *message = compile_failure(dir, "op=fwd,split=state,dstate=16,threads=4,items=16,channels=16,dtype=fp32");
  char place[64];
  snprintf(place, sizeof place, "templates/dtype.tpl(%ld): error", line);
  cr_expect_not_null(strstr(message, place), "expected '%s' in: %s", place, message);
  snprintf(place, sizeof place, "at templates/dtype.tpl:%ld: static int", line);
  cr_expect_not_null(strstr(message, place), "expected '%s' in: %s", place, message);
  free(message);
  free(dir);
}

Test(template_lines, missing_template_dir_is_an_error) {
  cr_assert_eq(setenv("SCANFORGE_TEMPLATE_DIR", "/nonexistent/sf_templates_here", 1), 0);
  sf_variant v;
  cr_assert_eq(sf_variant_parse("op=fwd", &v), SF_OK);
  char *source = NULL;
  size_t length;
  cr_expect_eq(sf_generate(&v, &source, &length), SF_ETEMPLATE);
  cr_expect_not_null(strstr(sf_last_error(), "SCANFORGE_TEMPLATE_DIR=/nonexistent/sf_templates_here"), "%s",
                     sf_last_error());
  cr_expect_null(source);
  uint64_t hash;
  cr_expect_eq(sf_template_set_hash(&hash), SF_ETEMPLATE);
}

Test(template_lines, template_dir_that_is_a_file_is_an_error) {
  char *dir = temp_dir_for_test("sf_template_lines_");
  char file[512];
  snprintf(file, sizeof file, "%s/plain_file", dir);
  FILE *f = fopen(file, "w");
  cr_assert_not_null(f);
  fclose(f);
  cr_assert_eq(setenv("SCANFORGE_TEMPLATE_DIR", file, 1), 0);
  char *text = NULL;
  size_t size;
  cr_expect_eq(sf_template_read("scan_fwd.tpl", &text, &size), SF_ETEMPLATE);
  cr_expect_not_null(strstr(sf_last_error(), "not a directory"), "%s", sf_last_error());
  cr_expect_not_null(strstr(sf_last_error(), file), "%s", sf_last_error());
  free(text);
  free(dir);
}

Test(template_lines, an_unchanged_copy_gives_the_same_source) {
  /* #line names the repository's path, not the directory's: the cache key stays put. */
  char *builtin = generate("op=fwd,split=time,dstate=8");
  char *dir = temp_dir_for_test("sf_template_lines_");
  char *text, path[512];
  size_t size;
  cr_assert_eq(sf_template_read("scan_fwd.tpl", &text, &size), SF_OK, "%s", sf_last_error());
  snprintf(path, sizeof path, "%s/scan_fwd.tpl", dir);
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f);
  cr_assert_eq(fwrite(text, 1, size, f), size);
  fclose(f);
  free(text);
  cr_assert_eq(setenv("SCANFORGE_TEMPLATE_DIR", dir, 1), 0);
  char *copied = generate("op=fwd,split=time,dstate=8");
  cr_expect_str_eq(copied, builtin);
  free(builtin);
  free(copied);
  free(dir);
}

/* Generates the main template `text` (named t.tpl) for a small forward variant. */
static char *generate_text(const char *text) {
  sf_variant v;
  cr_assert_eq(sf_variant_parse("op=fwd,split=time,dstate=16", &v), SF_OK, "%s", sf_last_error());
  char *source = NULL;
  size_t length = 0;
  cr_assert_eq(sf_generate_from_text(&v, "t.tpl", text, strlen(text), NULL, &source, &length), SF_OK, "%s",
               sf_last_error());
  return source;
}

Test(template_lines, no_directive_inside_a_continued_line_of_a_crlf_template) {
  char *source = generate_text("#define SUM(x) \\\r\n@ for i = 1, 3 do\r\n  (x) + $(i) + \\\r\n@ end\r\n  0\r\n");
  for (const char *p = strstr(source, "\\\r\n"); p; p = strstr(p + 1, "\\\r\n"))
    cr_expect_neq(strncmp(p + 3, "#line", 5), 0, "a #line inside the macro:\n%s", source);
  cr_expect_not_null(strstr(source, "(x) + 3 + \\\r\n  0"), "%s", source);
  free(source);
}

Test(template_lines, an_included_template_without_a_final_newline_ends_its_line) {
  char *dir = temp_dir_for_test("sf_template_lines_");
  cr_assert_not_null(dir);
  char path[512];
  snprintf(path, sizeof path, "%s/inc.tpl", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs("int inc_a = 1;\nint inc_b = 2;", f); /* no newline at the end */
  fclose(f);
  cr_assert_eq(setenv("SCANFORGE_TEMPLATE_DIR", dir, 1), 0);
  char *source = generate_text("@ include(\"inc.tpl\")\nint l10 = 10;\n");
  cr_expect_null(strstr(source, "2;int"), "two lines glued:\n%s", source);
  cr_expect_not_null(strstr(source, "int inc_b = 2;\n"), "%s", source);
  const char *after = strstr(source, "int l10 = 10;");
  cr_assert_not_null(after);
  /* l10's line is attributed to t.tpl, not to inc.tpl. */
  const char *directive = NULL;
  for (const char *p = strstr(source, "#line"); p && p < after; p = strstr(p + 1, "#line")) directive = p;
  cr_assert_not_null(directive);
  cr_expect_eq(strncmp(directive, "#line 2 \"templates/t.tpl\"", 25), 0, "%.40s", directive);
  free(source);
  free(dir);
}
