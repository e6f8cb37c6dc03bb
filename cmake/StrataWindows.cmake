# Windows builds (mingw-w64, cmake/toolchain-mingw64.cmake): the POSIX calls mingw lacks come
# from core/platform/win (posix_compat.h, force-included into every C file, and the headers
# beside it: sys/mman.h, sys/resource.h), implemented on Win32 in st_wincompat, which every
# target links. See docs/packaging.md, "Windows".
set(STRATA_WIN_DIR ${PROJECT_SOURCE_DIR}/core/platform/win)
include_directories(BEFORE ${STRATA_WIN_DIR})
add_compile_options(-include ${STRATA_WIN_DIR}/posix_compat.h)
# Windows 8 APIs (GetProcessMemoryInfo's K32 form, LoadLibraryExW's search flags)
add_compile_definitions(_WIN32_WINNT=0x0602 __USE_MINGW_ANSI_STDIO=1)
# The strings are printed by mingw's C99 printf (__USE_MINGW_ANSI_STDIO: %zu, %lld), but gcc
# checks format(printf) attributes against the Microsoft runtime's language there, which has no
# %zu: format checks stay with the Linux builds.
add_compile_options(-Wno-format)
add_library(st_wincompat STATIC ${STRATA_WIN_DIR}/posix_compat.c)
target_link_libraries(st_wincompat PUBLIC psapi)
link_libraries(st_wincompat)
# the C runtime's and winpthread's DLLs are linked in, so strata.exe and the modules need no
# DLL besides Windows' own
add_link_options(-static)
