# Tests of core/sample: PRNG, sampler cuts, penalties, reproducibility.
add_executable(test_sample ${CMAKE_CURRENT_SOURCE_DIR}/sample/test_sample.c)
target_link_libraries(test_sample PRIVATE st_sample)
add_test(NAME sample.sampler COMMAND test_sample)
