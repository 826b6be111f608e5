/* compile.c: the compile stage: source text -> cubin or PTX with NVRTC, plus ptxas's report. */
#include "runtime/compile/compile.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "runtime/compile/nvrtc.h"

/* Every compile gets these options besides the arch. Generated sources include no
 * headers, so there are no include paths; -v makes ptxas report registers and spills. */
#define OPTION_STD "-std=c++17"
#define OPTION_FAST_MATH "--use_fast_math"
#define OPTION_PTXAS_REPORT "--ptxas-options=-v"
static const char *const fixed_options[] = {OPTION_STD, OPTION_FAST_MATH, OPTION_PTXAS_REPORT};
enum { FIXED_OPTION_COUNT = sizeof fixed_options / sizeof fixed_options[0] };

const char *sf_compile_options_string(void) {
  return OPTION_STD " " OPTION_FAST_MATH " " OPTION_PTXAS_REPORT;
}

/* Error numbers quoted from the source at most: a broken template can raise hundreds. */
enum { MAX_QUOTED_LINES = 20, MAX_QUOTED_CHARS = 240 };

void sf_binary_free(sf_binary *b) {
  if (!b) return;
  free(b->data);
  free(b->log);
  memset(b, 0, sizeof *b);
}

static sf_status nvrtc_fail(const sf_nvrtc_api *api, nvrtcResult result, const char *call) {
  sf_status status = result == NVRTC_ERROR_OUT_OF_MEMORY ? SF_ENOMEM : SF_ECOMPILE;
  return sf_fail(status, "%s failed: %s", call, api->GetErrorString(result));
}

sf_status sf_nvrtc_version(int *major, int *minor) {
  if (!major || !minor) return sf_fail(SF_EINVAL, "sf_nvrtc_version: major and minor must not be NULL");
  const sf_nvrtc_api *api;
  sf_status status = sf_nvrtc_load(&api);
  if (status != SF_OK) return status;
  nvrtcResult result = api->Version(major, minor);
  return result == NVRTC_SUCCESS ? SF_OK : nvrtc_fail(api, result, "nvrtcVersion");
}

/* The supported archs in a new array (free it), ascending as NVRTC gives them. */
static sf_status supported_archs(const sf_nvrtc_api *api, int **archs, int *count) {
  nvrtcResult result = api->GetNumSupportedArchs(count);
  if (result != NVRTC_SUCCESS) return nvrtc_fail(api, result, "nvrtcGetNumSupportedArchs");
  *archs = malloc(sizeof **archs * (size_t)(*count > 0 ? *count : 1));
  if (!*archs) return sf_fail(SF_ENOMEM, "out of memory listing NVRTC archs");
  result = api->GetSupportedArchs(*archs);
  if (result != NVRTC_SUCCESS) {
    free(*archs);
    *archs = NULL;
    return nvrtc_fail(api, result, "nvrtcGetSupportedArchs");
  }
  return SF_OK;
}

sf_status sf_nvrtc_archs(int *archs, int capacity, int *count) {
  if (!count || (capacity > 0 && !archs))
    return sf_fail(SF_EINVAL, "sf_nvrtc_archs: count is NULL, or archs is NULL with capacity %d", capacity);
  const sf_nvrtc_api *api;
  sf_status status = sf_nvrtc_load(&api);
  if (status != SF_OK) return status;
  int *all, n;
  status = supported_archs(api, &all, &n);
  if (status != SF_OK) return status;
  for (int i = 0; i < n && i < capacity; i++) archs[i] = all[i];
  *count = n;
  free(all);
  return SF_OK;
}

/* SF_OK when NVRTC can build for `arch`, else SF_EINVAL naming it and the choices. */
static sf_status check_arch(const sf_nvrtc_api *api, int arch, bool want_ptx) {
  int *archs, count;
  sf_status status = supported_archs(api, &archs, &count);
  if (status != SF_OK) return status;
  for (int i = 0; i < count; i++)
    if (archs[i] == arch) {
      free(archs);
      return SF_OK;
    }
  char list[512] = "";
  size_t used = 0;
  for (int i = 0; i < count && used < sizeof list; i++)
    used += (size_t)snprintf(list + used, sizeof list - used, " %d", archs[i]);
  free(archs);
  int major = 0, minor = 0;
  api->Version(&major, &minor);
  return sf_fail(SF_EINVAL, "arch %s_%d is not supported by NVRTC %d.%d; supported archs:%s",
                 want_ptx ? "compute" : "sm", arch, major, minor, list);
}

