#!/bin/bash
# The embedded database through the real meterctl: first start, reuse,
# persistence, concurrent starts, a socket path too long for sun_path,
# and, as root, a checkout the cluster's user cannot enter and a run as
# an ordinary user.
. "$(dirname "$0")/lib.sh"
command -v psql >/dev/null || { fail "psql not found"; finish; exit; }

top=$(mktemp -d /tmp/meter-cluster-XXXXXX)
chmod 755 "$top"
dirs=()
cleanup() {
    for d in "${dirs[@]}"; do
        (cd "$d" && "$METERCTL" db destroy --yes >/dev/null 2>&1)
    done
    [ -n "${nobody_dir:-}" ] &&
        (cd "$nobody_dir" && runuser -u nobody -- ./meterctl db destroy --yes >/dev/null 2>&1)
    rm -rf "$top" "${private:-}"
}
trap cleanup EXIT

# query DIR SQL: runs SQL in the cluster of DIR.
query() {
    psql "$(cd "$1" && "$METERCTL" db url 2>/dev/null)" -qAtc "$2" 2>&1
}

# --- first start, reuse, persistence -----------------------------------
d=$top/basic
mkdir "$d" && dirs+=("$d")
cd "$d"
expect_status 3 "$METERCTL" db status
contains "$out" "state: absent" "status before start"
expect_status 0 "$METERCTL" db start
contains "$err" "initializing" "first start"
contains "$out" "database running" "first start"
[ -S "$d/var/pg/run/.s.PGSQL.5432" ] || fail "no socket in var/pg/run"
expect_status 0 "$METERCTL" db start
[ -z "$err" ] || fail "second start was not a no-op: $err"
[ "$(query "$d" 'SELECT current_database()')" = meter ] || fail "no meter database"
# Two roles: the owner, initdb's superuser (db url), and meter_worker
# (db url --worker), a login and nothing else, which the programs take
# for their daily work when no database is given; migrate takes the
# owner.
expect_status 0 "$METERCTL" db url --worker
wurl=$out
checks=$((checks + 5))
[ "$(psql "$wurl" -qAtc 'SELECT current_user, rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = current_user')" = "meter_worker|f|f|f" ] ||
    fail "the worker role: $(psql "$wurl" -qAtc 'SELECT current_user, rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = current_user' 2>&1)"
[ "$(query "$d" 'SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user')" = "meter|t" ] ||
    fail "the owner role of db url"
expect_status 0 env -u METER_DATABASE_URL -u METER_OWNER_DATABASE_URL "$METERCTL" migrate
expect_status 0 env -u METER_DATABASE_URL "$METERCTL" keys create --role admin --name c
[ "$(query "$d" "SELECT db_user FROM audit_log WHERE action = 'key.create'")" = meter_worker ] ||
    fail "meterctl's daily work not as meter_worker: $(query "$d" "SELECT db_user FROM audit_log")"
[ "$(query "$d" "SELECT tableowner FROM pg_tables WHERE tablename = 'invoices'")" = meter ] ||
    fail "migrate did not run as the owner"
# A worker given more than a login is set back at the next start.
query "$d" 'ALTER ROLE meter_worker NOLOGIN SUPERUSER CREATEDB' >/dev/null
expect_status 0 "$METERCTL" db start
[ "$(query "$d" "SELECT rolcanlogin, rolsuper, rolcreatedb FROM pg_roles WHERE rolname = 'meter_worker'")" = "t|f|f" ] ||
    fail "meter_worker not set back to a login and nothing else"
query "$d" 'CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)' >/dev/null
expect_status 0 "$METERCTL" db stop
expect_status 3 "$METERCTL" db status
contains "$out" "state: stopped" "status after stop"
expect_status 0 "$METERCTL" db start
case "$err" in *initializing*) fail "restart initialized again" ;; esac
[ "$(query "$d" 'SELECT x FROM kept')" = 42 ] || fail "data lost across restart"
# No TCP listener: only the unix socket.
[ "$(query "$d" "SHOW listen_addresses")" = "" ] || fail "listening on TCP"
expect_status 0 "$METERCTL" db destroy --yes
expect_status 3 "$METERCTL" db status
contains "$out" "state: absent" "status after destroy"

