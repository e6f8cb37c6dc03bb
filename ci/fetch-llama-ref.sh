#!/usr/bin/env bash
# Fetches llama.cpp's reference material into a cache OUTSIDE the repository (it is never part
# of Strata; tests use it only as an external reference):
#   <dir>/node-llama-cpp/package/...        npm package node-llama-cpp (llama.cpp source bundle)
#   <dir>/src/                              git clone of that bundle: llama.cpp source, incl.
#                                           models/ggml-vocab-*.gguf and their test vectors
#   <dir>/linux-x64/package/bins/linux-x64/ prebuilt libllama / libggml (x86-64 Linux only)
# <dir> = $STRATA_LLAMA_REF_DIR, default ${STRATA_CACHE:-$HOME/.cache/strata}/llama-ref.
#
# usage: ci/fetch-llama-ref.sh [--from DIR]
#   --from DIR   take the .tgz files from DIR (as written by `npm pack`) instead of the registry
# Idempotent: parts already present are kept. Prints where things are.
# Exit status: 0 done; 2 the registry cannot be reached (no network); 1 any other failure.
set -euo pipefail

VERSION=3.21.1
PKG=node-llama-cpp
BIN_PKG=@node-llama-cpp/linux-x64
dir=${STRATA_LLAMA_REF_DIR:-${STRATA_CACHE:-$HOME/.cache/strata}/llama-ref}
from=""
while [ $# -gt 0 ]; do
  case "$1" in
    --from) from=${2:?--from needs a directory}; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "fetch-llama-ref: unknown argument '$1'" >&2; exit 1 ;;
  esac
done

want_bins=0
case "$(uname -s)-$(uname -m)" in Linux-x86_64) want_bins=1 ;; esac

mkdir -p "$dir"
log() { echo "fetch-llama-ref: $*"; }

# get_tgz NAME FILE: puts FILE (npm pack output name) into $dir, from --from or the registry.
get_tgz() {
  local name=$1 file=$2
  [ -s "$dir/$file" ] && return 0
  if [ -n "$from" ] && [ -s "$from/$file" ]; then
    cp "$from/$file" "$dir/$file.part" && mv "$dir/$file.part" "$dir/$file"
    return 0
  fi
  if ! command -v npm >/dev/null 2>&1; then
    log "npm is not installed; cannot fetch $name"
    exit 1
  fi
  if ! npm ping >/dev/null 2>&1; then
    log "the npm registry cannot be reached (network unavailable?)"
    exit 2
  fi
  local tmp
  tmp=$(mktemp -d "$dir/.pack.XXXXXX")
  log "npm pack $name@$VERSION"
  if ! (cd "$tmp" && npm pack --silent "$name@$VERSION" >/dev/null); then
    rm -rf "$tmp"
    log "npm pack $name@$VERSION failed"
    exit 1
  fi
  mv "$tmp/$file" "$dir/$file"
  rm -rf "$tmp"
}

# unpack FILE DEST: extracts FILE into DEST (giving DEST/package/...) unless done before.
unpack() {
  local file=$1 dest=$2
  [ -d "$dir/$dest/package" ] && return 0
  rm -rf "$dir/$dest.part"
  mkdir -p "$dir/$dest.part"
  tar -xzf "$dir/$file" -C "$dir/$dest.part"
  rm -rf "$dir/$dest"
  mv "$dir/$dest.part" "$dir/$dest"
}

if [ ! -d "$dir/src/models" ]; then
  get_tgz "$PKG" "$PKG-$VERSION.tgz"
  unpack "$PKG-$VERSION.tgz" node-llama-cpp
  bundle="$dir/node-llama-cpp/package/llama/gitRelease.bundle"
  [ -s "$bundle" ] || { log "no llama/gitRelease.bundle in $PKG-$VERSION"; exit 1; }
  rm -rf "$dir/src.part"
  log "git clone $bundle"
  git clone --quiet "$bundle" "$dir/src.part" 2>/dev/null || { log "git clone of the bundle failed"; exit 1; }
  rm -rf "$dir/src"
  mv "$dir/src.part" "$dir/src"
fi

if [ $want_bins = 1 ] && [ ! -d "$dir/linux-x64/package/bins" ]; then
  get_tgz "$BIN_PKG" "node-llama-cpp-linux-x64-$VERSION.tgz"
  unpack "node-llama-cpp-linux-x64-$VERSION.tgz" linux-x64
fi

log "cache      $dir"
log "source     $dir/src ($(git -C "$dir/src" log -1 --format=%h 2>/dev/null || echo '?'))"
log "vocabs     $dir/src/models ($(ls "$dir/src/models"/ggml-vocab-*.gguf 2>/dev/null | wc -l) files)"
if [ -d "$dir/linux-x64/package/bins" ]; then
  log "libraries  $(ls -d "$dir"/linux-x64/package/bins/*/ | head -1)"
else
  log "libraries  (none for this platform)"
fi
