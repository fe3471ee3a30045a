#!/bin/bash
# meterd over HTTPS (--tls-cert, --tls-key) with a throwaway self-signed
# certificate made here: a batch and the probes through curl --cacert,
# plain HTTP and an unknown CA refused, TLS 1.1 refused, TLS 1.2 only
# with forward secrecy and AEAD, gen --push over TLS (an untrusted
# certificate fatal at once), start errors that name the file, a key
# open to others warned of, and the plain server's limits (pipelining, idle
# and body timeouts, connections per address, the body cap) over TLS.
. "$(dirname "$0")/lib.sh"
command -v openssl >/dev/null || { fail "openssl not found (scripts/install-deps.sh installs it)"; finish; exit; }
with_meterd
"$METERCTL" --db "$db" migrate >/dev/null || { fail "migrate"; finish; exit; }
HOST=$("$METERCTL" --db "$wdb" keys create --role host --name h)

# cert NAME: a self-signed certificate for 127.0.0.1 and localhost,
# NAME.pem, with its key NAME.key (P-256: quick to make).
cert() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$1.key" -out "$1.pem" -days 2 -subj "/CN=meter test $1" \
        -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" 2>"$1.err" ||
        fail "openssl could not make a certificate: $(cat "$1.err")"
}
cert server
cert other

# --- start errors name the file, before the database is touched ----------
# (an unreachable --db: the error must still be about the file)
nodb="host=/nonexistent dbname=x connect_timeout=1"
expect_status 2 "$METERD" --db "$nodb" --tls-cert server.pem
contains "$err" "--tls-cert needs --tls-key" "a certificate without a key"
expect_status 2 env METER_TLS_KEY=server.key "$METERD" --db "$nodb"
contains "$err" "--tls-key needs --tls-cert" "a key without a certificate (environment)"
expect_status 1 "$METERD" --db "$nodb" --tls-cert server.pem --tls-key missing.key
contains "$err" "cannot open 'missing.key'" "a missing key file named"
expect_status 1 "$METERD" --db "$nodb" --tls-cert missing.pem --tls-key server.key
contains "$err" "cannot open 'missing.pem'" "a missing certificate file named"
mkdir adir
expect_status 1 "$METERD" --db "$nodb" --tls-cert adir --tls-key server.key
contains "$err" "'adir'" "an unreadable certificate named"
expect_status 1 "$METERD" --db "$nodb" --tls-cert server.key --tls-key server.key
contains "$err" "--tls-cert 'server.key' is not a PEM certificate" "a key given as certificate"
expect_status 1 "$METERD" --db "$nodb" --tls-cert server.pem --tls-key server.pem
contains "$err" "--tls-key 'server.pem' is not an unencrypted PEM private key" "a certificate given as key"
expect_status 1 "$METERD" --db "$nodb" --tls-cert server.pem --tls-key other.key
contains "$err" "'other.key' is not the key of the certificate 'server.pem'" "a key of another certificate"
openssl pkey -in server.key -aes256 -passout pass:secret -out locked.key 2>/dev/null
expect_status 1 "$METERD" --db "$nodb" --tls-cert server.pem --tls-key locked.key
contains "$err" "'locked.key' is not an unencrypted PEM private key" "an encrypted key"

# A key group or others may read: served (here: the database fails
# after), with a warning; one kept private: no warning.
cp server.key open.key
chmod 644 open.key
expect_status 1 "$METERD" --db "$nodb" --tls-cert server.pem --tls-key open.key
contains "$err" "--tls-key 'open.key' may be read by group or others (mode 0644)" "a key open to others warned of"
chmod 600 open.key
expect_status 1 "$METERD" --db "$nodb" --tls-cert server.pem --tls-key open.key
checks=$((checks + 1))
case "$err" in *"may be read"*) fail "a private key warned of: $err" ;; esac

