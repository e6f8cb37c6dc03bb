#!/usr/bin/env bash
# check_packages.sh BUILD_DIR SOURCE_DIR VERSION COMMIT ABI COMPONENTS
#   Runs cpack (DEB and TGZ) on BUILD_DIR into a temporary directory, then checks:
#   - one .deb per packaged component, with the expected package names and dependencies;
#   - no package and no archive holds the simulated device module (strata-sim.so);
#   - the core .deb, extracted with dpkg -x into a temporary root, runs from there:
#     `strata backends` finds its modules executable-relative in that root and has a usable
#     device, `strata --version` passes check_version.sh, and `strata run` generates 8 greedy
#     tokens of a generated model on the CPU module;
#   - the same for the .tar.gz unpacked and then moved elsewhere (relocatable);
#   - shared objects in the packages: modules carry no soname (dlopen'ed MODULEs); libstrata.so.1
#     carries its soname;
#   COMPONENTS: comma-separated components this build packages (core,dev[,cuda][,vsx]).
set -u
build=$1 src=$2 version=$3 commit=$4 abi=$5 comps=$6
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/pkg_common.sh"

if ! (cd "$build" && cpack -G "DEB;TGZ" -B "$tmp/out" >"$tmp/cpack.log" 2>&1); then
  cat "$tmp/cpack.log"; echo "FAIL: cpack"; exit 1
fi
# cpack builds first (preinstall): when CMake re-ran there, the commit it baked in is the new one
hdr="$build/core/cli/generated/cli/build_info.h"
if [ -f "$hdr" ]; then
  c=$(sed -n 's/^#define STRATA_GIT_COMMIT_STRING "\(.*\)"$/\1/p' "$hdr")
  [ -n "$c" ] && commit=$c
