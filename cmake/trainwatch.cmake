# Build helpers shared by every folder's CMakeLists.txt.
#
#   tw_library(NAME SRCS a.cc b.cc DEPS tw_util absl::status)
#       static library tw_NAME; includes are rooted at src/ ("store/db.h").
#   tw_test(NAME SRCS a_test.cc DEPS ... [LABELS l] [TIMEOUT s] [ARGS ...])
#       GoogleTest binary NAME, registered with ctest (label "unit" by default).
#   tw_fuzz(NAME SRCS a_fuzz.cc DEPS ... CORPUS dir)
#       libFuzzer target under -DTW_FUZZ=ON (clang); otherwise a binary that
#       replays every file of CORPUS once, registered with ctest (label "fuzz").
#   tw_binary(NAME SRCS ... DEPS ...)  plain executable.

function(tw_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_library(tw_${name} STATIC ${ARG_SRCS})
  target_include_directories(tw_${name} PUBLIC ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(tw_${name} PUBLIC ${ARG_DEPS})
endfunction()

function(tw_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SRCS;DEPS;LABELS;ARGS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    TW_SOURCE_DIR="${CMAKE_SOURCE_DIR}" TW_BINARY_DIR="${CMAKE_BINARY_DIR}"
    TW_SHARED_DIR="${TW_SHARED_DIR}")
  add_test(NAME ${name} COMMAND ${name} ${ARG_ARGS})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
endfunction()

function(tw_fuzz name)
  cmake_parse_arguments(ARG "" "CORPUS" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  if(TW_FUZZ)
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  else()
    target_sources(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests/fuzz_replay_main.cc)
    add_test(NAME ${name} COMMAND ${name} ${ARG_CORPUS})
    set_tests_properties(${name} PROPERTIES LABELS fuzz TIMEOUT 300)
  endif()
endfunction()

function(tw_binary name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
endfunction()

#   tw_benchmark(NAME SRCS a_bench.cc DEPS ...)
#       Google Benchmark binary (bench/<layer>/), not run by ctest.
function(tw_benchmark name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark benchmark::benchmark_main)
endfunction()
