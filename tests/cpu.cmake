# Tests of the x86 CPU modules (backends/cpu framework + backends/cpu_avx2 kernels):
#  cpu.kernels.<isa>   every SIMD kernel slot against the scalar slot (and batch invariance)
#  cpu.module.<isa>.tN the built module file, dlopen'ed, against core/ref with N threads
#  cpu.module.<isa>.pinned the same, 2 threads, workers pinned (STRATA_CPU_PIN=1)
#  cpu.conformance.<isa> the shared conformance harness on the module
# bench_matmul (not a test) times Q4_K / Q8_0 GEMV and prints GB/s; bench_ops (not a test) times
# decode attention, one token's MoE GEMVs and argmax.
if(TARGET strata-cpu-avx2 AND TARGET st_ref AND TARGET st_quant)
  set(_cpu_inc ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/core ${PROJECT_SOURCE_DIR}/backends
               ${CMAKE_CURRENT_SOURCE_DIR}/quant ${CMAKE_CURRENT_SOURCE_DIR}/cpu)

  add_executable(test_cpu_module ${CMAKE_CURRENT_SOURCE_DIR}/cpu/test_cpu_module.c)
  target_include_directories(test_cpu_module PRIVATE ${_cpu_inc})
  target_link_libraries(test_cpu_module PRIVATE st_ref st_quant ${CMAKE_DL_LIBS} m)
  add_dependencies(test_cpu_module strata-cpu-avx2)

  foreach(isa avx2 avx512)
    if(NOT TARGET strata-cpu-${isa})
      continue()
    endif()
    add_dependencies(test_cpu_module strata-cpu-${isa})
    foreach(th 1 2)
      add_test(NAME cpu.module.${isa}.t${th} COMMAND test_cpu_module $<TARGET_FILE:strata-cpu-${isa}> ${th})
      set_tests_properties(cpu.module.${isa}.t${th} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
    endforeach()
    # the same with the workers pinned (STRATA_CPU_PIN=1): results unchanged, workers pinned
    add_test(NAME cpu.module.${isa}.pinned COMMAND test_cpu_module $<TARGET_FILE:strata-cpu-${isa}> 2)
    set_tests_properties(cpu.module.${isa}.pinned PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                         ENVIRONMENT STRATA_CPU_PIN=1)

    add_executable(test_cpu_kernels_${isa} ${CMAKE_CURRENT_SOURCE_DIR}/cpu/test_cpu_kernels.c
                   ${PROJECT_SOURCE_DIR}/backends/cpu/kernels_scalar.c ${PROJECT_SOURCE_DIR}/backends/cpu/kernels_x8.c
                   ${PROJECT_SOURCE_DIR}/backends/cpu/kernels_fp4.c ${PROJECT_SOURCE_DIR}/backends/cpu/cpu_dequant.c
                   $<TARGET_OBJECTS:strata-cpu-${isa}_kernels>)
    target_include_directories(test_cpu_kernels_${isa} PRIVATE ${_cpu_inc})
    target_link_libraries(test_cpu_kernels_${isa} PRIVATE st_quant m)
    if(isa STREQUAL "avx512")
      target_compile_definitions(test_cpu_kernels_${isa} PRIVATE ST_TEST_AVX512)
    endif()
    add_test(NAME cpu.kernels.${isa} COMMAND test_cpu_kernels_${isa})
    set_tests_properties(cpu.kernels.${isa} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)

    # x8 groups (8 interleaved weight rows) against the portable oracle and the row kernels
    add_executable(test_cpu_x8_${isa} ${CMAKE_CURRENT_SOURCE_DIR}/cpu/test_cpu_x8.c
                   ${PROJECT_SOURCE_DIR}/backends/cpu/kernels_scalar.c ${PROJECT_SOURCE_DIR}/backends/cpu/kernels_x8.c
                   ${PROJECT_SOURCE_DIR}/backends/cpu/kernels_fp4.c ${PROJECT_SOURCE_DIR}/backends/cpu/cpu_dequant.c
                   $<TARGET_OBJECTS:strata-cpu-${isa}_kernels>)
    target_include_directories(test_cpu_x8_${isa} PRIVATE ${_cpu_inc} ${CMAKE_CURRENT_SOURCE_DIR}/common)
    target_link_libraries(test_cpu_x8_${isa} PRIVATE st_quant m)
    if(isa STREQUAL "avx512")
      target_compile_definitions(test_cpu_x8_${isa} PRIVATE ST_TEST_AVX512)
    endif()
    add_test(NAME cpu.x8_kernels.${isa} COMMAND test_cpu_x8_${isa})
    set_tests_properties(cpu.x8_kernels.${isa} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
  endforeach()

  # the shared conformance harness (what `strata conformance` runs) on each module
  if(TARGET st_conformance)
    add_executable(test_cpu_conformance ${CMAKE_CURRENT_SOURCE_DIR}/cpu/test_cpu_conformance.c)
    target_link_libraries(test_cpu_conformance PRIVATE st_conformance ${CMAKE_DL_LIBS})
    foreach(isa avx2 avx512)
      if(TARGET strata-cpu-${isa})
        add_dependencies(test_cpu_conformance strata-cpu-${isa})
        add_test(NAME cpu.conformance.${isa} COMMAND test_cpu_conformance $<TARGET_FILE:strata-cpu-${isa}> 2)
        set_tests_properties(cpu.conformance.${isa} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
      endif()
    endforeach()
  endif()

  add_executable(bench_matmul ${CMAKE_CURRENT_SOURCE_DIR}/cpu/bench_matmul.c)
  target_include_directories(bench_matmul PRIVATE ${_cpu_inc})
  target_link_libraries(bench_matmul PRIVATE st_quant ${CMAKE_DL_LIBS} m)

  add_executable(bench_ops ${CMAKE_CURRENT_SOURCE_DIR}/cpu/bench_ops.c)
  target_include_directories(bench_ops PRIVATE ${_cpu_inc})
  target_link_libraries(bench_ops PRIVATE st_gguf st_quant ${CMAKE_DL_LIBS} m)
endif()

# bench_ggml_ref (not a test): the same GEMV run by llama.cpp's CPU backend, when its prebuilt
# library has been fetched (ci/fetch-llama-ref.sh) -- a speed rival measured side by side.
set(_ggml_ref_dir "$ENV{HOME}/.cache/strata/llama-ref")
if(STRATA_ARCH_X86 AND TARGET st_quant AND EXISTS ${_ggml_ref_dir}/src/ggml/include/ggml-backend.h)
  file(GLOB_RECURSE _ggml_base FOLLOW_SYMLINKS ${_ggml_ref_dir}/linux-x64/*/libggml-base.so)
  if(_ggml_base)
    list(GET _ggml_base 0 _ggml_base)
    get_filename_component(_ggml_libdir ${_ggml_base} DIRECTORY)
    file(GLOB _ggml_main ${_ggml_libdir}/libggml.v*.so)
    add_executable(bench_ggml_ref ${CMAKE_CURRENT_SOURCE_DIR}/cpu/bench_ggml_ref.c)
    target_include_directories(bench_ggml_ref PRIVATE ${_ggml_ref_dir}/src/ggml/include ${PROJECT_SOURCE_DIR}/include
                               ${PROJECT_SOURCE_DIR}/core)
    target_link_libraries(bench_ggml_ref PRIVATE ${_ggml_main} ${_ggml_base} st_quant m)
    target_compile_options(bench_ggml_ref PRIVATE -Wno-error)
    set_target_properties(bench_ggml_ref PROPERTIES BUILD_RPATH ${_ggml_libdir})
  endif()
endif()
