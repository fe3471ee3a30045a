#!/bin/sh
# Installs the Debian packages the project builds and tests with, and
# only those that are missing, so a second run is quick and needs no
# network. As root it calls apt-get directly; otherwise through sudo.
# With package names as arguments, those instead of the project's
# (scripts/install-ha-deps.sh).
set -eu

# chromium: costsim's HTML report is tested in a real browser, Debian's,
# driven headless by puppeteer-core (tools/browser); python3 reads its
# CSV in tests/costsim.sh. wrk: the HTTP load of bench/report_bench.
# clang-format: scripts/check-format.sh, at Debian 12's version (14),
# the one the tree is formatted with.
packages="cmake make gcc pkg-config libpq-dev libmicrohttpd-dev libgnutls28-dev
libjansson-dev libgsl-dev libgmp-dev zlib1g-dev nettle-dev libcurl4-gnutls-dev curl postgresql-15 postgresql-client-15
util-linux libcairo2-dev poppler-utils fonts-dejavu-core tzdata jq
clang clang-format libclang-rt-14-dev openssl valgrind python3 chromium wrk"

[ $# -gt 0 ] && packages="$*"
missing=""
for p in $packages; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    case "$status" in
    *" installed") ;;
    *) missing="$missing $p" ;;
    esac
done
# The OpenAPI linter runs on Node.js (>= 18.17, Debian 12 has 18.20):
# any node and npm will do, Debian's or another vendor's.
if [ $# -eq 0 ] && { ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; }; then
    missing="$missing nodejs npm"
fi
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
else
    echo "install-deps: missing packages:$missing; run as root or install sudo" >&2
    exit 1
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing
