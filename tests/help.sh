#!/bin/bash
# --help on every command and subcommand of meterctl and costsim, as
# their own command tables list them (meterctl help --commands, costsim
# --commands: the tables they dispatch through), prints its usage to
# stdout and exits 0; --version on each program prints "NAME VERSION",
# the version of CMake's project(). No database.
. "$(dirname "$0")/lib.sh"
: "${METERCTL:?}" "${METERD:?}" "${COSTSIM:?}"
top=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's/^project(meter VERSION \([0-9.]*\) .*/\1/p' "$top/CMakeLists.txt")
checks=$((checks + 1))
[ -n "$version" ] || fail "no version in CMakeLists.txt's project()"

# help_ok WHAT CMD...: CMD exits 0 with its usage on stdout, nothing on
# stderr, and the usage names WHAT.
help_ok() {
    local what=$1
    shift
    expect_status 0 "$@"
    checks=$((checks + 1))
    [ -n "$out" ] || fail "'$*' printed nothing on stdout"
    [ -z "$err" ] || fail "'$*' wrote to stderr: $err"
    contains "$out" "$what" "'$*' is about $what"
}

expect_status 0 "$METERCTL" help --commands
cmds=$out
n=$(printf '%s\n' "$cmds" | wc -l)
checks=$((checks + 1))
# (34 on 2026-12-04: fewer means the table lost rows.)
[ "$n" -ge 34 ] || fail "meterctl help --commands lists only $n: $cmds"
while read -r cmd sub; do
    # shellcheck disable=SC2086 # sub is empty for a command without any
    help_ok "$cmd${sub:+ $sub}" "$METERCTL" $cmd $sub --help
    help_ok "$cmd${sub:+ $sub}" "$METERCTL" help $cmd $sub
done <<<"$cmds"
# A subcommand's --help wherever it is among its arguments, and -h.
help_ok "invoice run" "$METERCTL" invoice run --period 2026-01 --help
help_ok "shard move" "$METERCTL" shard move -h
help_ok "keys create" "$METERCTL" keys --help
help_ok "shard sync" "$METERCTL" --help
expect_status 2 "$METERCTL" invoice bill
contains "$err" "unknown invoice subcommand 'bill'" "a subcommand not in the table"

expect_status 0 "$COSTSIM" --commands
subs=$out
checks=$((checks + 1))
[ -n "$subs" ] || fail "costsim --commands lists nothing"
help_ok "costsim --profile" "$COSTSIM" --help
for cmd in $subs; do
    help_ok "costsim $cmd" "$COSTSIM" "$cmd" --help
done

for p in "$METERD" "$METERCTL" "$COSTSIM"; do
    name=$(basename "$p")
    expect_status 0 "$p" --version
    case "$out" in
    "$name $version" | "$name $version ("*")") ;;
    *) fail "$name --version printed '$out', want '$name $version [(git describe)]'" ;;
    esac
    checks=$((checks + 1))
done
finish
