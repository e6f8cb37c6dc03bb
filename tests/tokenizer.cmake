# Tests of core/tokenizer.
#   tokenizer.unit         hand-built vocabularies: Unicode tables, pre-tokenizer splits, SPM/BPE,
#                          special tokens, BOS/EOS, end-of-generation ids, streaming detokenizer
#   tokenizer.llama_vocab  llama.cpp's ggml-vocab-*.gguf test vectors, 100% match required; the
#                          reference is fetched by ci/fetch-llama-ref.sh into a cache outside the
#                          tree when absent, and the test is skipped only when that cannot reach
#                          the network (exit 77)
#   tokenizer.vs_llama     differential test against llama.cpp's own tokenizer (libllama from the
#                          same cache; built only when present): ids of generated texts for every
#                          supported vocabulary / pre-tokenizer, every token's piece, eog flags
find_package(Threads REQUIRED)
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
target_link_libraries(test_tokenizer_llama_vocab PRIVATE st_tokenizer st_gguf Threads::Threads)
add_test(NAME tokenizer.llama_vocab
         COMMAND test_tokenizer_llama_vocab ${STRATA_LLAMA_REF_DIR} ${PROJECT_SOURCE_DIR}/ci/fetch-llama-ref.sh)
set_tests_properties(tokenizer.llama_vocab PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "tokenizer;reference")

# tokenizer.vs_llama: differential test against llama.cpp's own tokenizer (libllama from the
# reference cache), built only when the cache holds llama.h and the prebuilt libraries.
set(_tok_llama_inc ${STRATA_LLAMA_REF_DIR}/src/include)
set(_tok_ggml_inc ${STRATA_LLAMA_REF_DIR}/src/ggml/include)
file(GLOB _tok_llama_so ${STRATA_LLAMA_REF_DIR}/linux-x64/package/bins/linux-x64/libllama.v*.so)
file(GLOB _tok_ggml_so ${STRATA_LLAMA_REF_DIR}/linux-x64/package/bins/linux-x64/libggml.v*.so)
set(_tok_ggml_base ${STRATA_LLAMA_REF_DIR}/linux-x64/package/bins/linux-x64/libggml-base.so)
if(STRATA_ARCH_X86 AND EXISTS ${_tok_llama_inc}/llama.h AND EXISTS ${_tok_ggml_inc}/ggml.h
   AND _tok_llama_so AND _tok_ggml_so AND EXISTS ${_tok_ggml_base})
  list(GET _tok_llama_so 0 _tok_llama_so)
  list(GET _tok_ggml_so 0 _tok_ggml_so)
  get_filename_component(_tok_llama_libdir ${_tok_llama_so} DIRECTORY)
  add_executable(test_tokenizer_vs_llama ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/test_tokenizer_vs_llama.c)
  target_include_directories(test_tokenizer_vs_llama PRIVATE ${_tok_llama_inc} ${_tok_ggml_inc})
  target_link_libraries(test_tokenizer_vs_llama PRIVATE st_tokenizer st_gguf ${_tok_llama_so} ${_tok_ggml_so} ${_tok_ggml_base})
  set_target_properties(test_tokenizer_vs_llama PROPERTIES BUILD_RPATH ${_tok_llama_libdir})
  add_test(NAME tokenizer.vs_llama COMMAND test_tokenizer_vs_llama ${STRATA_LLAMA_REF_DIR}/src/models 600)
  set_tests_properties(tokenizer.vs_llama PROPERTIES TIMEOUT 900 LABELS "tokenizer;reference;nosan")
else()
  message(STATUS "tokenizer: llama.cpp libraries not in ${STRATA_LLAMA_REF_DIR}; tokenizer.vs_llama not built")
endif()
