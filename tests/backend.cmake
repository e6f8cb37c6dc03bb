# Backend loader tests: deliberately broken modules built here, the CPU variant choice, the
# ABI layout pin, the registry against real files, and `strata backends --json`.
set(ST_TB_SRC ${CMAKE_CURRENT_SOURCE_DIR}/backend)
# Test modules live outside lib/strata/backends so the build tree's own search never sees them.
set(ST_TB_MODS ${CMAKE_BINARY_DIR}/tests/backend-modules)

function(st_test_module target file)
  add_library(${target} MODULE ${ARGN})
  set_target_properties(${target} PROPERTIES PREFIX "" OUTPUT_NAME ${file} SUFFIX ".so"
    LIBRARY_OUTPUT_DIRECTORY ${ST_TB_MODS} C_VISIBILITY_PRESET hidden)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/include)
endfunction()

st_test_module(st_tmod_noentry strata-noentry ${ST_TB_SRC}/modules/mod_noentry.c)
st_test_module(st_tmod_abi2 strata-abi2 ${ST_TB_SRC}/modules/mod_abi2.c)
st_test_module(st_tmod_entryfail strata-entryfail ${ST_TB_SRC}/modules/mod_entryfail.c)
st_test_module(st_tmod_nulltable strata-nulltable ${ST_TB_SRC}/modules/mod_entryfail.c)
target_compile_definitions(st_tmod_nulltable PRIVATE ST_TEST_NULL_TABLE)
st_test_module(st_tmod_smalltable strata-smalltable ${ST_TB_SRC}/modules/mod_entryfail.c)
target_compile_definitions(st_tmod_smalltable PRIVATE ST_TEST_SMALL_TABLE)
st_test_module(st_tmod_fakecpu fakecpu ${ST_TB_SRC}/modules/mod_fakecpu.c)
st_test_module(st_tmod_fakecpu3 fakecpu-score3 ${ST_TB_SRC}/modules/mod_fakecpu.c)
target_compile_definitions(st_tmod_fakecpu3 PRIVATE ST_TEST_SCORE=3)
st_test_module(st_tmod_fakecpu0 fakecpu-score0 ${ST_TB_SRC}/modules/mod_fakecpu.c)
target_compile_definitions(st_tmod_fakecpu0 PRIVATE ST_TEST_SCORE=0)
foreach(t st_tmod_fakecpu st_tmod_fakecpu3 st_tmod_fakecpu0)
  target_link_libraries(${t} PRIVATE ${CMAKE_DL_LIBS})
endforeach()

# A module whose dependency library is absent at run time: it links against a dummy shared
# library that sits in a directory no loader searches (no RPATH, not installed).
add_library(st_test_absent_dep SHARED ${ST_TB_SRC}/modules/absent_dep.c)
set_target_properties(st_test_absent_dep PROPERTIES OUTPUT_NAME strata_test_absent_dep
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/backend-absent-dep)
st_test_module(st_tmod_needsdep strata-needsdep ${ST_TB_SRC}/modules/mod_needsdep.c)
target_link_libraries(st_tmod_needsdep PRIVATE st_test_absent_dep)
set_target_properties(st_tmod_needsdep PROPERTIES SKIP_BUILD_RPATH ON INSTALL_RPATH "")

add_executable(test_backend_variant ${ST_TB_SRC}/test_variant.c)
target_link_libraries(test_backend_variant PRIVATE st_backend)
add_test(NAME backend_variant COMMAND test_backend_variant)

add_executable(test_backend_json ${ST_TB_SRC}/test_json.c)
target_link_libraries(test_backend_json PRIVATE st_backend m)
add_test(NAME backend_json COMMAND test_backend_json)

add_executable(test_backend_abi_layout ${ST_TB_SRC}/abi_layout.c)
target_include_directories(test_backend_abi_layout PRIVATE ${PROJECT_SOURCE_DIR}/include)
add_test(NAME backend_abi_layout COMMAND test_backend_abi_layout)
set_tests_properties(backend_abi_layout PROPERTIES SKIP_RETURN_CODE 77)

if(TARGET strata-sim)
  add_executable(test_backend_loader ${ST_TB_SRC}/test_loader.c)
  target_link_libraries(test_backend_loader PRIVATE st_backend)
  add_dependencies(test_backend_loader strata-sim st_tmod_noentry st_tmod_abi2 st_tmod_entryfail st_tmod_nulltable
                   st_tmod_smalltable st_tmod_fakecpu st_tmod_fakecpu3 st_tmod_fakecpu0 st_tmod_needsdep)
  add_test(NAME backend_loader COMMAND test_backend_loader ${ST_TB_MODS} $<TARGET_FILE:strata-sim>)
  set_tests_properties(backend_loader PROPERTIES ENVIRONMENT "STRATA_LOG=error")

  # the CLI script runs the binary directly: native builds only (ci/ppc64le.sh runs
  # `strata backends` under qemu itself)
  if(TARGET strata AND NOT CMAKE_CROSSCOMPILING)
    add_test(NAME backend_cli_json
      COMMAND ${CMAKE_COMMAND} -DSTRATA=$<TARGET_FILE:strata> -DSIM=$<TARGET_FILE:strata-sim> -DMODS=${ST_TB_MODS}
              -DWORK=${CMAKE_CURRENT_BINARY_DIR}/backend_cli_work -P ${ST_TB_SRC}/cli_json.cmake)
  endif()
endif()

# The POWER side of the variant choice, where a cross compiler and qemu are installed.
find_program(ST_PPC_CC powerpc64le-linux-gnu-gcc)
find_program(ST_QEMU_PPC qemu-ppc64le)
if(ST_PPC_CC AND ST_QEMU_PPC AND NOT STRATA_ARCH_PPC64LE)
  add_test(NAME backend_variant_ppc64le
    COMMAND ${CMAKE_COMMAND} -DCC=${ST_PPC_CC} -DQEMU=${ST_QEMU_PPC} -DSRC=${PROJECT_SOURCE_DIR}
            -DWORK=${CMAKE_CURRENT_BINARY_DIR}/ppc_variant -P ${ST_TB_SRC}/ppc_variant.cmake)
endif()

# the one door to a device (core/backend/dev.c) on the reference device
add_executable(test_backend_dev ${ST_TB_SRC}/test_dev.c)
target_include_directories(test_backend_dev PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/common)
target_link_libraries(test_backend_dev PRIVATE st_model st_backend)
add_test(NAME backend.dev COMMAND test_backend_dev ${PROJECT_SOURCE_DIR}/docs/backends.md)
