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

# Every C file of the tree, read by one awk program: the module of each
# file is its folder, or the nearest enclosing folder named in the rule.
find . -path ./.git -prune -o -path './build*' -prune -o \
    -path ./var -prune -o -name node_modules -prune -o \
    \( -name '*.c' -o -name '*.h' \) -type f -print | sed 's|^\./||' | sort |
    RULES=$rules LIBC=$libc awk -v doc="$doc" '
function dir(p) { return p ~ /\// ? substr(p, 1, match(p, /\/[^\/]*$/) - 1) : "." }
function base(p) { sub(/.*\//, "", p); return p }
function module_of(f,    d) {
    for (d = dir(f); d != "."; d = dir(d))
        if (d in allowed) return d
    return ""
}
function violation(msg) { print msg > "/dev/stderr"; total++ }
BEGIN {
    n = split(ENVIRON["RULES"], lines, "\n")
    for (i = 1; i <= n; i++) {
        if (split(lines[i], part, ":") < 2) continue
        allowed[part[1]] = allowed[part[1]] " " part[2] " "
    }
    libc = ENVIRON["LIBC"]
}
{ files[++nfiles] = $0 }
END {
    # The headers of the project, each with the module of its first file.
    for (i = 1; i <= nfiles; i++) {
        h = base(files[i])
        if (files[i] ~ /\.h$/ && !(h in owner_of)) owner_of[h] = module_of(files[i])
    }
    for (i = 1; i <= nfiles; i++) {
        f = files[i]
        before = total
        module = module_of(f)
        if (module == "") {
            violation(f ": in no module of the rule in " doc)
            bad++
            continue
        }
        ok = allowed[module]
        while ((got = (getline line < f)) > 0) {
            if (!match(line, /^[ \t]*#[ \t]*include[ \t]*[<"][^>"]*[>"]/)) continue
            inc = substr(line, 1, RLENGTH)
            sub(/^[ \t]*#[ \t]*include[ \t]*/, "", inc)
            name = substr(inc, 2, length(inc) - 2)
            owner = (name in owner_of) ? owner_of[name] : ""
            if (inc ~ /^"/ && owner == "") {
                violation(f ": includes \"" name "\", a header of no module")
                continue
            }
            if (inc ~ /^</) {
                if (owner != "") {
                    violation(f ": includes the project header <" name "> in angle brackets")
                    continue
                }
                if (index(libc, " " name " ")) continue
                top = name
                sub(/\/.*/, "", top)
                if (!index(ok, " <" name "> ") && !index(ok, " <" top "/*> "))
                    violation(f ": includes <" name ">, a library " module " may not use")
                continue
            }
            if (owner == module) continue
            if (name ~ /_int\.h$/) {
                if (!index(ok, " " owner "/" name " "))
                    violation(f ": includes " owner "\047s private header " name)
                continue
            }
            if (!index(ok, " " owner " "))
                violation(f ": includes \"" name "\" of " owner ", which " module " may not use")
        }
        close(f)
        if (got < 0)
            violation(f ": cannot be read")
        if (total == before) clean++; else bad++
    }
    print clean + 0 " passed, " bad + 0 " failed"
    exit (bad > 0)
}'