# --- served over HTTPS -----------------------------------------------------
tls_ca=server.pem
# From the environment, like every option.
METER_TLS_CERT=server.pem METER_TLS_KEY=server.key start_meterd env "$wdb" || { finish; exit; }
start_meterd a "$wdb" --tls-cert server.pem --tls-key server.key \
    --max-per-ip 3 --idle-timeout 2 --body-timeout 2 --max-body 4096 || { finish; exit; }
A=$url_a
port=${A##*:}
checks=$((checks + 2))
case "$url_env" in https://*) ;; *) fail "METER_TLS_CERT and METER_TLS_KEY did not give HTTPS: $url_env" ;; esac
contains "$(cat a.log)" "listening on https://" "the log says https"

T=$(($(date +%s) - 600))
cat >rows.json <<JSON
[{"ts": $T, "account_id": "acme", "sandbox_id": "t-1", "state": "running",
  "vcpu": 1, "cpu_used": 0.5, "mem_bytes": 1073741824, "disk_bytes": 0},
 {"ts": $((T + 1)), "account_id": "acme", "sandbox_id": "t-1", "state": "running",
  "vcpu": 1, "cpu_used": 0.25, "mem_bytes": 1073741824, "disk_bytes": 0}]
JSON
# post [CURL ARGS]: status and body of posting rows.json to A over TLS.
post() {
    body=$(curl -s --cacert server.pem -o /dev/stdout -w '\n%{http_code}' -X POST \
        -H "Authorization: Bearer $HOST" -H 'Content-Type: application/json' "$@" \
        "$A/v1/samples")
    status=${body##*$'\n'}
    body=${body%$'\n'*}
}
post --data-binary @rows.json
checks=$((checks + 1))
[ "$status" = 200 ] || fail "a batch over TLS: HTTP $status $body"
contains "$body" '"accepted":2' "a batch over TLS"
sed 's/t-1/t-2/' rows.json | gzip -c >rows.json.gz
post --data-binary @rows.json.gz -H 'Content-Encoding: gzip'
contains "$body" '"accepted":2' "a gzipped batch over TLS"
checks=$((checks + 1))
[ "$(psql "$db" -qAtc 'SELECT count(*) FROM sandboxes')" = 2 ] || fail "the batches over TLS are not stored"
head -c 5000 /dev/zero | tr '\0' ' ' >big.json
post --data-binary @big.json
checks=$((checks + 1))
[ "$status" = 413 ] || fail "a body past --max-body over TLS: HTTP $status"
got=$(curl -s --cacert server.pem "$A/healthz")
contains "$got" "ok" "GET /healthz over TLS"
got=$(curl -s --cacert server.pem -o /dev/null -w '%{http_code}' "https://localhost:$port/readyz")
contains "$got" "200" "GET /readyz over TLS, by name"

# --- what must be refused ---------------------------------------------------
checks=$((checks + 1))
got=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz") && rc=0 || rc=$?
[ "$rc" != 0 ] && [ "$got" != 200 ] ||
    fail "plain HTTP to the TLS port was answered: curl $rc, HTTP $got"
checks=$((checks + 1))
curl -s -m 5 -o /dev/null --cacert other.pem "$A/healthz" && rc=0 || rc=$?
[ "$rc" = 60 ] || fail "curl trusted meterd with another CA: exit $rc, want 60"
checks=$((checks + 1))
curl -s -m 5 -o /dev/null "$A/healthz" && rc=0 || rc=$?
[ "$rc" = 60 ] || fail "curl trusted a self-signed meterd without --cacert: exit $rc, want 60"
# TLS 1.1 (RFC 8996), offered with every cipher openssl has (its
# system settings, which refuse it too, set aside): no cipher agreed.
# (With TLS 1.1 allowed, this handshake agrees ECDHE-ECDSA-AES256-SHA.)
out=$(echo | OPENSSL_CONF=/dev/null timeout 5 openssl s_client \
    -connect "127.0.0.1:$port" -tls1_1 -cipher 'DEFAULT:@SECLEVEL=0' 2>&1)
contains "$out" "Cipher is (NONE)" "a TLS 1.1 handshake refused"

# The suites of TLS 1.2: forward secrecy and AEAD only. An RSA
# certificate as well, since static RSA key exchange (AES128-SHA) needs
# one; each suite offered alone, openssl's system settings set aside.
# cipher_of PORT S_CLIENT-ARGS: the suite agreed, "(NONE)" if none.
cipher_of() {
    local p=$1
    shift
    echo | OPENSSL_CONF=/dev/null timeout 5 openssl s_client -connect "127.0.0.1:$p" "$@" 2>&1 |
        sed -n 's/.*Cipher is \(.*\)/\1/p' | head -1
}
openssl req -x509 -newkey rsa:2048 -nodes -keyout rsa.key -out rsa.pem -days 2 \
    -subj "/CN=meter test rsa" -addext "subjectAltName=IP:127.0.0.1" 2>rsa.err ||
    fail "openssl could not make an RSA certificate: $(cat rsa.err)"
tls_ca=rsa.pem start_meterd r "$wdb" --tls-cert rsa.pem --tls-key rsa.key || { finish; exit; }
rport=${url_r##*:}
for suite in AES128-SHA AES256-SHA AES128-GCM-SHA256 ECDHE-RSA-AES128-SHA \
    ECDHE-RSA-AES256-SHA384 DHE-RSA-AES128-SHA; do
    got=$(cipher_of "$rport" -tls1_2 -cipher "$suite:@SECLEVEL=0")
    contains "$got" "(NONE)" "TLS 1.2 $suite (RSA certificate) refused, got $got"
done
for suite in ECDHE-ECDSA-AES128-SHA ECDHE-ECDSA-AES256-SHA384; do
    got=$(cipher_of "$port" -tls1_2 -cipher "$suite:@SECLEVEL=0")
    contains "$got" "(NONE)" "TLS 1.2 $suite (P-256 certificate) refused, got $got"
done
checks=$((checks + 4))
got=$(cipher_of "$rport" -tls1_2)
case "$got" in ECDHE-RSA-*GCM* | ECDHE-RSA-CHACHA20*) ;; *) fail "TLS 1.2 by default (RSA certificate) agreed '$got'" ;; esac
got=$(cipher_of "$port" -tls1_2)
case "$got" in ECDHE-ECDSA-*GCM* | ECDHE-ECDSA-CHACHA20*) ;; *) fail "TLS 1.2 by default (P-256 certificate) agreed '$got'" ;; esac
got=$(cipher_of "$rport" -tls1_3)
case "$got" in TLS_*) ;; *) fail "TLS 1.3 (RSA certificate) agreed '$got'" ;; esac
got=$(cipher_of "$port" -tls1_3)
case "$got" in TLS_*) ;; *) fail "TLS 1.3 (P-256 certificate) agreed '$got'" ;; esac

