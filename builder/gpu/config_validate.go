package gpu

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/packer-plugin-sdk/template/config"

	"github.com/gpuhost/gpuhost/containers/seed"
	gpucheck "github.com/gpuhost/gpuhost/facts/gpu"
)

// lockConflicts are the pins the lock holds at another version: a lock
// made from an image of another configuration.
func (c *Config) lockConflicts() []string {
	var errs []string
	for _, p := range c.Pins() {
		if p.Version == "" {
			continue
		}
		for _, l := range c.lock.Packages {
			if l.Name == p.Name && l.Version != p.Version {
				errs = append(errs, fmt.Sprintf("lock_file: the configuration pins %s, which the lock %s has at %s; make the lock again from an image of this configuration", p.Spec(), c.LockFile, l.Version))
			}
		}
	}
	return errs
}

func (c *Config) defaults() {
	if c.Driver.Source == "" {
		c.Driver.Source = SourceCUDARepo
	}
	if c.Driver.Flavor == "" {
		// NVIDIA recommends the open modules; Canonical's precompiled
		// server modules and Debian's userspace default to proprietary.
		if c.Driver.Source == SourceCUDARepo {
			c.Driver.Flavor = FlavorOpen
		} else {
			c.Driver.Flavor = FlavorProprietary
		}
	}
	if c.Driver.Branch == "" {
		c.Driver.Branch = upstreamBranch(c.Driver.Version)
	}
	if c.Containerd.SystemdCgroup == config.TriUnset {
		c.Containerd.SystemdCgroup = config.TriTrue
	}
	if c.Containerd.DefaultRuntime == "" {
		if c.ContainerToolkit.Version != "" {
			c.Containerd.DefaultRuntime = "nvidia"
		} else {
			c.Containerd.DefaultRuntime = "runc"
		}
	}
	if c.DisableUnattendedUpgrades == config.TriUnset {
		c.DisableUnattendedUpgrades = config.TriFalse
		if c.Hardening != nil {
			c.DisableUnattendedUpgrades = config.TriTrue
		}
	}
	if c.Hardening != nil {
		c.Hardening.defaults()
	}
	c.Repositories.defaults()
	if c.ExecuteCommand == "" {
		c.ExecuteCommand = "sh '{{.Path}}'"
	}
	if c.RemoteFolder == "" {
		c.RemoteFolder = "/tmp"
	}
	if c.NGCAllowedRegistries == nil {
		c.NGCAllowedRegistries = append([]string(nil), seed.DefaultAllowed...)
	}
	if c.NGCPlatform == "" {
		c.NGCPlatform = seed.DefaultPlatform
	}
}

var (
	// debVersion is a Debian version without shell metacharacters: the plan
	// quotes it, but a version never needs anything else.
	debVersion  = regexp.MustCompile(`^([0-9]+:)?[0-9][A-Za-z0-9.+~]*(-[A-Za-z0-9.+~]+)?$`)
	pkgName     = regexp.MustCompile(`^[a-z0-9][a-z0-9.+-]+$`)
	branchRe    = regexp.MustCompile(`^[0-9]{3}$`)
	sha256Re    = regexp.MustCompile(`^[0-9a-f]{64}$`)
	digestRe    = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	kernelRe    = regexp.MustCompile(`^[0-9]+\.[0-9]+[A-Za-z0-9.+_~-]*$`)
	cudaRe      = regexp.MustCompile(`^([0-9]+)\.([0-9]+)(\.[0-9]+)?(-[A-Za-z0-9.+~]+)?$`)
	wordRe      = regexp.MustCompile(`^[a-z0-9][a-z0-9.~-]*$`)
	remoteDirRe = regexp.MustCompile(`^/[A-Za-z0-9._/-]*$`)
	registryRe  = regexp.MustCompile(`^([a-z0-9.-]+\.[a-z0-9.-]+|localhost)(:[0-9]+)?$`)
	platformRe  = regexp.MustCompile(`^[a-z0-9]+/[a-z0-9_]+(/[a-z0-9]+)?$`)
	// refRe is registry/repository[:tag][@sha256:hex]; the registry part
	// must look like a host so that a bare "ubuntu:22.04" (which a runtime
	// would resolve against a default registry) is refused.
	refRe = regexp.MustCompile(`^([a-z0-9.-]+\.[a-z0-9.-]+|localhost)(:[0-9]+)?/[a-z0-9]+([._/-][a-z0-9]+)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?$`)
)

