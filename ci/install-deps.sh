#!/usr/bin/env bash
# Installs everything Strata's build and tests need on Debian 12 / Ubuntu 24.04 (as root).
# Usage: ci/install-deps.sh [--minimal]   (--minimal: only what the CPU build and demo need)
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
minimal=0; [ "${1:-}" = "--minimal" ] && minimal=1

base=(build-essential cmake pkg-config git curl ca-certificates libmicrohttpd-dev libcjson-dev unicode-data)
extra=(nodejs npm clang gcc-powerpc64le-linux-gnu qemu-user
       libvulkan-dev libvulkan-volk-dev mesa-vulkan-drivers glslc spirv-tools
       hipcc libamdhip64-dev rocm-device-libs)

want=("${base[@]}")
[ $minimal = 1 ] || want+=("${extra[@]}")
missing=()
for p in "${want[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -q
  # Optional toolchains may be absent from a distribution's archive: install what exists.
  avail=()
  for p in "${missing[@]}"; do
    if apt-cache show "$p" >/dev/null 2>&1; then avail+=("$p"); else echo "install-deps: package $p not available here; its backend will be skipped"; fi
  done
  [ ${#avail[@]} -eq 0 ] || $SUDO apt-get install -y -q --no-install-recommends "${avail[@]}"
else
  echo "install-deps: all packages present"
fi
# node: Debian 12 names the binary nodejs in some setups
command -v node >/dev/null 2>&1 || { command -v nodejs >/dev/null 2>&1 && $SUDO ln -sf "$(command -v nodejs)" /usr/local/bin/node || true; }
# CUDA: used from /usr/local/cuda when present; otherwise the CUDA backend is skipped at configure.
if [ -x /usr/local/cuda/bin/nvcc ]; then echo "install-deps: CUDA toolkit at /usr/local/cuda"; else echo "install-deps: no CUDA toolkit at /usr/local/cuda (the CUDA backend will be skipped)"; fi
