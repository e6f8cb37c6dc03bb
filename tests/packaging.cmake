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

# cpack builds the packages; the core .deb is unpacked with dpkg -x and the archive is
# unpacked and moved, and each runs `strata backends` and `strata --version` from there.
find_program(STRATA_DPKG_DEB dpkg-deb)
find_program(STRATA_CPACK cpack HINTS ${CMAKE_COMMAND}/..)
if(TARGET strata AND NOT CMAKE_CROSSCOMPILING AND STRATA_DPKG_DEB AND STRATA_CPACK AND NOT STRATA_SANITIZE)
  string(REPLACE ";" "," _comps "${STRATA_PACKAGE_COMPONENTS}")
  get_filename_component(_cpack_dir ${STRATA_CPACK} DIRECTORY)
  add_test(NAME packaging.deb
           COMMAND env PATH=${_cpack_dir}:$ENV{PATH} ${CMAKE_CURRENT_SOURCE_DIR}/packaging/check_packages.sh
                   ${CMAKE_BINARY_DIR} ${PROJECT_SOURCE_DIR} ${STRATA_VERSION} ${STRATA_GIT_COMMIT_DETECTED}
                   ${STRATA_TEST_ABI} ${_comps})
  # cpack re-installs every component and strips the copies: a few seconds
  set_tests_properties(packaging.deb PROPERTIES LABELS "slow;nosan" TIMEOUT 300 RUN_SERIAL ON)
endif()

# The same packages as RPMs (cpack -G RPM needs rpmbuild; unpacked with rpm2cpio | cpio).
find_program(STRATA_RPMBUILD rpmbuild)
find_program(STRATA_RPM2CPIO rpm2cpio)
find_program(STRATA_CPIO cpio)
if(TARGET strata AND NOT CMAKE_CROSSCOMPILING AND STRATA_RPMBUILD AND STRATA_RPM2CPIO AND STRATA_CPIO AND STRATA_CPACK
   AND NOT STRATA_SANITIZE)
  string(REPLACE ";" "," _comps "${STRATA_PACKAGE_COMPONENTS}")
  get_filename_component(_cpack_dir ${STRATA_CPACK} DIRECTORY)
  add_test(NAME packaging.rpm
           COMMAND env PATH=${_cpack_dir}:$ENV{PATH} ${CMAKE_CURRENT_SOURCE_DIR}/packaging/check_rpm.sh
                   ${CMAKE_BINARY_DIR} ${PROJECT_SOURCE_DIR} ${STRATA_VERSION} ${STRATA_GIT_COMMIT_DETECTED}
                   ${STRATA_TEST_ABI} ${_comps})
  set_tests_properties(packaging.rpm PROPERTIES LABELS "slow;nosan" TIMEOUT 300 RUN_SERIAL ON)
endif()
