# Build helpers shared by every folder's CMakeLists.txt.
#
#   tw_library(NAME SRCS a.cc b.cc DEPS tw_util absl::status)
#       static library tw_NAME; includes are rooted at src/ ("store/db.h").
#   tw_test(NAME SRCS a_test.cc DEPS ... [LABELS l] [TIMEOUT s] [COST s] [ARGS ...])
#       GoogleTest binary NAME, registered with ctest (label "unit" by default).
#       COST: about how many seconds it runs, for a long test: ctest starts the
#       costliest first, so that a clean clone's run (which has no timings of
#       its own yet) does not end waiting on one long test.
#   tw_fuzz(NAME SRCS a_fuzz.cc DEPS ... CORPUS dir)
#       libFuzzer target under -DTW_FUZZ=ON (clang); otherwise a binary that
#       replays every file of CORPUS once, registered with ctest (label "fuzz").
#   tw_binary(NAME SRCS ... DEPS ...)  plain executable.
#
# The dev preset builds in unity mode (CMAKE_UNITY_BUILD): a target's sources
# are compiled a dozen to a translation unit, so the headers and templates
# they share are compiled once, which takes the test command's build from
# about 21 to about 13 minutes on 2 cores. The files below define a name in an
# anonymous namespace that a neighbour of theirs defines too (or, kv.cc, hold
# a type of their own in a class of a header): they are compiled alone.
set(TW_NO_UNITY_SOURCES
  src/api/cloudwatch/cloudwatch_test.cc
  src/api/logs/events.cc
  src/api/logs/logs_test.cc
  src/api/native/agent_codec.cc
  src/api/native/native_api_test.cc
  src/api/native/native_chart.cc
  src/api/native/native_chart_test.cc
  src/api/native/remote_write_compliance_test.cc
  src/api/prometheus/metrics_page_test.cc
  src/api/sagemaker/sagemaker_test.cc
  src/api/sagemaker/training_jobs.cc
  src/archive/job_archive_test.cc
  src/job/job_runner_test.cc
  src/profiler/nvml_test.cc
  src/profiler/proc_parsers.cc
  src/profiler/sampler.cc
  src/query/metrics_test.cc
  src/rules/prediction_rules.cc
  src/store/format_test.cc
  src/store/kv/kv.cc
  src/store/retention_db_test.cc
  src/store/rollup_property_test.cc)

function(tw_no_unity)
  foreach(src ${ARGN})
    get_filename_component(path ${src} ABSOLUTE)
    file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${path})
    if(rel IN_LIST TW_NO_UNITY_SOURCES)
      set_source_files_properties(${src} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
  endforeach()
endfunction()

function(tw_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_library(tw_${name} STATIC ${ARG_SRCS})
  tw_no_unity(${ARG_SRCS})
  target_include_directories(tw_${name} PUBLIC ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(tw_${name} PUBLIC ${ARG_DEPS})
endfunction()

function(tw_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT;COST" "SRCS;DEPS;LABELS;ARGS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  tw_no_unity(${ARG_SRCS})
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
  if(ARG_COST)
    set_tests_properties(${name} PROPERTIES COST ${ARG_COST})
  endif()
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
