#!/usr/bin/env bash
# Setup of the server tests: generated models in DIR, and the official `openai` npm client in
# NODE_DIR (installed once; without the npm registry the tests that need it skip).
# usage: setup.sh STRATA DIR NODE_DIR
set -u
strata=$1 dir=$2 node_dir=$3
mkdir -p "$dir" || exit 1
gen() { # name preset [extra gen-model options]
  local name=$1 preset=$2
  shift 2
  [ -s "$dir/$name.gguf" ] && [ "$dir/$name.gguf" -nt "$strata" ] && return 0
  "$strata" gen-model --preset "$preset" --out "$dir/$name.gguf.tmp" "$@" && mv "$dir/$name.gguf.tmp" "$dir/$name.gguf"
}
gen tiny tiny || exit 1
gen demo demo || exit 1
if [ -f "$node_dir/node_modules/openai/index.mjs" ]; then
  echo "openai client: $node_dir/node_modules/openai ($(grep -m1 '"version"' "$node_dir/node_modules/openai/package.json"))"
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "npm not found: the server tests that use the openai client will be skipped"
  exit 0
fi
mkdir -p "$node_dir" && cd "$node_dir" || exit 1
[ -f package.json ] || echo '{"name":"strata-test-deps","private":true}' > package.json
if ! timeout 300 npm install --no-audit --no-fund --silent openai; then
  echo "npm install openai failed: the server tests that use the openai client will be skipped"
fi
exit 0
