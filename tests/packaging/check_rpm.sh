#!/usr/bin/env bash
# check_rpm.sh BUILD_DIR SOURCE_DIR VERSION COMMIT ABI COMPONENTS
#   Runs cpack -G RPM on BUILD_DIR into a temporary directory, then checks:
#   - one .rpm per packaged component, with the expected names and requirements (the core's from
#     rpmbuild's scan: libc; a backend's: strata = VERSION, and the CUDA one libcuda.so.1 only);
#   - modules belong to their component's package, and no package holds strata-sim;
#   - the core .rpm, unpacked with rpm2cpio | cpio into a temporary root (with the vsx package on
#     POWER), runs from there (pkg_common.sh's run_tree: backends, --version, a greedy request);
#   - the dev package holds the embedding API (header, libstrata.so/.a, strata.pc).
#   COMPONENTS: comma-separated components this build packages (core,dev[,cuda][,vsx]).
set -u
build=$1 src=$2 version=$3 commit=$4 abi=$5 comps=$6
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/pkg_common.sh"

if ! (cd "$build" && cpack -G RPM -B "$tmp/out" >"$tmp/cpack.log" 2>&1); then
  tail -n 30 "$tmp/cpack.log"; echo "FAIL: cpack -G RPM"; exit 1
fi
hdr="$build/core/cli/generated/cli/build_info.h" # the commit cpack's own build step baked in
if [ -f "$hdr" ]; then
  c=$(sed -n 's/^#define STRATA_GIT_COMMIT_STRING "\(.*\)"$/\1/p' "$hdr")
  [ -n "$c" ] && commit=$c
fi
declare -A pkg=([core]=strata [dev]=strata-dev [cuda]=strata-backend-cuda [vsx]=strata-backend-vsx)
IFS=, read -r -a want <<<"$comps"
n=$(ls "$tmp/out"/*.rpm 2>/dev/null | wc -l)
[ "$n" -eq "${#want[@]}" ] || bad "expected ${#want[@]} .rpm files (${comps}), got $n: $(ls "$tmp/out")"
declare -A file
for c in "${want[@]}"; do
  name=${pkg[$c]}
  f=$(ls "$tmp/out/${name}-${version}-"*.rpm 2>/dev/null | head -n 1)
  if [ -z "$f" ]; then bad "no package $name"; continue; fi
  file[$c]=$f
  got=$(rpm -qp --queryformat '%{NAME} %{VERSION} %{LICENSE}' "$f" 2>/dev/null)
  [ "$got" = "$name $version Apache-2.0" ] || bad "$f: '$got', expected '$name $version Apache-2.0'"
  req=$(rpm -qpR "$f" 2>/dev/null | grep -v '^rpmlib(' | tr '\n' ' ')
  echo "$name: $(basename "$f"): Requires: $req"
  list=$(rpm -qpl "$f" 2>/dev/null)
  echo "$list" | grep -q strata-sim && bad "$name ships the simulated device"
  mods=$(echo "$list" | grep '/lib/strata/backends/.*\.so$' | xargs -rn1 basename | tr '\n' ' ')
  case "$c" in
    core) case "$req" in *libc.so.6*) ;; *) bad "$name does not require libc.so.6 (rpmbuild's scan)";; esac
          case "$req" in *cuda*|*nvidia*) bad "$name requires a GPU library: $req";; esac
          echo "$list" | grep -qx /usr/bin/strata || bad "$name has no /usr/bin/strata"
          echo "$list" | grep -qx /usr/lib/libstrata.so.1 || bad "$name has no /usr/lib/libstrata.so.1"
          for m in $mods; do case "$m" in strata-cuda*|strata-cpu-vsx*) bad "$name holds $m";; esac; done ;;
    dev)  case "$req" in *"strata = $version"*) ;; *) bad "$name: no 'strata = $version' requirement";; esac
          for p in /usr/include/strata/strata.h /usr/include/strata/backend.h /usr/lib/libstrata.a /usr/lib/libstrata.so \
                   /usr/lib/pkgconfig/strata.pc; do
            echo "$list" | grep -qx "$p" || bad "$name has no $p"
          done ;;
    cuda) case "$req" in *"strata = $version"*) ;; *) bad "$name: no 'strata = $version' requirement";; esac
          case "$req" in *"libcuda.so.1"*) ;; *) bad "$name: no libcuda.so.1 requirement";; esac
          case "$req" in *cudart*|*cublas*) bad "$name requires the CUDA toolkit: $req";; esac
          [ -n "$mods" ] || bad "$name holds no module" ;;
    vsx)  [ "$mods" = "strata-cpu-vsx.so " ] || bad "$name holds '$mods', expected strata-cpu-vsx.so" ;;
  esac
done

if [ -n "${file[core]:-}" ]; then
  mkdir -p "$tmp/root"
  for c in core vsx; do
    [ -n "${file[$c]:-}" ] || continue
    (cd "$tmp/root" && rpm2cpio "${file[$c]}" | cpio -idm --quiet) || bad "rpm2cpio ${file[$c]}"
  done
  run_tree "$tmp/root/usr" rpm
fi
[ $fail -eq 0 ] && echo "PASS: RPM packages built, the core .rpm runs where it is unpacked"
exit $fail
