# Tests of the POWER9 VSX CPU module (backends/vsx). Only in ppc64le builds; in a cross build
# ctest runs them through CMAKE_CROSSCOMPILING_EMULATOR (qemu-ppc64le, see
# cmake/toolchain-ppc64le.cmake).
if(NOT STRATA_ARCH_PPC64LE OR NOT TARGET strata-cpu-vsx)
  return()
endif()

# Kernels against the scalar table and a double reference, linked directly (no module).
add_executable(test_vsx_kernels ${CMAKE_CURRENT_SOURCE_DIR}/vsx/test_vsx_kernels.c
               $<TARGET_OBJECTS:strata-cpu-vsx_kernels>)
target_sources(test_vsx_kernels PRIVATE ${PROJECT_SOURCE_DIR}/backends/cpu/kernels_scalar.c ${PROJECT_SOURCE_DIR}/backends/cpu/kernels_fp4.c
               ${PROJECT_SOURCE_DIR}/backends/cpu/cpu_dequant.c)
target_include_directories(test_vsx_kernels PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/core
                           ${PROJECT_SOURCE_DIR}/backends)
target_compile_options(test_vsx_kernels PRIVATE ${STRATA_VSX_KERNEL_OPTIONS})
target_link_libraries(test_vsx_kernels PRIVATE st_quant m)
add_test(NAME vsx_kernels COMMAND test_vsx_kernels)

# The module as the host loads it (dlopen + st_backend_entry), against core/ref.
if(TARGET st_conformance AND TARGET st_ref)
  add_executable(test_vsx_ops ${CMAKE_CURRENT_SOURCE_DIR}/vsx/test_vsx_ops.c)
  target_link_libraries(test_vsx_ops PRIVATE st_conformance st_ref st_quant ${CMAKE_DL_LIBS} m)
  add_dependencies(test_vsx_ops strata-cpu-vsx)
  # Identity, probe, every VSX weight format through MATMUL / MOE_MATMUL against st_ref,
  # batch-size and thread-count invariance.
  add_test(NAME vsx_ops COMMAND test_vsx_ops $<TARGET_FILE:strata-cpu-vsx> --no-conformance)
  # Every op through the conformance harness, one test per op group so ctest -j spreads them
  # (under qemu the reference quantizers that make the inputs dominate the time). The filter
  # "matmul" also selects the moe_matmul group.
  foreach(g get_rows rms_norm matmul rope kv_write attention elementwise router moe_combine topk)
    add_test(NAME vsx_conformance_${g}
             COMMAND test_vsx_ops $<TARGET_FILE:strata-cpu-vsx> --conformance-only --quick --threads 2 --filter ${g})
    set_tests_properties(vsx_conformance_${g} PROPERTIES TIMEOUT 900 LABELS "vsx;conformance")
  endforeach()
  # The same module on a POWER8 CPU model: the probe must refuse it and no device may open.
  if(CMAKE_CROSSCOMPILING AND STRATA_QEMU_PPC64LE)
    add_test(NAME vsx_probe_power8
             COMMAND ${STRATA_QEMU_PPC64LE} -cpu power8 -L ${STRATA_PPC_SYSROOT}
                     $<TARGET_FILE:test_vsx_ops> $<TARGET_FILE:strata-cpu-vsx> --expect-unusable)
  endif()
endif()
