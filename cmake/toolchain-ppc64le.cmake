# Cross-build for little-endian POWER (ppc64le, POWER9 baseline) with Debian's cross gcc.
# Test binaries run under qemu-user: ctest prefixes them with CMAKE_CROSSCOMPILING_EMULATOR.
#   cmake -S . -B build-ppc -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-ppc64le.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ppc64le)

set(STRATA_PPC_TRIPLE powerpc64le-linux-gnu CACHE STRING "Cross toolchain prefix")
set(STRATA_PPC_SYSROOT /usr/${STRATA_PPC_TRIPLE} CACHE PATH "Target root (libraries for qemu -L)")

find_program(STRATA_PPC_CC NAMES ${STRATA_PPC_TRIPLE}-gcc ${STRATA_PPC_TRIPLE}-gcc-12 REQUIRED)
set(CMAKE_C_COMPILER ${STRATA_PPC_CC})
find_program(STRATA_PPC_CXX NAMES ${STRATA_PPC_TRIPLE}-g++ ${STRATA_PPC_TRIPLE}-g++-12)
if(STRATA_PPC_CXX)
  set(CMAKE_CXX_COMPILER ${STRATA_PPC_CXX})
endif()

find_program(STRATA_QEMU_PPC64LE NAMES qemu-ppc64le qemu-ppc64le-static)
if(STRATA_QEMU_PPC64LE)
  # -cpu power9: the module's probe checks AT_HWCAP2 for ISA 3.00, which qemu reports for it.
  set(CMAKE_CROSSCOMPILING_EMULATOR "${STRATA_QEMU_PPC64LE};-cpu;power9;-L;${STRATA_PPC_SYSROOT}")
endif()

# Headers and libraries from the target root only; programs (code generators) from the build host.
set(CMAKE_FIND_ROOT_PATH ${STRATA_PPC_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config must describe target libraries, never the build host's: only the target's
# multiarch and root pkgconfig folders (empty unless ppc64el -dev packages are installed).
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${STRATA_PPC_TRIPLE}/pkgconfig:${STRATA_PPC_SYSROOT}/lib/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
