# lib.sh - helpers for the shell tests: sourced, not run.
# $METERCTL is the meterctl under test (set by ctest).
set -u

fails=0
checks=0

fail() {
    echo "FAIL: $*" >&2
    fails=$((fails + 1))
}

# expect_status WANT CMD...: runs CMD, output in $out and $err.
expect_status() {
    want=$1
    shift
    checks=$((checks + 1))
    out=$("$@" 2>/tmp/meter-test-err.$$) && got=0 || got=$?
    err=$(cat /tmp/meter-test-err.$$)
    rm -f /tmp/meter-test-err.$$
    [ "$got" = "$want" ] || fail "'$*' exited $got, want $want; stderr: $err"
}

# contains TEXT NEEDLE WHAT
contains() {
    checks=$((checks + 1))
    case "$1" in
    *"$2"*) ;;
    *) fail "$3: '$2' not in: $1" ;;
    esac
}

# Needs a database: under CI=true a missing one is a failure, else skip.
need_database() {
    if ! psql "$1" -qAtc 'SELECT 1' >/dev/null 2>&1; then
        echo "test database unreachable at $1" >&2
        if [ "${CI:-}" = true ]; then
            echo "failing: CI=true requires a database" >&2
            exit 1
        fi
        exit 77
    fi
}

# fresh_db: creates an empty database in the test cluster; sets $db to
# its conninfo and drops it when the script exits.
fresh_db() {
    base=${METER_TEST_DATABASE_URL:-$("$METERCTL" db url 2>/dev/null)}
    need_database "$base dbname=postgres"
    dbname="test_sh_$$_$(date +%s)"
    psql "$base dbname=postgres" -qc "CREATE DATABASE $dbname" >/dev/null
    db="$base dbname=$dbname"
    trap 'psql "$base dbname=postgres" -qc "DROP DATABASE IF EXISTS $dbname WITH (FORCE)" >/dev/null 2>&1' EXIT
}

finish() {
    echo "$((checks - fails)) passed, $fails failed"
    [ "$fails" -eq 0 ]
}
