# CUDA backend tests. cuda_module: loads strata-cuda, checks its exports, ABI answer and probe
# (runs anywhere: without a driver the probe must say so). cuda_ops: every op on device 0
# against core/ref; exits 77 (reported as skipped) when no usable GPU is present.
if(TARGET strata-cuda AND TARGET st_ref)
  add_executable(test_cuda_ops cuda/cuda_harness.c cuda/test_cuda_dense.c cuda/test_cuda_moe.c
                 cuda/test_cuda_attention.c cuda/test_cuda_misc.c cuda/test_cuda_bench.c cuda/ref_mock.c
                 cuda/test_cuda_batched.c
                 cuda/test_cuda_parity.c ${PROJECT_SOURCE_DIR}/backends/cpu/kernels_scalar.c ${PROJECT_SOURCE_DIR}/backends/cpu/kernels_fp4.c
                 ${PROJECT_SOURCE_DIR}/backends/cpu/cpu_dequant.c)
  # the CPU module's scalar kernel table, the partner the decode GEMV must agree with
  target_include_directories(test_cuda_ops PRIVATE ${PROJECT_SOURCE_DIR}/backends ${PROJECT_SOURCE_DIR}/core)
  target_link_libraries(test_cuda_ops PRIVATE st_ref st_quant ${CMAKE_DL_LIBS} m)
  add_dependencies(test_cuda_ops strata-cuda)
  add_test(NAME cuda_ops COMMAND test_cuda_ops $<TARGET_FILE:strata-cuda>)
  set_tests_properties(cuda_ops PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()
if(TARGET strata-cuda)
  add_executable(test_cuda_module cuda/test_cuda_module.c)
  target_link_libraries(test_cuda_module PRIVATE ${CMAKE_DL_LIBS})
  target_include_directories(test_cuda_module PRIVATE ${PROJECT_SOURCE_DIR}/include)
  add_dependencies(test_cuda_module strata-cuda)
  add_test(NAME cuda_module COMMAND test_cuda_module $<TARGET_FILE:strata-cuda>)
endif()
if(TARGET test_cuda_dequant)
  add_test(NAME cuda_dequant_host COMMAND test_cuda_dequant)
endif()
if(TARGET strata-cuda AND TARGET st_conformance)
  add_executable(test_cuda_conformance cuda/test_cuda_conformance.c)
  target_link_libraries(test_cuda_conformance PRIVATE st_conformance ${CMAKE_DL_LIBS})
  add_dependencies(test_cuda_conformance strata-cuda)
  add_test(NAME cuda_conformance COMMAND test_cuda_conformance $<TARGET_FILE:strata-cuda>)
  set_tests_properties(cuda_conformance PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
endif()
if(TARGET test_cuda_ops)
  # The same op cases with core/ref standing in for the device: every comparison must be exact.
  add_test(NAME cuda_ops_harness_ref COMMAND test_cuda_ops --ref)
endif()
if(TARGET strata-cuda AND ST_CUDA_TOOLKIT_MM VERSION_GREATER_EQUAL 13.0)
  # sm_70 with a CUDA 13 toolkit: configure stops with the line that says to use CUDA 12
  # (docs/cuda.md, "A CUDA 12 module for sm_70") instead of failing later in CMake's compiler test
  add_test(NAME cuda.sm70_needs_cuda12
           COMMAND ${CMAKE_COMMAND} -S ${PROJECT_SOURCE_DIR} -B ${CMAKE_BINARY_DIR}/test-work/sm70
                   -DCMAKE_CUDA_COMPILER=${CMAKE_CUDA_COMPILER} -DSTRATA_CUDA_ARCHS=70 -DSTRATA_TESTS=OFF)
  set_tests_properties(cuda.sm70_needs_cuda12 PROPERTIES PASS_REGULAR_EXPRESSION
                       "sm_70, which CUDA 1[3-9][.][0-9]+ cannot target" TIMEOUT 300)
endif()
