# profstore: `make run` and `make test` are all a fresh Debian 12 machine needs. `make run` (and
# `make build`) install only what building and running need (install-deps.sh --build); `make test`
# everything (the browser, Go, Prometheus and Docker tools of the tests too).
# `make run CONFIG=profstore.yml` serves with that configuration (--config).
BUILD      ?= build
BUILD_ASAN ?= build-asan
JOBS       ?= $(shell nproc)
LISTEN     ?= 127.0.0.1:7070
DATA       ?= ./data
PYTHON     ?= /usr/bin/python3
FUZZ_SECONDS ?= 15
CONFIG     ?=
# Go >= 1.26 preinstalled at /usr/local/go goes before any other `go` on PATH (Debian's golang-go,
# /usr/bin/go, is older than the test programs' go.mod): scripts/install-deps.sh says which it uses
export PATH := $(if $(wildcard /usr/local/go/bin/go),/usr/local/go/bin:)$(PATH)

.PHONY: all deps deps-build deps-peers peers-ci build build-asan run test check-includes unit unit-asan integration integration-asan fuzz bench bench-peers test-peers ebpf-check clean

all: build

deps:
	@scripts/install-deps.sh

deps-build:
	@scripts/install-deps.sh --build

deps-peers:
	@scripts/install-deps.sh --peers

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps-build $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

$(BUILD_ASAN)/CMakeCache.txt:
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DPS_SANITIZE=ON

build-asan: deps $(BUILD_ASAN)/CMakeCache.txt
	cmake --build $(BUILD_ASAN) -j $(JOBS)

run: build
	$(BUILD)/profstore --listen $(LISTEN) --data-dir $(DATA)$(if $(CONFIG), --config=$(CONFIG))

# Prometheus 3's PromQL test files (tests/promql3) against the engine: passed / failed / unsupported
# per file and in all are printed here; ctest's query_test_promqltest (the same run) fails when an
# outcome differs from tests/promql3/expected.txt.
unit: deps build
	@$(BUILD)/tests/query_test_promqltest > $(BUILD)/promqltest.log 2>&1; st=$$?; grep '^promqltest' $(BUILD)/promqltest.log; exit $$st
	cd $(BUILD) && ctest -j $(JOBS) --output-on-failure

unit-asan: build-asan
	cd $(BUILD_ASAN) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest -j $(JOBS) --output-on-failure

# Prometheus 3 is built only by `make test-peers`: when it is not cached, its tests (test_prom3.py, the
# Prometheus 3 side of test_promql_compat.py) skip with this notice.
PROM3_BIN ?= $(or $(PS_PEERS_DIR),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/profstore-peers)/prometheus-3.16.0/bin/prometheus
# The integration tests mostly wait (servers, fsync, child processes): they run on PYTEST_WORKERS
# pytest-xdist workers (from PyPI, pinned: scripts/install-pysdk.sh --xdist, in PYXDIST_DIR), a
# whole file on one worker (its tests in order, its module fixtures set up once; the files that
# drive Chromium one group: tests/integration/conftest.py), then the tests that measure time, CPU
# or memory or bound a latency (`serial`: conftest.py's SERIAL) alone. PYTEST_WORKERS=0: everything
# in one process.
PYTEST_WORKERS ?= 3
PYXDIST_DIR ?= $(or $(PS_PYXDIST_DIR),$(or $(TMPDIR),/tmp)/profstore-pyxdist)
INTEGRATION_ENV = PS_REQUIRE_TOOLS=1 PROFSTORE_BIN=$(abspath $(BUILD))/profstore
integration: deps build
	@test -x $(PROM3_BIN) || echo "notice: Prometheus 3 is not cached ($(PROM3_BIN)): its live tests skip; make test-peers builds it"
	@if [ "$(PYTEST_WORKERS)" = 0 ]; then set -x; $(INTEGRATION_ENV) $(PYTHON) -m pytest -q tests/integration; exit $$?; fi; \
	st=0; set -x; \
	PYTHONPATH=$(PYXDIST_DIR) $(INTEGRATION_ENV) $(PYTHON) -m pytest -q -n $(PYTEST_WORKERS) --dist loadgroup --no-loadscope-reorder -m 'not serial' tests/integration || st=1; \
	$(INTEGRATION_ENV) $(PYTHON) -m pytest -q -m serial tests/integration || st=1; \
	exit $$st

