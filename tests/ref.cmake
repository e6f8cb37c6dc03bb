# Tests of core/ref: every reference op against small hand-computed cases.
foreach(t test_ref_dense test_ref_rope_attn test_ref_moe)
  add_executable(${t} ${CMAKE_CURRENT_SOURCE_DIR}/ref/${t}.c)
  target_link_libraries(${t} PRIVATE st_ref st_quant)
  target_include_directories(${t} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/quant)
  add_test(NAME ref.${t} COMMAND ${t})
endforeach()
