# Tests of core/grammar (GBNF engine, JSON Schema to GBNF, token masks).
#  grammar.engine  (C) accept/reject, error positions, schemas, masks equal per-token checks
if(NOT TARGET st_grammar_json)
  return()
endif()
add_executable(test_grammar ${CMAKE_CURRENT_SOURCE_DIR}/grammar/test_grammar.c)
target_link_libraries(test_grammar PRIVATE st_grammar_json)
add_test(NAME grammar.engine COMMAND test_grammar)
