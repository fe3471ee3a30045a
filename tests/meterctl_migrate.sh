#!/bin/bash
# meterctl migrate through the real binary: applies, is idempotent and
# says so, lists status, refuses an edited applied migration by name,
# and leaves nothing behind from a failed one.
. "$(dirname "$0")/lib.sh"
src=$(cd "$(dirname "$0")/.." && pwd)/migrations
fresh_db
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; psql "$base dbname=postgres" -qc "DROP DATABASE IF EXISTS $dbname WITH (FORCE)" >/dev/null 2>&1' EXIT
cp "$src"/*.sql "$tmp"/
last=$(ls "$src" | sort | tail -n 1)
lastv=${last%%_*}

expect_status 0 "$METERCTL" --db "$db" migrate --migrations "$tmp"
contains "$out" "applied 0001_core.sql" "first run"
contains "$out" "schema is at version $lastv" "first run"

expect_status 0 "$METERCTL" migrate --db "$db" --migrations "$tmp"
contains "$out" "up to date: nothing to apply" "second run"
case "$out" in *"applied 0"*) fail "second run applied something: $out" ;; esac

expect_status 0 "$METERCTL" --db "$db" migrate --status --migrations "$tmp"
contains "$out" "0001     applied" "status"

# A new migration is pending, then applied.
next=$(printf '%04d' $((10#$lastv + 1)))
echo "CREATE TABLE extra (x int); COMMENT ON TABLE extra IS 'test';" \
    >"$tmp/${next}_extra.sql"
expect_status 0 "$METERCTL" --db "$db" migrate --status --migrations "$tmp"
contains "$out" "$next     pending" "status of a new file"
expect_status 0 "$METERCTL" --db "$db" migrate --migrations "$tmp"
contains "$out" "applied ${next}_extra.sql" "new file"

# An applied migration edited: refused, by name, exit 1.
echo "-- an edit" >>"$tmp/0001_core.sql"
next2=$(printf '%04d' $((10#$next + 1)))
echo "CREATE TABLE never (x int);" >"$tmp/${next2}_never.sql"
expect_status 1 "$METERCTL" --db "$db" migrate --migrations "$tmp"
contains "$err" "0001_core.sql" "edited migration"
contains "$err" "changed" "edited migration"
n=$(psql "$db" -qAtc "SELECT count(*) FROM pg_class WHERE relname = 'never'")
[ "$n" = 0 ] || fail "a migration was applied despite the edited one"
expect_status 1 "$METERCTL" --db "$db" migrate --status --migrations "$tmp"
contains "$out" "0001     CHANGED" "status of an edited file"
cp "$src/0001_core.sql" "$tmp/"
rm "$tmp/${next2}_never.sql"

# A failing migration: error names the file and line; nothing recorded.
printf 'CREATE TABLE half (x int);\nSELECT nope(;\n' >"$tmp/${next2}_bad.sql"
expect_status 1 "$METERCTL" --db "$db" migrate --migrations "$tmp"
contains "$err" "${next2}_bad.sql" "failing migration"
contains "$err" "line 2" "failing migration"
n=$(psql "$db" -qAtc "SELECT count(*) FROM pg_class WHERE relname = 'half'")
[ "$n" = 0 ] || fail "a failed migration left a table behind"
rm "$tmp/${next2}_bad.sql"

# A badly named file is refused by name.
echo "SELECT 1;" >"$tmp/7_bad.sql"
expect_status 1 "$METERCTL" --db "$db" migrate --migrations "$tmp"
contains "$err" "7_bad.sql" "bad file name"

finish
