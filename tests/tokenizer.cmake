# Tests of core/tokenizer.
#   tokenizer.unit         hand-built vocabularies: Unicode tables, pre-tokenizer splits, SPM/BPE,
#                          special tokens, BOS/EOS, end-of-generation ids, streaming detokenizer
#   tokenizer.llama_vocab  llama.cpp's ggml-vocab-*.gguf test vectors, 100% match required; the
#                          reference is fetched by ci/fetch-llama-ref.sh into a cache outside the
#                          tree when absent, and the test is skipped only when that cannot reach
#                          the network (exit 77)
if(NOT DEFINED STRATA_LLAMA_REF_DIR)
  if(DEFINED ENV{STRATA_LLAMA_REF_DIR})
    set(_tok_ref_default "$ENV{STRATA_LLAMA_REF_DIR}")
  elseif(DEFINED ENV{STRATA_CACHE})
    set(_tok_ref_default "$ENV{STRATA_CACHE}/llama-ref")
  else()
    set(_tok_ref_default "$ENV{HOME}/.cache/strata/llama-ref")
  endif()
  set(STRATA_LLAMA_REF_DIR "${_tok_ref_default}" CACHE PATH "llama.cpp reference cache (ci/fetch-llama-ref.sh)")
endif()

add_executable(test_tokenizer_unit ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/test_tokenizer_unit.c)
target_link_libraries(test_tokenizer_unit PRIVATE st_tokenizer)
add_test(NAME tokenizer.unit COMMAND test_tokenizer_unit)
set_tests_properties(tokenizer.unit PROPERTIES LABELS "tokenizer")

add_executable(test_tokenizer_llama_vocab ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/test_tokenizer_llama_vocab.c)
target_link_libraries(test_tokenizer_llama_vocab PRIVATE st_tokenizer st_gguf)
add_test(NAME tokenizer.llama_vocab
         COMMAND test_tokenizer_llama_vocab ${STRATA_LLAMA_REF_DIR} ${PROJECT_SOURCE_DIR}/ci/fetch-llama-ref.sh)
set_tests_properties(tokenizer.llama_vocab PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "tokenizer;reference")
