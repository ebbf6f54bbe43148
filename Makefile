# gpuhost: `make demo` does the main job, `make test` runs every test.
# Both install what they need on a fresh Debian machine (run as root).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
BIN := $(CURDIR)/bin
OUT := $(CURDIR)/out
GPUHOST := $(BIN)/gpuhost
# Every QEMU boot make starts runs the qemu-system-x86_64 that make qemu put
# here, when it put one (tools/qemu/backports.sh).
QEMU_DIR := $(BIN)/qemu
export PATH := $(QEMU_DIR)/bin:$(PATH)
# The lean build a GPU node runs the agent from (go build -tags lean): no
# image builder or trivy, whose pages would stay resident between runs.
AGENT := $(BIN)/gpuhost-agent
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/gpuhost/gpuhost/internal/version.Version=$(VERSION)
# Coverage the Rego tests must reach over the default pack.
POLICY_COVERAGE ?= 90
FUZZTIME ?= 30s
# go-nvml's header marks many NVML calls deprecated; the warnings drown real output.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
# trivy (containers/trivy) builds only with the JSON v2 experiment; the rest of
# the module's tests pass with it too, so every build here uses it.
export GOEXPERIMENT := jsonv2

# Debian packages each goal uses. Installed only when missing.
# chromium renders the HTML reports in the browser test; docker-registry is
# the real registry the publish gate's end-to-end test pushes to. The live
# checks are compared with peers on real daemons: nginx, openssh-server,
# openssl and nftables serve, testssl.sh, sslscan and ssh-audit judge.
# The gpuhost-scan provisioner's tests log in to that sshd and run the
# default `sudo -n CLI facts host` there, so sudo is needed too; its visudo
# also checks the provisioner's hardening edits of sudoers.
# iptables loads a ufw-style ruleset through iptables-nft in the firewall
# tests' network namespaces; python3 listens there.
# The outputs are checked with the tools their users run: promtool (from
# prometheus) on /metrics and the alert rules, xmllint (libxml2-utils) on
# the JUnit report, systemd-analyze on the units (and man, from man-db, on
# the pages their Documentation= names).
# The baked disk is booted in QEMU (qemu-system-x86), under OVMF for UEFI
# and SeaBIOS (which comes with QEMU) for BIOS, with a software TPM 2.0
# (swtpm; swtpm-tools for swtpm_setup and swtpm_ioctl by hand) that its
# encrypted root is sealed to. The LUKS2 writer's test decrypts a sector with
# OpenSSL's AES-XTS through python3-cryptography (openssl enc has no XTS).
# The stand-in NVIDIA repositories of the cuda-repo bake are signed by gpg
# and their libnvidia-ml stubs are shared objects made by gcc.
# The Secure Boot checks' tests sign GRUB images (grub-efi-amd64-bin's
# grub-mkimage) with sbsign and hold their verdict to sbverify (sbsigntool),
# sign modules with the kernel's sign-file (linux-kbuild-6.1), compress them
# as kbuild does (xz-utils, zstd), and write MokListRT as efitools'
# cert-to-efi-sig-list does. The Secure Boot boot builds its stand-in
# module against the headers of the kernel the Debian image pins.
# The stand-in Ubuntu archive (internal/testutil/ubunturepo) is made from
# Debian's packages with apt, dpkg-deb, gpg and xz-utils and bootstrapped
# with mmdebstrap (APT_BUILD).
# OpenSCAP and ComplianceAsCode's Debian-built content (openscap-scanner,
# openscap-utils for oscap-chroot, ssg-debderived) judge the compliance
# profiles' trees beside gpuhost and validate the XCCDF it writes.
# Installing never starts a daemon: apt-install denies it through policy-rc.d.
# The kernel release images/pins-debian-12.pkrvars.hcl pins.
DEBIAN_KERNEL := $(shell sed -n 's/^debian_kernel *= *"\(.*\)"/\1/p' images/pins-debian-12.pkrvars.hcl)
APT_TEST := ca-certificates git chromium docker-registry iproute2 gpg gcc mandoc \
  nginx openssh-server openssl nftables iptables python3 testssl.sh sslscan ssh-audit sudo systemd cryptsetup-bin \
  prometheus libxml2-utils man-db containerd runc qemu-system-x86 ovmf swtpm swtpm-tools python3-cryptography \
  sbsigntool grub-efi-amd64-bin linux-kbuild-6.1 xz-utils efitools linux-headers-$(DEBIAN_KERNEL) \
  openscap-scanner openscap-utils ssg-debderived
