# The two commands of the README, and the benchmarks, as thin wrappers
# around CMake. Every target first installs what is missing.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all deps ha-deps build demo demo-stop check check-ha bench clean openapi-lint browser-check

all: build

deps:
	@sh scripts/install-deps.sh

# Patroni and etcd, for check-ha only.
ha-deps:
	@sh scripts/install-ha-deps.sh

build: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)
	cmake --build build -j $(JOBS)

demo: build
	@sh scripts/demo.sh build

demo-stop:
	@for f in var/demo-fleet.pid var/meterd.pid; do \
	    [ -f $$f ] && kill $$(cat $$f) 2>/dev/null; rm -f $$f; done; \
	    echo "demo: stopped (the database keeps running: build/bin/meterctl db stop)"

# The OpenAPI linter, from npm with its lock file, when the lock changed.
openapi-lint:
	@cd tools/openapi && { [ node_modules/.package-lock.json -nt package-lock.json ] || \
	    npm ci --no-audit --no-fund --loglevel=error; }

# puppeteer-core, which drives chromium in tests/costsim_html.sh, the same way.
browser-check:
	@cd tools/browser && { [ node_modules/.package-lock.json -nt package-lock.json ] || \
	    npm ci --no-audit --no-fund --loglevel=error; }

check: deps openapi-lint browser-check
	cmake -S . -B build-check -DCMAKE_BUILD_TYPE=Debug -DMETER_SANITIZE=ON \
	    -DMETER_WERROR=ON $(CMAKE_FLAGS)
	cmake --build build-check -j $(JOBS)
	cd build-check && ctest --output-on-failure -j $(JOBS)
	@# Again far from UTC (UTC+14): no result may depend on the local zone.
	@# Not again: the tree's checks, the builds and fuzzing, and what reads
	@# no local time (the demo's examples, the statistics' coverage and
	@# the two estimators compared, the programs' help, the log and socket
	@# options, and the slowest C tests that touch neither PostgreSQL nor
	@# a shell: no C code calls a local-time function, scripts/check-calls.sh).
	cd build-check && TZ=Pacific/Kiritimati ctest --output-on-failure \
	    -j $(JOBS) -E '^(layers|sql_hygiene|format|calls|install|openapi|fuzz|valgrind|costsim_html|costsim_methods|readme|test_sim_stats|test_sim_month|test_runs|help|operations)$$'

# High availability (docs/scale.md): a three-node etcd and three Patroni
# nodes on loopback, failovers mid-push; two and a half minutes, so not
# part of check. The programs of check's build, the two it needs.
check-ha: deps ha-deps
	cmake -S . -B build-check -DCMAKE_BUILD_TYPE=Debug -DMETER_SANITIZE=ON \
	    -DMETER_WERROR=ON $(CMAKE_FLAGS)
	cmake --build build-check -j $(JOBS) --target meterd meterctl
	METERCTL=$(CURDIR)/build-check/bin/meterctl METERD=$(CURDIR)/build-check/bin/meterd \
	    LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp bash tests/ha.sh

bench: deps
	cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build build-bench -j $(JOBS)
	cmake --build build-bench --target run-bench

clean:
	rm -rf build build-check build-bench
