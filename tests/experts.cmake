# Tests of core/experts: slot table and policies (lru, lfru, profile), statistics, Belady.
if(TARGET st_experts)
  add_executable(test_experts ${CMAKE_CURRENT_SOURCE_DIR}/experts/test_experts.c)
  target_link_libraries(test_experts PRIVATE st_experts)
  add_test(NAME experts.cache COMMAND test_experts)
  add_executable(test_route_stats ${CMAKE_CURRENT_SOURCE_DIR}/experts/test_route_stats.c)
  target_link_libraries(test_route_stats PRIVATE st_experts m)
  add_test(NAME experts.route_stats COMMAND test_route_stats)
  add_executable(test_offload_policy ${CMAKE_CURRENT_SOURCE_DIR}/experts/test_offload_policy.c)
  target_link_libraries(test_offload_policy PRIVATE st_experts m)
  add_test(NAME experts.offload_policy COMMAND test_offload_policy)
endif()

# Tiers on a generated model and a simulated device: file slices, CPU FFN of misses, the RAM
# tier, and one MoE step with device hits through the slot table and CPU misses.
if(TARGET st_experts AND TARGET st_model AND TARGET strata-sim)
  add_executable(test_expert_tiers ${CMAKE_CURRENT_SOURCE_DIR}/experts/test_tiers.c)
  target_link_libraries(test_expert_tiers PRIVATE st_experts st_model st_backend)
  add_dependencies(test_expert_tiers strata-sim)
  add_test(NAME experts.tiers COMMAND test_expert_tiers $<TARGET_FILE:strata-sim>)
  set_tests_properties(experts.tiers PROPERTIES ENVIRONMENT "STRATA_LOG=error")
endif()
# gen-model's balanced router meets a trained router's statistics on a mixed text; the skewed one does not
if(TARGET strata AND TARGET strata-cpu-avx2 AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME experts.route_balanced COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/experts/test_route_balanced.sh
           $<TARGET_FILE:strata> ${CMAKE_CURRENT_SOURCE_DIR}/data/mixed-text.txt)
endif()
