#!/bin/bash
# cmake --install lays the programs, migrations and shipped price books
# out so that the installed programs work without the source tree: no
# source path compiled in, migrations found beside bin/, and a schema
# applied by the installed meterctl from a directory elsewhere.
. "$(dirname "$0")/lib.sh"
: "${METER_BUILD_DIR:?}"
src=$(cd "$(dirname "$0")/.." && pwd)
fresh_db
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; psql "$base dbname=postgres" -qc "DROP DATABASE IF EXISTS $dbname WITH (FORCE)" >/dev/null 2>&1' EXIT
prefix=$tmp/prefix

expect_status 0 cmake --install "$METER_BUILD_DIR" --prefix "$prefix"
for f in bin/meterctl bin/meterd share/meter/migrations/0001_core.sql \
    share/meter/books/e2b-pro.json; do
    checks=$((checks + 1))
    [ -f "$prefix/$f" ] || fail "not installed: $f"
done
n_src=$(ls "$src"/migrations/*.sql | wc -l)
n_inst=$(ls "$prefix"/share/meter/migrations/*.sql | wc -l)
checks=$((checks + 1))
[ "$n_src" = "$n_inst" ] || fail "installed $n_inst migrations of $n_src"
# (Debug information names source files; data paths are what matter.)
for p in meterctl meterd; do
    for d in "$src/migrations" "$src/pricing/books" "$METER_BUILD_DIR/share"; do
        checks=$((checks + 1))
        grep -qF "$d" "$prefix/bin/$p" && fail "$p has '$d' compiled in"
    done
done

# The installed meterctl, moved elsewhere and run from there, with no
# hint of the source or the build tree.
mv "$prefix" "$tmp/moved"
prefix=$tmp/moved
cd "$tmp"
unset METER_MIGRATIONS_DIR METER_DATA_DIR
expect_status 0 "$prefix/bin/meterctl" --db "$db" migrate
contains "$out" "migrations applied" "installed meterctl applies the schema"
expect_status 0 "$prefix/bin/meterctl" --db "$db" migrate --status
contains "$out" "0001_core.sql" "installed meterctl lists the migrations"
expect_status 0 "$prefix/bin/meterctl" --db "$wdb" books add \
    "$prefix/share/meter/books/e2b-pro.json"
contains "$out" "version 1 stored" "an installed book stores"
finish