fi
arch=$(dpkg --print-architecture)
declare -A pkg=([core]=strata [dev]=strata-dev [cuda]=strata-backend-cuda [vsx]=strata-backend-vsx)
IFS=, read -r -a want <<<"$comps"
n_deb=$(ls "$tmp/out"/*.deb 2>/dev/null | wc -l)
[ "$n_deb" -eq "${#want[@]}" ] || bad "expected ${#want[@]} .deb files (${comps}), got $n_deb: $(ls "$tmp/out")"
for c in "${want[@]}"; do
  name=${pkg[$c]}
  a=$arch
  f="$tmp/out/${name}_${version}_${a}.deb"
  if [ ! -f "$f" ]; then bad "no package $name ($f)"; continue; fi
  got=$(dpkg-deb -f "$f" Package)
  [ "$got" = "$name" ] || bad "$f: Package '$got', expected '$name'"
  deps=$(dpkg-deb -f "$f" Depends)
  echo "$name: Depends: $deps"
  case "$c" in
    core) case "$deps" in *libc6*) ;; *) bad "$name does not depend on libc6 (shlibdeps)";; esac
          case "$deps" in *cuda*|*nvidia*) bad "$name depends on a GPU library: $deps";; esac ;;
    cuda) case "$deps" in *"strata (= $version)"*) ;; *) bad "$name: no 'strata (= $version)' in Depends";; esac
          case "$deps" in *libcuda*) ;; *) bad "$name: no libcuda in Depends";; esac
          case "$deps" in *cudart*|*cuda-runtime*|*cuda-toolkit*) bad "$name depends on the CUDA toolkit: $deps";; esac ;;
    vsx|dev) case "$deps" in *"strata (= $version)"*) ;; *) bad "$name: no 'strata (= $version)' in Depends";; esac ;;
  esac
  dpkg-deb -c "$f" | grep 'strata-sim' >/dev/null && bad "$name ships the simulated device"
  # modules belong to their component's package only
  mods=$(dpkg-deb -c "$f" | awk '{print $6}' | grep '/lib/strata/backends/.*\.so$' | xargs -rn1 basename | tr '\n' ' ')
  echo "$name: modules: ${mods:-none}"
  case "$c" in
    cuda) for m in $mods; do case "$m" in strata-cuda*) ;; *) bad "$name holds $m";; esac; done
          [ -n "$mods" ] || bad "$name holds no module" ;;
    vsx)  [ "$mods" = "strata-cpu-vsx.so " ] || bad "$name holds '$mods', expected strata-cpu-vsx.so" ;;
    core) for m in $mods; do case "$m" in strata-cuda*|strata-cpu-vsx*) bad "$name holds $m";; esac; done
          dpkg-deb -c "$f" | grep ' \./usr/bin/strata$' >/dev/null || bad "$name has no /usr/bin/strata"
          dpkg-deb -c "$f" | grep -q ' \./usr/lib/libstrata\.so\.1' || bad "$name has no /usr/lib/libstrata.so.1" ;;
    dev)  for p in usr/include/strata/strata.h usr/include/strata/backend.h usr/lib/libstrata.a usr/lib/libstrata.so \
                   usr/lib/pkgconfig/strata.pc; do
            dpkg-deb -c "$f" | grep -q " \./$p" || bad "$name has no /$p"
          done ;;
  esac
done

core="$tmp/out/strata_${version}_${arch}.deb"
if [ -f "$core" ]; then
  mkdir -p "$tmp/root"
  dpkg -x "$core" "$tmp/root" || bad "dpkg -x $core"
  # on POWER the CPU backend is its own package: unpack it beside the core
  vsx="$tmp/out/strata-backend-vsx_${version}_${arch}.deb"
  [ -f "$vsx" ] && { dpkg -x "$vsx" "$tmp/root" || bad "dpkg -x $vsx"; }
  run_tree "$tmp/root/usr" deb
  # adding the CUDA package adds its module to what the core finds (devices only with a GPU
  # and driver; without them the module still loads and says why it has none)
  cuda="$tmp/out/strata-backend-cuda_${version}_${arch}.deb"
  if [ -f "$cuda" ]; then
    dpkg -x "$cuda" "$tmp/root" || bad "dpkg -x $cuda"
    out=$(env -u STRATA_BACKEND_PATH STRATA_LOG=error "$tmp/root/usr/bin/strata" backends 2>&1)
    echo "$out" | grep -A1 'strata-cuda' | sed 's|^|deb+cuda backends: |'
    echo "$out" | grep -Eq "^  [a-z]+ +[^ ]+ +$tmp/root/usr/lib/strata/backends/strata-cuda[a-z0-9-]*\.so\$" ||
      bad "deb+cuda: strata-cuda.so not listed"
    echo "$out" | grep -Eq "^  (entry|abi|probe|devices) +[^ ]+ +$tmp/root/usr/lib/strata/backends/strata-cuda[a-z0-9-]*\.so\$" ||
      bad "deb+cuda: strata-cuda.so did not load past its entry point"
    "$tmp/root/usr/bin/strata" --version | grep 'strata-cuda' | sed 's|^|deb+cuda --version: |'
  fi
fi

tgz=$(ls "$tmp/out"/strata-"$version"-*.tar.gz 2>/dev/null | head -n 1)
if [ -z "$tgz" ]; then
  bad "no .tar.gz"
else
  tar -tzf "$tgz" | grep -q 'strata-sim' && bad "the archive holds the simulated device"
  mkdir -p "$tmp/x" && tar -xzf "$tgz" -C "$tmp/x"
  top=$(ls "$tmp/x")
  mv "$tmp/x/$top" "$tmp/moved"
  run_tree "$tmp/moved" tgz
fi
# the same binary on the same model: the greedy text is the same from both trees
if [ -f "$tmp/deb.out" ] && [ -f "$tmp/tgz.out" ]; then
  cmp -s "$tmp/deb.out" "$tmp/tgz.out" || bad "greedy text differs between the .deb and the archive"
fi
[ $fail -eq 0 ] && echo "PASS: packages built, the core .deb and the archive run where they are unpacked"
exit $fail
