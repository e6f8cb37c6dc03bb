# Tests of core/experts: slot table and policies (lru, lfru, profile), statistics, Belady.
if(TARGET st_experts)
  add_executable(test_experts ${CMAKE_CURRENT_SOURCE_DIR}/experts/test_experts.c)
  target_link_libraries(test_experts PRIVATE st_experts)
  add_test(NAME experts.cache COMMAND test_experts)
endif()
