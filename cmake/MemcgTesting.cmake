# One way to register a test (used by tests/CMakeLists.txt only).
#
# Every ctest name starts with its kind and carries labels, so
# `ctest -L unit` runs every unit test:
#   unit.  no root, no kernel state (fixtures, temp trees)   LABELS unit
#   live.  the running kernel (root)                          LABELS live;root
#   lint.  static checks (promtool)                           LABELS lint
#   e2e.   the exporter binary end to end                     LABELS e2e[;root]
#   qemu.  a guest kernel                                     LABELS qemu
# A test that cannot run here is reported as skipped, never passed:
#   - gtest: GTEST_SKIP(); gtest_discover_tests registers one ctest test per
#     gtest case with SKIP_REGULAR_EXPRESSION "[  SKIPPED ]" (CMake >= 3.18),
#     so the skip shows as "Skipped" in ctest;
#   - scripts: exit 77 (SKIP_RETURN_CODE 77, set by memcg_script_test).

# Every TIMEOUT is the budget of the plain build on CI's 2-core machine;
# instrumented builds run the same tests 2-5x (ASan+UBSan) or 5-15x (TSan)
# slower, so their budgets are scaled (a timeout there said nothing about the
# product). MEMCG_TEST_TIMEOUT_SCALE overrides the factor.
if(NOT DEFINED MEMCG_TEST_TIMEOUT_SCALE)
  if(MEMCG_TSAN)
    set(MEMCG_TEST_TIMEOUT_SCALE 10)
  elseif(MEMCG_SANITIZE)
    set(MEMCG_TEST_TIMEOUT_SCALE 5)
  else()
    set(MEMCG_TEST_TIMEOUT_SCALE 1)
  endif()
endif()

# Test code is compiled apart from the product it tests. Each of the ~90 test
# files parses gtest, nlohmann/json and half the standard library before its
# own few hundred lines (about half of a file's compile time), then spends
# the rest optimizing gtest's macro expansions at the build type's -O2. So
# every test target reuses one precompiled header of those (memcg_test_pch)
# and compiles its own files at -Og (-O1's passes less those that hinder
# debugging: as quick to compile, and without -O1's false -Warray-bounds in
# libstdc++'s string concatenation); the product libraries it links keep the
# build type's flags (and the sanitizer stages' instrumentation) unchanged.
# -DMEMCG_TEST_FAST_COMPILE=OFF compiles the tests like the product.
option(MEMCG_TEST_FAST_COMPILE "Tests: one shared precompiled header, -Og" ON)
set(memcg_test_cxx_options)
if(MEMCG_TEST_FAST_COMPILE AND NOT CMAKE_BUILD_TYPE MATCHES "^(Debug|)$")
  set(memcg_test_cxx_options -Og)
