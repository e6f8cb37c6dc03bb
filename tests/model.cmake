# Tests of core/arch, core/kv, core/model and the model commands: refusals, the forward recipe
# of every family on the scalar reference, reference vs backend modules, the real stories260K
# model, and the CLI end to end.
if(TARGET st_model AND TARGET st_ref)
  add_library(st_model_testutil STATIC ${CMAKE_CURRENT_SOURCE_DIR}/model/model_util.c
              ${CMAKE_CURRENT_SOURCE_DIR}/model/backend_pick.c)
  target_link_libraries(st_model_testutil PUBLIC st_model st_ref st_backend)
  target_include_directories(st_model_testutil PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/model)
  set(ST_STORIES ${PROJECT_SOURCE_DIR}/../shared/models/stories260K.gguf)

  add_executable(test_arch ${CMAKE_CURRENT_SOURCE_DIR}/model/test_arch.c)
  target_link_libraries(test_arch PRIVATE st_model_testutil)
  add_test(NAME model.arch COMMAND test_arch ${ST_STORIES})

  add_executable(test_arch_audit ${CMAKE_CURRENT_SOURCE_DIR}/model/test_arch_audit.c)
  target_link_libraries(test_arch_audit PRIVATE st_model_testutil)
  add_test(NAME model.arch_audit COMMAND test_arch_audit)

  add_executable(test_kv ${CMAKE_CURRENT_SOURCE_DIR}/model/test_kv.c)
  target_link_libraries(test_kv PRIVATE st_model_testutil)
  add_test(NAME model.kv COMMAND test_kv)

  add_executable(test_model_ref ${CMAKE_CURRENT_SOURCE_DIR}/model/test_model_ref.c)
  target_link_libraries(test_model_ref PRIVATE st_model_testutil)
  add_test(NAME model.forward_ref COMMAND test_model_ref)

  # reference vs each backend module that is built here (skipped where it has no device)
  add_executable(test_model_backend ${CMAKE_CURRENT_SOURCE_DIR}/model/test_model_backend.c)
  target_link_libraries(test_model_backend PRIVATE st_model_testutil)
  set(ST_MODEL_TEST_BACKENDS)
  foreach(pair "strata-cpu-avx2;cpu" "strata-sim;sim")
    list(GET pair 0 tgt)
    list(GET pair 1 be)
    if(TARGET ${tgt})
      add_dependencies(test_model_backend ${tgt})
      list(APPEND ST_MODEL_TEST_BACKENDS ${be})
      add_test(NAME model.ref_vs_${be} COMMAND test_model_backend ${be})
      set_tests_properties(model.ref_vs_${be} PROPERTIES SKIP_RETURN_CODE 77
                           ENVIRONMENT "STRATA_SIM=devices=1,mem=1GiB")
    endif()
  endforeach()

  # a model split by layers over simulated devices of different memory, bandwidth and domain,
  # and over a simulated GPU plus the CPU module; the device-loss case has its own sim config
  if(TARGET strata-sim)
    add_executable(test_model_split ${CMAKE_CURRENT_SOURCE_DIR}/model/test_model_split.c)
    target_link_libraries(test_model_split PRIVATE st_model_testutil st_plan st_engine)
    add_dependencies(test_model_split strata-sim)
    if(TARGET strata-cpu-avx2)
      add_dependencies(test_model_split strata-cpu-avx2)
    endif()
    add_test(NAME model.split COMMAND test_model_split)
    set_tests_properties(model.split PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT
      "STRATA_SIM=devices=4,mem=64MiB,dev1.mem=48MiB,dev1.bw=20GB/s,dev2.mem=40MiB,dev2.domain=1,dev3.domain=1,dev3.bw=5GB/s")
    add_test(NAME model.split_device_loss COMMAND test_model_split loss sim1)
    set_tests_properties(model.split_device_loss PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT
      "STRATA_SIM=devices=2,mem=64MiB,dev1.lose_after=300")
  endif()

  if(TARGET st_tokenizer)
    add_executable(test_stories ${CMAKE_CURRENT_SOURCE_DIR}/model/test_stories.c)
    target_link_libraries(test_stories PRIVATE st_model_testutil st_tokenizer)
    add_test(NAME model.stories260k COMMAND test_stories ${ST_STORIES} ref ${ST_MODEL_TEST_BACKENDS})
    set_tests_properties(model.stories260k PROPERTIES SKIP_RETURN_CODE 77
                         ENVIRONMENT "STRATA_SIM=devices=1,mem=1GiB")
  endif()
endif()

# the model commands end to end (and against llama.cpp when its reference tool is built);
# the script runs the binaries directly, so not in cross builds (no emulator for a script)
if(TARGET st_model AND TARGET strata AND NOT CMAKE_CROSSCOMPILING)
  add_executable(cmp-logits ${CMAKE_CURRENT_SOURCE_DIR}/llama_compare/cmp_logits.c)
  target_link_libraries(cmp-logits PRIVATE m)
  set(ST_CLI_TEST_ARGS $<TARGET_FILE:strata> $<TARGET_FILE:cmp-logits>)
  if(TARGET llama-ref)
    list(APPEND ST_CLI_TEST_ARGS $<TARGET_FILE:llama-ref>)
  endif()
  add_test(NAME model.cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/model/test_cli.sh ${ST_CLI_TEST_ARGS})
  # `run` over two simulated devices and over the CPU plus one (tests/model/test_split_cli.sh)
  if(TARGET strata-sim)
    add_test(NAME model.split_cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/model/test_split_cli.sh $<TARGET_FILE:strata>
             ${CMAKE_CURRENT_BINARY_DIR}/split-cli-moe.gguf)
    set_tests_properties(model.split_cli PROPERTIES ENVIRONMENT "STRATA_SIM=devices=2,mem=64MiB;STRATA_LOG=error")
  endif()
endif()