APT_BENCH := lynis time strace

.PHONY: help
help:
	@echo "make demo    bake, gate, sign and publish the Debian 12 GPU image, verify it, scan it, the samples and this host; reports in ./out"
	@echo "make demo-boot  boot the image make demo baked in QEMU and scan it live beside the offline verdict"
	@echo "make test    run every test (Go, Rego with coverage, CLI end to end)"
	@echo "make check   the fast loop without root, apt or Packer: gofmt, vet, unit and Rego tests"
	@echo "make bench   engine and whole-command benchmarks, side by side with Lynis"
	@echo "make fuzz    run each fuzzer for FUZZTIME (default $(FUZZTIME))"
	@echo "make differential  as root: the firewall against real connects, sshd's configuration against sshd -T, TLS against sslscan and openssl, on generated cases for DIFFERENTIAL_TIME each (default $(DIFFERENTIAL_TIME))"
	@echo "make e2e     bake images/debian-12-gpu.pkr.hcl with the real Packer (part of make test)"
	@echo "make gpu-check  gpuhost facts host, scan host and validate on this machine's GPUs, saved to ./out"
	@echo "make agent-image  the agent's OCI image (Debian base + lean binary) as an OCI layout in ./out/agent-image"

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
	  made_policy=""; if [ ! -e /usr/sbin/policy-rc.d ]; then printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d; made_policy=1; fi; \
	  rc=0; apt-get install -y -qq --no-install-recommends $$missing >/dev/null || rc=$$?; \
	  if [ -n "$$made_policy" ]; then rm -f /usr/sbin/policy-rc.d; fi; \
	  [ $$rc = 0 ] || { echo "error: apt-get install$$missing failed" >&2; exit 1; }; \
	fi
endef

include builder/packer.mk

