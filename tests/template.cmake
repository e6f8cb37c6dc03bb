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