// upstreamBranch returns the branch of a driver version: the digits before
// the first dot, after any epoch.
func upstreamBranch(v string) string {
	if i := strings.Index(v, ":"); i >= 0 {
		v = v[i+1:]
	}
	b, _, _ := strings.Cut(v, ".")
	return b
}

// upstreamVersion strips the epoch and the Debian revision: 580.95.05.
func upstreamVersion(v string) string {
	if i := strings.Index(v, ":"); i >= 0 {
		v = v[i+1:]
	}
	if i := strings.LastIndex(v, "-"); i >= 0 {
		v = v[:i]
	}
	return v
}

var (
	// systemdSize is what MemoryMax= and MemoryHigh= take.
	systemdSize = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?[KMGT]?|[0-9]+(\.[0-9]+)?%|infinity)$`)
	// kubeQuantity is a Kubernetes memory quantity, or a percentage where
	// eviction thresholds allow one.
	kubeQuantity = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|K|M|G|T)?$`)
	kubePercent  = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?%$`)
)

// topSlices are the slices memory_limits may limit.
var topSlices = []string{"machine.slice", "system.slice", "user.slice"}

func (m MemoryLimits) validate() []string {
	var errs []string
	for _, f := range []struct {
		name string
		v    map[string]string
	}{{"slice_max", m.SliceMax}, {"slice_high", m.SliceHigh}} {
		for _, slice := range slices.Sorted(maps.Keys(f.v)) {
			if !slices.Contains(topSlices, slice) {
				errs = append(errs, fmt.Sprintf("memory_limits.%s: %q is not one of %s", f.name, slice, strings.Join(topSlices, ", ")))
			}
			if !systemdSize.MatchString(f.v[slice]) {
				errs = append(errs, fmt.Sprintf("memory_limits.%s[%q]: %q is not a systemd memory size such as 32G, 50%% or infinity", f.name, slice, f.v[slice]))
			}
		}
	}
	k := m.Kubelet
	for name, v := range map[string]string{"system_reserved": k.SystemReserved, "kube_reserved": k.KubeReserved} {
		if v != "" && !kubeQuantity.MatchString(v) {
			errs = append(errs, fmt.Sprintf("memory_limits.kubelet.%s: %q is not a memory quantity such as 2Gi", name, v))
		}
	}
	if v := k.EvictionHard; v != "" && !kubeQuantity.MatchString(v) && !kubePercent.MatchString(v) {
		errs = append(errs, fmt.Sprintf("memory_limits.kubelet.eviction_hard: %q is not a memory quantity such as 500Mi or a percentage such as 5%%", v))
	}
	slices.Sort(errs)
	return errs
}

// sliceDropIns are the slice drop-ins memory_limits writes, by slice, in
// name order.
func (m MemoryLimits) sliceDropIns() []sliceDropIn {
	var out []sliceDropIn
	for _, s := range topSlices {
		d := sliceDropIn{Slice: s, Max: m.SliceMax[s], High: m.SliceHigh[s]}
		if d.Max != "" || d.High != "" {
			out = append(out, d)
		}
	}
	return out
}

// sliceDropIn is one slice's memory settings.
type sliceDropIn struct{ Slice, Max, High string }

func (c *Config) validate() []string {
	errs := c.validateDriver()
	errs = append(errs, c.validateStack()...)
	errs = append(errs, c.MemoryLimits.validate()...)
	if c.Hardening != nil {
		errs = append(errs, c.Hardening.validate()...)
	}
	errs = append(errs, c.validateLive()...)
	errs = append(errs, c.validateRuntime()...)
	errs = append(errs, c.validateNGC()...)
	return append(errs, c.validateTarget()...)
}

// validateDriver checks the driver's version, source, flavor and branch.
func (c *Config) validateDriver() []string {
	var errs []string
	add := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }

	d := c.Driver
	switch {
	case d.Version == "":
		add("driver.version: required")
	case !debVersion.MatchString(d.Version):
		add("driver.version: %q is not a package version", d.Version)
	}
	switch d.Source {
	case SourceCUDARepo, SourceUbuntuArchive, SourceDebian:
	default:
		add("driver.source: %q is not one of cuda-repo, ubuntu-archive, debian", d.Source)
	}
	switch d.Flavor {
	case FlavorOpen, FlavorProprietary:
	default:
		add("driver.flavor: %q is not one of open, proprietary", d.Flavor)
	}
	if !branchRe.MatchString(d.Branch) {
		add("driver.branch: %q is not a driver branch such as 535", d.Branch)
	} else if d.Version != "" && upstreamBranch(d.Version) != d.Branch {
		add("driver.branch: %s does not match driver.version %s", d.Branch, d.Version)
	}
	if d.PersistencedVersion != "" {
		if d.Source != SourceDebian {
			add("driver.persistenced_version: only the debian source packages nvidia-persistenced apart from the driver")
		} else if !debVersion.MatchString(d.PersistencedVersion) {
			add("driver.persistenced_version: %q is not a package version", d.PersistencedVersion)
		}
	}
	return errs
}

// validateStack checks what installs beside the driver: CUDA, the
// container toolkit, the keyrings that vouch for their repositories, the
// repositories themselves, DKMS signing and the fabric manager.
func (c *Config) validateStack() []string {
	var errs []string
	add := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	d := c.Driver
	if v := c.CUDA.Version; v != "" && !cudaRe.MatchString(v) {
		add("cuda.version: %q is not a CUDA version such as 12.8 or 12.8.1-1", v)
	} else if v != "" && branchRe.MatchString(d.Branch) {
		if msg := cudaTooNew(d.Branch, v); msg != "" {
			add("cuda.version: %s", msg)
		}
	}
	tk := c.ContainerToolkit.Version
	if tk != "" && !debVersion.MatchString(tk) {
		add("container_toolkit.version: %q is not a package version", tk)
	}
	if tk == "" && d.Source != SourceDebian {
		add("container_toolkit.version: required (only the debian source may go without the toolkit)")
	}
	if c.KeyringSHA256.CUDAKeyring == "" {
		switch {
		case d.Source == SourceCUDARepo:
			add("keyring_sha256.cuda_keyring: required for the cuda-repo source: the sha256 of cuda-keyring_1.1-1_all.deb")
		case c.usesCUDARepo():
			add("keyring_sha256.cuda_keyring: required with cuda.version: the toolkit comes from NVIDIA's CUDA repository, which cuda-keyring_1.1-1_all.deb vouches for")
		}
	}
	if h := c.KeyringSHA256.CUDAKeyring; h != "" && !sha256Re.MatchString(h) {
		add("keyring_sha256.cuda_keyring: %q is not 64 lower-case hex digits", h)
	}
	if tk != "" && c.KeyringSHA256.ContainerToolkitKey == "" {
		add("keyring_sha256.container_toolkit_key: required with container_toolkit: the sha256 of the toolkit's GPG key")
	}
	if h := c.KeyringSHA256.ContainerToolkitKey; h != "" && !sha256Re.MatchString(h) {
		add("keyring_sha256.container_toolkit_key: %q is not 64 lower-case hex digits", h)
	}
	errs = append(errs, c.Repositories.validate()...)
	errs = append(errs, c.DKMS.validate(d.Source)...)
	if c.FabricManager && d.Source == SourceDebian {
		add("fabric_manager: the debian source has no fabric manager package")
	}
	if d.Source == SourceDebian && c.CUDA.Version != "" && strings.Count(c.CUDA.Version, "-") == 0 {
		add("cuda.version: the debian source needs the exact nvidia-cuda-toolkit version, such as 11.8.89~11.8.0-5~deb12u1")
	}
	return errs
}

// validateRuntime checks containerd's runtime and version, the held
// packages and the kernel DKMS builds for.
func (c *Config) validateRuntime() []string {
	var errs []string
	add := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	tk := c.ContainerToolkit.Version
	switch c.Containerd.DefaultRuntime {
	case "runc":
	case "nvidia":
		if tk == "" {
			add("containerd.default_runtime: nvidia needs container_toolkit")
		}
	default:
		add("containerd.default_runtime: %q is not one of nvidia, runc", c.Containerd.DefaultRuntime)
	}
	if v := c.Containerd.Version; v != "" && !debVersion.MatchString(v) {
		add("containerd.version: %q is not a package version", v)
	}

	for i, p := range c.Hold.Packages {
		if !pkgName.MatchString(p) {
			add("hold.packages[%d]: %q is not a package name", i, p)
		}
	}
	if c.TargetKernel != "" && !kernelRe.MatchString(c.TargetKernel) {
		add("target_kernel: %q is not a kernel release", c.TargetKernel)
	}
	return errs
}

// validateNGC checks the NGC bases to pre-seed and where they come from.
func (c *Config) validateNGC() []string {
	var errs []string
	add := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	seen := map[string]bool{}
	for i, img := range c.NGCImages {
		if err := img.check(); err != "" {
			add("ngc_images[%d]: %s", i, err)
			continue
		}
		if host, _, _ := strings.Cut(img.Ref, "/"); !slices.Contains(c.NGCAllowedRegistries, host) {
			add("ngc_images[%d]: image %s: registry %s is not allowed (ngc_allowed_registries: %s)", i, img.Ref, host, strings.Join(c.NGCAllowedRegistries, ", "))
		}
		if seen[img.Ref] {
			add("ngc_images[%d]: image %s is listed twice", i, img.Ref)
		}
		seen[img.Ref] = true
	}
	if c.NGCRegistry != "" && !registryRe.MatchString(c.NGCRegistry) {
		add("ngc_registry: %q is not a registry host[:port]", c.NGCRegistry)
	}
	if !platformRe.MatchString(c.NGCPlatform) {
		add("ngc_platform: %q is not os/arch[/variant], such as linux/amd64", c.NGCPlatform)
	}
	return errs
}

// validateTarget checks what the plan says about the machine it runs on:
// the distribution, the remote folder and command, and the manifest's
// build fields.
func (c *Config) validateTarget() []string {
	var errs []string
	add := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	if id := c.Distro.ID; id != "" {
		errs = append(errs, c.validateDistro()...)
	}
	for _, s := range []struct{ field, v string }{
		{"distro.version_id", c.Distro.VersionID},
		{"distro.codename", c.Distro.Codename},
	} {
		if s.v != "" && !wordRe.MatchString(s.v) {
			add("%s: %q has characters a release name never has", s.field, s.v)
		}
	}
	if !remoteDirRe.MatchString(c.RemoteFolder) {
		add("remote_folder: %q must be an absolute path of plain characters", c.RemoteFolder)
	}
	if !strings.Contains(c.ExecuteCommand, "{{.Path}}") {
		add("execute_command: must contain {{.Path}}")
	}
	for _, s := range []struct{ field, v string }{
		{"manifest.template", c.Manifest.Template},
		{"manifest.mirror", c.Manifest.Mirror},
		{"manifest.snapshot", c.Manifest.Snapshot},
		{"manifest.plugin_version", c.Manifest.PluginVersion},
		{"manifest.policy_digest", c.Manifest.PolicyDigest},
	} {
		if strings.ContainsAny(s.v, "\x00\n\r") {
			add("%s: control characters are not allowed", s.field)
		}
	}
	return errs
}

// rootfsBuilderType is the gpuhost-rootfs builder's name in a template,
// which Packer gives every provisioner as packer_builder_type.
const rootfsBuilderType = "gpuhost-rootfs"

// validateLive refuses live where it would harm the build machine or end
// the build's own logins.
func (c *Config) validateLive() []string {
	if !c.Live {
		return nil
	}
	var errs []string
	if c.PackerBuilderType == rootfsBuilderType {
		errs = append(errs, "live: the gpuhost-rootfs builder's target is a chroot on the build machine's kernel, where loading the firewall and the audit rules would change the build machine's; the image applies its hardening when it boots")
	}
	if h := c.Hardening; h != nil && !h.SSH.Skip && h.SSH.HostKeys != HostKeysKeep {
		errs = append(errs, fmt.Sprintf("hardening.ssh.host_keys: %s removes the host keys of the running host, and with live the reloaded sshd would have none for the build's next login; use keep (cloud-init makes each instance its own)", h.SSH.HostKeys))
	}
	return errs
}

func (k DKMS) validate(source string) []string {
	if k == (DKMS{}) {
		return nil
	}
	var errs []string
	if source == SourceUbuntuArchive {
		errs = append(errs, fmt.Sprintf("dkms: the %s source installs Canonical's signed modules, which DKMS neither builds nor signs", source))
	}
	for _, f := range []struct{ name, path string }{{"signing_key", k.SigningKey}, {"signing_certificate", k.SigningCertificate}} {
		if f.path == "" {
			errs = append(errs, fmt.Sprintf("dkms.%s: required with the other", f.name))
		} else if fi, err := os.Stat(f.path); err != nil {
			errs = append(errs, fmt.Sprintf("dkms.%s: %v", f.name, err))
		} else if !fi.Mode().IsRegular() {
			errs = append(errs, fmt.Sprintf("dkms.%s: %s is not a regular file", f.name, f.path))
		}
	}
	return errs
}

// validateDistro checks what depends on the distribution. It runs again in
// Provision once the distribution has been read from the target.
func (c *Config) validateDistro() []string {
	var errs []string
	add := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	src := c.Driver.Source
	switch c.Distro.ID {
	case "ubuntu":
		if src == SourceDebian {
			add("driver.source: debian needs distro.id debian, not ubuntu")
		}
		if c.usesCUDARepo() {
			if _, ok := cudaRepoDistro["ubuntu "+c.Distro.VersionID]; !ok {
				add("distro.version_id: %q has no CUDA repository here; want one of 22.04, 24.04", c.Distro.VersionID)
			}
		}
	case "debian":
		switch src {
		case SourceDebian:
			if c.Distro.VersionID != "" && c.Distro.VersionID != "12" {
				add("distro.version_id: %q: the debian source is checked on debian 12 only", c.Distro.VersionID)
			}
		case SourceCUDARepo:
			if _, ok := cudaRepoDistro["debian "+c.Distro.VersionID]; !ok {
				add("distro.version_id: %q has no CUDA repository here; want 12", c.Distro.VersionID)
			}
		default:
			add("driver.source: %s needs distro.id ubuntu; use source debian or cuda-repo on debian", src)
		}
	default:
		add("distro.id: %q is not one of ubuntu, debian", c.Distro.ID)
	}
	return errs
}

// cudaRepoDistro maps "ID VERSION_ID" onto NVIDIA's CUDA repository names.
// NVIDIA publishes a debian12 repository with the same packages and shape
// as the Ubuntu ones; the end-to-end test runs the cuda-repo path on it.
var cudaRepoDistro = map[string]string{
	"ubuntu 22.04": "ubuntu2204",
	"ubuntu 24.04": "ubuntu2404",
	"debian 12":    "debian12",
}

func (n NGCImage) check() string {
	if n.Ref == "" {
		return "ref: required"
	}
	if !refRe.MatchString(n.Ref) {
		return fmt.Sprintf("ref: %q is not registry/repository:tag or registry/repository@sha256:<digest>", n.Ref)
	}
	_, inRef, hasRefDigest := strings.Cut(n.Ref, "@")
	if n.Digest != "" && !digestRe.MatchString(n.Digest) {
		return fmt.Sprintf("digest: %q is not sha256:<64 hex>", n.Digest)
	}
	if !hasRefDigest && n.Digest == "" {
		return fmt.Sprintf("pin ngc image %s by digest", n.Ref)
	}
	if hasRefDigest && n.Digest != "" && inRef != n.Digest {
		return fmt.Sprintf("digest: %s does not match the digest in ref %s", n.Digest, n.Ref)
	}
	return ""
}

// PinnedDigest returns the image's digest, from digest or from ref.
func (n NGCImage) PinnedDigest() string {
	if n.Digest != "" {
		return n.Digest
	}
	_, d, _ := strings.Cut(n.Ref, "@")
	return d
}

// branchNumber is the driver branch as a number (0 when malformed, which
// validation has already reported).
func (c *Config) branchNumber() int {
	n, _ := strconv.Atoi(c.Driver.Branch)
	return n
}

// sortedUnique sorts names and drops repeats.
func sortedUnique(names []string) []string {
	out := append([]string(nil), names...)
	sort.Strings(out)
	j := 0
	for i, n := range out {
		if i == 0 || n != out[j-1] {
			out[j] = n
			j++
		}
	}
	return out[:j]
}

// DecodeJSON decodes a provisioner configuration written as JSON (the
// provisioner block's fields, as in a Packer JSON template), exactly as
// Prepare decodes HCL.
func DecodeJSON(data []byte) (*Config, error) {
	var raw map[string]interface{}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, errors.New("the configuration is not a JSON object")
	}
	return Decode(raw)
}

// cudaTooNew says why a CUDA pin cannot run on a driver branch, or "" when
// it can: the matrix (facts/gpu) is the one the gate judges images by, so
// a plan it would fail is refused before anything is baked.
func cudaTooNew(branch, cuda string) string {
	b, _ := strconv.Atoi(branch)
	m := cudaRe.FindStringSubmatch(cuda)
	want := m[1] + "." + m[2]
	limit, known := gpucheck.MaxCUDA(b)
	switch {
	case known && gpucheck.CompareVersions(want, limit) > 0:
		return fmt.Sprintf("CUDA %s needs a newer driver than branch %s, which supports CUDA up to %s; pin CUDA %s or older, or a newer driver branch", want, branch, limit, limit)
	case !known && b < gpucheck.OldestBranch():
		return fmt.Sprintf("driver branch %s is older than any the compatibility matrix knows (%d and later), so CUDA %s cannot be checked against it", branch, gpucheck.OldestBranch(), want)
	}
	return ""
}
