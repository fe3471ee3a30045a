#!/bin/bash
# SQL hygiene: no statement that meter/ and reports/ run is built from
# variable text (scripts/check-sql.sh), and the check itself catches
# each way of building one, on fixtures written here, while taking the
# constant forms the tree uses. No database.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/.." && pwd)
check=$top/scripts/check-sql.sh

expect_status 0 sh -c "cd '$top' && sh '$check'"
contains "$out" " 0 failed" "every SQL statement of the tree is constant text"
n=$(echo "$out" | sed -n 's/^\([0-9]*\) calls checked.*/\1/p')
checks=$((checks + 1))
# (83 on 2026-12-01: fewer means the check stopped seeing calls.)
[ "${n:-0}" -ge 70 ] || fail "only ${n:-0} calls checked in the tree: $out"
for w in "exec_cmd(2)" "db_strings(3)" "meter_db_transaction(2)"; do
    contains "$out" "$w" "the tree's wrapper $w found"
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/meter/db"
# Constant SQL in every form the tree uses: nothing to report.
cat >"$tmp/meter/db/good.c" <<'C'
#define COLS "a, b"
#define COLS2 COLS ", c" /* a macro of a macro */
#define OF(t) "SELECT 1 FROM " t
#define MULTI                                                              \
    "x, "                                                                  \
    COLS
static const char create_sql[] = "CREATE TABLE t (a int);"
                                 "COMMENT ON TABLE t IS 'x'";
static int
run(PGconn *db, const char *query, int n)
{
    PGresult *r = PQexec(db, query); /* a wrapper passes its SQL on */
    (void)n;
    return r != NULL;
}
int
good(PGconn *db, const char *id, int own)
{
    const char *v[] = {id};
    PQexec(db, "SELECT 1");
    PQexec(db, "SELECT " COLS2 " FROM t");
    PQexec(db, ("SELECT " MULTI));
    PQexec(db, OF("t"));
    PQexec(db, own ? "ROLLBACK" : "CLOSE c");
    PQexec(db, create_sql);
    PQexecParams(db, "SELECT * FROM t WHERE id = $1", 1, NULL, v, NULL, NULL, 0);
    meter_db_exec(db, "what", "DELETE FROM t WHERE id = $1", 1, v, NULL, NULL, NULL, e);
    PQprepare(db, "stmt", "SELECT $1::int", 1, NULL);
    /* PQexec(db, id); in a comment */
    printf("PQexec(db, id) in a string\n");
    return run(db, "VACUUM t", 0);
}
C
# SQL built from variable text, one way per line marked BAD.
cat >"$tmp/meter/db/bad.c" <<'C'
static int
run(PGconn *db, const char *query)
{
    return PQexec(db, query) != NULL;
}
static int
run2(PGconn *db, const char *q)
{
    return run(db, q); /* a wrapper of a wrapper */
}
int
bad(PGconn *db, const char *id, struct meter_buf *b, char *name)
{
    char sql[256];
    PQexec(db, id); /* BAD 1 */
    snprintf(sql, sizeof(sql), "SELECT * FROM t WHERE id = '%s'", id); /* BAD 2 */
    PQexec(db, sql); /* BAD 3 */
    meter_buf_printf(b, "DELETE FROM %s", name); /* BAD 4 */
    meter_db_exec(db, "what", b->p, 0, NULL, NULL, NULL, NULL, e); /* BAD 5 */
    PQexec(db, id ? "SELECT 1" : name); /* BAD 6 */
    PQexec(db, /* "SELECT 1" */ sql); /* BAD 7 */
    run(db, name); /* BAD 8 */
    run2(db, sql); /* BAD 9 */
    PQexec(db, "SELECT " NOT_A_MACRO); /* BAD 10 */
    PQprepare(db, "s", name, 0, NULL); /* BAD 11 */
    db_copy_in(db, sql, "", 0, "copy", e); /* BAD 12 */
    PQexec(db, "SELECT 1 FROM t WHERE id = " + 1); /* BAD 13 */
    return 0;
}
C
# The allowlist names a file, a function and an argument: the tree's
# one entry takes that call and no other.
cat >"$tmp/meter/db/migrate.c" <<'C'
static int
apply_one(PGconn *db, const struct meter_migration *m)
{
    return PQexec(db, m->sql) != NULL;
}
static int
apply_two(PGconn *db, const struct meter_migration *m)
{
    return PQexec(db, m->sql) != NULL; /* BAD 14 */
}
C
expect_status 1 sh -c "cd '$tmp' && sh '$check' meter"
want=$(grep -n 'BAD [0-9]*' "$tmp/meter/db/bad.c" "$tmp/meter/db/migrate.c" |
    sed "s|^$tmp/||; s|^\([^:]*:[0-9]*\):.*|\1|")
got=$(echo "$out" | grep -v '^wrappers' | grep -v 'calls checked' | cut -d: -f1,2 | sort -u)
checks=$((checks + 1))
[ "$(echo "$want" | sort)" = "$got" ] ||
    fail "the check did not report exactly the bad lines: want $(echo $want), got $(echo $got); $out"
contains "$out" "14 failed" "fourteen bad calls, one report each"
contains "$out" "run(2)" "a wrapper found"
contains "$out" "run2(2)" "a wrapper of a wrapper found"
contains "$out" "meter/db/bad.c:16: bad(): SQL assembled with snprintf" "SQL printed into a buffer named"
contains "$out" "meter/db/bad.c:17: bad(): the SQL of PQexec is not constant text: sql" "a buffer's text as SQL named"
# bad() takes id from its caller: as no call of it is here to check, the
# call inside it fails (a handler reached through a pointer is such a
# function).
contains "$out" "meter/db/bad.c:15: bad(): passes its parameter id to PQexec as SQL, and no call of bad() is here to check" "an unchecked wrapper named"
# Nothing reported in the good file.
checks=$((checks + 1))
case "$out" in *good.c*) fail "constant SQL reported: $out" ;; esac
# A tree without C files is an error, not a pass.
mkdir "$tmp/empty"
expect_status 1 sh -c "cd '$tmp' && sh '$check' empty"
finish
