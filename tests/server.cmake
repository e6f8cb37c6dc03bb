# Tests of `strata serve` (core/server, core/engine): node scripts in tests/server/ drive a real
# server through the official `openai` npm client and raw HTTP.
#  server.oai_text     (C) stop strings, <think> split, JSON shapes and parsing of core/server/openai.c
#  server.chat         (C) chat templates: rendering per family, detection, names, stop strings
#  server.tools        (C) tool calls parsed from each family's syntax, streamed hold-back, request fields, forced calls (JSON and XML syntaxes)
#  server.setup        generated test models; `npm install openai` into the cache (once)
#  server.agent        Jinja template file, tools on chat, /apply-template, /tokenize, /detokenize, /props
#  server.contract     chat/completions, streamed and not, usage, stop strings, limits, seeds, abort
#  server.hostile      malformed and hostile requests, limits, API key; the server stays healthy
#  server.concurrency  1/2/4/8 concurrent ~2K-token streams, equal to one-at-a-time outputs
#  server.supervision  SIGKILL / SIGSEGV / device op fault of the engine: error events, 503, restart
#  server.stall        a hung device op: watchdog stall report, restart
#  server.freeze       a stopped engine (SIGSTOP): heartbeats missed, stall report, error events, restart
#  server.restarts     engines that cannot start: no restart loop, growing back-off, prompt SIGTERM
#  server.vocab        a tokenizer larger than the embedding: warned at load, 400 at submit; control tokens in content are text (built-in and Jinja templates)
#  server.connections  1,000 held connections while 64 streams complete; header deadline; half-closed clients
#  server.embeddings  /v1/embeddings with mean/cls/last pooling against llama.cpp's pooled embedding (llama-ref), input forms, refusals
#  server.host        --host: IPv4/IPv6 addresses, brackets, names, the IPv6 wildcard, a name that does not resolve
#  server.tls         --ssl-key-file/--ssl-cert-file: HTTPS with an openssl-made certificate, plain HTTP refused, start-up errors
#  server.edges        key before body, buffered-bytes cap, key file/env, 405/Allow, 429 Retry-After, JSON/UTF-8/NUL/duplicate keys
#  server.soak         40 s mixed run (STRATA_SOAK_SECONDS=600 for the long one): SIGKILL/SIGSTOP, cancels, hostile bodies, slowloris, overflow
# Needs node (>= 18); without it, or without the openai package, the tests are skipped.
if(NOT TARGET st_server)
  return()
endif()
add_executable(test_oai_text ${CMAKE_CURRENT_SOURCE_DIR}/server/test_oai_text.c)
target_link_libraries(test_oai_text PRIVATE st_server)
add_test(NAME server.oai_text COMMAND test_oai_text)
add_executable(test_chat ${CMAKE_CURRENT_SOURCE_DIR}/server/test_chat.c)
target_link_libraries(test_chat PRIVATE st_server)
add_test(NAME server.chat COMMAND test_chat)
add_executable(test_tools ${CMAKE_CURRENT_SOURCE_DIR}/server/test_tools.c)
target_link_libraries(test_tools PRIVATE st_server)
add_test(NAME server.tools COMMAND test_tools)

find_program(STRATA_NODE node)
set(_srv_dir ${CMAKE_CURRENT_BINARY_DIR}/server-test)
if(DEFINED ENV{STRATA_CACHE})
  set(_srv_node_dir $ENV{STRATA_CACHE}/node)
else()
  set(_srv_node_dir $ENV{HOME}/.cache/strata/node)
endif()
set(_srv_src ${CMAKE_CURRENT_SOURCE_DIR}/server)

add_test(NAME server.setup COMMAND bash ${_srv_src}/setup.sh $<TARGET_FILE:strata> ${_srv_dir} ${_srv_node_dir})
set_tests_properties(server.setup PROPERTIES FIXTURES_SETUP server TIMEOUT 400)

set(_srv_tests agent 180 contract 180 split 120 hostile 120 concurrency 600 supervision 300 stall 180 freeze 120 restarts 180 vocab 120 connections 300 host 120 tls 120 embeddings 180 edges 180 soak 240)
while(_srv_tests)
  list(POP_FRONT _srv_tests _name _timeout)
  if(STRATA_NODE)
    add_test(NAME server.${_name} COMMAND ${STRATA_NODE} ${_srv_src}/${_name}.mjs)
  else()
    add_test(NAME server.${_name} COMMAND sh -c "echo 'SKIP: node is not installed (the server tests are node scripts)'; exit 77")
  endif()
  set_tests_properties(server.${_name} PROPERTIES FIXTURES_REQUIRED server SKIP_RETURN_CODE 77 TIMEOUT ${_timeout}
    ENVIRONMENT "STRATA_BIN=$<TARGET_FILE:strata>;STRATA_TEST_DIR=${_srv_dir};STRATA_NODE_DIR=${_srv_node_dir}")
endwhile()
if(TARGET llama-ref) # the reference of server.embeddings
  set_property(TEST server.embeddings APPEND PROPERTY ENVIRONMENT "STRATA_LLAMA_REF=$<TARGET_FILE:llama-ref>")
endif()
# minutes under a sanitizer build: not part of the sanitizer stage
set_tests_properties(server.concurrency PROPERTIES LABELS slow)

# libFuzzer targets of the HTTP layer and the OpenAI JSON mapping (ci/fuzz.sh builds and runs them)
if(STRATA_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang" AND STRATA_HAVE_LIBFUZZER)
  foreach(_fz fuzz_oai fuzz_http)
    add_executable(${_fz} ${CMAKE_CURRENT_SOURCE_DIR}/server/${_fz}.c)
    target_link_libraries(${_fz} PRIVATE st_server)
    target_compile_options(${_fz} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(${_fz} PRIVATE -fsanitize=fuzzer,address,undefined)
  endforeach()
endif()
