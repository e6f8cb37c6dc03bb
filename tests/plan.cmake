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
    foreach(case long_ctx three_8k fault model_total model_in_plan)
      add_test(NAME plan.sim_${case} COMMAND test_plan_sim ${case} $<TARGET_FILE:strata-sim>)
      set_tests_properties(plan.sim_${case} PROPERTIES ENVIRONMENT "STRATA_LOG=error")
    endforeach()
  endif()
endif()

# The model loaded from the plan's blocks through the commands' path (st_offload_load) on a
# simulated device: one device allocation per planned consumer, the plan's total exactly, the
# same greedy tokens, every expert resident and with an expert cache (misses on the CPU module)
if(TARGET st_engine AND TARGET strata-sim AND TARGET strata-cpu-avx2)
  add_executable(test_plan_arena_model ${CMAKE_CURRENT_SOURCE_DIR}/plan/test_plan_arena_model.c)
  target_link_libraries(test_plan_arena_model PRIVATE st_engine st_model st_plan st_backend)
  add_dependencies(test_plan_arena_model strata-sim strata-cpu-avx2)
  add_test(NAME plan.arena_model COMMAND test_plan_arena_model $<TARGET_FILE:strata-sim> $<TARGET_FILE:strata-cpu-avx2>)
  set_tests_properties(plan.arena_model PROPERTIES ENVIRONMENT "STRATA_LOG=error")
endif()

# strata plan end to end on two simulated devices: a plan that fits (and is allocated), one that
# is refused, and an injected allocation failure reported with the consumer's name
# (shell commands run the binary directly: native builds only)
if(TARGET strata AND TARGET strata-sim AND NOT CMAKE_CROSSCOMPILING)
  set(ST_PLAN_MODEL ${CMAKE_CURRENT_BINARY_DIR}/plan-cli-moe.gguf)
  add_test(NAME plan.cli_fits COMMAND sh -c
    "$<TARGET_FILE:strata> gen-model --out ${ST_PLAN_MODEL} --arch qwen3moe --preset tiny --layers 4 --embd 256 --heads 4 --kv-heads 2 --experts 32 --experts-used 2 --expert-ff 256 --type Q8_0 >/dev/null && $<TARGET_FILE:strata> plan -m ${ST_PLAN_MODEL} --backend sim --parallel 4 --ctx 4096 --extra late:0:40MiB --allocate")
  set_tests_properties(plan.cli_fits PROPERTIES ENVIRONMENT "STRATA_SIM=devices=2,mem=128MiB;STRATA_LOG=error"
    PASS_REGULAR_EXPRESSION "late +40\\.0  registered by name.*expert_cache.*allocated:.*sim1.* MiB taken, plan .* MiB allocated")
  add_test(NAME plan.cli_refuses COMMAND sh -c
    "$<TARGET_FILE:strata> gen-model --out ${ST_PLAN_MODEL}.2 --arch qwen3moe --preset tiny --layers 4 --embd 256 --heads 4 --kv-heads 2 --experts 32 --experts-used 2 --expert-ff 256 --type Q8_0 >/dev/null && $<TARGET_FILE:strata> plan -m ${ST_PLAN_MODEL}.2 --backend sim --parallel 4 --ctx 200000; echo exit=$?")
  set_tests_properties(plan.cli_refuses PROPERTIES ENVIRONMENT "STRATA_SIM=devices=2,mem=128MiB;STRATA_LOG=error"
    PASS_REGULAR_EXPRESSION "WARNING: --parallel.*KV streaming|KV streaming.*ERROR: the plan does not fit.*Would fit with: --ctx [0-9]+.*exit=1")
  add_test(NAME plan.cli_allocate_fault COMMAND sh -c
    "$<TARGET_FILE:strata> gen-model --out ${ST_PLAN_MODEL}.3 --arch qwen3moe --preset tiny --layers 4 --embd 256 --heads 4 --kv-heads 2 --experts 32 --experts-used 2 --expert-ff 256 --type Q8_0 >/dev/null && $<TARGET_FILE:strata> plan -m ${ST_PLAN_MODEL}.3 --backend sim --parallel 2 --ctx 4096 --allocate 2>&1; echo exit=$?")
  set_tests_properties(plan.cli_allocate_fault PROPERTIES ENVIRONMENT "STRATA_SIM=devices=2,mem=128MiB,dev1.fail_alloc=2;STRATA_LOG=error"
    PASS_REGULAR_EXPRESSION "ERROR: plan: allocating consumer 'kv' .* failed although the plan budgeted it.*injected failure.*exit=1")
  add_test(NAME plan.cli_load COMMAND sh -c
    "$<TARGET_FILE:strata> gen-model --out ${ST_PLAN_MODEL}.4 --arch qwen3moe --preset tiny --type Q8_0 >/dev/null && $<TARGET_FILE:strata> plan -m ${ST_PLAN_MODEL}.4 --backend sim --parallel 2 --ctx 512 --load")
  set_tests_properties(plan.cli_load PROPERTIES ENVIRONMENT "STRATA_SIM=devices=1,mem=64MiB;STRATA_LOG=error"
    PASS_REGULAR_EXPRESSION "loaded inside the plan: the model took .* MiB planned for it; one forward ran")
endif()
