# libstrata (include/strata/strata.h, docs/library.md): the API in the build tree, and an
# outside program built from the installed tree with pkg-config, shared and static.
if(TARGET strata_shared AND TARGET strata-cpu-avx2 AND NOT CMAKE_CROSSCOMPILING)
  set(_api_dir ${CMAKE_CURRENT_BINARY_DIR}/api)
  # the tiny generated model and `strata run`'s greedy text on it, which the API must match
  add_test(NAME api.model COMMAND bash -c "set -e; mkdir -p ${_api_dir};
    $<TARGET_FILE:strata> gen-model --arch qwen3moe --preset tiny --type Q8_0 --seed 1 --out ${_api_dir}/tiny.gguf >/dev/null;
    $<TARGET_FILE:strata> run -m ${_api_dir}/tiny.gguf -p hello -n 8 --temp 0 --ignore-eos --backend cpu --threads 1 >${_api_dir}/greedy.txt 2>/dev/null")
  set_tests_properties(api.model PROPERTIES FIXTURES_SETUP api_model ENVIRONMENT "STRATA_LOG=error")

  add_executable(test_api ${CMAKE_CURRENT_SOURCE_DIR}/api/test_api.c)
  target_link_libraries(test_api PRIVATE strata_shared)
  add_test(NAME api.generate COMMAND test_api ${_api_dir}/tiny.gguf ${_api_dir}/greedy.txt)
  set_tests_properties(api.generate PROPERTIES FIXTURES_REQUIRED api_model ENVIRONMENT "STRATA_LOG=error")

  find_program(STRATA_PKG_CONFIG pkg-config)
  if(STRATA_PKG_CONFIG)
    add_test(NAME api.installed COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/api/check_installed.sh ${CMAKE_BINARY_DIR}
             ${PROJECT_SOURCE_DIR}/examples/generate.c ${_api_dir}/tiny.gguf ${_api_dir}/greedy.txt ${CMAKE_C_COMPILER})
    set_tests_properties(api.installed PROPERTIES FIXTURES_REQUIRED api_model LABELS "nosan" ENVIRONMENT "STRATA_LOG=error")
  endif()
endif()