# --- gen --push over TLS ------------------------------------------------------
# With the CA: pushed. With another CA, or none (the system's): a
# certificate that does not verify ends it at once, saying so, rather
# than after --retry-for's 60 s of retries.
expect_status 0 "$METERCTL" gen --sandboxes 2 --accounts 1 --seconds 3 --start "$T" \
    --push "$A/v1/samples" --token "$HOST" --cacert server.pem
checks=$((checks + 1))
echo "$err" | grep -Eq 'pushed ([1-9][0-9]*) samples .*: \1 accepted' ||
    fail "gen --push over TLS with its CA: $err"
for ca in other.pem ""; do
    if [ -n "$ca" ]; then
        with=(--cacert "$ca") who="--cacert '$ca'"
    else
        with=() who="the system's CAs"
    fi
    t0=$(date +%s%N)
    expect_status 1 "$METERCTL" gen --sandboxes 2 --accounts 1 --seconds 3 --start "$T" \
        --push "$A/v1/samples" --token "$HOST" "${with[@]}"
    elapsed=$((($(date +%s%N) - t0) / 1000000))
    contains "$err" "the server's certificate is not trusted by $who" \
        "gen --push with $who: the certificate named"
    checks=$((checks + 1))
    [ "$elapsed" -lt 5000 ] || fail "gen --push with $who gave up after $elapsed ms, not at once"