# --- concurrent starts ---------------------------------------------------
d=$top/concurrent
mkdir "$d" && dirs+=("$d")
cd "$d"
pids=()
for i in 1 2 3; do
    "$METERCTL" db start >"out.$i" 2>"err.$i" &
    pids+=($!)
done
for p in "${pids[@]}"; do
    checks=$((checks + 1))
    wait "$p" || fail "a concurrent start failed: $(cat err.*)"
done
n=$(cat err.* | grep -c initializing)
[ "$n" = 1 ] || fail "concurrent starts initialized $n times"
[ "$(query "$d" 'SELECT 1')" = 1 ] || fail "cluster unusable after concurrent starts"
"$METERCTL" db destroy --yes >/dev/null

# --- a socket path longer than sun_path ---------------------------------
d=$top/$(printf 'a-rather-long-directory-name/%.0s' 1 2 3 4)
mkdir -p "$d" && dirs+=("$d")
cd "$d"
expect_status 0 "$METERCTL" db start
expect_status 0 "$METERCTL" db status
contains "$out" "socket: /tmp/meter-pg-" "deep checkout"
[ "$(query "$d" 'SELECT 1')" = 1 ] || fail "deep checkout unusable"
sock=$(sed -n 's/^socket: //p' <<<"$out")
"$METERCTL" db destroy --yes >/dev/null
[ ! -e "$sock" ] || fail "destroy left the socket directory $sock"
if [ "$(id -u)" = 0 ]; then
    # Someone else's directory where the socket would go is refused, not
    # trusted or taken over.
    mkdir -m 0777 "$sock" && chown nobody "$sock"
    expect_status 1 "$METERCTL" db start
    contains "$err" "belongs to another user" "foreign socket directory"
    [ "$(stat -c %U "$sock")" = nobody ] || fail "the foreign directory was taken"
    rmdir "$sock"
fi

if [ "$(id -u)" = 0 ]; then
    # --- a checkout the cluster's user cannot enter (a 0700 home) -------
    private=$(mktemp -d /tmp/meter-home-XXXXXX) # mode 0700, root's
    d=$private/checkout
    mkdir "$d" && dirs+=("$d")
    cd "$d"
    expect_status 0 "$METERCTL" db start
    expect_status 0 "$METERCTL" db status
    contains "$out" "data: /var/tmp/meter-pg-" "private checkout"
    [ -L var/pg/data ] || fail "var/pg/data is not a link to the cluster"
    [ "$(query "$d" 'SELECT 1')" = 1 ] || fail "private checkout unusable"
    owner=$(stat -c %U "$(readlink var/pg/data)")
    [ "$owner" != root ] || fail "the cluster runs as root"
    "$METERCTL" db destroy --yes >/dev/null
    [ ! -e "$(dirname "$(readlink var/pg/data 2>/dev/null || echo /nonexistent/x)")" ] ||
        fail "destroy left the cluster's files"

    # --- an ordinary user -----------------------------------------------
    nobody_dir=$top/nobody
    mkdir "$nobody_dir"
    cp "$METERCTL" "$nobody_dir/meterctl"
    chown -R nobody "$nobody_dir"
    cd "$nobody_dir"
    expect_status 0 runuser -u nobody -- ./meterctl db start
    expect_status 0 runuser -u nobody -- ./meterctl db url
    url=$out
    checks=$((checks + 1))
    [ "$(stat -c %U var/pg/data)" = nobody ] || fail "cluster not owned by the user"
    [ "$(psql "$url" -qAtc 'SELECT 1' 2>&1)" = 1 ] || fail "ordinary user's cluster unusable"
    expect_status 0 runuser -u nobody -- ./meterctl db destroy --yes
else
    echo "not root: the root-only cases (0700 checkout, ordinary user) were not run"
fi

finish
