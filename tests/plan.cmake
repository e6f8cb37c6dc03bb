# Tests of core/plan: the planner on its own, and plans allocated on simulated devices
# (field failures replayed: long context with an extra consumer, 3 x 8K prompts in 360 MiB,
# an injected allocation failure, plan total vs what a real model load allocates).
if(TARGET st_plan)
  add_library(st_plan_testutil STATIC ${CMAKE_CURRENT_SOURCE_DIR}/plan/plan_testutil.c)
  target_link_libraries(st_plan_testutil PUBLIC st_plan st_arch st_gguf st_backend)
  target_include_directories(st_plan_testutil PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/plan)

  add_executable(test_plan ${CMAKE_CURRENT_SOURCE_DIR}/plan/test_plan.c)
  target_link_libraries(test_plan PRIVATE st_plan_testutil)
  add_test(NAME plan.build COMMAND test_plan)

  if(TARGET strata-sim AND TARGET st_model)
    add_executable(test_plan_sim ${CMAKE_CURRENT_SOURCE_DIR}/plan/test_plan_sim.c)
    target_link_libraries(test_plan_sim PRIVATE st_plan_testutil st_model st_kv)
    add_dependencies(test_plan_sim strata-sim)
    foreach(case long_ctx three_8k fault model_total)
      add_test(NAME plan.sim_${case} COMMAND test_plan_sim ${case} $<TARGET_FILE:strata-sim>)
      set_tests_properties(plan.sim_${case} PROPERTIES ENVIRONMENT "STRATA_LOG=error")
    endforeach()
  endif()
endif()
