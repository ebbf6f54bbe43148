//go:generate packer-sdc mapstructure-to-hcl2 -type Config,Driver,CUDA,DKMS,ContainerToolkit,Containerd,Hold,NGCImage,Distro,Keyrings,Repositories,ManifestConfig,MemoryLimits,KubeletMemory,Hardening,HardeningRoles,HardeningTLS,HardeningSSH,HardeningFirewall,HardeningAudit,HardeningSudo,HardeningJournald,HardeningBaseline
//go:generate go run ./internal/gendocs -out ../../docs/provisioner-gpu.mdx

// Package gpu is the Packer provisioner "gpuhost-gpu": it installs a pinned
// NVIDIA stack (driver, CUDA, container toolkit), holds it, configures
// containerd and cgroup v2, and bakes the gpuhost manifest into the image.
// Everything it does on the target is one POSIX sh script, the plan, that
// RenderPlan derives from the configuration alone, so that a reviewer can
// read exactly what an image build will run (`gpuhost plan`).
package gpu

import (
	"github.com/hashicorp/packer-plugin-sdk/common"
	"github.com/hashicorp/packer-plugin-sdk/template/config"
	"github.com/hashicorp/packer-plugin-sdk/template/interpolate"

	"github.com/gpuhost/gpuhost/builder/internal/configerr"
	"github.com/gpuhost/gpuhost/manifest/lock"
)

// Driver sources and flavors.
const (
	SourceCUDARepo      = "cuda-repo"
	SourceUbuntuArchive = "ubuntu-archive"
	SourceDebian        = "debian"

	FlavorOpen        = "open"
	FlavorProprietary = "proprietary"
)

// Driver selects the NVIDIA driver and where it comes from.
type Driver struct {
	// The exact Debian package version of the driver packages, as apt shows
	// it: `580.95.05-1ubuntu1` (cuda-repo), `535.183.01-0ubuntu0.22.04.1`
	// (ubuntu-archive), `535.261.03-1` (debian). Installed as `pkg=version`
	// and held.
	Version string `mapstructure:"version" required:"true"`
	// `open` (the open GPU kernel modules) or `proprietary`. Defaults to
	// `open` for cuda-repo and `proprietary` otherwise. With ubuntu-archive,
	// `open` selects the `-server-open` packages; the debian source installs
	// userspace only and ignores it.
	Flavor string `mapstructure:"flavor"`
	// Where the driver comes from: `cuda-repo` (NVIDIA's CUDA repository,
	// modules built by DKMS for target_kernel), `ubuntu-archive`
	// (Canonical-signed precompiled modules, no DKMS; a cuda.version still
	// comes from NVIDIA's CUDA repository, which the archive does not
	// mirror) or `debian` (Debian
	// non-free userspace: libnvidia-ml1 and nvidia-smi; the runnable
	// stand-in). Defaults to `cuda-repo`.
	Source string `mapstructure:"source"`
	// The driver branch, such as `535`, `550` or `580`. Defaults to the first
	// component of version; when set it must agree with version.
	Branch string `mapstructure:"branch"`
	// The exact version of nvidia-persistenced for the debian source, where it
	// is packaged apart from the driver (`535.171.04-1~deb12u1` in bookworm).
	// Empty installs the archive's version, held but not pinned.
	PersistencedVersion string `mapstructure:"persistenced_version"`
}

// CUDA selects the CUDA toolkit.
type CUDA struct {
	// The CUDA toolkit version. `12.8` installs the meta package
	// cuda-toolkit-12-8 (held, any patch release); `12.8.1-1` also pins the
	// package version. Either way the plan pins the release whole: every
	// package of it the meta package's dependencies reach (cuda-nvcc-12-8,
	// cuda-cudart-12-8, libcublas-12-8, ... and the configuration packages
	// they share) is installed at the release's own build, pinned in
	// /etc/apt/preferences.d/gpuhost-cuda.pref, held and checked, so that
	// a later update of the release, which satisfies the same dependencies,
	// never replaces a part of it. For the debian source this is the
	// version of nvidia-cuda-toolkit, whose source package is pinned
	// whole. Empty installs no toolkit.
	Version string `mapstructure:"version"`
}

