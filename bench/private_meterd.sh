# private_meterd.sh - sourced by the shell benches: a private embedded
# PostgreSQL in a temporary directory (destroyed on exit), migrated, and
# private_meterd OPTIONS... to start meterd on it on a random loopback
# port and wait until it answers. Needs $build (the build directory);
# sets $meterctl, $meterd, $tmp (the current directory from then on),
# $db (the owner's conninfo), $port and $mpid.
meterctl=$build/bin/meterctl meterd=$build/bin/meterd
tmp=$(mktemp -d)
mpid=
cleanup() {
    [ -n "$mpid" ] && kill "$mpid" 2>/dev/null && wait "$mpid" 2>/dev/null
    (cd "$tmp" && "$meterctl" db destroy --yes >/dev/null 2>&1)
    rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 1
unset METER_DATABASE_URL
"$meterctl" db start >db.log 2>&1 || { echo "db start: $(tail -n 3 db.log)" >&2; exit 1; }
db=$("$meterctl" db url)
"$meterctl" --db "$db" migrate >/dev/null || exit 1

private_meterd() {
    port=$((20000 + RANDOM % 30000))
    "$meterd" --listen 127.0.0.1:$port --db "$db" --log-level warn "$@" >meterd.log 2>&1 &
    mpid=$!
    for i in $(seq 1 100); do
        curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "meterd did not answer: $(tail -n 3 meterd.log)" >&2
    exit 1
}
