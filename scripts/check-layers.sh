#!/bin/sh
# check-layers.sh - keeps the shape of the tree: each module includes
# only the headers of the modules (and the libraries) that the rule in
# docs/architecture.md allows it, and no private header (*_int.h) of
# another folder. The rule is the fenced "layers" block of that file,
# written once; this script reads it. Run from the top of the tree.
# Prints "N passed, M failed"; exits 1 on any violation.
set -eu
doc=docs/architecture.md
rules=$(awk '/^```layers/ { on = 1; next } /^```/ { on = 0 } on' "$doc")
[ -n "$rules" ] || { echo "check-layers: no layers block in $doc" >&2; exit 1; }

# The headers of the project's modules: "header module" lines.
headers=$(echo "$rules" | while IFS=: read -r module _; do
    [ -d "$module" ] || { echo "check-layers: no folder '$module'" >&2; exit 1; }
    find "$module" -maxdepth 1 -name '*.h' | sed "s|^$module/||; s|\$| $module|"
done)

clean=0
bad=0
total=0
for module in $(echo "$rules" | cut -d: -f1); do
    allowed=" $(echo "$rules" | awk -F: -v m="$module" '$1 == m { print $2 }') "
    for f in $(find "$module" -maxdepth 1 \( -name '*.c' -o -name '*.h' \)); do
        before=$total
        for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
            owner=$(echo "$headers" | awk -v h="$inc" '$1 == h { print $2; exit }')
            if [ -z "$owner" ]; then
                echo "$f: includes \"$inc\", a header of no module" >&2
                total=$((total + 1))
            elif [ "$owner" != "$module" ]; then
                case "$inc" in *_int.h)
                    echo "$f: includes $owner's private header $inc" >&2
                    total=$((total + 1))
                    continue ;;
                esac
                case "$allowed" in *" $owner "*) ;; *)
                    echo "$f: includes \"$inc\" of $owner, which $module may not use" >&2
                    total=$((total + 1)) ;;
                esac
            fi
        done
        for inc in $(sed -n 's/^#include <\([^>]*\)>.*/\1/p' "$f"); do
            case "$inc" in
            libpq-fe.h | microhttpd.h | curl/* | gsl/* | jansson.h | zlib.h | \
                nettle/* | gmp.h) ;;
            *) continue ;;
            esac
            case "$allowed" in *" <$inc> "* | *" <${inc%%/*}/*> "*) ;; *)
                echo "$f: includes <$inc>, a library $module may not use" >&2
                total=$((total + 1)) ;;
            esac
        done
        if [ "$total" = "$before" ]; then clean=$((clean + 1)); else bad=$((bad + 1)); fi
    done
done
echo "$clean passed, $bad failed"
[ "$bad" -eq 0 ]
