# Writes OUTPUT, a C file holding every DIR/*.json as a string, so that the library carries
# the shipped tuning defaults. The build runs it (CMakeLists.txt) whenever a file of
# tuning/defaults/ changes; adding or removing a file re-runs CMake's glob.
file(GLOB files ${DIR}/*.json)
list(SORT files)
set(body "")
set(table "")
set(count 0)
foreach(path IN LISTS files)
  get_filename_component(name ${path} NAME)
  file(READ ${path} text)
  string(LENGTH "${text}" size)
  # One C string literal per line of the file.
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  string(REPLACE "?" "\\?" text "${text}") # no trigraphs in -std=c11
  string(REPLACE "\n" "\\n\"\n    \"" text "${text}")
  string(APPEND body "static const char defaults_${count}[] =\n    \"${text}\";\n")
  string(APPEND table "  {\"${name}\", defaults_${count}, ${size}},\n")
  math(EXPR count "${count} + 1")
endforeach()
file(WRITE ${OUTPUT}
"/* tuning_defaults_data.c: generated at build time by cmake/embed_tuning_defaults.cmake from tuning/defaults/. */
#include \"runtime/launch_config/defaults.h\"

${body}
const sf_tune_default_file sf_tune_default_files[] = {
${table}  {0, 0, 0},
};
")
