# Version facts baked into the executable (strata --version) and the packages.
#   STRATA_VERSION     project() version, e.g. 0.1.0
#   STRATA_GIT_COMMIT  the source tree's commit at configure time (12 hex digits, "+dirty"
#                      when tracked files differ), or "unknown" without git or outside a checkout.
# It is read when CMake configures: re-run cmake (or build after touching CMakeLists.txt) to
# refresh it after a commit. -DSTRATA_GIT_COMMIT=<text> overrides it (source tarballs, distros).
set(STRATA_VERSION ${PROJECT_VERSION})
if(NOT DEFINED STRATA_GIT_COMMIT OR STRATA_GIT_COMMIT STREQUAL "")
  set(_commit "unknown")
  find_package(Git QUIET)
  if(GIT_FOUND)
    execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
                    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                    OUTPUT_VARIABLE _out OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE _rc ERROR_QUIET)
    if(_rc EQUAL 0 AND _out MATCHES "^[0-9a-f]+$")
      set(_commit ${_out})
      execute_process(COMMAND ${GIT_EXECUTABLE} diff --quiet HEAD --
                      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                      RESULT_VARIABLE _dirty ERROR_QUIET)
      if(_dirty EQUAL 1)
        string(APPEND _commit "+dirty")
      endif()
    endif()
  endif()
  set(STRATA_GIT_COMMIT_DETECTED ${_commit})
else()
  set(STRATA_GIT_COMMIT_DETECTED ${STRATA_GIT_COMMIT})
endif()
message(STATUS "strata ${STRATA_VERSION}, commit ${STRATA_GIT_COMMIT_DETECTED}")