/* A line of source text: where it starts and how long it is. */
typedef struct text_span {
  const char *text;
  size_t length;
} text_span;

static bool span_is(text_span span, const char *text, size_t length) {
  return span.length == length && memcmp(span.text, text, length) == 0;
}

/* If `line` is a "#line N" or "#line N \"file\"" directive, returns N (and the file, when
 * given, in *file), else 0. */
static long line_directive(const char *line, size_t length, text_span *file) {
  const char *end = line + length, *p = line;
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  if (end - p < 6 || strncmp(p, "#line", 5) != 0 || (p[5] != ' ' && p[5] != '\t')) return 0;
  p += 5;
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  long number = 0;
  while (p < end && *p >= '0' && *p <= '9' && number < 100000000) number = number * 10 + (*p++ - '0');
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  if (p < end && *p == '"') {
    const char *close = memchr(p + 1, '"', (size_t)(end - p - 1));
    if (close) *file = (text_span){p + 1, (size_t)(close - p - 1)};
  }
  return number;
}

/* The first line of `source` that the compiler counts as line `number` of `file`, following
 * the #line directives (before any, lines count as `name`'s); *count says how many lines
 * count so (a template line inside a loop makes many). NULL when none does. */
static const char *find_counted_line(const char *source, const char *name, text_span file, long number,
                                     size_t *length, int *count) {
  text_span current = {name, strlen(name)};
  long current_line = 1;
  const char *found = NULL;
  *count = 0;
  for (const char *line = source; *line;) {
    size_t line_length = strcspn(line, "\n");
    long directed = line_directive(line, line_length, &current);
    if (directed > 0) {
      current_line = directed;
    } else {
      if (current_line == number && span_is(current, file.text, file.length)) {
        if (!found) {
          found = line;
          *length = strcspn(line, "\r\n");
        }
        (*count)++;
      }
      current_line++;
    }
    line += line_length;
    if (*line == '\n') line++;
  }
  return found;
}

/* If the log line reads "<file>(<N>): <something> error...", returns N and the file, else 0. */
static long error_location(const char *line, size_t line_length, text_span *file) {
  const char *end = line + line_length;
  for (const char *open = memchr(line, '(', line_length); open; open = memchr(open + 1, '(', (size_t)(end - open - 1))) {
    char *after;
    long number = strtol(open + 1, &after, 10);
    if (open == line || open[1] < '0' || open[1] > '9' || number <= 0 || after + 2 > end || after[0] != ')' ||
        after[1] != ':')
      continue;
    /* The kind is the text up to the next colon: "error", "catastrophic error",
     * "error #177-D" (a warning promoted to an error); warnings and remarks are skipped. */
    const char *kind = after + 2;
    const char *kind_end = memchr(kind, ':', (size_t)(end - kind));
    if (!kind_end) return 0;
    for (const char *k = kind; k + 5 <= kind_end; k++)
      if (strncmp(k, "error", 5) == 0) {
        *file = (text_span){line, (size_t)(open - line)};
        return number;
      }
    return 0;
  }
  return 0;
}

/* Writes, for each distinct place an error in the log names, the source line the compiler
 * saw there: "  at line N: <text>" for the source itself, "  at FILE:N: <text>" for a
 * template that the source's #line directives name (the text is the generated line). */
static void quote_error_lines(FILE *message, const char *log, const char *source, const char *name) {
  struct {
    text_span file;
    long number;
  } quoted[MAX_QUOTED_LINES];
  int quoted_count = 0;
  for (const char *line = log; *line;) {
    size_t line_length = strcspn(line, "\n");
    text_span file = {0};
    long number = error_location(line, line_length, &file);
    int seen = 0;
    for (int i = 0; i < quoted_count; i++)
      seen |= quoted[i].number == number && span_is(quoted[i].file, file.text, file.length);
    if (number > 0 && !seen && quoted_count < MAX_QUOTED_LINES) {
      size_t text_length = 0;
      int count = 0;
      const char *text = find_counted_line(source, name, file, number, &text_length, &count);
      const bool in_source = span_is(file, name, strlen(name));
      if (quoted_count == 0) fprintf(message, "\nthe source lines in error:");
      if (in_source)
        fprintf(message, "\n  at line %ld: ", number);
      else
        fprintf(message, "\n  at %.*s:%ld: ", (int)file.length, file.text, number);
      if (text)
        fprintf(message, "%.*s%s", (int)(text_length < MAX_QUOTED_CHARS ? text_length : MAX_QUOTED_CHARS), text,
                text_length > MAX_QUOTED_CHARS ? " ..." : "");
      else
        fprintf(message, "%s", in_source ? "(past the end of the source)" : "(not in the source)");
      if (count > 1) fprintf(message, " (the first of %d generated lines from there)", count);
      quoted[quoted_count].file = file;
      quoted[quoted_count++].number = number;
    }
    line += line_length;
    if (*line == '\n') line++;
  }
}

