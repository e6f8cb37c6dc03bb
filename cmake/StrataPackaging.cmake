# CPack: one build gives
#   strata-<version>-Linux-<arch>.tar.gz   relocatable tree (bin/, lib/strata/backends/, share/)
#                                          with every packaged component
#   strata_<version>_<arch>.deb            core: the executable, the x86 CPU modules, libstrata.so.1
#   strata-backend-cuda_<version>_<arch>.deb   strata-cuda*.so (when the CUDA module is built)
#   strata-backend-vsx_<version>_ppc64el.deb   strata-cpu-vsx.so (ppc64le builds)
#   strata-<component>-<version>-1.<arch>.rpm  the same packages as RPMs (cpack -G RPM)
#   strata-dev_<version>_<arch>.deb        strata/strata.h, libstrata.so/.a, strata.pc (the embedding
#                                          API) and strata/backend.h (out-of-tree backend modules)
# Components are set where each file is installed (strata_module_component in
# cmake/StrataModule.cmake, core/cli, core/backend). The simulated device (component sim) is
# left out of every package. See docs/packaging.md.
#
#   cmake --build build && (cd build && cpack)          # all generators
#   cpack --config build/CPackConfig.cmake -G DEB -B out  # one generator, elsewhere

install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/THIRD-PARTY.md ${PROJECT_SOURCE_DIR}/CHANGELOG.md
        ${PROJECT_SOURCE_DIR}/README.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT core OPTIONAL)

# Which packaged components this build has (a component with nothing installed would make an
# empty package).
set(STRATA_PACKAGE_COMPONENTS core dev)
if(TARGET strata-cuda)
  list(APPEND STRATA_PACKAGE_COMPONENTS cuda)
endif()
if(TARGET strata-cpu-vsx)
  list(APPEND STRATA_PACKAGE_COMPONENTS vsx)
endif()

set(STRATA_DEB_CUDA_DEPENDS "libcuda1" CACHE STRING
    "Debian dependency naming the NVIDIA driver's libcuda.so.1 for strata-backend-cuda")
set(STRATA_PACKAGE_CONTACT "Strata maintainers <strata@invalid>" CACHE STRING "Maintainer field of the packages")

set(CPACK_PACKAGE_NAME strata)
set(CPACK_PACKAGE_VENDOR "Strata")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${STRATA_PACKAGE_CONTACT}")
# (no CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPackDeb would put it in front of every component's own
# first line, which is that package's synopsis)
set(CPACK_PACKAGE_HOMEPAGE_URL "")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR "TGZ;DEB")
if(WIN32)
  # strata-<version>-Windows-AMD64.zip: bin/strata.exe, lib/strata/backends/*.dll
  set(CPACK_GENERATOR ZIP)
endif()
set(CPACK_SOURCE_GENERATOR "")
set(CPACK_PACKAGE_CHECKSUM SHA256)
set(CPACK_COMPONENTS_ALL ${STRATA_PACKAGE_COMPONENTS})
set(CPACK_STRIP_FILES ON)

# Archive: one tree holding every packaged component (ALL_COMPONENTS_IN_ONE, so sim stays out),
# relative paths only (bin/, lib/, share/), so it runs wherever it is unpacked. The prefix and
# grouping differ per generator: cmake/StrataCPackOptions.cmake.in.
set(CPACK_ARCHIVE_COMPONENT_INSTALL ON)
configure_file(${PROJECT_SOURCE_DIR}/cmake/StrataCPackOptions.cmake.in ${CMAKE_BINARY_DIR}/StrataCPackOptions.cmake @ONLY)
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_BINARY_DIR}/StrataCPackOptions.cmake)
set(CPACK_PACKAGE_FILE_NAME "strata-${PROJECT_VERSION}-${CMAKE_SYSTEM_NAME}-${CMAKE_SYSTEM_PROCESSOR}")

# Debian: one package per component.
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Debian architecture of the target (cpack would otherwise ask dpkg for the host's, wrong in a
# cross build such as cmake/toolchain-ppc64le.cmake).
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(ppc64le|powerpc64le)$")
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE ppc64el)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
endif()
find_program(STRATA_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(STRATA_DPKG_SHLIBDEPS AND NOT CMAKE_CROSSCOMPILING)
  # libc, libm, libmicrohttpd, libcjson, ... read from the binaries themselves
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  # dpkg-shlibdeps cannot read a cross build's target libraries: name them by hand
  set(_core_deps "libc6 (>= 2.34)")
  if(TARGET st_server)
    string(APPEND _core_deps ", libmicrohttpd12 (>= 0.9.50), libcjson1 (>= 1.7.13)")
  endif()
  set(CPACK_DEBIAN_CORE_PACKAGE_DEPENDS "${_core_deps}")
  message(STATUS "packaging: .deb dependencies named by hand (${_core_deps}), not by dpkg-shlibdeps")
endif()
set(_ver "${PROJECT_VERSION}")

set(CPACK_DEBIAN_CORE_PACKAGE_NAME strata)
set(CPACK_DEBIAN_CORE_DESCRIPTION "Strata MoE runtime: the strata executable and its CPU backends
The strata command (run, serve, bench, plan, backends, ...), the CPU backend modules for
this architecture, and libstrata.so.1, the embedding library. GPU backends come in their own
packages (strata-backend-cuda); installing one adds its devices to `strata backends`.")
if(TARGET strata-cpu-vsx)
  # on POWER the CPU backend is its own package
  set(CPACK_DEBIAN_CORE_PACKAGE_RECOMMENDS "strata-backend-vsx (= ${_ver})")
endif()
set(CPACK_DEBIAN_CORE_PACKAGE_SUGGESTS "strata-backend-cuda (= ${_ver})")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME strata-dev)
# libstrata.a is compiled code: the package has the target's architecture
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "strata (= ${_ver})")
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_DEV_DESCRIPTION "Strata development files: the embedding API and the backend ABI
strata/strata.h with libstrata.so, libstrata.a and strata.pc (pkg-config strata) to embed
Strata in a program; strata/backend.h, the table a backend module exports (st_backend_entry),
for backends built outside the Strata tree.")

