#!/usr/bin/env bash
# Installs everything Strata's build and tests need on Debian 12 / Ubuntu 24.04 (as root).
# Usage: ci/install-deps.sh [--minimal]   (--minimal: only what the CPU build and demo need)
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
minimal=0; [ "${1:-}" = "--minimal" ] && minimal=1

base=(build-essential cmake pkg-config git curl ca-certificates libmicrohttpd-dev libcjson-dev unicode-data)
# toolchains of the backends and checks that exist: clang (fuzzing), the ppc64le cross compiler
# and qemu (the POWER9 VSX module), openssl (server.tls makes its certificate); CUDA comes from /usr/local/cuda
extra=(clang gcc-powerpc64le-linux-gnu libc6-dev-ppc64el-cross qemu-user openssl)
# Node.js and npm (the server tests drive it with the official openai client): only when the
# machine has none, since a Node.js from elsewhere ships its own npm and conflicts with Debian's.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then extra+=(nodejs npm); fi

missing_of() { local p; for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done; }
updated=0
apt_install() { # packages...; returns apt's status
  [ $updated = 1 ] || { $SUDO apt-get update -q >/dev/null; updated=1; }
  $SUDO apt-get install -y -q --no-install-recommends "$@"
}
mapfile -t need < <(missing_of "${base[@]}")
if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: installing ${need[*]}"
  apt_install "${need[@]}" || { echo "install-deps: could not install the required packages ${need[*]}"; exit 1; }
fi
if [ $minimal = 0 ]; then
  mapfile -t opt < <(missing_of "${extra[@]}")
  if [ ${#opt[@]} -gt 0 ]; then
    echo "install-deps: installing toolchains ${opt[*]}"
    if ! apt_install "${opt[@]}"; then
      # one at a time, so one unavailable or conflicting package skips only its backend
      for p in "${opt[@]}"; do
        apt_install "$p" >/dev/null 2>&1 || echo "install-deps: WARNING: $p could not be installed; what needs it is skipped"
      done
    fi
  fi
fi
echo "install-deps: done"
# node: Debian 12 names the binary nodejs in some setups
command -v node >/dev/null 2>&1 || { command -v nodejs >/dev/null 2>&1 && $SUDO ln -sf "$(command -v nodejs)" /usr/local/bin/node || true; }
# CUDA: used from /usr/local/cuda when present; otherwise the CUDA backend is skipped at configure.
if [ -x /usr/local/cuda/bin/nvcc ]; then echo "install-deps: CUDA toolkit at /usr/local/cuda"; else echo "install-deps: no CUDA toolkit at /usr/local/cuda (the CUDA backend will be skipped)"; fi