static sf_status compile_failure(const char *call, const char *result_text, const char *name,
                                 int arch, bool want_ptx, const char *log, const char *source) {
  char *text = NULL;
  size_t text_length = 0;
  FILE *message = open_memstream(&text, &text_length);
  if (!message)
    return sf_fail(SF_ECOMPILE, "%s of %s for %s_%d: %s\n%s", call, name, want_ptx ? "compute" : "sm",
                   arch, result_text, log);
  fprintf(message, "%s of %s for %s_%d: %s\n%s", call, name, want_ptx ? "compute" : "sm", arch,
          result_text, log);
  quote_error_lines(message, log, source, name);
  fclose(message);
  sf_fail(SF_ECOMPILE, "%s", text);
  free(text);
  return SF_ECOMPILE;
}

/* The number written just before `key` in line[0..length), e.g. 48 in "Used 48 registers". */
static int number_before(const char *line, size_t length, const char *key, int *value) {
  size_t key_length = strlen(key);
  for (size_t at = 0; at + key_length <= length; at++) {
    if (memcmp(line + at, key, key_length) != 0) continue;
    size_t digits_end = at;
    while (digits_end > 0 && line[digits_end - 1] == ' ') digits_end--;
    size_t digits_start = digits_end;
    while (digits_start > 0 && line[digits_start - 1] >= '0' && line[digits_start - 1] <= '9') digits_start--;
    if (digits_start == digits_end) return 0;
    *value = atoi(line + digits_start);
    return 1;
  }
  return 0;
}

static void keep_max(int *field, int value) {
  if (value > *field) *field = value;
}

/* Reads ptxas's -v report, e.g.
 *   ptxas info    : Used 48 registers, used 1 barriers, 256 bytes smem
 *   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 * keeping the largest value over the functions reported. */
static void parse_resources(const char *log, sf_binary *out) {
  for (const char *line = log; *line;) {
    size_t length = strcspn(line, "\n");
    int value;
    if (number_before(line, length, " registers", &value)) {
      keep_max(&out->registers, value);
      /* ptxas omits smem when a kernel uses none. */
      keep_max(&out->shared_bytes, number_before(line, length, " bytes smem", &value) ? value : 0);
    }
    if (number_before(line, length, " bytes stack frame", &value)) keep_max(&out->stack_bytes, value);
    if (number_before(line, length, " bytes spill stores", &value)) keep_max(&out->spill_stores, value);
    if (number_before(line, length, " bytes spill loads", &value)) keep_max(&out->spill_loads, value);
    line += length;
    if (*line == '\n') line++;
  }
}

