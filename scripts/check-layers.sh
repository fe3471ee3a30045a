#!/bin/sh
# check-layers.sh - keeps the shape of the tree: each module includes
# only the headers of the modules and the libraries that the rule in
# docs/architecture.md allows it, and no private header (*_int.h) of
# another folder but one the rule names for it by path (a test of a
# module's internals). The rule is the fenced "layers" block of that file,
# written once; this script reads it. Run from the top of the tree.
#
# It reads every include directive (#include, # include, "" or <>) of
# every .c and .h file in the tree: a file in no module of the rule, a
# project header in angle brackets, and a library header that is
# neither the C library's nor a library of the rule are violations too.
# It checks direct includes; what a header includes is that header's
# module's business. Prints "N passed, M failed"; exits 1 on any
# violation.
set -eu
doc=docs/architecture.md
rules=$(awk '/^```layers/ { on = 1; next } /^```/ { on = 0 } on' "$doc")
[ -n "$rules" ] || { echo "check-layers: no layers block in $doc" >&2; exit 1; }
modules=$(echo "$rules" | cut -d: -f1)

# The C library and POSIX headers any module may include.
libc=" arpa/inet.h assert.h ctype.h dirent.h errno.h fcntl.h float.h ftw.h
 getopt.h grp.h inttypes.h limits.h math.h netdb.h netinet/in.h poll.h
 pthread.h pwd.h search.h signal.h stdarg.h stdatomic.h stdbool.h stddef.h
 stdint.h stdio.h stdlib.h string.h strings.h sys/file.h sys/mman.h
 sys/random.h sys/resource.h sys/socket.h sys/stat.h sys/time.h sys/types.h sys/un.h
 sys/wait.h time.h unistd.h "
libc=" $(echo $libc) " # one line, a space around each name

# Every C file of the tree, and the module of each (its folder, or the
# nearest enclosing folder named in the rule).
files=$(find . -path ./.git -prune -o -path './build*' -prune -o \
    -path ./var -prune -o -name node_modules -prune -o \
    \( -name '*.c' -o -name '*.h' \) -type f -print | sed 's|^\./||' | sort)
module_of() {
    d=$(dirname "$1")
    while [ "$d" != . ]; do
        for m in $modules; do
            [ "$m" = "$d" ] && { echo "$m"; return; }
        done
        d=$(dirname "$d")
    done
}
# The headers of the project: "header module" lines.
headers=$(for f in $files; do
    case "$f" in *.h) echo "$(basename "$f") $(module_of "$f")" ;; esac
done)

clean=0
bad=0
total=0
violation() {
    echo "$1" >&2
    total=$((total + 1))
}
for f in $files; do
    before=$total
    module=$(module_of "$f")
    if [ -z "$module" ]; then
        violation "$f: in no module of the rule in $doc"
        bad=$((bad + 1))
        continue
    fi
    allowed=" $(echo "$rules" | awk -F: -v m="$module" '$1 == m { print $2 }') "
    includes=$(sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*([<"][^>"]*[>"]).*/\1/p' "$f")
    for inc in $includes; do
        name=$(echo "$inc" | sed 's/^.//; s/.$//')
        owner=$(echo "$headers" | awk -v h="$name" '$1 == h { print $2; exit }')
        case "$inc" in
        \"*)
            if [ -z "$owner" ]; then
                violation "$f: includes \"$name\", a header of no module"
                continue
            fi ;;
        \<*)
            if [ -n "$owner" ]; then
                violation "$f: includes the project header <$name> in angle brackets"
                continue
            fi
            case "$libc" in *" $name "*) continue ;; esac
            case "$allowed" in *" <$name> "* | *" <${name%%/*}/*> "*) ;; *)
                violation "$f: includes <$name>, a library $module may not use" ;;
            esac
            continue ;;
        esac
        [ "$owner" = "$module" ] && continue
        case "$name" in *_int.h)
            case "$allowed" in *" $owner/$name "*) continue ;; esac
            violation "$f: includes $owner's private header $name"
            continue ;;
        esac
        case "$allowed" in *" $owner "*) ;; *)
            violation "$f: includes \"$name\" of $owner, which $module may not use" ;;
        esac
    done
    if [ "$total" = "$before" ]; then clean=$((clean + 1)); else bad=$((bad + 1)); fi
done
echo "$clean passed, $bad failed"
[ "$bad" -eq 0 ]
