# The hybrid expert path of core/model: a simulated device with an expert cache of 0%, 50% and
# 100% of the experts, misses on the CPU module, against the model with every expert resident.
if(TARGET st_engine AND TARGET st_model AND TARGET strata-sim AND TARGET strata-cpu-avx2)
  add_executable(test_experts_hybrid ${CMAKE_CURRENT_SOURCE_DIR}/experts/test_hybrid.c)
  target_link_libraries(test_experts_hybrid PRIVATE st_engine st_model st_backend m)
  add_dependencies(test_experts_hybrid strata-sim strata-cpu-avx2)
  add_test(NAME experts.hybrid COMMAND test_experts_hybrid $<TARGET_FILE:strata-sim> $<TARGET_FILE:strata-cpu-avx2>)
  set_tests_properties(experts.hybrid PROPERTIES SKIP_RETURN_CODE 77
                       ENVIRONMENT "STRATA_LOG=error;STRATA_SIM=devices=1,mem=256MiB")
  # the same with the CUDA module as the device (skipped where it has none)
  if(TARGET strata-cuda)
    add_dependencies(test_experts_hybrid strata-cuda)
    add_test(NAME experts.hybrid_cuda COMMAND test_experts_hybrid $<TARGET_FILE:strata-cuda>
             $<TARGET_FILE:strata-cpu-avx2> cuda)
    set_tests_properties(experts.hybrid_cuda PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "STRATA_LOG=error")
  endif()
endif()

# the same through the commands (run, bench, profile-experts); runs the binary directly
if(TARGET strata AND TARGET strata-sim AND TARGET strata-cpu-avx2 AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME experts.cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/experts/test_cli_hybrid.sh $<TARGET_FILE:strata>)
endif()
if(TARGET strata AND TARGET st_server AND TARGET strata-sim AND TARGET strata-cpu-avx2 AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME experts.serve COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/experts/test_serve_hybrid.sh $<TARGET_FILE:strata>)
  set_tests_properties(experts.serve PROPERTIES SKIP_RETURN_CODE 77)
endif()
# per-request expert statistics in the request's log line, checked against /metrics
if(TARGET strata AND TARGET st_server AND TARGET strata-sim AND TARGET strata-cpu-avx2 AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME experts.serve_request COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/experts/test_serve_request_stats.sh
           $<TARGET_FILE:strata>)
  set_tests_properties(experts.serve_request PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
# Belady's optimum from a warm cache (the per-request comparison): exact cases and a bound on caches
if(TARGET st_experts)
  add_executable(test_belady_window ${CMAKE_CURRENT_SOURCE_DIR}/experts/test_belady_window.c)
  target_link_libraries(test_belady_window PRIVATE st_experts)
  add_test(NAME experts.belady_window COMMAND test_belady_window)
endif()
# strata plan --load through the commands' path (st_offload_load), with an expert cache
if(TARGET strata AND TARGET strata-sim AND TARGET strata-cpu-avx2 AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME experts.plan_load COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/experts/test_plan_load.sh $<TARGET_FILE:strata>)
  set_tests_properties(experts.plan_load PROPERTIES SKIP_RETURN_CODE 77)
endif()
# the engine's per-request expert statistics and the model's trace windows (cap restart included)
if(TARGET st_engine AND TARGET st_model AND TARGET strata-sim AND TARGET strata-cpu-avx2)
  add_executable(test_request_stats ${CMAKE_CURRENT_SOURCE_DIR}/experts/test_request_stats.c)
  target_link_libraries(test_request_stats PRIVATE st_engine st_model st_backend m)
  add_dependencies(test_request_stats strata-sim strata-cpu-avx2)
  add_test(NAME experts.request_stats COMMAND test_request_stats $<TARGET_FILE:strata-sim> $<TARGET_FILE:strata-cpu-avx2>)
  set_tests_properties(experts.request_stats PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "STRATA_LOG=error;STRATA_SIM=devices=1,mem=256MiB")
endif()