sf_status sf_binary_kernel_resources(const sf_binary *b, const char *entry, int *registers, int *shared_bytes) {
  char marker[256];
  snprintf(marker, sizeof marker, "entry function '%s'", entry);
  const char *line = b && b->log ? strstr(b->log, marker) : NULL;
  /* the first "Used N registers" line after "Compiling entry function 'X'" is X's */
  while (line && *line) {
    size_t length = strcspn(line, "\n");
    int value;
    if (number_before(line, length, " registers", &value)) {
      *registers = value;
      *shared_bytes = number_before(line, length, " bytes smem", &value) ? value : 0;
      return SF_OK;
    }
    line += length;
    if (*line == '\n') line++;
  }
  return sf_fail(SF_EINVAL, "entry: ptxas reported nothing for kernel '%s'", entry);
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The program's log in a new string ("" when NVRTC has none). */
static sf_status read_log(const sf_nvrtc_api *api, nvrtcProgram program, char **log) {
  size_t size = 0;
  nvrtcResult result = api->GetProgramLogSize(program, &size);
  if (result != NVRTC_SUCCESS) return nvrtc_fail(api, result, "nvrtcGetProgramLogSize");
  *log = calloc(size + 1, 1);
  if (!*log) return sf_fail(SF_ENOMEM, "out of memory reading the NVRTC log (%zu bytes)", size);
  if (size > 0 && (result = api->GetProgramLog(program, *log)) != NVRTC_SUCCESS) {
    free(*log);
    *log = NULL;
    return nvrtc_fail(api, result, "nvrtcGetProgramLog");
  }
  return SF_OK;
}

/* Copies the PTX or cubin out of a compiled program into out->data. */
static sf_status read_output(const sf_nvrtc_api *api, nvrtcProgram program, sf_binary *out) {
  size_t size = 0;
  nvrtcResult result = out->is_ptx ? api->GetPTXSize(program, &size) : api->GetCUBINSize(program, &size);
  if (result != NVRTC_SUCCESS) return nvrtc_fail(api, result, out->is_ptx ? "nvrtcGetPTXSize" : "nvrtcGetCUBINSize");
  if (size == 0) return sf_fail(SF_ECOMPILE, "NVRTC produced an empty %s", out->is_ptx ? "PTX" : "cubin");
  out->data = malloc(size + 1);
  if (!out->data) return sf_fail(SF_ENOMEM, "out of memory for a %zu-byte binary", size);
  result = out->is_ptx ? api->GetPTX(program, out->data) : api->GetCUBIN(program, out->data);
  if (result != NVRTC_SUCCESS) return nvrtc_fail(api, result, out->is_ptx ? "nvrtcGetPTX" : "nvrtcGetCUBIN");
  ((char *)out->data)[size] = '\0';
  out->size = out->is_ptx ? strlen(out->data) : size; /* PTX's size counts its NUL */
  return SF_OK;
}

static atomic_ulong compile_count;

unsigned long sf_compile_count(void) { return atomic_load(&compile_count); }

sf_status sf_compile(const char *source, const char *source_name, int arch, bool want_ptx,
                     sf_binary *out) {
  if (!out) return sf_fail(SF_EINVAL, "sf_compile: out is NULL");
  memset(out, 0, sizeof *out);
  if (!source) return sf_fail(SF_EINVAL, "sf_compile: source is NULL");
  const char *name = source_name && source_name[0] ? source_name : "source.cu";
  const sf_nvrtc_api *api;
  sf_status status = sf_nvrtc_load(&api);
  if (status != SF_OK) return status;
  if ((status = check_arch(api, arch, want_ptx)) != SF_OK) return status;

  char arch_option[48];
  snprintf(arch_option, sizeof arch_option, "--gpu-architecture=%s_%d", want_ptx ? "compute" : "sm", arch);
  const char *options[1 + FIXED_OPTION_COUNT] = {arch_option};
  for (int i = 0; i < FIXED_OPTION_COUNT; i++) options[1 + i] = fixed_options[i];

  nvrtcProgram program;
  nvrtcResult result = api->CreateProgram(&program, source, name, 0, NULL, NULL);
  if (result != NVRTC_SUCCESS) return nvrtc_fail(api, result, "nvrtcCreateProgram");
  atomic_fetch_add(&compile_count, 1);
  double start = now_ms();
  result = api->CompileProgram(program, 1 + FIXED_OPTION_COUNT, options);
  double elapsed = now_ms() - start;

  char *log = NULL;
  status = read_log(api, program, &log);
  if (status == SF_OK && result != NVRTC_SUCCESS)
    status = compile_failure("nvrtcCompileProgram", api->GetErrorString(result), name, arch, want_ptx, log, source);
  /* NVRTC may report success with an option error in the log ("-Xptxas expects a value"). */
  if (status == SF_OK && strstr(log, "nvrtc: error"))
    status = compile_failure("nvrtcCompileProgram", "error in the log", name, arch, want_ptx, log, source);
  if (status == SF_OK) {
    out->is_ptx = want_ptx;
    out->arch = arch;
    out->registers = out->spill_stores = out->spill_loads = -1;
    out->shared_bytes = out->stack_bytes = -1;
    out->compile_ms = elapsed;
    out->log = log;
    log = NULL;
    parse_resources(out->log, out);
    status = read_output(api, program, out);
  }
  free(log);
  api->DestroyProgram(&program);
  if (status != SF_OK) sf_binary_free(out);
  return status;
}
