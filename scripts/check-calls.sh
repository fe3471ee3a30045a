#!/bin/sh
# check-calls.sh - no C file calls a function of the banned list (curl's
# checksrc is the model): the ones that write without a bound, and the
# ones that read a number without saying whether there was one.
#
#   sprintf, vsprintf        no bound: snprintf, vsnprintf
#   strcpy, strcat           no bound: snprintf, or memcpy with the length
#   gets                     no bound: fgets
#   atoi, atol, atoll, atof  no error, no end: strtol and friends, checked
#   strtol, strtoul, strtoll, strtoull, strtoimax, strtoumax, strtod,
#   strtof, strtold with NULL (or 0) as the end: "12abc", "" and an
#   overflow all pass unseen; pass &end and check *end and errno
#   localtime, localtime_r, mktime, ctime, ctime_r, asctime, tzset,
#   timelocal                the local zone: billing is in UTC (gmtime_r,
#                            timegm, pricing_days_from_civil), so no C
#                            code reads TZ, and a C test that touches
#                            neither PostgreSQL nor a shell gives the
#                            same far from UTC
#
# Run from the top of the tree; checks the *.c and *.h files under the
# folders (or files) given, default the source folders. Comments and
# string literals are read as C reads them, so a banned name in either
# is not a call. Prints each call as FILE:LINE: CALL: why, then "N files
# checked, M banned calls"; exits 1 on any banned call, or if there is
# no C file to check.
set -eu

[ $# -gt 0 ] || set -- pricing util meter reports simulator costsim tests bench tools
files=$(for d in "$@"; do
    [ -e "$d" ] && find "$d" -name node_modules -prune -o \
        -name '*.[ch]' -type f -print
done | sort)
[ -n "$files" ] || { echo "check-calls: no C files under $*" >&2; exit 1; }

# shellcheck disable=SC2086
awk '
BEGIN {
    why["sprintf"] = "no bound (snprintf)"
    why["vsprintf"] = "no bound (vsnprintf)"
    why["strcpy"] = why["strcat"] = "no bound (snprintf, or memcpy with the length)"
    why["gets"] = "no bound (fgets)"
    why["atoi"] = why["atol"] = why["atoll"] = why["atof"] = \
        "no error for a bad number (strtol and friends, the end checked)"
    split("localtime localtime_r mktime ctime ctime_r asctime tzset timelocal", lt, " ")
    for (i in lt)
        why[lt[i]] = "the local time zone (gmtime_r, timegm: billing is in UTC)"
    split("strtol strtoul strtoll strtoull strtoimax strtoumax strtod strtof strtold", s, " ")
    for (i in s)
        strto[s[i]] = 1
    nfiles = 0
    bad = 0
    incomment = 0
}
# n spaces: what a comment or the inside of a literal becomes, so that
# columns stay those of the source.
function blanks(n,    b) {
    b = ""
    while (n-- > 0)
        b = b " "
    return b
}
# The line with comments blanked and literals emptied (their quotes
# kept); a block comment may go on over lines (incomment).
function clean(line,    out, i, c, m, lit) {
    out = ""
    while (line != "") {
        if (incomment) {
            i = index(line, "*/")
            if (i == 0) {
                out = out blanks(length(line))
                line = ""
                break
            }
            out = out blanks(i + 1)
            line = substr(line, i + 2)
            incomment = 0
            continue
        }
        if (!match(line, /\/\*|\/\/|["\047]/)) {
            out = out line
            break
        }
        out = out substr(line, 1, RSTART - 1)
        line = substr(line, RSTART)
        c = substr(line, 1, 2)
        if (c == "/*") {
            out = out "  "
            line = substr(line, 3)
            incomment = 1
        } else if (c == "//") {
            out = out blanks(length(line))
            line = ""
        } else {
            c = substr(line, 1, 1)
            if (c == "\"")
                m = match(line, /^"([^"\\]|\\.)*"/)
            else
                m = match(line, /^\047([^\047\\]|\\.)*\047/)
            lit = m ? RLENGTH : length(line) # unterminated: to the end
            out = out c blanks(lit - 2) (lit >= 2 ? c : "")
            line = substr(line, lit + 1)
        }
    }
    return out
}
FNR == 1 {
    if (nfiles)
        scan(files[nfiles])
    files[++nfiles] = FILENAME
    nl = 0
    incomment = 0
}
{
    src[++nl] = $0
    txt[nl] = clean($0)
}
END {
    if (nfiles)
        scan(files[nfiles])
    printf "%d files checked, %d banned calls\n", nfiles, bad
    exit (bad > 0)
}

# The arguments of the call whose "(" is at column col of line l, as
# cleaned text, top-level commas turned into \001; "" if the call does
# not close within 30 lines.
function args(l, col,    t, k, depth, c, out, i, end) {
    t = substr(txt[l], col + 1)
    end = l + 30
    for (k = l + 1; k <= nl && k <= end; k++)
        t = t "\n" txt[k]
    depth = 0
    out = ""
    for (i = 1; i <= length(t); i++) {
        c = substr(t, i, 1)
        if (c == "(" || c == "[" || c == "{")
            depth++
        else if (c == ")" || c == "]" || c == "}") {
            if (depth == 0)
                return out
            depth--
        } else if (c == "," && depth == 0)
            c = "\001"
        out = out c
    }
    return ""
}
# Whether an argument is a null pointer: NULL, 0, (void *)0, in
# parentheses or behind a cast.
function is_null(a) {
    gsub(/[ \t\n]/, "", a)
    while (a ~ /^\(.*\)$/ && a !~ /^\([A-Za-z_][A-Za-z0-9_]*\**\)./)
        a = substr(a, 2, length(a) - 2)
    sub(/^(\((const)?(unsigned)?(char|void)\*+\))+/, "", a)
    while (a ~ /^\(.*\)$/)
        a = substr(a, 2, length(a) - 2)
    return a == "NULL" || a == "0" || a == "(void*)0" || a == "nullptr"
}
# The call as written, from its name to its ")" if on the same line.
function shown(l, from, open,    t, depth, i, c) {
    t = substr(src[l], from)
    depth = 0
    for (i = open - from + 1; i <= length(t); i++) {
        c = substr(t, i, 1)
        if (c == "(")
            depth++
        else if (c == ")" && --depth == 0)
            return substr(t, 1, i)
    }
    return t " ..."
}
function report(f, l, from, open, reason) {
    printf "%s:%d: %s: %s\n", f, l, shown(l, from, open), reason
    bad++
}
function scan(f,    l, rest, off, name, open, from, a, n, parts) {
    for (l = 1; l <= nl; l++) {
        rest = txt[l]
        off = 0
        while (match(rest, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)) {
            name = substr(rest, RSTART, RLENGTH - 1)
            sub(/[ \t]+$/, "", name)
            open = off + RSTART + RLENGTH - 1 # column of "("
            from = off + RSTART
            off += RSTART + RLENGTH - 1
            rest = substr(rest, RSTART + RLENGTH)
            # A member (x.atoi(), p->atoi()) is not the C library.
            if (from > 1 && substr(txt[l], 1, from - 1) ~ /(\.|->)[ \t]*$/)
                continue
            if (name in why) {
                report(f, l, from, open, why[name])
            } else if (name in strto) {
                a = args(l, open)
                n = split(a, parts, "\001")
                if (n >= 2 && is_null(parts[2]))
                    report(f, l, from, open,
                           "the end is not checked, so garbage and overflow pass unseen (pass &end, check it and errno)")
            }
        }
    }
    delete src
    delete txt
}
' $files
