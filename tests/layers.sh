#!/bin/bash
# The dependency rule of docs/architecture.md holds on the tree, and the
# check would catch a break of it: an upward include, another folder's
# private header, a library a module may not use.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/.." && pwd)
check=$top/scripts/check-layers.sh

expect_status 0 sh -c "cd '$top' && sh '$check'"
contains "$out" " passed, 0 failed" "the tree keeps the rule"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# break FILE LINE WHAT: a copy of the tree whose FILE gets LINE first
# (a new file if there is none); the check must fail, saying WHAT.
break_tree() {
    rm -rf "$tmp/t"
    mkdir "$tmp/t"
    (cd "$top" && tar cf - docs pricing util meter reports simulator costsim tests bench) |
        (cd "$tmp/t" && tar xf -)
    mkdir -p "$(dirname "$tmp/t/$1")"
    if [ -f "$tmp/t/$1" ]; then
        sed -i "1i $2" "$tmp/t/$1"
    else
        printf '%s\n' "$2" >"$tmp/t/$1"
    fi
    expect_status 1 sh -c "cd '$tmp/t' && sh '$check'"
    contains "$err" "$3" "the check catches: $1 with $2"
}
break_tree pricing/dec.c '#include "meter_util.h"' "which pricing may not use"
break_tree meter/sample/body.c '#include "meter_db.h"' "which meter/sample may not use"
break_tree meter/db/keys.c '#include "meter_http.h"' "which meter/db may not use"
break_tree meter/http/server.c '#include "db_int.h"' "private header db_int.h"
break_tree pricing/rate.c '#include <libpq-fe.h>' "<libpq-fe.h>, a library pricing may not use"
break_tree util/buf.c '#include "nowhere.h"' "a header of no module"
# Spellings of the directive, and the ways around the rule.
break_tree pricing/dec.c '#  include "meter_util.h"' "which pricing may not use"
break_tree pricing/dec.c '# include"meter_db.h"' "which pricing may not use"
break_tree meter/meterd/health.c '#include <http_int.h>' "<http_int.h> in angle brackets"
break_tree pricing/dec.c '#include <zstd.h>' "<zstd.h>, a library pricing may not use"
break_tree meter/sample/sub/x.c '#include "meter_db.h"' "which meter/sample may not use"
break_tree tools/x.c '#include "db_int.h"' "in no module"
# The tests may name meter/db's private header, and no other.
break_tree tests/test_util.c '#include "http_int.h"' "private header http_int.h"
break_tree bench/x.c '#include "db_int.h"' "private header db_int.h"
finish
