# tickrelay — run `make help` for the targets.

GO        ?= go
BIN       := bin
PROTOC_GEN_GO_VERSION := v1.36.12
GOTESTSUM_VERSION     := v1.13.0
TOOLS     := $(CURDIR)/$(BIN)/tools
# Test runs: every `go test` here has an explicit -timeout, and each package's budget is
# half of it on a busy 2-core machine (CI prints each package's time against it). The
# unit tests of every package run first, then the end-to-end tests (e2e/: processes,
# browser, Node, qemu), then the packages whose code differs without the race detector.
# The unit timeout is set by the longest package, relay/cluster: its tests run one at a
# time and mostly wait (leases, elections, real nats-server processes, the upgrade drills),
# about 4 minutes on a busy CI machine.
UNIT_TIMEOUT   ?= 10m
# The end-to-end tests build binaries of their own (the relay, also for arm64 and
# js/wasm; the C and C# clients; the sim modules): on a machine whose Go cache is cold
# they took 637 s (the cross-arch builds 473 s of it, 107 s warm), so 22 minutes.
E2E_TIMEOUT    ?= 22m
NORACE_TIMEOUT ?= 5m
# The longest unit packages, listed first so that go test starts them first and the short
# ones fill the other core meanwhile (a package listed twice runs once).
UNIT_FIRST     := ./relay/cluster ./relay ./sim/runtime/wasm ./internal/tools/scripted ./loadtest
# How many e2e tests run at once: most wait on a relay's clock or another process.
E2E_PARALLEL   ?= 4
TEST_OUT  := out/test
GOTESTSUM := $(TOOLS)/gotestsum --format standard-quiet
# The TypeScript client; its tools (buf, protoc-gen-es, tsc) are pinned in its
# package.json. buf comes from npm as a prebuilt binary (@bufbuild/buf): built from its Go
# source it took 130 s of a CI run on a cold build cache.
TS        := client/ts
TS_DEPS   := $(TS)/node_modules/.package-lock.json
BUF       := $(TS)/node_modules/.bin/buf
# The browser app; esbuild and tsc are pinned in its package.json. Its bundle is embedded
# in the binary, so it is built before anything that builds or tests Go code.
WEB       := web
WEB_DEPS  := $(WEB)/node_modules/.package-lock.json
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X github.com/tickrelay/tickrelay/internal/lib/buildinfo.Version=$(VERSION)

.DEFAULT_GOAL := help
.PHONY: help web build test test-unit test-e2e run bench fuzz proto proto-check lint cross docker clean loadtest soak sims latency efficiency capacity cluster cluster-chaos cluster-upgrade-drill native native-test native-bench native-fuzz

help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

web: ## Build the browser app into web/static/build (needs npm; without it the binary serves a page saying how to build it)
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory web-bundle; \
	else echo "web: npm not found: skipping the browser app (its pages will say how to build it)"; fi

.PHONY: web-bundle
web-bundle: $(WEB_DEPS) sims
	cd $(WEB) && npm run --silent typecheck && node build.mjs

$(WEB_DEPS): $(WEB)/package-lock.json
	cd $(WEB) && npm ci --no-audit --no-fund

build: web ## Build bin/tickrelay (the browser app first, when npm is present)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/tickrelay ./cmd/tickrelay

sims: ## Build the WebAssembly sim modules into out/sims/, metered copies in out/sims/metered/ (Go: skirmish, hashchain; hashchain in AssemblyScript (npm), Rust (rustc) and C (clang), each skipped without its toolchain)
	$(GO) run ./internal/testkit/simbuild/buildsims out/sims

