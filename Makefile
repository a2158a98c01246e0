# Tollgate — every target a newcomer needs. `make help` lists them.
SHELL := /usr/bin/env bash
GO    ?= go
TOOL  := $(GO) tool -modfile=tools/go.mod
BIN   := bin
PKGS  := ./...

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build bin/tollgate and bin/mockllm
	$(GO) build -o $(BIN)/ ./cmd/...

.PHONY: run
run: build ## start the gateway on the embedded store with the demo model (Ctrl-C stops)
	@scripts/run.sh

.PHONY: test
test: ## run the whole suite; installs and starts PostgreSQL and Redis when missing
	@scripts/test.sh

.PHONY: test-short
test-short: ## unit tests only, no servers
	$(GO) test -short -count=1 $(PKGS)

.PHONY: proofs
proofs: ## check the Coq proofs of the accounting kernel (formal/coq; installs coq when missing)
	@formal/tools.sh coqc:coq
	@formal/check-coq.sh

.PHONY: model
model: ## model-check the replica protocol with spin, and its mutation (formal/spin; installs spin, gcc when missing)
	@formal/tools.sh spin:spin cc:gcc
	@formal/check-spin.sh

.PHONY: fmt
fmt: ## format the code (gofumpt)
	$(TOOL) gofumpt -w $$(git ls-files '*.go' | grep -v '\.pb\(\.gw\)\?\.go$$')

.PHONY: lint
lint: ## golangci-lint, with depguard enforcing the import rules of DESIGN.md
	$(TOOL) golangci-lint run $(PKGS)

.PHONY: proto
proto: ## regenerate the protobuf code (buf, pinned local plugins)
	@scripts/proto.sh

.PHONY: ui-vendor
ui-vendor: ## copy the console's pinned Chart.js (e2e/package-lock.json) into admin/ui/vendor
	@scripts/ui-vendor.sh

.PHONY: check
check: ## format, lint, vet, buf lint and generated code up to date
	@out=$$($(TOOL) gofumpt -l $$(git ls-files '*.go' | grep -v '\.pb\(\.gw\)\?\.go$$')); \
	  if [ -n "$$out" ]; then echo "not gofumpt-formatted (run make fmt):"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(TOOL) golangci-lint run $(PKGS)
	@scripts/proto.sh --check
	@scripts/ui-vendor.sh --check

.PHONY: bench
bench: ## run the Go benchmarks (kernel, stores with PostgreSQL and Redis, ext_proc)
	@BENCH=1 scripts/test.sh

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME each (default 20s)
	@scripts/fuzz.sh $${FUZZTIME:-20s}

.PHONY: clean
clean: ## remove build output
	rm -rf $(BIN) tollgate.db tollgate.db-* .tollgate
