# The core never links a device library: `readelf -d` on the executable (and the modules that
# are not GPU backends) names none of them. Cross builds run it too: readelf reads any ELF.
find_program(STRATA_READELF NAMES readelf ${CMAKE_C_COMPILER_TARGET}-readelf)
if(STRATA_READELF AND TARGET strata)
  set(_files $<TARGET_FILE:strata>)
  foreach(m strata-sim strata-cpu-avx2 strata-cpu-avx512 strata-cpu-vsx)
    if(TARGET ${m})
      list(APPEND _files $<TARGET_FILE:${m}>)
    endif()
  endforeach()
  add_test(NAME build.no_device_libraries
           COMMAND bash -c "for f in \"$@\"; do if ${STRATA_READELF} -d \"$f\" | grep -E 'NEEDED.*(libcuda|libcudart|libcublas|libamdhip64|libvulkan|libOpenCL)'; then echo \"$f links a device library\"; exit 1; fi; done; echo \"$# files: no device library\""
                   _ ${_files})
endif()