test: web $(TOOLS)/gotestsum ## Run every test with the race detector: unit tests, then end-to-end (browser, TypeScript client, processes, cross-arch; these skip without chromium/node/npm/qemu unless TICKRELAY_CROSS=require); prints each package's time and the slowest tests
	@rm -f $(TEST_OUT)/*.json; status=0; \
	$(MAKE) --no-print-directory test-unit-run || status=1; \
	$(MAKE) --no-print-directory test-e2e-run || status=1; \
	$(GOTESTSUM) --jsonfile $(TEST_OUT)/norace.json -- -count=1 -timeout $(NORACE_TIMEOUT) ./relay ./internal/lib/mapappend || status=1; \
	$(GO) run ./internal/tools/testtimes $(TEST_OUT)/unit.json:$(UNIT_TIMEOUT) $(TEST_OUT)/e2e.json:$(E2E_TIMEOUT) $(TEST_OUT)/norace.json:$(NORACE_TIMEOUT); \
	exit $$status
# ./relay and ./internal/lib/mapappend run again without the race detector: the raw socket
# calls (relay/rawio_linux.go) are built only then, and page faults are counted only then.

test-unit: web $(TOOLS)/gotestsum test-unit-run ## Run the unit tests of every package (not e2e/) with the race detector

test-e2e: web $(TOOLS)/gotestsum test-e2e-run ## Run the end-to-end tests (e2e/) with the race detector

.PHONY: test-unit-run test-e2e-run
test-unit-run:
	@mkdir -p $(TEST_OUT)
	$(GOTESTSUM) --jsonfile $(TEST_OUT)/unit.json -- -race -count=1 -timeout $(UNIT_TIMEOUT) $(UNIT_FIRST) $$($(GO) list ./... | grep -v '/e2e$$')

test-e2e-run:
	@mkdir -p $(TEST_OUT)
	$(GOTESTSUM) --jsonfile $(TEST_OUT)/e2e.json -- -race -count=1 -timeout $(E2E_TIMEOUT) -parallel $(E2E_PARALLEL) ./e2e

run: web ## Run the main job on embedded defaults: the 30-second demo (relay, 4 bots, a spectator, replay verified)
	$(GO) run ./cmd/tickrelay demo

bench: ## Run the Go benchmarks with allocation counts
	$(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./...

loadtest: ## Load-test an in-process relay for 60 s (100 matches × 4 bots + 1 spectator); report in out/loadtest/
	@mkdir -p out/loadtest
	$(GO) run ./cmd/tickrelay loadtest --duration 60s --report out/loadtest/report.json --png out/loadtest/latency.png $(LOADTEST_FLAGS)

soak: ## Soak an in-process relay for 30 min at ~70% of capacity; goroutine/heap/RSS slopes in out/loadtest/soak.json
	@mkdir -p out/loadtest
	$(GO) run ./cmd/tickrelay loadtest --matches 105 --soak 30m --report out/loadtest/soak.json $(LOADTEST_FLAGS)

fuzz: ## Run each fuzz target for FUZZTIME (default 30s)
	@for t in FuzzArith:./sim/kit/fixed FuzzPayload:./sim/games/skirmish FuzzRestore:./sim/games/skirmish FuzzSchedule:./lockstep FuzzLoad:./replay FuzzDamage:./replay FuzzPacked:./stream FuzzSplitRecord:./stream FuzzWalker:./stream FuzzDecodeRecord:./stream FuzzClientMessage:./relay FuzzMirrorAppend:./relay FuzzForensics:./relay/internal/desync FuzzPeerState:./relay/internal/desync FuzzDesync:./relay/internal/desync FuzzModuleReturns:./sim/runtime/wasm FuzzMeter:./sim/runtime/wasm/meter FuzzMeterCode:./sim/runtime/wasm/meter FuzzCommands:./sim/runtime/wasm/abi FuzzSubHashes:./sim/runtime/wasm/abi FuzzParseSteal:./loadtest FuzzVerify:./relay/internal/auth FuzzParseJWKS:./relay/internal/auth FuzzRecordEvents:./relay/internal/hooks FuzzCheckSignature:./relay/internal/hooks FuzzOutcome:./relay/internal/hooks FuzzParsePayloads:./sim/check/simtest FuzzDecodeFrames:./stream/dgram FuzzDecodeCommands:./stream/dgram FuzzDecodePing:./stream/dgram; do \
		name=$${t%%:*}; pkg=$${t#*:}; \
		echo "== $$name $$pkg"; \
		$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $${FUZZTIME:-30s} -fuzzminimizetime 2s -timeout 60m $$pkg || exit 1; \
	done

native: ## Build the C client into out/native/: libtickrelay (static and shared), tickrelay.h(pp), tickrelay-example, and with mcs the C# Tickrelay.dll, TickrelayExample.exe and TickrelayHostile.exe (Debian: libprotobuf-c-dev libwslay-dev libssl-dev, mono-devel)
	$(MAKE) -C client/c OUT=$(CURDIR)/out/native
	@if command -v mcs >/dev/null; then $(MAKE) -C client/csharp OUT=$(CURDIR)/out/native; \
	else echo "native: no mcs (Debian: mono-devel): the C# binding is not built"; fi

native-test: ## Run the C client's tests under AddressSanitizer, UndefinedBehaviorSanitizer and LeakSanitizer
	$(MAKE) -C client/c OUT=$(CURDIR)/out/native test

native-bench: ## What the C client costs per frame over reading the socket (thread CPU time, 200k frames of 4 commands)
	$(MAKE) -C client/c OUT=$(CURDIR)/out/native bench

native-fuzz: ## Fuzz the C client with libFuzzer (clang), its decoders and a whole session on relay bytes, FUZZTIME seconds each (default 30)
	$(MAKE) -C client/c OUT=$(CURDIR)/out/native fuzz FUZZTIME=$${FUZZTIME:-30}

$(TOOLS)/gotestsum:
	GOBIN=$(TOOLS) GOFLAGS= $(GO) install gotest.tools/gotestsum@$(GOTESTSUM_VERSION)

$(TOOLS)/protoc-gen-go:
	GOBIN=$(TOOLS) GOFLAGS= $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)

$(TS_DEPS): $(TS)/package-lock.json
	cd $(TS) && npm ci --no-audit --no-fund

proto: $(TOOLS)/protoc-gen-go $(TS_DEPS) ## Regenerate the Go and TypeScript code from proto/ with pinned buf, protoc-gen-go and protoc-gen-es
	PATH=$(TOOLS):$$PATH $(BUF) lint
	PATH=$(TOOLS):$$PATH $(BUF) generate
	rm -rf $(TS)/src/gen
	PATH=$(TOOLS):$$PATH $(BUF) generate --template buf.gen.ts.yaml

proto-check: $(TOOLS)/protoc-gen-go $(TS_DEPS) ## Fail if the committed generated code (Go and TypeScript) does not match proto/
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	PATH=$(TOOLS):$$PATH $(BUF) generate -o $$tmp && \
	PATH=$(TOOLS):$$PATH $(BUF) generate --template buf.gen.ts.yaml -o $$tmp && \
	for f in $$(cd $$tmp && find . -name '*.pb.go' -o -name '*_pb.ts'); do \
		cmp -s $$tmp/$$f $$f || { echo "proto-check: $$f is stale; run 'make proto' and commit the result"; exit 1; }; \
	done && \
	for f in $$(find proto -name '*.pb.go'; find $(TS)/src/gen -name '*_pb.ts'); do \
		[ -f $$tmp/$$f ] || { echo "proto-check: $$f has no .proto source; delete it"; exit 1; }; \
	done && echo "proto-check: generated code matches proto/"
	$(MAKE) -s -C client/c OUT=$(CURDIR)/out/native proto-check

lint: $(TS_DEPS) ## gofmt, go vet, the determinism checker on the sims and buf lint
	@out=$$(gofmt -l $$(git ls-files '*.go')); [ -z "$$out" ] || { echo "gofmt needed:"; echo "$$out"; exit 1; }
	$(GO) vet ./...
	$(GO) run ./cmd/tickrelay vet ./sim/...
	PATH=$(TOOLS):$$PATH $(BUF) lint

cross: ## Check the sim's hash stream on amd64, arm64 (qemu) and wasm (node), natively and as a module; tools required
	TICKRELAY_CROSS=require $(GO) test -count=1 -timeout $(E2E_TIMEOUT) -run 'TestCrossArch' ./e2e

docker: ## Build the container image (needs a Docker engine)
	docker build -t tickrelay:$(VERSION) --build-arg VERSION=$(VERSION) .

clean: ## Remove build outputs
	rm -rf $(BIN) out

latency: build ## Command→frame latency at each input delay, on loopback and through a delaying proxy (20 matches × 4 bots, 10 s each)
	@mkdir -p out/latency
	@for run in "loopback fixed-1|--input-delay 1" "loopback fixed-2|--input-delay 2" "loopback fixed-3|--input-delay 3" \
		"loopback adaptive|" "loopback adaptive sends-on-frame|--sends-on-frame" \
		"+10ms each way adaptive|--net-delay 10ms" "+10ms each way sends-on-frame|--net-delay 10ms --sends-on-frame" \
		"+40ms±10 each way adaptive|--net-delay 40ms --net-jitter 10ms" "+40ms±10 each way sends-on-frame|--net-delay 40ms --net-jitter 10ms --sends-on-frame"; do \
		name=$${run%%|*}; flags=$${run#*|}; \
		$(BIN)/tickrelay loadtest --matches 20 --spectators 0 --warmup 4s --duration 10s $$flags $(LOADTEST_FLAGS) > out/latency/run.txt 2>&1 || true; \
		printf '%-34s %s | %s\n' "$$name" "$$(grep -m1 'input delay at the end' out/latency/run.txt | sed 's/^ *//')" "$$(grep -m1 '^latency' out/latency/run.txt | sed 's/; budget.*//')"; \
	done