# The ASan+UBSan server under a representative part of the integration tests (push, queries,
# querier, PromQL, remote write, bad input, overflows, a damaged store): undefined behaviour on a
# server path aborts the server (-fno-sanitize-recover), so the test that met it fails with the
# sanitizer's report in the server log. Leaks at exit are not checked here (unit-asan does).
INTEGRATION_ASAN ?= test_push.py test_bad_input.py test_remote_write.py test_query_promql.py \
	test_pyroscope_push.py test_pyroscope_querier.py test_query_errors.py test_overflow.py test_damaged_store.py \
	test_recording_rules.py
integration-asan: build-asan
	PS_REQUIRE_TOOLS=1 UBSAN_OPTIONS=print_stacktrace=1 ASAN_OPTIONS=detect_leaks=0 PROFSTORE_BIN=$(abspath $(BUILD_ASAN))/profstore \
		$(PYTHON) -m pytest -q $(addprefix tests/integration/,$(INTEGRATION_ASAN))

fuzz: deps
	tests/fuzz/run.sh $(FUZZ_SECONDS)

check-includes:
	@scripts/check-includes.sh

# The peers bench, short (a day of 1 + 4 series, ~1 min), in `make test` only when Parca is already
# built in its cache (make bench-peers builds it): fails when a merged total of either server
# differs from go tool pprof's of the same files; else one line says it is not run.
PEERS_CI_ARGS ?= --days 1 --one-step 3600 --series 4 --many-step 21600 --senders 2 --variants 2 --repeat 1
peers-ci: build
	@if parca=$$(scripts/install-parca.sh --cached 2>/dev/null); then \
		$(PYTHON) bench/peers/peers.py --profstore $(abspath $(BUILD))/profstore --parca $$parca $(PEERS_CI_ARGS) \
			> $(BUILD)/peers-ci.log 2>&1; st=$$?; \
		n=$$(grep -cE '^(profstore|parca) +merge .*= go tool pprof$$' $(BUILD)/peers-ci.log); \
		grep -E 'MISMATCH|accepted by one server|^\|' $(BUILD)/peers-ci.log; \
		[ $$st = 0 ] && [ $$n = 12 ] || { echo "peers bench failed (exit $$st, $$n of 12 merged totals = go tool pprof): $(BUILD)/peers-ci.log"; exit 1; }; \
		echo "peers bench: the 12 merged totals of profstore and Parca = go tool pprof's ($(BUILD)/peers-ci.log)"; \
	else echo "peers bench: not run (Parca not built in its cache; make bench-peers builds it)"; fi

test: deps check-includes unit unit-asan fuzz integration integration-asan peers-ci

bench: build
	bench/run.sh

# profstore beside Parca, same profiles, one run (opt-in; `make test` runs a short one only when
# Parca is cached): the first run builds Parca at its pinned tag into ~/.cache/profstore-peers
# (install-deps.sh --peers: scripts/install-parca.sh with the Go it names, several minutes).
# PEERS_ARGS="--series 20 --days 1" for a shorter run; docs/SCALING.md#beside-parca.
PEERS_ARGS ?=
bench-peers: deps-peers build
	$(PYTHON) bench/peers/peers.py --profstore $(abspath $(BUILD))/profstore --parca $$(scripts/install-parca.sh --cached) $(PEERS_ARGS)

# Opt-in, not in `make test`: builds Prometheus 3 into ~/.cache/profstore-peers the first time
# (scripts/install-prometheus3.sh, several minutes) and runs the tests that need it, which then may
# not skip: remote_write 2.0 and remote_read with a live Prometheus 3 (test_prom3.py), PromQL side
# by side with it (test_promql_compat.py).
PROM3_TESTS ?= test_prom3.py
test-peers: deps-peers build
	PS_REQUIRE_TOOLS=1 PS_REQUIRE_PROMETHEUS3=1 PROFSTORE_BIN=$(abspath $(BUILD))/profstore \
		$(PYTHON) -m pytest -q $(addprefix tests/integration/,$(PROM3_TESTS))

# Opt-in, not in `make test`: the OpenTelemetry eBPF profiler (built from a checkout of
# open-telemetry/opentelemetry-ebpf-profiler: the Go module proxy does not serve it) profiling a C
# program compiled here and sending to profstore's gRPC port; its native frames symbolized from
# the program's debug file equal eu-addr2line's (tests/ebpf/check.py; root, eBPF and perf events).
EBPF_PROFILER_SRC ?=
ebpf-check: build
	@test -n "$(EBPF_PROFILER_SRC)" || { echo "make ebpf-check EBPF_PROFILER_SRC=<opentelemetry-ebpf-profiler checkout>" >&2; exit 2; }
	PROFSTORE_BIN=$(abspath $(BUILD))/profstore $(PYTHON) tests/ebpf/check.py \
		--profiler "$$(scripts/build-ebpf-profiler.sh $(EBPF_PROFILER_SRC))"

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)
