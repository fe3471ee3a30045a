#!/bin/sh
# check-sql.sh - every SQL statement the C code runs is constant text:
# values go as parameters ($1, ...), never into the statement. Run from
# the top of the tree; checks the C files under the folders given
# (default: meter reports, the code that serves and bills; tests/ and
# bench/ name their throwaway databases in CREATE DATABASE). Prints
# each violation as FILE:LINE, then "N calls checked, M failed"; exits
# 1 on any violation.
#
# What it reads: each call of a function that runs SQL (libpq's PQexec,
# PQexecParams, PQprepare, PQsendQuery, PQsendQueryParams,
# PQsendPrepare; ours, meter_db_exec and db_copy_in), and of every
# function that passes one of its own parameters on as the SQL of such
# a call (a wrapper: found by the script, to any depth, so a new one is
# checked without being listed). The SQL argument must be
#   - string literals, concatenated, and macros whose body is such
#     literals ("FETCH " FETCH_ROWS " FROM c");
#   - or COND ? SQL : SQL, both branches as above;
#   - or, inside a wrapper, its own SQL parameter passed on, if the
#     wrapper is called here (its calls are then checked in its place;
#     one called only through a pointer, or from elsewhere, fails).
# Anything else (a variable, a buffer's text, a call's result) fails,
# unless the allowlist below names it. Also, any literal that begins
# with an SQL keyword given to snprintf, asprintf, sprintf or a
# meter_buf writer fails: SQL assembled in a buffer, whatever runs it.
# Comments and strings are read as C reads them; preprocessor lines are
# read only for macros.
set -eu

# The allowlist: FILE|FUNCTION|ARGUMENT (tokens joined as printed in a
# violation), each with why it is safe. Keep it short: a new entry needs
# a reason no request can reach.
allow='
# A migration is SQL by design: the text of migrations/NNNN_*.sql from
# the installed data directory, checked against the SHA-256 recorded
# when it was applied; never from a request.
meter/db/migrate.c|apply_one|m->sql
# VACUUM takes no parameters, so the partition is named in the text:
# usage_blocks_YYYYMM and usage_packs_YYYYMM printed from two integers
# (a period meterctl parsed), and vacuumed only once to_regclass($1)
# found the first (the second is made with it).
meter/db/usage_compact.c|meter_db_usage_vacuum|"VACUUM (ANALYZE) %s"
meter/db/usage_compact.c|meter_db_usage_vacuum|sql
# PREPARE TRANSACTION, COMMIT PREPARED and ROLLBACK PREPARED take no
# parameters, so a part of a batch over shards is named in the text: a
# verb from a constant array and a name checked to be meter:, 32 hex
# digits, : and a shard number (part_name), made by route.c.
meter/db/exec.c|db_two_phase|sql
'

