# Simulated devices: accounting, fault injection, bandwidth, peer copies, configuration.
if(TARGET strata-sim)
  add_executable(test_sim ${CMAKE_CURRENT_SOURCE_DIR}/sim/test_sim.c ${PROJECT_SOURCE_DIR}/backends/sim/sim_config.c)
  target_include_directories(test_sim PRIVATE ${PROJECT_SOURCE_DIR}/backends)
  target_link_libraries(test_sim PRIVATE st_backend)
  add_dependencies(test_sim strata-sim)
  add_test(NAME sim_devices COMMAND test_sim $<TARGET_FILE:strata-sim>)
  set_tests_properties(sim_devices PROPERTIES ENVIRONMENT "STRATA_LOG=error")
endif()
