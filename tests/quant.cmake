# Tests of core/quant: fp16/bf16 conversions, type table, block layouts, round trips.
foreach(t test_half test_quant_types test_quant_blocks test_quant_roundtrip)
  add_executable(${t} ${CMAKE_CURRENT_SOURCE_DIR}/quant/${t}.c)
  target_link_libraries(${t} PRIVATE st_quant)
  target_include_directories(${t} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/quant)
  add_test(NAME quant.${t} COMMAND ${t})
endforeach()
