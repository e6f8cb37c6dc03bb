# Versioning and packages (docs/packaging.md).
if(TARGET strata AND NOT CMAKE_CROSSCOMPILING)
  # The ABI the executable should report, read from the header it is built with.
  file(STRINGS ${PROJECT_SOURCE_DIR}/include/strata/backend.h _abi_maj REGEX "^#define ST_ABI_MAJOR ")
  file(STRINGS ${PROJECT_SOURCE_DIR}/include/strata/backend.h _abi_min REGEX "^#define ST_ABI_MINOR ")
  string(REGEX MATCH "[0-9]+" _abi_maj "${_abi_maj}")
  string(REGEX MATCH "[0-9]+" _abi_min "${_abi_min}")
  set(STRATA_TEST_ABI "${_abi_maj}.${_abi_min}")
  # Modules every build of this tree on this machine must find and load.
  set(_mods "")
  if(TARGET strata-sim)
    list(APPEND _mods strata-sim.so)
  endif()
  add_test(NAME cli.version
           COMMAND env -u STRATA_BACKEND_PATH ${CMAKE_CURRENT_SOURCE_DIR}/packaging/check_version.sh
                   $<TARGET_FILE:strata> ${STRATA_VERSION} ${STRATA_GIT_COMMIT_DETECTED} ${STRATA_TEST_ABI} ${_mods})
  set_tests_properties(cli.version PROPERTIES ENVIRONMENT "STRATA_LOG=error;STRATA_SIM=devices=1,mem=256MiB")
endif()
