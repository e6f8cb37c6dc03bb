# Cross-build ppc_variant.c for ppc64le and run it under qemu as POWER9 and as POWER8.
# Inputs: -DCC=<powerpc64le gcc> -DQEMU=<qemu-ppc64le> -DSRC=<source root> -DWORK=<scratch dir>
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${CC} -std=c11 -D_GNU_SOURCE -O1 -Wall -Wextra -Werror -static
                  -I${SRC}/include -I${SRC}/core -I${SRC}/tests/backend
                  ${SRC}/tests/backend/ppc_variant.c ${SRC}/core/backend/variant.c ${SRC}/core/platform/cpu_features.c
                  -o ${WORK}/ppc_variant
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cross build failed:\n${err}")
endif()
foreach(pair "power9;1" "power8;0")
  list(GET pair 0 cpu)
  list(GET pair 1 want)
  execute_process(COMMAND ${QEMU} -cpu ${cpu} ${WORK}/ppc_variant ${want}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${cpu}: ${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "on ${cpu}: exit ${rc}\n${out}${err}")
  endif()
endforeach()
