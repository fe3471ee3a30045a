#!/bin/bash
# docs/openapi.yaml is valid OpenAPI 3.1 by Redocly's linter (installed
# from npm with its lock file by make check), with no warning, and names
# every route meterd serves.
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
lint=$root/tools/openapi/node_modules/.bin/redocly
[ -x "$lint" ] || { fail "$lint missing: make check installs it (npm ci in tools/openapi)"; finish; exit; }
expect_status 0 "$lint" lint --config "$root/tools/openapi/redocly.yaml" "$root/docs/openapi.yaml"
contains "$err$out" "valid" "the linter's verdict"
case "$err$out" in *"warning"*) fail "linter warnings: $err$out" ;; esac
# Every route of meterd's table is described.
for path in $(sed -n 's/^    {"[A-Z]*", "\([^"]*\)".*/\1/p' "$root/meter/meterd/main.c"); do
    checks=$((checks + 1))
    grep -q "^  $path:" "$root/docs/openapi.yaml" || fail "route $path not in docs/openapi.yaml"
done
finish