done

# --- the plain server's limits, over TLS ------------------------------------
# tls_session SECONDS: openssl s_client to A, its input from stdin
# (kept open up to SECONDS after it ends, or until the server closes),
# its output to stdout.
tls_session() {
    rm -f session.done
    {
        cat
        for ((i = 0; i < $1 * 10; i++)); do
            [ -e session.done ] && break
            sleep 0.1
        done
    } | {
        timeout $(($1 + 5)) openssl s_client -quiet -connect "127.0.0.1:$port" \
            -CAfile server.pem -verify_return_error 2>/dev/null
        touch session.done
    }
}
n=$(printf 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /readyz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' |
    tls_session 3 | tr -d '\r' | grep -c '^HTTP/1.1 200')
checks=$((checks + 1))
[ "$n" = 3 ] || fail "three pipelined GETs over TLS got $n replies"

# A TLS connection silent after half a header line: closed after
# --idle-timeout 2, well before its client would give up (10 s).
t0=$(date +%s%N)
printf 'GET /healthz HTTP/1.1\r\n' | tls_session 10 >/dev/null
elapsed=$((($(date +%s%N) - t0) / 1000000))
echo "a silent TLS connection closed after $elapsed ms (--idle-timeout 2)"
checks=$((checks + 1))
[ "$elapsed" -lt 6000 ] || fail "a silent TLS connection stayed open ${elapsed} ms"
# A TCP connection that never starts its handshake: the same.
exec 5<>"/dev/tcp/127.0.0.1/$port"
t0=$(date +%s%N)
timeout 10 cat <&5 >/dev/null
elapsed=$((($(date +%s%N) - t0) / 1000000))
exec 5>&-
checks=$((checks + 1))
[ "$elapsed" -lt 6000 ] || fail "a connection without a handshake stayed open ${elapsed} ms"

# A body later than --body-timeout 2: a byte sent after 2.5 s closes
# the connection (its client would wait 10 s more).
t0=$(date +%s%N)
{
    printf 'POST /v1/samples HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n[' "$HOST"
    sleep 1.2
    printf ' '
    sleep 1.3
    printf ' '
} | tls_session 10 >/dev/null
elapsed=$((($(date +%s%N) - t0) / 1000000))
echo "a late TLS body closed after $elapsed ms (--body-timeout 2)"
checks=$((checks + 1))
[ "$elapsed" -lt 7000 ] || fail "a TLS body past --body-timeout was not closed (${elapsed} ms)"
sleep 0.3
contains "$(cat a.log)" "body timeout" "body timeout over TLS logged"

# Three open connections from 127.0.0.1 use up --max-per-ip 3: a fourth
# from there is refused, one from 127.0.0.2 is served.
for fd in 5 6 7; do
    eval "exec $fd<>/dev/tcp/127.0.0.1/$port" || fail "raw connection $fd"
done
sleep 0.3
checks=$((checks + 2))
got=$(curl -s -m 5 --cacert server.pem -o /dev/null -w '%{http_code}' "$A/healthz")
[ "$got" != 200 ] || fail "a fourth TLS connection from one address was served"
got=$(curl -s -m 5 --cacert server.pem -o /dev/null -w '%{http_code}' --interface 127.0.0.2 "$A/healthz")
[ "$got" = 200 ] || fail "another address was not served beside a full one over TLS: $got"
for fd in 5 6 7; do eval "exec $fd>&-"; done
sleep 0.3
checks=$((checks + 1))
got=$(curl -s -m 5 --cacert server.pem -o /dev/null -w '%{http_code}' "$A/healthz")
[ "$got" = 200 ] || fail "the address was not served once its TLS connections closed: $got"

finish
