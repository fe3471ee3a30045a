#!/bin/bash
# unknown_keys.sh - what a flood of unknown tokens from one address
# costs and whom it locks out (issue 26, defect 9): a private embedded
# PostgreSQL in a temporary directory, meterd on it with --rate-limit 1,
# then N requests with an unknown token of a key's shape (looked up by
# hash, then refused), N with a token of another shape (refused without
# the database), each by one curl on one kept-alive connection and each
# followed at once by one batch of a good host key from the same
# address. Prints the replies by status and the requests a second of
# each flood, the good key's status, and the database's lookups of
# api_keys.
#
#   bench/unknown_keys.sh BUILD_DIR [N]
set -u
build=$(cd "${1:?usage: unknown_keys.sh BUILD_DIR [N]}" && pwd)
n=${2:-2000}
. "$(dirname "$0")/private_meterd.sh"
host=$("$meterctl" --db "$db" keys create --role host --name bench 2>/dev/null)
private_meterd --rate-limit 1 --merge-every 0
lookups() {
    psql "$db" -XAtc "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE relname = 'api_keys'"
}
T=$(($(date +%s) - 600))
good() { # the status of a good host key's batch (sandbox s-$1)
    printf '[{"ts": %d, "account_id": "acme", "sandbox_id": "s-%s", "state": "running", "vcpu": 1, "cpu_used": 0.5, "mem_bytes": 1073741824, "disk_bytes": 0}]' $T "$1" >batch.json
    curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $host" \
        -H 'Content-Type: application/json' --data-binary @batch.json "http://127.0.0.1:$port/v1/samples"
}
urls=()
for i in $(seq 1 "$n"); do urls+=(-o /dev/null "http://127.0.0.1:$port/v1/invoices"); done
for token in "mtr_$(printf '0%.0s' $(seq 64))" "not-a-key"; do
    before=$(lookups)
    t0=$(date +%s%N)
    curl -s -w '%{http_code}\n' -H "Authorization: Bearer $token" "${urls[@]}" >codes.txt
    ms=$((($(date +%s%N) - t0) / 1000000))
    status=$(good "${token:0:3}")
    sleep 11 # a backend reports its statistics within 10 s of going idle
    echo "unknown_keys: $n requests with token '${token:0:12}...' in $ms ms" \
        "($((n * 1000 / (ms > 0 ? ms : 1))) a second):" \
        "$(sort codes.txt | uniq -c | awk '{ printf "%s%s x %s", (NR > 1 ? ", " : ""), $1, $2 }');" \
        "then a good host key's batch from the same address: HTTP $status;" \
        "index scans of api_keys (the good key's lookup included): $(($(lookups) - before))"
done