// ContainerToolkit selects the NVIDIA container toolkit.
type ContainerToolkit struct {
	// The exact package version of the NVIDIA container toolkit, such as
	// `1.17.8-1`. All four packages (nvidia-container-toolkit,
	// nvidia-container-toolkit-base, libnvidia-container-tools,
	// libnvidia-container1) are installed and held at this version. Empty
	// installs no toolkit, which only the debian source allows.
	Version string `mapstructure:"version"`
}

// Containerd configures the container runtime.
type Containerd struct {
	// Make runc and the nvidia runtime use the systemd cgroup driver
	// (SystemdCgroup = true). Without it, GPU pods are unstable on a systemd
	// host. Defaults to true.
	SystemdCgroup config.Trilean `mapstructure:"systemd_cgroup"`
	// The default runtime: `nvidia` or `runc`. Defaults to `nvidia` when the
	// container toolkit is installed, else `runc`.
	DefaultRuntime string `mapstructure:"default_runtime"`
	// Enable the Container Device Interface in containerd's CRI plugin.
	CDI bool `mapstructure:"cdi"`
	// The exact package version of containerd to install and hold. Empty
	// installs the distribution's version, held but not pinned.
	Version string `mapstructure:"version"`
}

// Hold lists what apt must never upgrade on the image.
type Hold struct {
	// Hold the target kernel (linux-image-<target_kernel>, and its headers
	// when installed). Requires target_kernel.
	Kernel bool `mapstructure:"kernel"`
	// More installed packages to hold. Pinned packages are always held.
	Packages []string `mapstructure:"packages"`
}

// NGCImage is a container base image, pinned by digest.
type NGCImage struct {
	// The image reference: `registry/repository:tag` or
	// `registry/repository@sha256:<digest>`, such as
	// `nvcr.io/nvidia/pytorch:24.08-py3`.
	Ref string `mapstructure:"ref" required:"true"`
	// The manifest digest, `sha256:<64 hex>`. Required unless ref carries it;
	// a tag alone is refused.
	Digest string `mapstructure:"digest"`
}

// Distro names the target's distribution.
type Distro struct {
	// `ubuntu` or `debian`. Empty: read from the target's /etc/os-release.
	ID string `mapstructure:"id"`
	// `22.04`, `24.04` or `12`.
	VersionID string `mapstructure:"version_id"`
	// `jammy`, `noble` or `bookworm`.
	Codename string `mapstructure:"codename"`
}

// DKMS is the key DKMS signs the NVIDIA module with. Without one, DKMS
// makes a new key for every build, so the module (and the tree's digest)
// differs from build to build. Either way the private key is removed from
// the image once the module is built: whoever held it could sign modules
// that every host booted from the image trusts. The certificate stays at
// /var/lib/dkms/mok.pub, for `mokutil --import` where Secure Boot is on.
// The debian source builds no module, but takes the key all the same: its
// certificate is then the one the image's hosts enrol, for the modules
// built for them later with the same key.
type DKMS struct {
	// A file on the build machine holding the module signing key, an
	// unencrypted RSA private key in PEM (ECDSA signatures are randomised,
	// so two builds would still differ). Set with signing_certificate.
	SigningKey string `mapstructure:"signing_key"`
	// A file on the build machine holding the key's X.509 certificate, PEM
	// or DER, as the kernel's sign-file reads it.
	SigningCertificate string `mapstructure:"signing_certificate"`
}

// Keyrings holds the expected digests of what establishes trust in NVIDIA's
// repositories. Both are checked before anything is installed from them.
type Keyrings struct {
	// The sha256 of cuda-keyring_1.1-1_all.deb. Required for the cuda-repo
	// source.
	CUDAKeyring string `mapstructure:"cuda_keyring"`
	// The sha256 of the container toolkit's ASCII-armored GPG key (before
	// dearmoring). Required when container_toolkit is set.
	ContainerToolkitKey string `mapstructure:"container_toolkit_key"`
}

