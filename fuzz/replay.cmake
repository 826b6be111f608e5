# Every harness of fuzz/ also built with fuzz/replay_main.c, whatever the compiler, and
# registered with ctest (label "fuzz"): it replays the inputs that once crashed
# (fuzz/regressions/<name>/) and the hand-made seeds (fuzz/corpus/<name>/).
include(${PROJECT_SOURCE_DIR}/fuzz/harnesses.cmake)
foreach(name IN LISTS SCANFORGE_FUZZ_HARNESSES)
  scanforge_fuzz_executable(replay_${name} ${name} ${PROJECT_SOURCE_DIR}/fuzz/replay_main.c)
  add_test(NAME fuzz/replay_${name}
           COMMAND replay_${name} ${PROJECT_SOURCE_DIR}/fuzz/regressions/${name} ${PROJECT_SOURCE_DIR}/fuzz/corpus/${name})
  set_tests_properties(fuzz/replay_${name} PROPERTIES LABELS fuzz TIMEOUT 300)
endforeach()