[ $# -gt 0 ] || set -- meter reports
files=$(find "$@" -name '*.[ch]' -type f | sort)
[ -n "$files" ] || { echo "check-sql: no C files under $*" >&2; exit 1; }

# shellcheck disable=SC2086
awk -v allow="$allow" '
BEGIN {
    # The functions that run SQL, and the position of their SQL argument.
    split("PQexec:2 PQexecParams:2 PQprepare:3 PQsendQuery:2 " \
          "PQsendQueryParams:2 PQsendPrepare:3 meter_db_exec:3 db_copy_in:2",
          base, " ")
    for (i in base) {
        split(base[i], kv, ":")
        sink[kv[1]] = kv[2] + 0
        basesink[kv[1]] = 1
    }
    # Writers into buffers, and the position of their text.
    split("snprintf:3 vsnprintf:3 sprintf:2 asprintf:2 vasprintf:2 " \
          "meter_buf_printf:2 meter_buf_str:2 meter_buf_add:2", wl, " ")
    for (i in wl) {
        split(wl[i], kv, ":")
        writer[kv[1]] = kv[2] + 0
    }
    n_allow = split(allow, al, "\n")
    for (i = 1; i <= n_allow; i++)
        if (al[i] != "" && al[i] !~ /^#/)
            allowed[al[i]] = 1
    sqlword = "^(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|DECLARE|COPY|BEGIN|WITH|SET|TRUNCATE|GRANT|REVOKE|LOCK|FETCH|CLOSE|VALUES|EXECUTE|PREPARE|CALL|DO|ANALYZE|VACUUM|COMMENT|REINDEX|CLUSTER|LISTEN|NOTIFY)[ (]"
    nfiles = 0
}
FNR == 1 {
    files[++nfiles] = FILENAME
    text[FILENAME] = ""
    cont = 0
}
{
    line = $0
    # Preprocessor lines (and their continuations): macros are noted,
    # the line is blanked so that line numbers stay.
    if (cont || line ~ /^[ \t]*#/) {
        d = line
        sub(/\\$/, "", d)
        if (cont && defining != "") {
            macro[defining] = macro[defining] " " d
        } else if (!cont && d ~ /^[ \t]*#[ \t]*define[ \t]+[A-Za-z_][A-Za-z0-9_]*/) {
            sub(/^[ \t]*#[ \t]*define[ \t]+/, "", d)
            match(d, /^[A-Za-z_][A-Za-z0-9_]*/)
            defining = substr(d, 1, RLENGTH)
            d = substr(d, RLENGTH + 1)
            mparams[defining] = " "
            if (d ~ /^\(/) { # NAME(a, b): its parameters
                mparams[defining] = substr(d, 2, index(d, ")") - 2)
                gsub(/[ \t]*,[ \t]*/, " ", mparams[defining])
                mparams[defining] = " " mparams[defining] " "
                d = substr(d, index(d, ")") + 1)
            }
            macro[defining] = d
        } else if (!cont) {
            defining = ""
        }
        cont = line ~ /\\$/
        if (!cont)
            defining = ""
        line = ""
    }
    text[FILENAME] = text[FILENAME] line "\n"
}

# Whether a macro is SQL text: its body string literals, such macros
# and its own parameters (a function-like macro is SQL text when its
# arguments are), parentheses and commas aside; at least one of them.
function literal_macro(name,    b, id, any) {
    if (name in litmacro)
        return litmacro[name]
    if (!(name in macro))
        return 0
    litmacro[name] = 0 # against recursion
    b = macro[name]
    gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " ", b)
    sub(/\/\/.*/, "", b)
    any = gsub(/"([^"\\]|\\.)*"/, " ", b) > 0
    while (match(b, /[A-Za-z_][A-Za-z0-9_]*/)) {
        id = substr(b, RSTART, RLENGTH)
        if (index(mparams[name], " " id " ") == 0 && !literal_macro(id))
            return 0
        any = 1
        b = substr(b, 1, RSTART - 1) " " substr(b, RSTART + RLENGTH)
    }
    gsub(/[ \t(),]/, "", b)
    litmacro[name] = any && b == ""
    return litmacro[name]
}

# Splits file f into tokens: tk[f, i] its text, ty[f, i] its kind (s
# string, c char, i identifier, n number, p punctuation), ln[f, i] its
# line; nt[f] their count.
function tokenize(f,    s, n, i, c, j, line, k, seg) {
    s = text[f]
    n = length(s)
    i = 1
    line = 1
    k = 0
    while (i <= n) {
        c = substr(s, i, 1)
        if (c == "\n") { line++; i++; continue }
        if (c == " " || c == "\t" || c == "\r" || c == "\f") { i++; continue }
        if (c == "/" && substr(s, i + 1, 1) == "*") {
            j = index(substr(s, i + 2), "*/")
            if (j == 0) j = n
            seg = substr(s, i, j + 3)
            line += gsub(/\n/, "", seg)
            i += j + 3
            continue
        }
        if (c == "/" && substr(s, i + 1, 1) == "/") {
            while (i <= n && substr(s, i, 1) != "\n") i++
            continue
        }
        if (c == "\"" || c == "\047") {
            j = i + 1
            while (j <= n && substr(s, j, 1) != c) {
                if (substr(s, j, 1) == "\\") j++
                if (substr(s, j, 1) == "\n") line++
                j++
            }
            k++
            tk[f, k] = substr(s, i, j - i + 1)
            ty[f, k] = c == "\"" ? "s" : "c"
            ln[f, k] = line
            i = j + 1
            continue
        }
        if (c ~ /[A-Za-z_]/) {
            j = i
            while (j <= n && substr(s, j, 1) ~ /[A-Za-z0-9_]/) j++
            k++
            tk[f, k] = substr(s, i, j - i)
            ty[f, k] = "i"
            ln[f, k] = line
            i = j
            continue
        }
        if (c ~ /[0-9]/) {
            j = i
            while (j <= n && substr(s, j, 1) ~ /[A-Za-z0-9_.]/) j++
            k++
            tk[f, k] = substr(s, i, j - i)
            ty[f, k] = "n"
            ln[f, k] = line
            i = j
            continue
        }
        k++
        if (substr(s, i, 2) == "->") {
            tk[f, k] = "->"
            i += 2
        } else {
            tk[f, k] = c
            i++
        }
        ty[f, k] = "p"
        ln[f, k] = line
    }
    nt[f] = k
}

# The text of tokens a..b of f, as printed and allowlisted.
function span(f, a, b,    out, t) {
    out = ""
    for (t = a; t <= b; t++) {
        if (out != "" && ty[f, t] ~ /[in]/ && ty[f, t - 1] ~ /[in]/)
            out = out " "
        out = out tk[f, t]
    }
    return out
}

# Whether tokens a..b of f are string literals, literal macros (with
# literal arguments) and constant arrays of literals, in parentheses or
# not (at least one of them).
function literal(f, a, b,    t, any) {
    any = 0
    for (t = a; t <= b; t++) {
        if (ty[f, t] == "s")
            any = 1
        else if (ty[f, t] == "i" && literal_macro(tk[f, t]))
            any = 1
        else if (ty[f, t] == "i" && (f, tk[f, t]) in litconst)
            any = 1
        else if (!(ty[f, t] == "p" && tk[f, t] ~ /^[(),]$/))
            return 0
    }
    return any
}

# Whether tokens a..b of f are literal SQL: literals, or COND ? SQL :
# SQL with both branches literal SQL.
function constant_sql(f, a, b,    t, d, q, col) {
    if (literal(f, a, b))
        return 1
    d = 0
    q = 0
    for (t = a; t <= b; t++) {
        if (tk[f, t] == "(" || tk[f, t] == "[") d++
        else if (tk[f, t] == ")" || tk[f, t] == "]") d--
        else if (d == 0 && tk[f, t] == "?" && !q) q = t
        else if (d == 0 && tk[f, t] == ":" && q) { col = t; break }
    }
    if (!q || !col)
        return 0
    return literal(f, q + 1, col - 1) && constant_sql(f, col + 1, b)
}

# Reads file f once: the function each token is in (fn[f, i]), its
# parameters (param[NAME, position] = name), and the constant arrays of
# literals (litconst[f, NAME]).
function functions(f,    t, d, open, pd, st, seg, name, last, end) {
    d = 0
    name = ""
    for (t = 1; t <= nt[f]; t++) {
        fn[f, t] = name
        # const char NAME[] = "..." "...";  const char *const NAME = "...";
        if (ty[f, t] == "i" && t > 3 &&
            ((tk[f, t + 1] == "[" && tk[f, t + 2] == "]" && tk[f, t + 3] == "=" &&
              (tk[f, t - 1] tk[f, t - 2] == "charconst" ||
               tk[f, t - 1] tk[f, t - 2] == "constchar")) ||
             (tk[f, t + 1] == "=" && tk[f, t - 1] tk[f, t - 2] tk[f, t - 3] tk[f, t - 4] == "const*charconst"))) {
            for (end = t; end <= nt[f] && tk[f, end] != ";"; end++)
                ;
            st = tk[f, t + 1] == "=" ? t + 2 : t + 4
            if (literal(f, st, end - 1))
                litconst[f, tk[f, t]] = 1
        }
        if (tk[f, t] == "{") {
            if (d == 0 && t > 1 && tk[f, t - 1] == ")") {
                # A definition: NAME ( PARAMS ) {
                pd = 0
                for (open = t - 1; open > 0; open--) {
                    if (tk[f, open] == ")") pd++
                    if (tk[f, open] == "(" && --pd == 0) break
                }
                if (open > 1 && ty[f, open - 1] == "i") {
                    name = tk[f, open - 1]
                    seg = 1
                    last = ""
                    pd = 0
                    for (st = open + 1; st < t - 1; st++) {
                        if (tk[f, st] == "(") pd++
                        else if (tk[f, st] == ")") pd--
                        else if (pd == 0 && tk[f, st] == ",") {
                            param[name, seg++] = last
                            last = ""
                        } else if (ty[f, st] == "i") last = tk[f, st]
                    }
                    param[name, seg] = last
                    fn[f, t] = name
                }
            }
            d++
        } else if (tk[f, t] == "}") {
            if (--d == 0)
                name = ""
        }
    }
}

# Finds argument k of the call whose "(" is token open: sets A and B
# (its first and last token) and returns 1, or 0 if it has fewer.
function argument(f, open, k,    t, d, idx) {
    d = 0
    idx = 1
    A = open + 1
    for (t = open + 1; t <= nt[f]; t++) {
        if (tk[f, t] == "(" || tk[f, t] == "[" || tk[f, t] == "{") d++
        else if (tk[f, t] == ")" || tk[f, t] == "]" || tk[f, t] == "}") {
            if (d-- == 0) {
                if (idx == k) { B = t - 1; return B >= A }
                return 0
            }
        } else if (d == 0 && tk[f, t] == ",") {
            if (idx == k) { B = t - 1; return B >= A }
            idx++
            A = t + 1
        }
    }
    return 0
}

# One pass over the calls of the sinks known. With report set, prints
# violations; else learns wrappers (returns how many were new).
function scan(report,    fi, f, t, name, pos, new, p, key, txt, first, isparam) {
    new = 0
    for (fi = 1; fi <= nfiles; fi++) {
        f = files[fi]
        for (t = 1; t < nt[f]; t++) {
            if (ty[f, t] != "i" || tk[f, t + 1] != "(" || fn[f, t] == "")
                continue
            name = tk[f, t]
            if (t > 1 && (tk[f, t - 1] == "." || tk[f, t - 1] == "->"))
                continue
            if (name in writer && report) {
                if (!argument(f, t + 1, writer[name]))
                    continue
                first = ""
                for (p = A; p <= B; p++)
                    if (ty[f, p] == "s") { first = tk[f, p]; break }
                sub(/^"[ \t]*/, "", first)
                if (first ~ sqlword) {
                    key = f "|" fn[f, t] "|" span(f, A, B)
                    checked++
                    if (!(key in allowed)) {
                        failed++
                        printf "%s:%d: %s(): SQL assembled with %s: %s\n",
                            f, ln[f, t], fn[f, t], name,
                            substr(span(f, A, B), 1, 100)
                    }
                }
                continue
            }
            if (!(name in sink))
                continue
            pos = sink[name]
            if (!argument(f, t + 1, pos))
                continue
            called[name]++
            if (report)
                checked++
            if (constant_sql(f, A, B))
                continue
            # A wrapper passing on its own SQL parameter.
            isparam = 0
            if (A == B && ty[f, A] == "i") {
                for (p = 1; (fn[f, t], p) in param; p++)
                    if (param[fn[f, t], p] == tk[f, A])
                        break
                # Its callers are checked instead; one that no code here
                # calls (through a pointer, or not at all) is not.
                if ((fn[f, t], p) in param) {
                    isparam = 1
                    if (!(fn[f, t] in sink)) {
                        sink[fn[f, t]] = p
                        new++
                    }
                    if (sink[fn[f, t]] == p && called[fn[f, t]] > 0)
                        continue
                }
            }
            if (!report)
                continue
            txt = span(f, A, B)
            if ((f "|" fn[f, t] "|" txt) in allowed)
                continue
            failed++
            if (isparam && called[fn[f, t]] == 0)
                printf "%s:%d: %s(): passes its parameter %s to %s as SQL, and no call of %s() is here to check\n",
                    f, ln[f, t], fn[f, t], txt, name, fn[f, t]
            else
                printf "%s:%d: %s(): the SQL of %s is not constant text: %s\n",
                    f, ln[f, t], fn[f, t], name, substr(txt, 1, 100)
        }
    }
    return new
}

END {
    for (fi = 1; fi <= nfiles; fi++) {
        tokenize(files[fi])
        functions(files[fi])
    }
    while (scan(0) > 0)
        ;
    list = ""
    for (name in sink)
        if (!(name in basesink))
            list = list " " name "(" sink[name] ")"
    print "wrappers (SQL argument):" list
    checked = 0
    failed = 0
    scan(1)
    printf "%d calls checked, %d failed\n", checked, failed
    exit failed > 0
}
' $files
