#!/bin/bash
# Bad input to meterctl: a clear message and a non-zero exit.
. "$(dirname "$0")/lib.sh"

expect_status 2 "$METERCTL"
contains "$err" "usage: meterctl" "no command"
expect_status 2 "$METERCTL" frobnicate
contains "$err" "unknown command 'frobnicate'" "unknown command"
expect_status 2 "$METERCTL" --frob migrate
contains "$err" "--frob" "unknown option"
expect_status 2 "$METERCTL" db
expect_status 2 "$METERCTL" db frob
contains "$err" "unknown db subcommand 'frob'" "unknown db subcommand"
expect_status 2 "$METERCTL" db destroy
contains "$err" "--yes" "destroy without --yes"
expect_status 2 "$METERCTL" --db x db start
contains "$err" "does not apply" "--db with db"
expect_status 2 "$METERCTL" migrate --frob
contains "$err" "--frob" "unknown migrate option"
expect_status 2 "$METERCTL" migrate extra
contains "$err" "unexpected argument 'extra'" "extra argument"
expect_status 0 "$METERCTL" help
contains "$out" "usage: meterctl" "help"
expect_status 0 "$METERCTL" --version
contains "$out" "meterctl " "version"

# invoice: each subcommand names what is wrong, before any database.
expect_status 2 "$METERCTL" invoice
contains "$err" "run, list, show, void or preview" "invoice without a subcommand"
expect_status 2 "$METERCTL" invoice bill
contains "$err" "unknown invoice subcommand 'bill'" "unknown invoice subcommand"
expect_status 2 "$METERCTL" invoice run
contains "$err" "--period" "invoice run without a period"
expect_status 2 "$METERCTL" invoice run --period 2026-13
contains "$err" "--period '2026-13' is not YYYY-MM" "a bad period"
expect_status 2 "$METERCTL" invoice run --period 2026-01 --jobs 0
contains "$err" "--jobs '0' is not 1-64" "--jobs 0"
expect_status 2 "$METERCTL" invoice run --period 2026-01 --account 'a b'
contains "$err" "'a b'" "a bad account id"
expect_status 2 "$METERCTL" invoice run --period 2026-01 --status final
contains "$err" "--status" "an option of another subcommand"
expect_status 2 "$METERCTL" invoice list --status paid
contains "$err" "--status 'paid' is not draft, final or void" "a bad status"
expect_status 2 "$METERCTL" invoice list --limit 0
contains "$err" "--limit '0' is not 1-1000" "--limit 0"
expect_status 2 "$METERCTL" invoice show
contains "$err" "NUMBER or DRAFT-ID" "invoice show without a document"
expect_status 2 "$METERCTL" invoice show 2026-000001 --format docx
contains "$err" "--format 'docx'" "a bad format"
expect_status 2 "$METERCTL" invoice void 2026-000001
contains "$err" "--reason" "void without a reason"
expect_status 2 "$METERCTL" invoice preview --period 2026-01 --account acme
contains "$err" "--price-book" "preview without a book"

expect_status 2 "$METERCTL" usage
contains "$err" "compact" "usage without a subcommand"
expect_status 2 "$METERCTL" usage compact
contains "$err" "--period" "usage compact without a period"
expect_status 2 "$METERCTL" usage compact --period 26-01
contains "$err" "--period '26-01' is not YYYY-MM" "usage compact: a bad period"
expect_status 2 "$METERCTL" usage pack --after 2678401
contains "$err" "--after '2678401' is not a number of seconds from 0 to 2678400" "usage pack: --after too long"
expect_status 2 "$METERCTL" usage pack --after -1
contains "$err" "--after '-1'" "usage pack: a negative --after"
expect_status 2 "$METERCTL" usage pack --after 10s
contains "$err" "--after '10s'" "usage pack: --after with a unit"
expect_status 2 "$METERCTL" usage pack now
contains "$err" "unexpected argument 'now'" "usage pack: an argument"

# Malformed --db: says which and why, touches nothing.
expect_status 1 "$METERCTL" --db "host=x port" migrate
contains "$err" "invalid database conninfo 'host=x port'" "malformed --db"
expect_status 1 "$METERCTL" --db "postgresql://[::1" migrate
contains "$err" "invalid database conninfo" "malformed URI"
# A password in a malformed conninfo is not echoed.
expect_status 1 "$METERCTL" --db "password=hunter2 port" migrate
case "$err" in *hunter2*) fail "password echoed: $err" ;; esac
# Unreachable database: names where it tried.
expect_status 1 "$METERCTL" --db "host=/nonexistent-dir port=5999" migrate
contains "$err" "cannot connect to the database at host '/nonexistent-dir' port '5999'" "unreachable"
expect_status 1 env METER_DATABASE_URL="host=/nonexistent-dir dbname=x" "$METERCTL" migrate
contains "$err" "cannot connect" "unreachable from the environment"
# The owner's commands (migrate, usage compact) take
# METER_OWNER_DATABASE_URL before METER_DATABASE_URL, the others never;
# --db before both.
for cmd in "migrate" "usage compact --period 2026-01"; do
    expect_status 1 env METER_OWNER_DATABASE_URL="host=/nonexistent-owner" METER_DATABASE_URL="host=/nonexistent-worker" "$METERCTL" $cmd
    contains "$err" "host '/nonexistent-owner'" "'$cmd' as the owner"
    expect_status 1 env METER_OWNER_DATABASE_URL="host=/nonexistent-owner" "$METERCTL" --db "host=/nonexistent-db" $cmd
    contains "$err" "host '/nonexistent-db'" "'$cmd' with --db"
done
expect_status 1 env METER_OWNER_DATABASE_URL="host=/nonexistent-owner" METER_DATABASE_URL="host=/nonexistent-worker" "$METERCTL" keys list
contains "$err" "host '/nonexistent-worker'" "a daily command as the worker"
expect_status 1 env -u METER_DATABASE_URL METER_OWNER_DATABASE_URL="host=/nonexistent-owner" "$METERCTL" migrate
contains "$err" "host '/nonexistent-owner'" "migrate without METER_DATABASE_URL"
expect_status 1 env -u METER_OWNER_DATABASE_URL METER_DATABASE_URL="host=/nonexistent-worker" "$METERCTL" migrate
contains "$err" "host '/nonexistent-worker'" "migrate with one URL for both"
# A missing migrations directory.
expect_status 1 "$METERCTL" --db "host=/nonexistent-dir" migrate --migrations /nonexistent
contains "$err" "/nonexistent" "missing migrations directory"

# No database configured and the embedded one not running: every command
# that needs one says so, and none starts a database by itself.
empty=$(mktemp -d)
for cmd in "migrate" "keys list" "export --from 0 --to 1" \
    "accounts add acme" "invoice run --period 2026-01" "invoice list" \
    "invoice show 1" "usage compact --period 2026-01" "usage pack" "rate --price-book $(dirname "$0")/../pricing/books/e2b-pro.json --from 0 --to 1"; do
    # shellcheck disable=SC2086
    expect_status 1 sh -c "cd '$empty' && METER_DATABASE_URL= METER_OWNER_DATABASE_URL= '$METERCTL' $cmd"
    contains "$err" "no database" "'$cmd' with no database"
    contains "$err" "meterctl db start" "'$cmd' says how to start one"
done
checks=$((checks + 1))
[ -e "$empty/var" ] && fail "a command without a database created var/"
rm -rf "$empty"

finish
