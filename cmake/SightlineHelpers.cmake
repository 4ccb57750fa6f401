# Helpers shared by every folder's CMakeLists.txt.

# sightline_add_test(NAME SOURCES a.cc b.cc LIBS x y [LABELS gpu] [GPU])
# A GPU test is linked with tests/support/gpu_test_main.cc, which exits 77
# ("skipped" for ctest) when no CUDA device is present.
function(sightline_add_test name)
  cmake_parse_arguments(T "GPU" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gmock Threads::Threads)
  if(T_GPU)
    target_link_libraries(${name} PRIVATE sightline_gpu_test_main)
    list(APPEND T_LABELS gpu)
  else()
    target_link_libraries(${name} PRIVATE GTest::gtest_main)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77
    ENVIRONMENT "SIGHTLINE_SOURCE_DIR=${PROJECT_SOURCE_DIR};SIGHTLINE_BINARY_DIR=${PROJECT_BINARY_DIR}")
  if(T_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}")
  endif()
  if(T_TIMEOUT)
    set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT})
  else()
    set_tests_properties(${name} PROPERTIES TIMEOUT 300)
  endif()
endfunction()

# sightline_add_script_test(NAME SCRIPT path [ARGS ...] [LABELS ...] [GPU])
# Shell tests: exit 0 pass, 77 skipped, anything else fails.
function(sightline_add_script_test name)
  cmake_parse_arguments(T "GPU" "SCRIPT;TIMEOUT" "ARGS;LABELS" ${ARGN})
  if(T_GPU)
    list(APPEND T_LABELS gpu)
  endif()
  add_test(NAME ${name} COMMAND bash ${T_SCRIPT} ${T_ARGS})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77
    ENVIRONMENT "SIGHTLINE_SOURCE_DIR=${PROJECT_SOURCE_DIR};SIGHTLINE_BINARY_DIR=${PROJECT_BINARY_DIR};SIGHTLINE_BIN=$<TARGET_FILE:sightline>")
  if(T_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}")
  endif()
  if(T_TIMEOUT)
    set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT})
  else()
    set_tests_properties(${name} PROPERTIES TIMEOUT 300)
  endif()
endfunction()

# Hidden visibility for code that ends up inside the injected library.
function(sightline_hide_symbols target)
  set_target_properties(${target} PROPERTIES
    CXX_VISIBILITY_PRESET hidden C_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
endfunction()
