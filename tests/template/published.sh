#!/bin/sh
# published.sh JINJA_RENDER SRC_DIR: renders the published chat templates listed in
# families.txt (from llama.cpp's models/templates in the reference cache) with the contexts in
# data/ and compares each with expected/<name>.<context>.txt. The expected strings are the
# renderings of Jinja2 3.1 (the reference implementation) with Hugging Face's settings
# (trim_blocks, lstrip_blocks, loopcontrols, tojson as json.dumps(ensure_ascii=False)), at a
# fixed date (2024-07-26) for templates that call strftime_now.
# Exit 77 (skip) when the cache is missing: run ci/fetch-llama-ref.sh.
bin=$1
src=$2
cache=${STRATA_CACHE:-$HOME/.cache/strata}/llama-ref/src/models/templates
if [ ! -d "$cache" ]; then
    echo "SKIP: $cache is missing (run ci/fetch-llama-ref.sh)"
    exit 77
fi
fail=0
n=0
for name in $(grep -v '^#' "$src/families.txt"); do
    for ctx in basic tools; do
        n=$((n + 1))
        exp="$src/expected/$name.$ctx.txt"
        if ! out=$("$bin" --time 1721952000 "$cache/$name.jinja" "$src/data/$ctx.json" 2>&1); then
            echo "FAIL template.published $name/$ctx: $out"
            fail=$((fail + 1))
        elif ! "$bin" --time 1721952000 "$cache/$name.jinja" "$src/data/$ctx.json" | cmp -s - "$exp"; then
            echo "FAIL template.published $name/$ctx: rendering differs from $exp"
            "$bin" --time 1721952000 "$cache/$name.jinja" "$src/data/$ctx.json" | diff "$exp" - | head -20
            fail=$((fail + 1))
        fi
    done
done
echo "template.published: $((n - fail)) of $n renderings match"
[ "$fail" -eq 0 ]
