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

check: deps openapi-lint browser-check build
	cmake -S . -B build-check -DCMAKE_BUILD_TYPE=Debug -DMETER_SANITIZE=ON \
	    -DMETER_WERROR=ON $(CMAKE_FLAGS)
	cmake --build build-check -j $(JOBS)
	@# costsim_methods compares the two estimators over thousands of
	@# months: statistics, not memory, and 2 minutes under the sanitizers,
	@# so it runs in the second pass only (costsim and test_sim_stats run
	@# the same code in this one).
	cd build-check && ctest --output-on-failure -j $(JOBS) -E '^costsim_methods$$'
	@# Again far from UTC (UTC+14), on the optimized build `make build`
	@# makes: no result may depend on the local zone, nor on the optimizer
	@# (the first pass is sanitized, at -O1). Not again (no C code calls a
	@# local-time function, scripts/check-calls.sh): the tree's checks,
	@# fuzzing and valgrind (of the first pass's kind); the demo's
	@# examples; and the tests of failure, attack, concurrency and
	@# permissions (faults, shard_move, hostile, hostile_sockets, tls,
	@# roles), whose dates go through the paths the others run here.
	cd build && TZ=Pacific/Kiritimati ctest --output-on-failure -j $(JOBS) \
	    -E '^(layers|sql_hygiene|format|calls|install|openapi|fuzz|valgrind|readme|faults|shard_move|hostile|hostile_sockets|tls|roles)$$'

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
