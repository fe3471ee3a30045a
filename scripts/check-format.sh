#!/bin/sh
# check-format.sh - every C file of the tree is as clang-format writes it
# under the committed .clang-format. Run from the top of the tree; checks
# the files given, else every tracked *.c and *.h (git ls-files), else,
# outside a git checkout (a copy of the tree), those under the source
# folders. Prints each file that differs with the start of its diff,
# then "N files checked, M differ"; exits 1 if any differs, 2 if there
# is no clang-format 14 (another version formats differently, so its
# verdict would mean nothing).
#
# To fix: clang-format-14 -i FILE (or the whole list this prints).
set -eu

folders="pricing util meter reports simulator costsim tests bench tools"

# The clang-format of Debian 12 (scripts/install-deps.sh installs it).
cf=""
for c in clang-format-14 clang-format; do
    if command -v "$c" >/dev/null 2>&1 &&
        "$c" --version 2>/dev/null | grep -q 'version 14\.'; then
        cf=$c
        break
    fi
done
if [ -z "$cf" ]; then
    echo "check-format: clang-format 14 not found (clang-format-14, or a clang-format whose --version says 14); run scripts/install-deps.sh" >&2
    exit 2
fi
[ -f .clang-format ] || {
    echo "check-format: no .clang-format here: run from the top of the tree" >&2
    exit 2
}

if [ $# -gt 0 ]; then
    files=$(printf '%s\n' "$@")
elif git rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
    [ "$(git rev-parse --show-toplevel)" = "$(pwd -P)" ]; then
    files=$(git ls-files -- '*.c' '*.h')
else
    # shellcheck disable=SC2086
    files=$(for d in $folders; do
        [ -d "$d" ] && find "$d" -name node_modules -prune -o \
            -name '*.[ch]' -type f -print
    done | sort)
fi
[ -n "$files" ] || { echo "check-format: no C files to check" >&2; exit 2; }

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
n=0
existing=""
for f in $files; do
    [ -f "$f" ] || continue # tracked but deleted in the work tree
    n=$((n + 1))
    existing="$existing $f"
done
# One clang-format for every file (a process each took 15 s of the
# tree's 200): it names each file that differs, shown below with the
# start of its diff. Any other complaint is a failure of its own.
# shellcheck disable=SC2086
if "$cf" --dry-run --Werror --style=file $existing >"$tmp" 2>&1; then
    differ=""
else
    differ=$(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' "$tmp" | sort -u)
    if [ -z "$differ" ]; then
        echo "check-format: $cf failed:" >&2
        head -n 5 "$tmp" >&2
        exit 2
    fi
fi
bad=0
for f in $differ; do
    bad=$((bad + 1))
    echo "$f: not formatted as clang-format writes it:"
    "$cf" --style=file "$f" | diff -u "$f" - | sed -n '3,14p' | sed 's/^/    /'
done
echo "$n files checked, $bad differ"
[ "$bad" -eq 0 ] || {
    echo "check-format: fix with $cf -i on the files above" >&2
    exit 1
}