// Repositories are where NVIDIA's repositories are fetched from. The
// defaults are NVIDIA's own; a mirror of them (an internal proxy, or a
// local copy for a test) goes here. What is trusted does not change with
// the URL: the CUDA keyring package must still hash to
// keyring_sha256.cuda_keyring, the toolkit key to
// keyring_sha256.container_toolkit_key, and apt checks every index against
// the key its source is signed-by.
type Repositories struct {
	// The directory holding NVIDIA's CUDA repositories, one per
	// distribution and architecture: the plan fetches
	// `<cuda>/<distro>/<arch>/cuda-keyring_1.1-1_all.deb` and adds
	// `<cuda>/<distro>/<arch>/ /` as a source, where distro is `ubuntu2204`,
	// `ubuntu2404` or `debian12` and arch `x86_64` or `sbsa`. Defaults to
	// `https://developer.download.nvidia.com/compute/cuda/repos`.
	CUDA string `mapstructure:"cuda"`
	// The container toolkit's repository: the plan adds
	// `<container_toolkit>/$(ARCH) /` as a source. Defaults to
	// `https://nvidia.github.io/libnvidia-container/stable/deb`.
	ContainerToolkit string `mapstructure:"container_toolkit"`
	// The container toolkit's ASCII-armored signing key. Defaults to
	// `https://nvidia.github.io/libnvidia-container/gpgkey`.
	ContainerToolkitKey string `mapstructure:"container_toolkit_key"`
}

// ManifestConfig is what the baked manifest records about the build.
type ManifestConfig struct {
	// The template that built the image, such as `ubuntu-22.04-gpu`.
	Template string `mapstructure:"template"`
	// The package mirror the rootfs came from. When neither this nor
	// snapshot is set, the mirror or snapshot the gpuhost-rootfs builder
	// bootstrapped from, so that a lock made from the manifest names it.
	Mirror string `mapstructure:"mirror"`
	// The archive snapshot the rootfs came from, if any.
	Snapshot string `mapstructure:"snapshot"`
	// The version of this plugin, recorded in the manifest.
	PluginVersion string `mapstructure:"plugin_version"`
	// The digest of the policy pack the image is to pass, if known.
	PolicyDigest string `mapstructure:"policy_digest"`
	// Do not write /etc/gpuhost/manifest.json.
	Skip bool `mapstructure:"skip"`
}

// MemoryLimits are the cgroup v2 memory settings baked into the image:
// systemd drop-ins for the top-level slices, and a kubelet configuration
// fragment that reserves memory for the system and evicts pods before the
// kernel's OOM killer has to choose.
type MemoryLimits struct {
	// MemoryMax= for top-level slices, by name (`system.slice`,
	// `user.slice`, `machine.slice`), in systemd's units: `32G`, `50%`,
	// `infinity`. Written to /etc/systemd/system/SLICE.d/50-gpuhost-memory.conf.
	SliceMax map[string]string `mapstructure:"slice_max"`
	// MemoryHigh= likewise: where the slice is throttled and reclaimed,
	// below its MemoryMax.
	SliceHigh map[string]string `mapstructure:"slice_high"`
	// The kubelet's memory settings, written as a KubeletConfiguration
	// fragment to /etc/kubernetes/kubelet.conf.d/50-gpuhost-memory.conf
	// (the kubelet's --config-dir) with the systemd cgroup driver, node
	// allocatable enforced on pods and certificate rotation on; nothing is
	// written when all are empty.
	Kubelet KubeletMemory `mapstructure:"kubelet"`
}

// KubeletMemory is what the kubelet keeps from pods and when it evicts.
type KubeletMemory struct {
	// systemReserved memory, such as `2Gi`.
	SystemReserved string `mapstructure:"system_reserved"`
	// kubeReserved memory, such as `1Gi`.
	KubeReserved string `mapstructure:"kube_reserved"`
	// evictionHard memory.available, such as `500Mi` or `5%`.
	EvictionHard string `mapstructure:"eviction_hard"`
}

