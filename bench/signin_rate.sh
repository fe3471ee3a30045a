#!/bin/bash
# signin_rate.sh - how fast one account key signs in on one connection
# (issue 26, defect 7): a private embedded PostgreSQL in a temporary
# directory, meterd on it with the options given, then N sign-ins
# posted by one curl on one kept-alive connection (the form's CSRF
# double submit made up: a cookie and a field of the same 64 hex
# digits). Prints the replies by status, the sign-ins a second, and the
# sessions the key holds afterwards.
#
#   bench/signin_rate.sh BUILD_DIR [N [METERD OPTIONS...]]
#   bench/signin_rate.sh build-check 2000
set -u
build=$(cd "${1:?usage: signin_rate.sh BUILD_DIR [N [METERD OPTIONS...]]}" && pwd)
n=${2:-2000}
shift $(($# < 2 ? $# : 2))
. "$(dirname "$0")/private_meterd.sh"
key=$("$meterctl" --db "$db" keys create --role account --account acme --name bench 2>/dev/null)
private_meterd "$@"
csrf=$(printf 'c%.0s' $(seq 1 64) | tr c a)
urls=()
for i in $(seq 1 "$n"); do urls+=(-o /dev/null "http://127.0.0.1:$port/sign-in"); done
t0=$(date +%s%N)
curl -s -w '%{http_code}\n' -b "meter_csrf=$csrf" \
    --data-urlencode "csrf=$csrf" --data-urlencode "key=$key" "${urls[@]}" >codes.txt
ms=$((($(date +%s%N) - t0) / 1000000))
echo "signin_rate: $n sign-ins of one key on one connection in $ms ms:" \
    "$(sort codes.txt | uniq -c | awk '{ printf "%s%s x %s", (NR > 1 ? ", " : ""), $1, $2 }')"
echo "signin_rate: $((n * 1000 / (ms > 0 ? ms : 1))) requests a second," \
    "$(grep -c '^303$' codes.txt) sessions started in $ms ms;" \
    "the key holds $(psql "$db" -XAtc 'SELECT count(*) FROM web_sessions WHERE expires_at > now()') live sessions"
