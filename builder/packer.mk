# Packer targets for gpuhost: build Packer itself and the gpuhost plugin, install
# the plugin offline, and run the builder's end-to-end tests. The main Makefile
# includes this file; it relies on its GO, BIN, check-go and apt-install.

# Debian packages a rootfs build needs (mmdebstrap bootstraps; nsenter and
# chroot come with util-linux and coreutils; mkfs.ext4 and qemu-img write the
# image formats; zstd compresses tarballs; a disk's partition table is
# written by sfdisk (fdisk) and its EFI system partition by mkfs.vfat
# (dosfstools) and mtools; GRUB comes from the image, not the build machine;
# an encrypted root's LUKS2 header is written by cryptsetup (cryptsetup-bin)).
APT_BUILD := mmdebstrap e2fsprogs qemu-utils zstd util-linux tar fdisk dosfstools mtools cryptsetup-bin

PACKER := $(BIN)/packer
PACKER_SDC := $(BIN)/packer-sdc
PLUGIN := $(BIN)/packer-plugin-gpuhost
PLUGIN_ADDRESS := github.com/gpuhost/gpuhost
# Packer keeps installed plugins here; the e2e tests use their own.
PACKER_PLUGIN_PATH ?= $(HOME)/.config/packer/plugins
PLUGIN_LDFLAGS := -X github.com/gpuhost/gpuhost/builder/version.VersionPrerelease=$(PLUGIN_PRERELEASE)
PLUGIN_PRERELEASE ?=

.PHONY: build-deps packer packer-sdc plugin plugin-install generate-plugin e2e-builder e2e-packer-interrupt

build-deps:
	$(call apt-install,$(APT_BUILD))

# Packer is built from source, as a tool (tools/packer pins v1.15.0 with the
# go-cty replace every plugin carries); it is never vendored or shipped.
packer: check-go
	@test -x $(PACKER) || { cd tools/packer && GOEXPERIMENT= $(GO) build -trimpath -o $(PACKER) github.com/hashicorp/packer; }
	@$(PACKER) version

# packer-sdc generates the HCL2 spec and the docs of the Packer components.
packer-sdc: check-go
	@test -x $(PACKER_SDC) || { cd tools/packer-sdc && GOEXPERIMENT= $(GO) build -o $(PACKER_SDC) github.com/hashicorp/packer-plugin-sdk/cmd/packer-sdc; }

plugin: check-go
	$(GO) build -trimpath -ldflags '$(PLUGIN_LDFLAGS)' -o $(PLUGIN) ./cmd/packer-plugin-gpuhost

# Offline install: Packer copies the binary under PACKER_PLUGIN_PATH as
# packer-plugin-gpuhost_v0.1.0_x5.0_linux_amd64, next to a SHA256SUM.
plugin-install: packer plugin
	PACKER_PLUGIN_PATH=$(PACKER_PLUGIN_PATH) $(PACKER) plugins install --path $(PLUGIN) $(PLUGIN_ADDRESS)

# Regenerate every component's config.hcl2spec.go and docs/*.mdx; a test
# fails when they are stale.
generate-plugin: packer-sdc
	PATH="$(BIN):$$PATH" $(GO) generate ./builder/...

# A real `packer build` of builder/rootfs/testdata/e2e.pkr.hcl: bookworm minbase
# from this machine's Debian mirror, a shell provisioner, then checks of the
# artifact and that no mount is left. Needs root and network to the mirror.
e2e-builder: build-deps packer plugin
	GPUHOST_E2E=1 GPUHOST_PACKER=$(PACKER) GPUHOST_PLUGIN=$(PLUGIN) \
	  $(GO) test -count=1 -v -timeout 30m -run '^TestE2EPackerBuild$$' ./builder/rootfs/

# Ctrl-C and SIGKILL in the middle of a build: no mount may remain. The unit
# variants (cancel of the runner, SIGKILL of a process holding mounts over a
# fake rootfs) run in plain `go test` too; the E2E ones interrupt a real
# `packer build` while its provisioner runs.
e2e-packer-interrupt: build-deps packer plugin
	GPUHOST_E2E=1 GPUHOST_PACKER=$(PACKER) GPUHOST_PLUGIN=$(PLUGIN) \
	  $(GO) test -count=1 -v -timeout 30m -run 'TestInterruptedBuildUnmounts|TestKilledPluginDropsMounts|TestE2EInterruptCtrlC|TestE2EKillPlugin' ./builder/rootfs/