endif()
# Made by the first memcg_gtest() call, in the tests' own directory (where unity
# batches are off, as for every test target).
function(memcg_test_pch_target)
  add_library(memcg_test_pch OBJECT ${CMAKE_SOURCE_DIR}/tests/support/pch.cpp)
  target_link_libraries(memcg_test_pch PRIVATE GTest::gtest)
  # Same definitions and options as every test target: GCC uses a
  # precompiled header only when they match (and silently parses the headers
  # instead when they do not).
  target_compile_definitions(memcg_test_pch PRIVATE MEMCG_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  target_compile_options(memcg_test_pch PRIVATE ${memcg_test_cxx_options})
  target_precompile_headers(memcg_test_pch PRIVATE
    <gtest/gtest.h> <nlohmann/json.hpp>
    <algorithm> <atomic> <chrono> <cmath> <cstdint> <cstdio> <cstdlib> <cstring>
    <filesystem> <fstream> <functional> <map> <memory> <mutex> <optional> <set>
    <sstream> <string> <string_view> <thread> <unordered_map> <vector>)
endfunction()

# memcg_gtest(<target> KIND unit|live SOURCES ... [LIBS ...] [DEFINITIONS ...]
#             [NO_MAIN] [TIMEOUT s])
# One gtest binary; every gtest case becomes ctest test <kind>.<Suite>.<Case>.
# NO_MAIN: the sources bring their own main() (linked with GTest::gtest).
function(memcg_gtest target)
  cmake_parse_arguments(T "NO_MAIN" "KIND;TIMEOUT" "SOURCES;LIBS;DEFINITIONS" ${ARGN})
  if(T_KIND STREQUAL "unit")
    set(labels unit)
    if(NOT T_TIMEOUT)
      set(T_TIMEOUT 120)
    endif()
    set(serial FALSE)
  elseif(T_KIND STREQUAL "live")
    set(labels "live;root")
    if(NOT T_TIMEOUT)
      set(T_TIMEOUT 600)
    endif()
    set(serial TRUE)  # live tests load the machine and count kernel events
  else()
    message(FATAL_ERROR "memcg_gtest(${target}): KIND must be unit or live")
  endif()
  math(EXPR T_TIMEOUT "${T_TIMEOUT} * ${MEMCG_TEST_TIMEOUT_SCALE}")
  add_executable(${target} ${T_SOURCES})
  # memcg_tests_unit / memcg_tests_live: every test binary of a kind, so that
  # an instrumented build compiles only what its stage runs (scripts/test.sh).
  if(NOT TARGET memcg_tests_${T_KIND})
    add_custom_target(memcg_tests_${T_KIND})
  endif()
  add_dependencies(memcg_tests_${T_KIND} ${target})
  if(T_NO_MAIN)
    target_link_libraries(${target} PRIVATE ${T_LIBS} GTest::gtest)
  else()
    target_link_libraries(${target} PRIVATE ${T_LIBS} GTest::gtest_main)
  endif()
  target_compile_definitions(${target} PRIVATE MEMCG_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
                             ${T_DEFINITIONS})
  if(MEMCG_TEST_FAST_COMPILE)
    if(NOT TARGET memcg_test_pch)
      memcg_test_pch_target()
    endif()
    target_compile_options(${target} PRIVATE ${memcg_test_cxx_options})
    target_precompile_headers(${target} REUSE_FROM memcg_test_pch)
  endif()
  gtest_discover_tests(${target} TEST_PREFIX "${T_KIND}." DISCOVERY_TIMEOUT 60
                       TEST_LIST ${target}_TESTS
                       PROPERTIES TIMEOUT ${T_TIMEOUT} RUN_SERIAL ${serial})
  # Labels are a list, which gtest_discover_tests' PROPERTIES flattens
  # ("live;root" would become LABELS live, then a property named root): set
  # them from a ctest include file that runs after the discovered list.
  set(labels_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_labels.cmake)
  file(WRITE ${labels_file}
       "if(DEFINED ${target}_TESTS)\n"
       "  set_tests_properties(\${${target}_TESTS} PROPERTIES LABELS \"${labels}\")\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${labels_file})
endfunction()

# memcg_script_test(<name> KIND lint|e2e|qemu [ROOT] [TIMEOUT s] [SERIAL]
#                   [OWN_STATE] [LOCKS name...] [PROCESSORS n] [COST s]
#                   COMMAND ...)
# A script or command; exit 0 passes, 77 skips, anything else fails.
# COMMAND is a CMake list: a ';' inside a "sh -c" string splits it (use &&).
# Under ctest -j (scripts/test.sh runs the e2e and qemu tests several at a
# time, as most of their time is spent waiting):
#   SERIAL      the test runs alone;
#   OWN_STATE   (e2e, label own_state) every cgroup, tracefs instance, port
#               and file it makes is named per process: it may run beside
#               the others (tests/lint/kernel_tests_serial.py);
#   LOCKS       RESOURCE_LOCKs: no two tests holding one of them run at once
#               (the kernel state or the CPU time they really share; the
#               names are listed where the e2e tests are registered);
#   PROCESSORS  CPUs the test keeps busy (default 1), counted against -j;
#   COST        seconds it took, so that the long ones start first on a
#               clean build (later runs use ctest's own measured costs).
function(memcg_script_test name)
  cmake_parse_arguments(T "ROOT;SERIAL;OWN_STATE" "KIND;TIMEOUT;PROCESSORS;COST" "COMMAND;LOCKS"
                        ${ARGN})
  if(NOT T_KIND MATCHES "^(lint|e2e|qemu)$")
    message(FATAL_ERROR "memcg_script_test(${name}): KIND must be lint, e2e or qemu")
  endif()
  set(labels ${T_KIND})
  if(T_ROOT)
    list(APPEND labels root)
  endif()
  if(T_OWN_STATE)
    if(NOT T_KIND STREQUAL "e2e")
      message(FATAL_ERROR "memcg_script_test(${name}): OWN_STATE is for e2e tests")
    endif()
    list(APPEND labels own_state)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  math(EXPR T_TIMEOUT "${T_TIMEOUT} * ${MEMCG_TEST_TIMEOUT_SCALE}")
  add_test(NAME ${T_KIND}.${name} COMMAND ${T_COMMAND})
  set_tests_properties(${T_KIND}.${name} PROPERTIES LABELS "${labels}" TIMEOUT ${T_TIMEOUT}
                       SKIP_RETURN_CODE 77 RUN_SERIAL ${T_SERIAL})
  if(T_LOCKS)
    set_tests_properties(${T_KIND}.${name} PROPERTIES RESOURCE_LOCK "${T_LOCKS}")
  endif()
  if(T_PROCESSORS)
    set_tests_properties(${T_KIND}.${name} PROPERTIES PROCESSORS ${T_PROCESSORS})
  endif()
  if(T_COST)
    set_tests_properties(${T_KIND}.${name} PROPERTIES COST ${T_COST})
  endif()
endfunction()
