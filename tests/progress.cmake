# The load progress line (core/progress): its text and drawing, and `strata run --progress`.
if(TARGET st_progress)
  add_executable(test_progress ${CMAKE_CURRENT_SOURCE_DIR}/progress/test_progress.c)
  target_link_libraries(test_progress PRIVATE st_progress)
  add_test(NAME progress.format COMMAND test_progress)
endif()
if(TARGET strata AND TARGET strata-sim AND TARGET strata-cpu-avx2 AND NOT CMAKE_CROSSCOMPILING)
  # the simulated GPU has its own memory, so the weights are uploaded (the CPU reads them in
  # place unless --no-mmap: nothing to show); --progress shows the line off a terminal; without
  # it (ctest is no terminal) there is none
  add_test(NAME progress.cli COMMAND bash -c "set -e; d=$(mktemp -d); trap 'rm -rf $d' EXIT;
    $<TARGET_FILE:strata> gen-model --arch qwen3moe --preset tiny --type Q8_0 --seed 1 --out $d/tiny.gguf >/dev/null;
    $<TARGET_FILE:strata> run -m $d/tiny.gguf -p hi -n 2 --temp 0 --backend sim --progress 2>$d/on >/dev/null;
    grep -E '^loading tiny.gguf: [0-9]+% |^loaded tiny.gguf: [0-9.]+ MiB in [0-9.]+ s' $d/on;
    grep -q '^loaded tiny.gguf: ' $d/on;
    $<TARGET_FILE:strata> run -m $d/tiny.gguf -p hi -n 2 --temp 0 --backend sim 2>$d/off >/dev/null;
    if grep -q 'loaded tiny.gguf' $d/off; then echo 'a line without --progress off a terminal'; exit 1; fi;
    $<TARGET_FILE:strata> run -m $d/tiny.gguf -p hi -n 2 --temp 0 --backend cpu --threads 1 --no-mmap --progress 2>$d/cpu >/dev/null;
    grep -q '^loaded tiny.gguf: ' $d/cpu || { echo '--no-mmap on the CPU: no upload, no line'; cat $d/cpu; exit 1; };
    echo 'PASS: --progress prints the line; not without it off a terminal'")
  set_tests_properties(progress.cli PROPERTIES ENVIRONMENT "STRATA_LOG=error;STRATA_SIM=devices=1,mem=1GiB")
endif()
