# strata_backend_option(NAME) -> cache var STRATA_BACKEND_<NAME> = AUTO|ON|OFF
function(strata_backend_option name doc)
  set(STRATA_BACKEND_${name} AUTO CACHE STRING "${doc} (AUTO|ON|OFF)")
  set_property(CACHE STRATA_BACKEND_${name} PROPERTY STRINGS AUTO ON OFF)
endfunction()

# strata_backend_skip(NAME reason): one clear configure line; fatal when the user said ON.
function(strata_backend_skip name reason)
  if(STRATA_BACKEND_${name} STREQUAL "ON")
    message(FATAL_ERROR "backend ${name}: requested ON but ${reason}")
  endif()
  message(STATUS "backend ${name}: skipped (${reason})")
endfunction()

# strata_module_component(TARGET OUT): the install COMPONENT of a backend module, which is the
# package that ships it (cmake/StrataPackaging.cmake, docs/packaging.md): GPU and ISA backends
# that have their own package get their own component, x86 CPU modules go with the executable
# (core), and the simulated device (sim) is installed by `cmake --install` but never packaged.
# A directory may set STRATA_MODULE_COMPONENT before adding its module to override the choice.
function(strata_module_component target out)
  if(STRATA_MODULE_COMPONENT)
    set(c ${STRATA_MODULE_COMPONENT})
  elseif(target MATCHES "^strata-cuda")
    set(c cuda)
  elseif(target MATCHES "^strata-cpu-vsx")
    set(c vsx)
  elseif(target MATCHES "^strata-sim")
    set(c sim)
  elseif(target MATCHES "^strata-(hip|rocm)")
    set(c hip)
  elseif(target MATCHES "^strata-vulkan")
    set(c vulkan)
  else()
    set(c core)
  endif()
  set(${out} ${c} PARENT_SCOPE)
endfunction()

# strata_add_module(TARGET SOURCES...) : a backend MODULE exporting only st_backend_entry.
# Output file: ${STRATA_MODULE_DIR}/<TARGET>.so (no lib prefix), installed beside the others.
# A MODULE is only ever dlopen'ed by path, never linked against, so it has no soname.
function(strata_add_module target)
  add_library(${target} MODULE ${ARGN})
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${STRATA_MODULE_DIR})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/core
                             ${PROJECT_SOURCE_DIR}/backends)
  if(WIN32)
    # a DLL resolves every symbol at link time anyway; -z defs is ELF-only
    target_link_options(${target} PRIVATE -Wl,--no-undefined -Wl,--exclude-libs,ALL)
  elseif(NOT APPLE)
    target_link_options(${target} PRIVATE -Wl,--no-undefined -Wl,-z,defs -Wl,--exclude-libs,ALL)
  endif()
  strata_module_component(${target} comp)
  install(TARGETS ${target} LIBRARY DESTINATION ${STRATA_INSTALL_MODULE_DIR} COMPONENT ${comp})
  message(STATUS "backend ${target}: building")
endfunction()
