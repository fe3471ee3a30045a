#!/bin/bash
# Operating meterd (docs/operations.md): it refuses a schema older or
# newer than its migrations, naming both, and /readyz says so when the
# schema changes under it.
. "$(dirname "$0")/lib.sh"
src=$(cd "$(dirname "$0")/.." && pwd)/migrations
with_meterd
last=$(ls "$src" | sort | tail -n 1)
last=${last%.sql}
prev=$(ls "$src" | sort | tail -n 2 | head -n 1)
prev=${prev%.sql}
next=$(printf '%04d_later' $((10#${last%%_*} + 1)))

# refused NAME WANT...: meterd on $wdb exits non-zero at once, its
# message holding each WANT.
refused() {
    local what=$1 rc
    shift
    checks=$((checks + 1))
    timeout 20 "$METERD" --listen 127.0.0.1:0 --db "$wdb" >refused.log 2>&1 && rc=0 || rc=$?
    [ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "$what: meterd exited $rc: $(cat refused.log)"
    for want in "$@"; do contains "$(cat refused.log)" "$want" "$what"; done
}

# --- the schema: one migration behind, then one ahead ---------------------
mkdir behind
cp "$src"/*.sql behind/
rm "behind/$last.sql"
"$METERCTL" --db "$db" migrate --migrations behind >/dev/null || fail "migrate all but the last"
refused "a schema one migration behind" "at migration $prev;" "needs $last" "meterctl migrate"

"$METERCTL" --db "$db" migrate >/dev/null || fail "migrate"
start_meterd a "$wdb" || { finish; exit; }
A=$url_a
checks=$((checks + 1))
[ "$(curl -s -o /dev/null -w '%{http_code}' "$A/readyz")" = 200 ] || fail "readyz on the schema it knows"

mkdir ahead
cp "$src"/*.sql ahead/
echo "CREATE TABLE later (x int); COMMENT ON TABLE later IS 'a test''s';" >"ahead/$next.sql"
"$METERCTL" --db "$db" migrate --migrations ahead >/dev/null || fail "migrate one ahead"
body=$(curl -s -w '\n%{http_code}' "$A/readyz")
checks=$((checks + 1))
[ "${body##*$'\n'}" = 503 ] || fail "readyz on a schema migrated under it: $body"
contains "$body" "$next" "readyz names the newer migration"
contains "$body" "schema-mismatch" "readyz's problem"
refused "a schema one migration ahead" "at migration $next" "$last"
psql "$db" -qAtc "DELETE FROM schema_migrations WHERE file = '$next.sql'; DROP TABLE later" ||
    fail "undo the later migration"
checks=$((checks + 1))
[ "$(curl -s -o /dev/null -w '%{http_code}' "$A/readyz")" = 200 ] || fail "readyz once the schema is back"

finish
