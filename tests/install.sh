#!/bin/bash
# cmake --install lays the programs, migrations, shipped price books,
# the simulator's profiles, openapi.yaml, the systemd unit and its
# environment file out so that the installed programs work without the
# source tree: no source path compiled in, migrations found beside bin/,
# a schema applied by the installed meterctl and a shipped profile run
# by the installed costsim from a directory elsewhere; the unit passes
# systemd-analyze verify where there is one.
. "$(dirname "$0")/lib.sh"
: "${METER_BUILD_DIR:?}"
src=$(cd "$(dirname "$0")/.." && pwd)
fresh_db
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; psql "$base dbname=postgres" -qc "DROP DATABASE IF EXISTS $dbname WITH (FORCE)" >/dev/null 2>&1' EXIT
prefix=$tmp/prefix

expect_status 0 cmake --install "$METER_BUILD_DIR" --prefix "$prefix"
for f in bin/meterctl bin/meterd bin/costsim share/meter/openapi.yaml \
    lib/systemd/system/meterd.service share/doc/meter/meterd.env \
    share/doc/meter/operations.md; do
    checks=$((checks + 1))
    [ -f "$prefix/$f" ] || fail "not installed: $f"
done
# Every file of each shipped directory, none left out.
for d in migrations:migrations pricing/books:books simulator/profiles:profiles; do
    from=${d%%:*} to=${d##*:}
    for f in "$src/$from"/*; do
        checks=$((checks + 1))
        cmp -s "$f" "$prefix/share/meter/$to/$(basename "$f")" ||
            fail "not installed as shipped: $from/$(basename "$f")"
    done
done
checks=$((checks + 1))
cmp -s "$src/docs/openapi.yaml" "$prefix/share/meter/openapi.yaml" || fail "openapi.yaml differs"

# The unit: the installed paths, and systemd's own check of it.
unit=$prefix/lib/systemd/system/meterd.service
contains "$(cat "$unit")" "ExecStart=$prefix/bin/meterd" "the unit runs the installed meterd"
contains "$(cat "$unit")" "EnvironmentFile=$prefix/etc/meter/meterd.env" "the unit's environment file"
contains "$(cat "$unit")" 'ExecReload=/bin/kill -HUP $MAINPID' "reload is SIGHUP"
# The environment file names every variable meterd reads (its --help).
for v in $("$prefix/bin/meterd" --help | grep -o '\$METER_[A-Z_]*' | tr -d '$' | sort -u) METER_SELLER; do
    contains "$(cat "$prefix/share/doc/meter/meterd.env")" "$v=" "meterd.env documents $v"
done
if command -v systemd-analyze >/dev/null; then
    checks=$((checks + 1))
    systemd-analyze verify "$unit" >"$tmp/verify.out" 2>&1 || fail "systemd-analyze verify: $(cat "$tmp/verify.out")"
    grep -F "meterd.service" "$tmp/verify.out" && fail "systemd-analyze verify warns about the unit"
else
    echo "install: systemd-analyze not found: the unit is not verified"
fi
# (Debug information names source files; data paths are what matter.)
for p in meterctl meterd costsim; do
    for d in "$src/migrations" "$src/pricing/books" "$src/simulator/profiles" \
        "$METER_BUILD_DIR/share"; do
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
# The installed costsim runs a shipped profile by name, on the installed
# books, from here.
expect_status 0 "$prefix/bin/costsim" --profile coding-agent --max-trials 8 \
    --threads 1 --format json
contains "$out" '"e2b-pro"' "the installed costsim prices on the installed books"
contains "$out" "coding-agent" "the installed costsim runs the installed profile"
finish
