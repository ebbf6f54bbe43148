# gpuhost: `make demo` does the main job, `make test` runs every test.
# Both install what they need on a fresh Debian machine (run as root).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
BIN := $(CURDIR)/bin
OUT := $(CURDIR)/out
GPUHOST := $(BIN)/gpuhost
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/gpuhost/gpuhost/internal/version.Version=$(VERSION)
# Coverage the Rego tests must reach over the default pack.
POLICY_COVERAGE ?= 90
FUZZTIME ?= 30s
# go-nvml's header marks many NVML calls deprecated; the warnings drown real output.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

# Debian packages each goal uses. Installed only when missing.
APT_TEST := ca-certificates git
APT_BENCH := lynis

.PHONY: help
help:
	@echo "make demo    build gpuhost, scan the sample rootfs and this host, write every report format to ./out"
	@echo "make test    run every test (Go, Rego with coverage, CLI end to end)"
	@echo "make bench   engine and whole-command benchmarks, side by side with Lynis"
	@echo "make fuzz    run each fuzzer for FUZZTIME (default $(FUZZTIME))"

.PHONY: check-go
check-go:
	@test -x "$(GO)" || { echo "error: Go is not installed (looked on PATH and in /usr/local/go/bin). Install Go 1.26 or later." >&2; exit 1; }
	@$(GO) version | grep -Eq 'go1\.(2[6-9]|[3-9][0-9])' || { echo "error: Go 1.26 or later is needed, found: $$($(GO) version)" >&2; exit 1; }

# apt-install PACKAGES: install the Debian packages that are missing.
define apt-install
	@missing=""; for p in $(1); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "error: missing Debian packages:$$missing (run as root, or install them)" >&2; exit 1; fi; \
	  echo "installing:$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq || { echo "error: apt-get update failed; is a Debian mirror reachable?" >&2; exit 1; }; \
	  apt-get install -y -qq --no-install-recommends $$missing >/dev/null || { echo "error: apt-get install$$missing failed" >&2; exit 1; }; \
	fi
endef

.PHONY: deps bench-deps
deps:
	$(call apt-install,$(APT_TEST))
bench-deps:
	$(call apt-install,$(APT_BENCH))

.PHONY: build
build: check-go
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(GPUHOST) ./cmd/gpuhost

.PHONY: test
test: check-go deps
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "error: gofmt needed on:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) test -count=1 ./...
	$(MAKE) --no-print-directory build
	$(GPUHOST) policy test --fail-under $(POLICY_COVERAGE)

.PHONY: demo
demo: check-go deps build
	@mkdir -p $(OUT)
	@echo "== scanning the sample rootfs (hardened) =="
	$(GPUHOST) scan rootfs cmd/gpuhost/testdata/rootfs-hardened --params cmd/gpuhost/testdata/params-demo.yaml --no-color $(foreach f,table json sarif junit markdown html,--report $(f)=$(OUT)/sample-rootfs.$(f)) || test $$? -eq 1
	@echo "== scanning the sample rootfs (weak) =="
	$(GPUHOST) scan rootfs cmd/gpuhost/testdata/rootfs-weak --params cmd/gpuhost/testdata/params-demo.yaml --no-color $(foreach f,table json sarif junit markdown html,--report $(f)=$(OUT)/weak-rootfs.$(f)) || test $$? -eq 1
	@echo "== scanning this host =="
	$(GPUHOST) scan host --no-color $(foreach f,table json sarif junit markdown html,--report $(f)=$(OUT)/host.$(f)) || test $$? -eq 1
	@echo; echo "reports written to $(OUT):"; ls -1 $(OUT)

.PHONY: bench
bench: check-go deps bench-deps build
	$(GO) test -run='^$$' -bench=. -benchmem ./internal/engine/ ./checks/... ./reports/
	$(GO) run ./internal/bench -gpuhost $(GPUHOST)

.PHONY: fuzz
fuzz: check-go
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg; \
	  done; \
	done

.PHONY: clean
clean:
	rm -rf $(BIN) $(OUT)