// Config is the configuration of the gpuhost-gpu provisioner.
type Config struct {
	common.PackerConfig `mapstructure:",squash"`

	// The NVIDIA driver.
	Driver Driver `mapstructure:"driver" required:"true"`
	// The CUDA toolkit.
	CUDA CUDA `mapstructure:"cuda"`
	// The NVIDIA container toolkit.
	ContainerToolkit ContainerToolkit `mapstructure:"container_toolkit"`
	// Install and enable NVIDIA Fabric Manager (NVSwitch systems), at the
	// driver's version.
	FabricManager bool `mapstructure:"fabric_manager"`
	// Enable nvidia-persistenced, so that the driver stays loaded between
	// jobs.
	Persistenced bool `mapstructure:"persistenced"`
	// Boot with the unified cgroup v2 hierarchy
	// (systemd.unified_cgroup_hierarchy=1 on the kernel command line).
	CgroupV2 bool `mapstructure:"cgroup_v2"`
	// Memory limits for the slices and the kubelet.
	MemoryLimits MemoryLimits `mapstructure:"memory_limits"`
	// containerd and its nvidia runtime.
	Containerd Containerd `mapstructure:"containerd"`
	// Packages to hold besides the pins.
	Hold Hold `mapstructure:"hold"`
	// Mask unattended-upgrades and the apt-daily timers, so that nothing
	// changes the image's packages behind the manifest (GH-PIN-004).
	// Defaults to true with hardening, since the plan always pins the
	// driver, and to false without.
	DisableUnattendedUpgrades config.Trilean `mapstructure:"disable_unattended_upgrades"`
	// Harden the host: the OpenSSL system default, sshd, the firewall,
	// auditd, sudo and the role groups, journald, and the CIS baseline of
	// login.defs, kernel modules and parameters, core dumps and file
	// modes. The block with no
	// settings applies the defaults the default policy pack passes; without
	// it the plan hardens nothing.
	Hardening *Hardening `mapstructure:"hardening"`
	// The target is a booted host the build logs in to (amazon-ebs and the
	// other cloud builders), not an image in a chroot. The plan then ends
	// its hardening with the step `hardening: apply live`, which makes what
	// the hardening wrote take effect in the running host, so that a scan
	// of the instance before its image is made (gpuhost-scan) judges the
	// hardened daemons and not the source image's: the nftables ruleset is
	// checked with `nft -c -f` and loaded (`systemctl restart
	// nftables.service`; `nft -f` where systemd does not run), auditd is
	// restarted (it rereads auditd.conf) and its rules loaded with
	// `augenrules --load` and found in `auditctl -l`, systemd-journald is
	// restarted for its drop-in, and sshd, once `sshd -t` accepts the
	// configuration, is sent SIGHUP by the pid in its PidFile (what
	// `systemctl reload ssh` does): it re-executes with the new settings
	// under the same pid, and sessions already open, the build's own
	// among them, stay up. The baseline's kernel parameters and modules are
	// not applied to the running kernel: they take effect when the image
	// boots. Whatever fails stops the build with a message naming it.
	// Requires hardening.ssh.host_keys = `keep` (the build logs in again
	// after the plan); refused with the gpuhost-rootfs builder, whose
	// chroot runs on the build machine's kernel, and the step itself
	// refuses to run where its / is not PID 1's (a chroot) or /proc is not
	// mounted. Defaults to false:
	// an image's hardening takes effect when it boots. cgroup_v2, the
	// kernel hold and the memory limits take effect at the next boot
	// either way.
	Live bool `mapstructure:"live"`
	// NGC base images to pre-seed, each pinned by digest. They are pulled
	// on the build host (verified: the manifest must hash to the pin and
	// every blob to its digest), uploaded into the image as one OCI image
	// layout at /var/lib/gpuhost/images, and imported into containerd's
	// k8s.io namespace at first boot by gpuhost-import-images.service.
	NGCImages []NGCImage `mapstructure:"ngc_images"`
	// Fetch ngc_images from this registry `host[:port]` instead of the
	// registry each ref names: a mirror. Refs keep their own names in the
	// image and in the manifest; the pinned digest makes the content the
	// same wherever it comes from.
	NGCRegistry string `mapstructure:"ngc_registry"`
	// The registries ngc_images refs may name. Defaults to `["nvcr.io"]`.
	// ngc_registry is not checked against it: it says where to fetch, not
	// what an image is.
	NGCAllowedRegistries []string `mapstructure:"ngc_allowed_registries"`
	// The platform taken from a multi-platform image index, such as
	// `linux/arm64`. Defaults to `linux/amd64`. The index itself is what is
	// pinned and recorded.
	NGCPlatform string `mapstructure:"ngc_platform"`
	// A directory on the build host that keeps pulled images, as an OCI
	// image layout, across builds: a blob already there (and still hashing
	// to its digest) is not downloaded again. Defaults to `gpuhost-ngc`
	// under Packer's cache directory (PACKER_CACHE_DIR).
	NGCCacheDir string `mapstructure:"ngc_cache_dir"`
	// The target's distribution. Read from the target when empty.
	Distro Distro `mapstructure:"distro"`
	// The kernel release the image boots, such as `6.8.0-45-generic`. DKMS
	// builds for it (never for the build host's `uname -r`), and hold.kernel
	// holds it. When empty and needed, the provisioner takes the only
	// directory under the target's /lib/modules.
	TargetKernel string `mapstructure:"target_kernel"`
	// How DKMS signs the module it builds (the cuda-repo source).
	DKMS DKMS `mapstructure:"dkms"`
	// Expected digests of NVIDIA's repository keys.
	KeyringSHA256 Keyrings `mapstructure:"keyring_sha256"`
	// Where NVIDIA's repositories are fetched from. Each URL is `https://`,
	// or `http://` on a loopback address (127.0.0.0/8, `[::1]`,
	// `localhost`: a mirror on the build machine, which the chroot
	// communicator shares the network with).
	Repositories Repositories `mapstructure:"repositories"`
	// What the baked manifest records about the build.
	Manifest ManifestConfig `mapstructure:"manifest"`
	// A lock file (gpuhost.lock/v1, written by `gpuhost lock --from
	// MANIFEST`) the image must match exactly. The plan then prefers every
	// locked version while it installs (an apt preferences file that lives
	// only for the build), checks that each locked package it has to
	// install is in the apt sources at its version with its .deb's sha256,
	// installs what the lock holds and the configuration did not, and in
	// its `verify lock` step compares the final dpkg inventory with the
	// lock: a package missing, extra, at another version or whose .deb
	// hashes to another sha256 fails the build naming it, as does an apt
	// source, preferences file or keyring whose digest differs. A pin of
	// this configuration at a version other than the lock's is refused
	// before anything runs. Give the gpuhost-rootfs builder the same file,
	// so that the bootstrap is held to it too.
	LockFile string `mapstructure:"lock_file"`
	// How to run a script on the target; `{{.Path}}` is the script. Defaults
	// to `sh '{{.Path}}'`. Over SSH as a non-root user use
	// `sudo -n sh '{{.Path}}'`.
	ExecuteCommand string `mapstructure:"execute_command"`
	// Where scripts and the manifest are staged on the target. Defaults to
	// `/tmp`.
	RemoteFolder string `mapstructure:"remote_folder"`

	ctx interpolate.Context
	// lock is lock_file, read by Decode.
	lock *lock.Lock
}

