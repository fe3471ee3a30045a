#!/bin/sh
# make demo: the embedded database up, the schema at the latest version,
# and a line that says so. Later work extends this with the live meter.
set -eu
build=${1:-build}
meterctl="$build/meter/meterctl"

"$meterctl" db start
"$meterctl" migrate
echo
echo "demo: database running with the schema at its latest version."
echo "demo: connect with:  psql \"\$($meterctl db url)\""
echo "demo: stop it with:  $meterctl db stop"
