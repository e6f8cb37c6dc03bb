# Tests of core/arch, core/kv, core/model: refusals, the forward recipe of every family on the
# scalar reference, reference vs backend modules, and the real stories260K model.
if(TARGET st_model AND TARGET st_ref)
  add_library(st_model_testutil STATIC ${CMAKE_CURRENT_SOURCE_DIR}/model/model_util.c
              ${CMAKE_CURRENT_SOURCE_DIR}/model/backend_pick.c)
  target_link_libraries(st_model_testutil PUBLIC st_model st_ref st_backend)
  target_include_directories(st_model_testutil PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/model)

  add_executable(test_model_ref ${CMAKE_CURRENT_SOURCE_DIR}/model/test_model_ref.c)
  target_link_libraries(test_model_ref PRIVATE st_model_testutil)
  add_test(NAME model.forward_ref COMMAND test_model_ref)

  if(TARGET st_tokenizer)
    add_executable(test_stories ${CMAKE_CURRENT_SOURCE_DIR}/model/test_stories.c)
    target_link_libraries(test_stories PRIVATE st_model_testutil st_tokenizer)
    set(ST_STORIES ${PROJECT_SOURCE_DIR}/../shared/models/stories260K.gguf)
    add_test(NAME model.stories260k_ref COMMAND test_stories ${ST_STORIES} ref)
    set_tests_properties(model.stories260k_ref PROPERTIES SKIP_RETURN_CODE 77)
  endif()
endif()
