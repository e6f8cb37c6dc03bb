# `cmake --install` gives a relocatable tree: install, move the tree elsewhere, and the moved
# bin/strata still finds lib/strata/backends/*.so relative to itself.
if(TARGET strata AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME build.install_relocatable
           COMMAND bash -c "set -e; d=$(mktemp -d); trap 'rm -rf $d' EXIT;
             ${CMAKE_COMMAND} --install '${CMAKE_BINARY_DIR}' --prefix $d/a >/dev/null;
             mv $d/a $d/moved;
             out=$(env -u STRATA_BACKEND_PATH $d/moved/bin/strata backends);
             echo \"$out\" | grep -q \"executable-relative *$d/moved/lib/strata/backends\";
             echo \"$out\" | grep -q 'Usable devices: [1-9]';
             echo 'installed tree works after a move'")
  set_tests_properties(build.install_relocatable PROPERTIES LABELS "nosan")
endif()
