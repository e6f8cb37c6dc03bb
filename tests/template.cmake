# Tests of core/template (the Jinja engine and chat templates).
#  template.jinja      (C) Jinja conformance: whitespace control, expressions, filters, tests,
#                      loops, macros, namespace, methods, errors with positions
#  template.published  published chat templates (llama.cpp's models/templates, fetched by
#                      ci/fetch-llama-ref.sh into the cache) rendered against expected strings
if(NOT TARGET st_template)
  return()
endif()
add_executable(jinja_render ${CMAKE_CURRENT_SOURCE_DIR}/template/jinja_render.c)
target_link_libraries(jinja_render PRIVATE st_template)
add_test(NAME template.published COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/template/published.sh
  $<TARGET_FILE:jinja_render> ${CMAKE_CURRENT_SOURCE_DIR}/template)
set_tests_properties(template.published PROPERTIES SKIP_RETURN_CODE 77)
add_executable(test_jinja ${CMAKE_CURRENT_SOURCE_DIR}/template/test_jinja.c)
target_link_libraries(test_jinja PRIVATE st_template)
add_test(NAME template.jinja COMMAND test_jinja)
