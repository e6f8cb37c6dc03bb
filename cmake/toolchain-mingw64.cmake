# Cross-build for 64-bit Windows with Debian's mingw-w64 (gcc-mingw-w64-x86-64) on Linux.
# Programs and tests run under wine: ctest prefixes them with CMAKE_CROSSCOMPILING_EMULATOR.
#   cmake -S . -B build-win -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-mingw64.cmake
# Builds strata.exe and the CPU backend modules as DLLs (docs/packaging.md, "Windows").
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR AMD64)

set(STRATA_MINGW_TRIPLE x86_64-w64-mingw32 CACHE STRING "Cross toolchain prefix")
find_program(STRATA_MINGW_CC NAMES ${STRATA_MINGW_TRIPLE}-gcc-posix ${STRATA_MINGW_TRIPLE}-gcc REQUIRED)
set(CMAKE_C_COMPILER ${STRATA_MINGW_CC})
set(CMAKE_RC_COMPILER ${STRATA_MINGW_TRIPLE}-windres)

find_program(STRATA_WINE NAMES wine64 wine)
if(STRATA_WINE)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${STRATA_WINE})
endif()

set(CMAKE_FIND_ROOT_PATH /usr/${STRATA_MINGW_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# no Windows builds of libmicrohttpd or cJSON here: pkg-config finds nothing (the server and
# the Jinja chat templates are left out, as on any build without them)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/${STRATA_MINGW_TRIPLE}/lib/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