set(CPACK_DEBIAN_CUDA_PACKAGE_NAME strata-backend-cuda)
# The CUDA runtime is linked statically; only the driver's libcuda.so.1 is needed at run time
# (loaded by the runtime, so dpkg-shlibdeps cannot see it).
set(CPACK_DEBIAN_CUDA_PACKAGE_DEPENDS "strata (= ${_ver}), ${STRATA_DEB_CUDA_DEPENDS}")
set(CPACK_DEBIAN_CUDA_DESCRIPTION "Strata CUDA backend module
strata-cuda.so for NVIDIA GPUs. The CUDA runtime is linked in; it needs only the NVIDIA
driver (libcuda.so.1).")

set(CPACK_DEBIAN_VSX_PACKAGE_NAME strata-backend-vsx)
set(CPACK_DEBIAN_VSX_PACKAGE_DEPENDS "strata (= ${_ver})")
set(CPACK_DEBIAN_VSX_DESCRIPTION "Strata POWER9 VSX CPU backend module
strata-cpu-vsx.so, the CPU backend for POWER9 and later (ppc64el).")

# RPM: the same components and package names as Debian's (cpack -G RPM; needs rpmbuild). Shared
# libraries' dependencies come from rpmbuild's own scan; what it cannot see is named here.
set(CPACK_RPM_COMPONENT_INSTALL ON)
set(CPACK_RPM_FILE_NAME RPM-DEFAULT)
set(CPACK_RPM_PACKAGE_LICENSE "Apache-2.0")
set(CPACK_RPM_PACKAGE_GROUP "Applications/Engineering")
set(CPACK_RPM_PACKAGE_RELEASE 1)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(ppc64le|powerpc64le)$")
  set(CPACK_RPM_PACKAGE_ARCHITECTURE ppc64le)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(CPACK_RPM_PACKAGE_ARCHITECTURE x86_64)
endif()
# /usr/lib/strata and /usr/lib/pkgconfig are shared by several packages; the standard ones are
# owned by the system's filesystem package
list(APPEND CPACK_RPM_EXCLUDE_FROM_AUTO_FILELIST_ADDITION /usr/lib/pkgconfig /usr/include)
set(STRATA_RPM_CUDA_REQUIRES "libcuda.so.1()(64bit)" CACHE STRING
    "RPM requirement naming the NVIDIA driver's libcuda.so.1 for strata-backend-cuda")
set(CPACK_RPM_CORE_PACKAGE_NAME strata)
set(CPACK_RPM_CORE_PACKAGE_SUMMARY "Strata MoE runtime: the strata executable, CPU backends, libstrata")
set(CPACK_RPM_CORE_PACKAGE_DESCRIPTION "${CPACK_DEBIAN_CORE_DESCRIPTION}")
set(CPACK_RPM_DEV_PACKAGE_NAME strata-dev)
set(CPACK_RPM_DEV_PACKAGE_SUMMARY "Strata development files: the embedding API and the backend ABI")
set(CPACK_RPM_DEV_PACKAGE_DESCRIPTION "${CPACK_DEBIAN_DEV_DESCRIPTION}")
set(CPACK_RPM_DEV_PACKAGE_REQUIRES "strata = ${_ver}")
set(CPACK_RPM_CUDA_PACKAGE_NAME strata-backend-cuda)
set(CPACK_RPM_CUDA_PACKAGE_SUMMARY "Strata CUDA backend module")
set(CPACK_RPM_CUDA_PACKAGE_DESCRIPTION "${CPACK_DEBIAN_CUDA_DESCRIPTION}")
set(CPACK_RPM_CUDA_PACKAGE_REQUIRES "strata = ${_ver}, ${STRATA_RPM_CUDA_REQUIRES}")
set(CPACK_RPM_VSX_PACKAGE_NAME strata-backend-vsx)
set(CPACK_RPM_VSX_PACKAGE_SUMMARY "Strata POWER9 VSX CPU backend module")
set(CPACK_RPM_VSX_PACKAGE_DESCRIPTION "${CPACK_DEBIAN_VSX_DESCRIPTION}")
set(CPACK_RPM_VSX_PACKAGE_REQUIRES "strata = ${_ver}")

include(CPack)
cpack_add_component(core DISPLAY_NAME "strata" DESCRIPTION "executable and CPU backends" REQUIRED)
cpack_add_component(dev DISPLAY_NAME "strata-dev" DESCRIPTION "embedding API and backend module ABI" DEPENDS core)
cpack_add_component(cuda DISPLAY_NAME "strata-backend-cuda" DESCRIPTION "CUDA backend module" DEPENDS core)
cpack_add_component(vsx DISPLAY_NAME "strata-backend-vsx" DESCRIPTION "POWER9 VSX CPU backend module" DEPENDS core)
