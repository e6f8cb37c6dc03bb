# Tests of core/gguf: writer/reader round trip, split models, corrupt files, the real model,
# the `strata gguf` command, and (with STRATA_FUZZ and clang) a libFuzzer target.
set(STRATA_TEST_MODEL_DIR "${PROJECT_SOURCE_DIR}/../shared/models" CACHE PATH
    "Folder holding stories260K.gguf for tests that need a real model")
set(ST_GGUF_TEST_DIR ${CMAKE_CURRENT_BINARY_DIR}/gguf_tmp)
file(MAKE_DIRECTORY ${ST_GGUF_TEST_DIR})

foreach(t test_gguf_roundtrip test_gguf_split test_gguf_corrupt test_gguf_real)
  if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/gguf/${t}.c)
    continue()
  endif()
  add_executable(${t} ${CMAKE_CURRENT_SOURCE_DIR}/gguf/${t}.c)
  target_link_libraries(${t} PRIVATE st_gguf)
  target_compile_definitions(${t} PRIVATE
    STRATA_TEST_MODEL="${STRATA_TEST_MODEL_DIR}/stories260K.gguf")
  string(REPLACE "test_gguf_" "" short ${t})
  add_test(NAME gguf.${short} COMMAND ${t} ${ST_GGUF_TEST_DIR})
endforeach()
# exit code 77: the real model is absent (the message says so)
if(TEST gguf.real)
  set_tests_properties(gguf.real PROPERTIES SKIP_RETURN_CODE 77)
endif()

# The command on a generated many-layer MoE-shaped file, and on the real model.
if(TARGET strata AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/gguf/gguf_write_sample.c)
  add_executable(gguf_write_sample ${CMAKE_CURRENT_SOURCE_DIR}/gguf/gguf_write_sample.c)
  target_link_libraries(gguf_write_sample PRIVATE st_gguf)
  add_test(NAME gguf.cli_sample_setup
           COMMAND gguf_write_sample ${ST_GGUF_TEST_DIR}/sample_moe.gguf)
  set_tests_properties(gguf.cli_sample_setup PROPERTIES FIXTURES_SETUP gguf_sample)
  add_test(NAME gguf.cli_sample COMMAND strata gguf ${ST_GGUF_TEST_DIR}/sample_moe.gguf)
  set_tests_properties(gguf.cli_sample PROPERTIES FIXTURES_REQUIRED gguf_sample
    PASS_REGULAR_EXPRESSION
    "blk\\.\\[0-39\\]\\.attn_v\\.weight +\\[64, 64\\] +F16\\+Q8_0 .*blk\\.\\[0-39\\]\\.ffn_up_exps\\.weight +8 x \\[64, 32\\] +Q8_0 +696320.*total: 203 tensors")
  add_test(NAME gguf.cli_sample_all COMMAND strata gguf --all ${ST_GGUF_TEST_DIR}/sample_moe.gguf)
  set_tests_properties(gguf.cli_sample_all PROPERTIES FIXTURES_REQUIRED gguf_sample
    PASS_REGULAR_EXPRESSION "blk\\.39\\.ffn_up_exps\\.weight +\\[64, 32, 8\\] +Q8_0 +17408")
  if(EXISTS ${STRATA_TEST_MODEL_DIR}/stories260K.gguf)
    add_test(NAME gguf.cli_real COMMAND strata gguf ${STRATA_TEST_MODEL_DIR}/stories260K.gguf)
    set_tests_properties(gguf.cli_real PROPERTIES PASS_REGULAR_EXPRESSION
      "general\\.architecture +string +\"llama\".*blk\\.\\[0-4\\]\\.attn_q\\.weight +\\[64, 64\\] +F32")
  else()
    message(STATUS "stories260K.gguf not in ${STRATA_TEST_MODEL_DIR}: gguf.cli_real not registered")
  endif()
  add_test(NAME gguf.cli_corrupt COMMAND strata gguf ${CMAKE_CURRENT_SOURCE_DIR}/gguf.cmake)
  set_tests_properties(gguf.cli_corrupt PROPERTIES WILL_FAIL ON)
endif()

# STRATA_FUZZ is declared in core/gguf/CMakeLists.txt (which instruments st_gguf)
if(STRATA_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(WARNING "STRATA_FUZZ needs clang (CC=clang); fuzz_gguf not built")
  else()
    include(CheckCSourceCompiles)
    set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
    check_c_source_compiles(
      "#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }"
      STRATA_HAVE_LIBFUZZER)
    unset(CMAKE_REQUIRED_FLAGS)
    if(STRATA_HAVE_LIBFUZZER)
      add_executable(fuzz_gguf ${CMAKE_CURRENT_SOURCE_DIR}/gguf/fuzz_gguf.c)
      target_link_libraries(fuzz_gguf PRIVATE st_gguf)
      target_compile_options(fuzz_gguf PRIVATE -fsanitize=fuzzer,address,undefined)
      target_link_options(fuzz_gguf PRIVATE -fsanitize=fuzzer,address,undefined)
    else()
      message(WARNING "this clang cannot link -fsanitize=fuzzer; fuzz_gguf not built")
    endif()
  endif()
endif()