# Debian's signed boot chain (shim signed by Microsoft, GRUB and shim's
# helpers signed by Debian), unpacked and not installed: their maintainer
# scripts run grub-install on an EFI machine. The Secure Boot tests hold
# these real signatures to the real anchors.
SIGNED_BOOT := $(OUT)/signed-boot
SIGNED_BOOT_DEBS := shim-signed shim-helpers-amd64-signed grub-efi-amd64-signed
.PHONY: signed-boot
signed-boot: $(SIGNED_BOOT)/root/usr/lib/shim/shimx64.efi.signed
$(SIGNED_BOOT)/root/usr/lib/shim/shimx64.efi.signed:
	rm -rf $(SIGNED_BOOT).tmp && mkdir -p $(SIGNED_BOOT).tmp/debs
	cd $(SIGNED_BOOT).tmp/debs && { apt-get download -qq $(SIGNED_BOOT_DEBS) 2>/dev/null || { apt-get update -qq && apt-get download -qq $(SIGNED_BOOT_DEBS); }; } \
	  || { echo "error: apt-get download $(SIGNED_BOOT_DEBS) failed; is a Debian mirror reachable?" >&2; exit 1; }
	for d in $(SIGNED_BOOT).tmp/debs/*.deb; do dpkg-deb -x "$$d" $(SIGNED_BOOT).tmp/root; done
	rm -rf $(SIGNED_BOOT) && mv $(SIGNED_BOOT).tmp $(SIGNED_BOOT)

.PHONY: deps bench-deps
deps:
	$(call apt-install,$(APT_TEST) $(APT_BUILD))

bench-deps:
	$(call apt-install,$(APT_BENCH))

# The TCG boots' QEMU: the host's when it is 9.0 or later, else the one
# Debian's backports carry, unpacked into $(QEMU_DIR) (the host's packages
# are left as they are). Its TCG runs the guest's AES on the host's, and
# each first boot re-encrypts the image's root inside the guest. Where
# neither can be had it warns, and the boots run on the host's QEMU, slower.
.PHONY: qemu
qemu: deps
	@test -x $(QEMU_DIR)/bin/qemu-system-x86_64 || sh tools/qemu/backports.sh $(QEMU_DIR)

.PHONY: build
build: check-go
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(GPUHOST) ./cmd/gpuhost
	$(GO) build -trimpath -tags lean -ldflags '$(LDFLAGS)' -o $(AGENT) ./cmd/gpuhost

# Install what a GPU node runs: both binaries, the systemd units (which
# start $(PREFIX)/bin/gpuhost-agent), the man pages they name, and the
# shell completions (flag values included: formats, severities, profiles)
# where bash-completion, zsh and fish look for them.
PREFIX ?= /usr/local
DESTDIR ?=
.PHONY: install
install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)/etc/systemd/system
	install -m 0755 $(GPUHOST) $(AGENT) $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 docs/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 deploy/systemd/gpuhost-agent.service deploy/systemd/gpuhost-agent.timer deploy/systemd/gpuhost-agentd.service \
	  deploy/systemd/gpuhost-agent-credentials.service deploy/systemd/gpuhost-selftest.service deploy/systemd/gpuhost-selftest-modules.service $(DESTDIR)/etc/systemd/system/
	install -d $(DESTDIR)/usr/local/lib/gpuhost $(DESTDIR)/etc/udev/rules.d
	install -m 0755 deploy/scripts/gpuhost-selftest deploy/scripts/gpuhost-selftest-modules deploy/scripts/gpuhost-agent-credentials $(DESTDIR)/usr/local/lib/gpuhost/
	install -m 0644 deploy/udev/90-gpuhost-selftest.rules $(DESTDIR)/etc/udev/rules.d/
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	$(GPUHOST) completion bash >$(DESTDIR)$(PREFIX)/share/bash-completion/completions/gpuhost
	$(GPUHOST) completion zsh >$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_gpuhost
	$(GPUHOST) completion fish >$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/gpuhost.fish

# The everyday loop: formatting, vet, the unit tests and the Rego tests.
# No root, apt or Packer: tests that need them skip here (they fail under
# CI=true, where make test has installed everything).
# gotestsum runs the Go tests and lists every skipped test with its reason
# at the end: a test that could not run shows, instead of passing as "ok".
GOTESTSUM := $(BIN)/gotestsum
.PHONY: gotestsum
gotestsum: check-go
	@test -x $(GOTESTSUM) || { cd tools/gotestsum && GOEXPERIMENT= $(GO) build -o $(GOTESTSUM) gotest.tools/gotestsum; }
GOTEST = $(GOTESTSUM) --format pkgname --format-hide-empty-pkg --

.PHONY: check
check: check-go gotestsum
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "error: gofmt needed on:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GOTEST) -short -count=1 ./...
	$(GO) run ./cmd/gpuhost policy test --fail-under $(POLICY_COVERAGE)

.PHONY: test
test: check-go deps signed-boot qemu packer-sdc gotestsum opa regal sarif-multitool cosign kube
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "error: gofmt needed on:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	PACKER_SDC=$(PACKER_SDC) GPUHOST_SCREENSHOTS=$(OUT)/screenshots $(GOTEST) -count=1 ./...
	$(GO) vet -tags lean ./cmd/gpuhost
	$(GOTEST) -count=1 -tags lean ./cmd/gpuhost
	$(MAKE) --no-print-directory build
	$(GPUHOST) policy test --fail-under $(POLICY_COVERAGE)
	$(MAKE) --no-print-directory e2e

# The real thing, as root: Packer builds the Debian 12 stand-in image with
# the plugin installed offline, the builder's own end-to-end tests (a minimal
# build, Ctrl-C and SIGKILL mid-build) prove no mount leaks, and the gate
# publishes to a real docker-registry process, where cosign and gpuhost
# verify check its signature and provenance. The production cuda-repo path
# bakes against a signed stand-in of NVIDIA's repositories on 127.0.0.1
# (images/cudarepo_test.go), and both Ubuntu templates bake against a
# stand-in Ubuntu archive made from Debian's packages
# (images/ubuntu_bake_test.go, internal/testutil/ubunturepo).
# The boots' consoles, reports and timings are kept in $(E2E_ARTIFACTS),
# which make bench reads the boot figures from. The images package's bakes
# and boots run side by side (-parallel 5: the Debian, jammy, noble and
# cuda-repo bakes, then the Debian image's two hosts, jammy's boot and two
# of its bakes): each waits on apt, dpkg or a guest much of the time, so
# together they keep both cores busy where one at a time would not. With
# 4, jammy's boot and bakes waited for a slot after its bake. More at once
# starved the guests, whose systemd waits run on the wall clock (-parallel
# 6 failed a device wait and a getty unit, on QEMU 7.2).
# Two packages at once (-p 2): the stand-in archive's bootstrap test, then
# the builder's own bakes (warm, a minute or so) and the registry's, run
# while the images package bakes and boots, instead of before and after;
# go test then prints each package's log when the package ends.
E2E_ARTIFACTS := $(OUT)/e2e
.PHONY: e2e
e2e: check-go build-deps qemu build packer plugin cosign
	rm -rf $(E2E_ARTIFACTS)
	GPUHOST_E2E=1 GPUHOST_PACKER=$(PACKER) GPUHOST_PLUGIN=$(PLUGIN) GPUHOST_BIN=$(GPUHOST) GPUHOST_COSIGN=$(COSIGN) GPUHOST_E2E_ARTIFACTS=$(E2E_ARTIFACTS) \
	  $(GO) test -p 2 -parallel 5 -count=1 -v -timeout 75m -run 'TestE2E|TestInterrupt|TestKill' ./internal/testutil/ubunturepo/ ./images/ ./builder/rootfs/ ./builder/gate/

IMAGE_DIR := $(OUT)/debian-12-gpu

# The vulnerability DB the demo and the bake's gate match packages against:
# trivy's own cannot be downloaded here, so a few real Debian 12 advisories
# are written into its layout (images/trivy-db-demo.yaml).
TRIVY_DB := $(OUT)/trivy-db
.PHONY: trivy-db
trivy-db: check-go
	@mkdir -p $(TRIVY_DB)
	$(GO) run ./tools/trivydb -o $(TRIVY_DB) images/trivy-db-demo.yaml

.PHONY: demo demo-boot
demo: check-go deps build-deps build packer plugin crane trivy-db agentimage
	@mkdir -p $(OUT)
	PACKER_PLUGIN_PATH=$(OUT)/.packer-plugins $(PACKER) plugins install --path $(PLUGIN) $(PLUGIN_ADDRESS)
	PACKER=$(PACKER) CRANE=$(CRANE) GPUHOST=$(GPUHOST) OUT=$(OUT) IMAGE_DIR=$(IMAGE_DIR) APT_CACHE_DIR=$(CURDIR)/.cache/apt \
	  TRIVY_DB=$(TRIVY_DB) PACKER_PLUGIN_PATH=$(OUT)/.packer-plugins AGENTIMAGE=$(AGENTIMAGE) AGENT=$(AGENT) AGENT_BASE=$(AGENT_BASE) \
	  VERSION=$(VERSION) bash images/demo.sh

# The boot half of the demo, apart because it takes minutes under TCG: the
# disk make demo baked is booted in QEMU and scans itself live from inside.
demo-boot: check-go deps qemu build
	@test -f $(IMAGE_DIR)/disk.qcow2 || { echo "error: no $(IMAGE_DIR)/disk.qcow2; run make demo first" >&2; exit 1; }
	GPUHOST=$(GPUHOST) IMAGE_DIR=$(IMAGE_DIR) OUT=$(OUT) bash images/demo-boot.sh

# The agent's OCI image, built with go-containerregistry (no Docker): a
# minimal Debian base from mmdebstrap (as root; kept in $(AGENT_BASE), so a
# rebuild only adds the binary) under the lean binary. make demo pushes it
# by digest and renders the DaemonSet that runs it into $(OUT)/daemonset.yaml.
AGENTIMAGE := $(BIN)/agentimage
AGENT_BASE := $(OUT)/agent-base.tar
.PHONY: agentimage agent-image
agentimage: check-go
	$(GO) build -trimpath -o $(AGENTIMAGE) ./tools/agentimage
agent-image: build agentimage
	@mkdir -p $(OUT)
	$(AGENTIMAGE) -base $(AGENT_BASE) -apt-cache $(CURDIR)/.cache/apt -binary $(AGENT) -version $(VERSION) \
	  -revision "$$(git rev-parse HEAD 2>/dev/null)" -layout $(OUT)/agent-image

# crane pushes the demo's base image to the local registry.
CRANE := $(BIN)/crane
.PHONY: crane
crane: check-go
	@test -x $(CRANE) || $(GO) build -trimpath -o $(CRANE) github.com/google/go-containerregistry/cmd/crane

# cosign is the verifier users run on what the gate publishes: make test
# checks the gate's signature and SLSA provenance with it, not only with
# gpuhost verify. tools/cosign pins the release; it is big and slow to
# build, so it is built once and again only when that pin moves.
COSIGN := $(BIN)/cosign
.PHONY: cosign
cosign: $(COSIGN)
$(COSIGN): tools/cosign/go.mod tools/cosign/go.sum | check-go
	cd tools/cosign && v=$$($(GO) list -m -f '{{.Version}}' github.com/sigstore/cosign/v2) && \
	  GOEXPERIMENT= $(GO) build -trimpath -ldflags "-X sigs.k8s.io/release-utils/version.gitVersion=$$v" -o $(COSIGN) github.com/sigstore/cosign/v2/cmd/cosign

# kube-apiserver and etcd, for the node-marking test (deploy/nodemark_test.go):
# the agent marks its node through the real API server, with the RBAC and
# admission policy of deploy/kubernetes/node-marks.yaml enforced by it.
# tools/kubernetes pins the Kubernetes release and, to the version that
# release is built with, etcd. Built once, and again when the pin moves.
# The kubelet, kube-controller-manager and kube-scheduler come from the same
# pin, for the single-node test (deploy/kubenode_test.go) that runs the
# agent's DaemonSet on a real kubelet over Debian's containerd and runc.
KUBE_APISERVER := $(BIN)/kube-apiserver
KUBE_NODE := $(BIN)/kubelet $(BIN)/kube-controller-manager $(BIN)/kube-scheduler
ETCD := $(BIN)/etcd
# Upstream Prometheus, for the discovery test (deploy/prometheus_test.go):
# Debian's prometheus package has no Kubernetes service discovery (removed
# for client-go's dependencies), so tools/prometheus pins a release and it
# is built with that one discoverer (remove_all_sd, enable_kubernetes_sd).
PROMETHEUS_UPSTREAM := $(BIN)/prometheus-upstream
# containerd 2 and its runc shim, for the node test's variant
# (deploy/kubenode_containerd2_test.go) that runs the DaemonSet as rendered:
# Debian 12's containerd 1.6 cannot make recursive read-only mounts.
# tools/containerd pins the release; named containerd2* beside Debian's.
CONTAINERD2 := $(BIN)/containerd2 $(BIN)/containerd2-shim-runc-v2
.PHONY: kube
kube: $(KUBE_APISERVER) $(KUBE_NODE) $(ETCD) $(PROMETHEUS_UPSTREAM) $(CONTAINERD2)
$(CONTAINERD2): tools/containerd/go.mod tools/containerd/go.sum | check-go
	cd tools/containerd && GOEXPERIMENT= $(GO) build -trimpath -tags no_btrfs,no_devmapper \
	  -o $@ github.com/containerd/containerd/v2/cmd/$(patsubst containerd2%,containerd%,$(notdir $@))
$(PROMETHEUS_UPSTREAM): tools/prometheus/go.mod tools/prometheus/go.sum | check-go
	cd tools/prometheus && v=$$(GOEXPERIMENT= $(GO) list -m -f '{{.Version}}' github.com/prometheus/prometheus) && \
	  GOEXPERIMENT= $(GO) build -trimpath -tags remove_all_sd,enable_kubernetes_sd \
	    -ldflags "-X github.com/prometheus/common/version.Version=$$v" -o $@ github.com/prometheus/prometheus/cmd/prometheus
$(KUBE_APISERVER) $(KUBE_NODE): $(BIN)/%: tools/kubernetes/go.mod tools/kubernetes/go.sum | check-go
	cd tools/kubernetes && v=$$(GOEXPERIMENT= $(GO) list -m -f '{{.Version}}' k8s.io/kubernetes) && IFS=. read -r major minor _ <<< "$${v#v}" && \
	  GOEXPERIMENT= $(GO) build -trimpath -o $@ -ldflags "-X k8s.io/component-base/version.gitVersion=$$v \
	    -X k8s.io/component-base/version.gitMajor=$$major -X k8s.io/component-base/version.gitMinor=$$minor" k8s.io/kubernetes/cmd/$*
$(ETCD): tools/kubernetes/go.mod tools/kubernetes/go.sum | check-go
	cd tools/kubernetes && GOEXPERIMENT= $(GO) build -trimpath -o $@ go.etcd.io/etcd/server/v3

# opa is the OPA release go.mod pins, so `opa test` of the pack in make test
# runs the engine the scans embed; rebuilt when go.mod moves.
OPA := $(BIN)/opa
OPA_VERSION = $(shell $(GO) list -m -f '{{.Version}}' github.com/open-policy-agent/opa)
.PHONY: opa
opa: check-go
	@$(OPA) version 2>/dev/null | grep -qx 'Version: $(patsubst v%,%,$(OPA_VERSION))' || \
	  GOBIN=$(BIN) $(GO) install -trimpath github.com/open-policy-agent/opa@$(OPA_VERSION)

# regal lints the policy pack (policies/opa_test.go runs it under
# .regal/config.yaml); tools/regal pins the release, built from the module proxy.
REGAL := $(BIN)/regal
.PHONY: regal
regal: $(REGAL)
$(REGAL): tools/regal/go.mod tools/regal/go.sum | check-go
	cd tools/regal && GOEXPERIMENT= $(GO) build -trimpath -o $(REGAL) github.com/styrainc/regal

# The SARIF Multitool validates the SARIF reports as code scanning reads
# them: Microsoft's self-contained Linux build from npm, installed under
# .cache/npm and linked into bin/ (no dotnet needed).
SARIF_MULTITOOL := $(BIN)/sarif-multitool
SARIF_MULTITOOL_VERSION := 5.7.0
NPM_CACHE := $(CURDIR)/.cache/npm
SARIF_MULTITOOL_PKG := $(NPM_CACHE)/node_modules/@microsoft/sarif-multitool-linux
.PHONY: sarif-multitool npm-deps
sarif-multitool:
	@command -v npm >/dev/null 2>&1 || $(MAKE) --no-print-directory npm-deps
	@grep -qs '"version": "$(SARIF_MULTITOOL_VERSION)"' $(SARIF_MULTITOOL_PKG)/package.json || \
	  npm install --prefix $(NPM_CACHE) --no-audit --no-fund --loglevel=error @microsoft/sarif-multitool-linux@$(SARIF_MULTITOOL_VERSION)
	@chmod u+x $(SARIF_MULTITOOL_PKG)/Sarif.Multitool
	@mkdir -p $(BIN) && ln -sfn $(SARIF_MULTITOOL_PKG)/Sarif.Multitool $(SARIF_MULTITOOL)
npm-deps:
	$(call apt-install,npm)

# Whole builds come last: cold and warm bakes beside plain mmdebstrap + apt-get.
.PHONY: bench
bench: check-go deps bench-deps build build-deps packer plugin trivy-db
	$(GO) test -run='^$$' -bench=. -benchmem ./scan/ ./agent/ ./engine/... ./target/... ./render/... ./manifest/treedigest/
	$(GO) test -run='^$$' -bench=AcceptAll -benchmem ./facts/network/
	$(GO) test -run='^$$' -bench=VerifyManyReferrers -benchtime=3x ./containers/verify/
	$(GO) test -run='^$$' -bench=Seed -benchtime=3x ./containers/seed/
	$(GO) run ./tools/bench -gpuhost $(GPUHOST) -agent $(AGENT) -boot $(E2E_ARTIFACTS)
	$(GO) run ./tools/buildbench -packer $(PACKER) -plugin $(PLUGIN) -var trivy_db=$(TRIVY_DB)

.PHONY: fuzz
fuzz: check-go
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg; \
	  done; \
	done

# The differential tests on many generated cases, as root: make test runs
# a fixed seed's few dozen, this runs from DIFFERENTIAL_SEED until
# DIFFERENTIAL_TIME is spent, and lists every disagreement with its case.
DIFFERENTIAL_TIME ?= 10m
DIFFERENTIAL_SEED ?= 1
.PHONY: differential
differential: check-go
	$(GO) test -count=1 -v -timeout 0 -run '^TestFirewallDifferential$$' ./facts/network \
	  -differential.cases=100000000 -differential.duration=$(DIFFERENTIAL_TIME) -differential.seed=$(DIFFERENTIAL_SEED)
	$(GO) test -count=1 -v -timeout 0 -run '^TestSSHDConfigDifferential$$' ./facts/ssh \
	  -differential.sshd-cases=100000000 -differential.sshd-duration=$(DIFFERENTIAL_TIME) -differential.sshd-seed=$(DIFFERENTIAL_SEED)
	$(GO) test -count=1 -v -timeout 0 -run '^TestTLSDifferential$$' ./facts/tls \
	  -differential.tls-cases=100000000 -differential.tls-duration=$(DIFFERENTIAL_TIME) -differential.tls-seed=$(DIFFERENTIAL_SEED)

.PHONY: gpu-check
gpu-check: check-go build
	OUT_DIR=$(OUT) GPUHOST=$(GPUHOST) bash facts/gpu/gpu-check.sh

.PHONY: clean
clean:
	rm -rf $(BIN) $(OUT)