efficiency: build ## The relay alone on CPU 0 (bots in 2 processes on CPU 1) vs the WebSocket floor, the input floor (reads what the bots send) and one raw write per frame, same run: 100 × 4 with and without commands, 300 × 4 near capacity; reports in out/perf/
	@mkdir -p out/perf
	@fail=0; for run in "100-commands|--matches 100" "100-no-commands|--matches 100 --command-rate -1" "300-commands|--matches 300"; do \
		name=$${run%%|*}; flags=$${run#*|}; echo "== $$name"; \
		$(BIN)/tickrelay loadtest --procs 2 --relay-cpus 0 --swarm-cpus 1 --floor --spectators 0 --warmup 3s --duration 15s $$flags \
			--report out/perf/efficiency-$$name.json $(LOADTEST_FLAGS) > out/perf/efficiency-$$name.txt 2>&1 || fail=1; \
		grep -E -A5 '^(verdict|efficiency)' out/perf/efficiency-$$name.txt || { tail -5 out/perf/efficiency-$$name.txt; fail=1; }; \
	done; exit $$fail

capacity: build ## Connections per relay core: ramp the relay alone on CPU 0 (bots on CPU 1) until p99 jitter passes 15 ms; out/perf/capacity.json
	@mkdir -p out/perf
	$(BIN)/tickrelay loadtest --ramp --ramp-levels 50,100,150,200,250,300,400,500,600 --procs 2 --relay-cpus 0 --swarm-cpus 1 --spectators 0 --step-duration 10s --warmup 3s --jitter-threshold 15ms --report out/perf/capacity.json $(LOADTEST_FLAGS)

NATS_SERVER_VERSION = $(shell $(GO) list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2)

$(TOOLS)/nats-server:
	GOBIN=$(TOOLS) GOFLAGS= $(GO) install github.com/nats-io/nats-server/v2@$(NATS_SERVER_VERSION)

cluster-chaos: $(TOOLS)/nats-server ## Kill a standalone nats-server (stream's, directory's leader) or the relay node running a match (SIGKILL) under a running cluster, RUNS times (10): the stall, reconnects, and what must hold (docs/cluster.md); make test runs a short form
	@mkdir -p $(TEST_OUT); status=0; \
	TICKRELAY_NATS_SERVER=$(TOOLS)/nats-server $(GO) test -run TestAKilledNATSServerStallsAMatchBriefly -count=$${RUNS:-10} -v -timeout 90m ./relay/cluster -args -chaos-full > $(TEST_OUT)/chaos.log 2>&1 || status=1; \
	grep -E 'killed|^(---|ok|FAIL)' $(TEST_OUT)/chaos.log; exit $$status

cluster-upgrade-drill: $(TOOLS)/nats-server ## Restart three standalone nats-servers one by one (lame duck, restart, wait for every replica), then the three relay nodes (a new one started, an old one SIGTERMed), under 20 live matches of 4 players, RUNS times (5) each, in process and then with every piece a process of its own (tickrelay serve, bot, watch): each player's longest frame gap and reconnects (docs/cluster.md, "Upgrading"); make test runs the multi-process one's short form
	@mkdir -p $(TEST_OUT); status=0; \
	TICKRELAY_NATS_SERVER=$(TOOLS)/nats-server $(GO) test -run 'TestARollingRestartOf(TheNATSServers|TheRelayNodes)' -count=$${RUNS:-5} -v -timeout 60m ./relay/cluster -args -upgrade-full > $(TEST_OUT)/upgrade.log 2>&1 || status=1; \
	TICKRELAY_NATS_SERVER=$(TOOLS)/nats-server $(GO) test -run 'TestAnUpgradeOfEveryProcessUnderLiveMatches' -count=$${RUNS:-5} -v -timeout 60m ./e2e -args -upgrade-full >> $(TEST_OUT)/upgrade.log 2>&1 || status=1; \
	grep -E 'rolling restart of|lame duck and exit|upgrade of every process|^(---|ok|FAIL)' $(TEST_OUT)/upgrade.log; exit $$status

cluster: ## Run three relay nodes on an embedded three-node NATS cluster (ports 7400/7410/7420); Ctrl-C stops them
	@$(GO) build -o $(BIN)/tickrelay ./cmd/tickrelay
	@echo "relay nodes: http://127.0.0.1:7400 7410 7420 (admin key: cluster, token secret: fixed). Try:"
	@echo "  curl -s -H 'Authorization: Bearer cluster' -d '{\"sim\":\"skirmish\",\"players\":2}' http://127.0.0.1:7410/v1/matches"
	@echo "  curl -s -H 'Authorization: Bearer cluster' http://127.0.0.1:7420/v1/nodes"
	@trap 'kill 0' INT TERM EXIT; \
	for i in 0 1 2; do \
		$(BIN)/tickrelay serve --listen 127.0.0.1:74$${i}0 --admin 127.0.0.1:74$${i}1 --node-name relay-$$((i+1)) \
			--nats-embedded --nats-listen 127.0.0.1:422$$((i+2)) --nats-cluster-listen 127.0.0.1:622$$((i+2)) \
			--nats-routes nats://127.0.0.1:6222,nats://127.0.0.1:6223,nats://127.0.0.1:6224 \
			--replay-dir out/cluster/relay-$$((i+1)) --admin-key cluster \
			--token-secret 636c75737465722d746f6b656e2d736563726574 --log-level warn & \
	done; wait