// ToolkitPackages are the container toolkit's packages; they are pinned and
// held together because holding only some lets apt split the set.
var ToolkitPackages = []string{
	"nvidia-container-toolkit",
	"nvidia-container-toolkit-base",
	"libnvidia-container-tools",
	"libnvidia-container1",
}

// Decode reads raw provisioner configuration (HCL values from Packer, or
// plain maps decoded from JSON) the way Packer does, applies defaults and
// validates. Every problem is reported at once.
func Decode(raws ...interface{}) (*Config, error) {
	var c Config
	err := config.Decode(&c, &config.DecodeOpts{
		PluginType:         "gpuhost-gpu",
		Interpolate:        true,
		InterpolateContext: &c.ctx,
		InterpolateFilter:  &interpolate.RenderFilter{Exclude: []string{"execute_command"}},
	}, raws...)
	if err != nil {
		return nil, err
	}
	c.defaults()
	problems := c.validate()
	if c.LockFile != "" {
		l, err := lock.ReadFile(c.LockFile)
		if err != nil {
			problems = append(problems, "lock_file: "+err.Error())
		} else {
			c.lock = l
			problems = append(problems, c.lockConflicts()...)
		}
	}
	if err := configerr.Check("gpuhost-gpu", problems); err != nil {
		return nil, err
	}
	return &c, nil
}
