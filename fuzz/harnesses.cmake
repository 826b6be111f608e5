# The harnesses of fuzz/ (fuzz/fuzz_<name>.c) and what each needs besides the library:
# used by fuzz/CMakeLists.txt (libFuzzer, SCANFORGE_FUZZ=ON) and fuzz/replay.cmake (the
# regression replays of the ordinary build).
set(SCANFORGE_FUZZ_HARNESSES variant_spec template tuning_db cache_manifest bench_rows tune_entries)
set(SCANFORGE_FUZZ_EXTRA_cache_manifest ${PROJECT_SOURCE_DIR}/cli/manifest_summary.c)
set(SCANFORGE_FUZZ_EXTRA_bench_rows ${PROJECT_SOURCE_DIR}/cli/bench_rows.c ${PROJECT_SOURCE_DIR}/cli/scan_common.c)

# An executable of harness `name` from its file, its extra sources and `main_source`
# (empty: libFuzzer's main).
function(scanforge_fuzz_executable target name main_source)
  add_executable(${target} ${PROJECT_SOURCE_DIR}/fuzz/fuzz_${name}.c ${SCANFORGE_FUZZ_EXTRA_${name}} ${main_source})
  scanforge_setup_target(${target})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR} ${LUA_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(${target} PRIVATE scanforge::scanforge PkgConfig::JANSSON)
endfunction()
