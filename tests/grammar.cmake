# Tests of core/grammar (GBNF engine, JSON Schema to GBNF, token masks).
#  grammar.engine  (C) accept/reject, error positions, schemas, masks equal per-token checks
#  grammar.sampler (C) sampled sequences follow the grammar; restricted distribution; logit bias
if(NOT TARGET st_grammar_json)
  return()
endif()
add_executable(test_grammar ${CMAKE_CURRENT_SOURCE_DIR}/grammar/test_grammar.c)
target_link_libraries(test_grammar PRIVATE st_grammar_json)
add_test(NAME grammar.engine COMMAND test_grammar)
# grammar_bench VOCAB.gguf: constrained against free sampling steps (bench/results/2026-12-04-agent.md)
add_executable(grammar_bench ${CMAKE_CURRENT_SOURCE_DIR}/grammar/grammar_bench.c)
target_link_libraries(grammar_bench PRIVATE st_grammar_json st_gguf m)
add_executable(test_grammar_sampler ${CMAKE_CURRENT_SOURCE_DIR}/grammar/test_grammar_sampler.c)
target_link_libraries(test_grammar_sampler PRIVATE st_grammar m)
add_test(NAME grammar.sampler COMMAND test_grammar_sampler)
