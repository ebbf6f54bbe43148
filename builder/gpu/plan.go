package gpu

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"text/template"

	"github.com/hashicorp/packer-plugin-sdk/template/config"

	"github.com/gpuhost/gpuhost/builder/internal/configerr"
	"github.com/gpuhost/gpuhost/manifest/lock"
)

// Pin is one package the plan installs (or finds installed), holds and then
// verifies. An empty Version means any version, still held: packages whose
// version follows the kernel ABI or a name that already carries the version.
type Pin struct {
	Name    string
	Version string
}

// Spec is `name=version`, or the name alone.
func (p Pin) Spec() string {
	if p.Version == "" {
		return p.Name
	}
	return p.Name + "=" + p.Version
}

const (
	// CUDAKeyringDeb is the package that installs NVIDIA's CUDA repository
	// key (3bf863cc) and source list.
	CUDAKeyringDeb = "cuda-keyring_1.1-1_all.deb"
	// CUDAKeyring is the key cuda-keyring installs; the CUDA source list
	// the plan writes names it with signed-by.
	CUDAKeyring = "/usr/share/keyrings/cuda-archive-keyring.gpg"
	// ToolkitKeyring is where the dearmored toolkit key is written; the
	// source list names it with signed-by, so the key trusts only that repo.
	ToolkitKeyring = "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg"
	// lastBranchSuffixed is the last driver branch whose meta packages carry
	// the branch in their names (nvidia-driver-580-open); from 590 on only
	// the unsuffixed names exist and nvidia-driver-pinning selects the branch.
	lastBranchSuffixed = 580
)

// aptGroup is one apt-get install call: packages that must be resolved
// together, in the plan's order. CUDASet installs the CUDA release the plan
// resolved instead of Packages.
type aptGroup struct {
	Step     string
	Packages []Pin
	CUDASet  bool
}

// cudaSet is the CUDA release the plan pins whole: the toolkit's meta
// package at its pin (any version when empty) and every package of the
// release its dependencies reach. Those are known only once the apt
// sources are, so the plan resolves them on the target; Suffix is what
// names them (`12-2` in cuda-nvcc-12-2, libcublas-12-2) and Major the
// CUDA major release whose shared configuration packages they depend on
// (cuda-toolkit-12-config-common).
type cudaSet struct {
	Toolkit Pin
	Suffix  string
	Major   string
}

// CUDAPreferences is the apt preferences file that pins every package of
// the CUDA release at the version the plan resolved for it.
const CUDAPreferences = "/etc/apt/preferences.d/gpuhost-cuda.pref"

// planData is what the template sees; every string in it has passed the
// validation regexps, so none needs shell quoting beyond single quotes.
type planData struct {
	C              *Config
	CUDARepoURL    string
	CUDARepoName   string
	CUDAKeyring    string
	ToolkitKeyURL  string
	ToolkitRepo    string
	ToolkitKeyring string
	Keyring        string
	Prereqs        []string
	Groups         []aptGroup
	Available      []Pin
	Pins           []Pin
	Payload        payload
	KernelHold     bool
	DKMS           bool
	Toolkit        bool
	Persistenced   string
	FabricManager  string
	SystemdCgroup  bool
	Debian         bool
	Preferences    []Pin
	SliceLimits    []sliceDropIn
	Kubelet        KubeletMemory
	KubeletMemory  bool
	Unattended     bool
	Hardening      *hardeningPlan
	CUDASet        *cudaSet
	CUDAPref       string
	// Lock is lock_file's content, nil without one.
	Lock *lock.Lock
	// LockPreferences is where the build-only preferences for the locked
	// versions go.
	LockPreferences string
	// LockFiles are the globs of the apt files the lock holds digests of.
	LockFiles []string
	// DKMSKey and DKMSCert are where the provisioner stages dkms's signing
	// key and certificate, "" without them.
	DKMSKey, DKMSCert string
	// Digests is where the plan leaves the installed packages' .deb
	// digests for the manifest, or "" when no manifest is written.
	Digests string
}

// LockPreferencesPath is the apt preferences file a locked plan writes for
// the build and removes before it verifies: it sorts after every other, so
// that the locked version is each package's candidate.
const LockPreferencesPath = "/etc/apt/preferences.d/zz-gpuhost-lock.pref"

//go:embed plan.sh.tmpl
var planTemplateText string

//go:embed hardening.sh.tmpl
var hardeningTemplateText string

var planTemplate = template.Must(template.Must(template.New("plan").Funcs(template.FuncMap{
	"join": strings.Join,
}).Parse(planTemplateText)).Parse(hardeningTemplateText))

// RenderPlan returns the POSIX sh script that provisions a target with cfg.
// It is a pure function of the configuration: the same cfg gives the same
// bytes, and the provisioner uploads and runs exactly this text. cfg must
// have passed Decode and name its distribution; target_kernel is required
// where the plan builds or holds against the kernel.
func RenderPlan(cfg Config) (string, error) {
	c := &cfg
	if err := configerr.Check("gpuhost-gpu", c.validate()); err != nil {
		return "", err
	}
	if c.Distro.ID == "" {
		return "", errors.New("distro.id: required to render the plan (the provisioner reads it from the target)")
	}
	if c.needsKernel() && c.TargetKernel == "" {
		return "", fmt.Errorf("target_kernel: required with driver source %s or hold.kernel (the provisioner reads it from the target's /lib/modules)", c.Driver.Source)
	}
	if c.LockFile != "" && c.lock == nil {
		return "", fmt.Errorf("lock_file: %s was not read; decode the configuration first", c.LockFile)
	}
	d := planData{
		C:              c,
		ToolkitKeyURL:  c.Repositories.ContainerToolkitKey,
		ToolkitRepo:    c.Repositories.ContainerToolkit + "/$(ARCH) /",
		CUDAKeyring:    CUDAKeyring,
		ToolkitKeyring: ToolkitKeyring,
		Keyring:        CUDAKeyringDeb,
		Pins:           c.Pins(),
		KernelHold:     c.Hold.Kernel,
		DKMS:           c.Driver.Source == SourceCUDARepo,
		Toolkit:        c.ContainerToolkit.Version != "",
		SystemdCgroup:  c.Containerd.SystemdCgroup == config.TriTrue,
		Debian:         c.Driver.Source == SourceDebian,
		Lock:           c.lock,
	}
	if c.lock != nil {
		d.LockPreferences = LockPreferencesPath
		d.LockFiles = append(slices.Clone(lock.SourcePatterns), lock.KeyringPatterns...)
	}
	if c.DKMS.SigningKey != "" {
		d.DKMSKey = path.Join(c.RemoteFolder, dkmsKeyStageName)
		d.DKMSCert = path.Join(c.RemoteFolder, dkmsCertStageName)
	}
	if !c.Manifest.Skip {
		d.Digests = path.Join(c.RemoteFolder, digestsStageName)
	}
	if c.usesCUDARepo() {
		d.CUDARepoName = cudaRepoDistro[c.Distro.ID+" "+c.Distro.VersionID]
		d.CUDARepoURL = c.Repositories.CUDA + "/" + d.CUDARepoName
	}
	if d.CUDARepoURL != "" || d.Toolkit {
		d.Prereqs = []string{"ca-certificates", "curl", "gpg"}
	}
	d.CUDASet = c.cudaSet()
	d.CUDAPref = CUDAPreferences
	d.Groups = c.installGroups()
	d.Available = availableOrder(d.Groups)
	d.Payload = c.payload()
	d.Preferences = c.sourcePins()
	d.SliceLimits = c.MemoryLimits.sliceDropIns()
	d.Kubelet = c.MemoryLimits.Kubelet
	d.KubeletMemory = d.Kubelet != KubeletMemory{}
	d.Unattended = c.DisableUnattendedUpgrades.True()
	if c.Hardening != nil {
		d.Hardening = c.Hardening.plan()
		d.Hardening.Live = c.Live
	}
	if c.Persistenced {
		d.Persistenced = "nvidia-persistenced.service"
	}
	if c.FabricManager {
		d.FabricManager = "nvidia-fabricmanager.service"
	}
	var b bytes.Buffer
	if err := planTemplate.Execute(&b, d); err != nil {
		return "", fmt.Errorf("rendering the plan: %w", err)
	}
	return b.String(), nil
}

// usesCUDARepo says whether the plan installs from NVIDIA's CUDA
// repository: the driver of the cuda-repo source, and the CUDA toolkit of
// any source but debian. Canonical's archive carries the driver and its
// precompiled modules, not cuda-toolkit-X-Y, so an ubuntu-archive driver
// with CUDA takes the toolkit from NVIDIA's repository, as Ubuntu hosts do.
func (c *Config) usesCUDARepo() bool {
	return c.Driver.Source == SourceCUDARepo || (c.Driver.Source == SourceUbuntuArchive && c.CUDA.Version != "")
}

// needsKernel says whether the plan names the target kernel: DKMS builds
// for it, Canonical's precompiled modules are per kernel, and hold.kernel
// holds it.
func (c *Config) needsKernel() bool {
	return c.Driver.Source == SourceCUDARepo || c.Driver.Source == SourceUbuntuArchive || c.Hold.Kernel
}

// driverPins returns the driver's packages in install order.
func (c *Config) driverPins() [][]Pin {
	v, b := c.Driver.Version, c.Driver.Branch
	switch c.Driver.Source {
	case SourceCUDARepo:
		// nvidia-driver-pinning-<version> writes apt preferences that hold
		// every driver package at that version; it must be installed in a
		// call of its own so that the next call resolves under it.
		pinning := Pin{Name: "nvidia-driver-pinning-" + upstreamVersion(v)}
		var meta string
		switch {
		case c.Driver.Flavor == FlavorOpen && c.branchNumber() <= lastBranchSuffixed:
			meta = "nvidia-driver-" + b + "-open"
		case c.Driver.Flavor == FlavorOpen:
			meta = "nvidia-open"
		case c.branchNumber() <= lastBranchSuffixed:
			meta = "cuda-drivers-" + b
		default:
			meta = "cuda-drivers"
		}
		return [][]Pin{{pinning}, {{Name: meta, Version: v}}}
	case SourceUbuntuArchive:
		suffix := "-server"
		if c.Driver.Flavor == FlavorOpen {
			suffix = "-server-open"
		}
		pins := []Pin{
			{Name: "nvidia-headless-no-dkms-" + b + suffix, Version: v},
			{Name: "nvidia-utils-" + b + "-server", Version: v},
		}
		// Its version follows the kernel ABI, not the driver. RenderPlan
		// refuses to go on without the kernel; a manifest made outside a
		// build may not know it.
		if c.TargetKernel != "" {
			pins = append(pins, Pin{Name: "linux-modules-nvidia-" + b + suffix + "-" + c.TargetKernel})
		}
		return [][]Pin{pins}
	case SourceDebian:
		pins := []Pin{
			{Name: "libnvidia-ml1", Version: v},
			{Name: "nvidia-smi", Version: v},
		}
		if c.Persistenced {
			pins = append(pins, Pin{Name: "nvidia-persistenced", Version: c.Driver.PersistencedVersion})
		}
		return [][]Pin{pins}
	}
	return nil
}

// sourcePins are whole source packages pinned through apt preferences, by
// source name. Pinning the packages the plan names is not enough where the
// archive carries a newer build of the same driver (a security update): their
// exact-version dependencies (nvidia-alternative, libnvidia-*-535-server)
// would resolve to the newer build and the install fails. NVIDIA's CUDA
// repository solves this with nvidia-driver-pinning; the archives need this.
func (c *Config) sourcePins() []Pin {
	switch c.Driver.Source {
	case SourceDebian:
		pins := []Pin{{Name: "nvidia-graphics-drivers", Version: c.Driver.Version}}
		if c.Persistenced && c.Driver.PersistencedVersion != "" {
			pins = append(pins, Pin{Name: "nvidia-persistenced", Version: c.Driver.PersistencedVersion})
		}
		// Its libraries (libcudart, libcublas, ...) are binaries of the
		// same source at the same version.
		if c.CUDA.Version != "" {
			pins = append(pins, Pin{Name: "nvidia-cuda-toolkit", Version: c.CUDA.Version})
		}
		return pins
	case SourceUbuntuArchive:
		return []Pin{{Name: "nvidia-graphics-drivers-" + c.Driver.Branch + "-server", Version: c.Driver.Version}}
	}
	return nil
}

func (c *Config) fabricManagerPin() (Pin, bool) {
	if !c.FabricManager {
		return Pin{}, false
	}
	name := "nvidia-fabricmanager-" + c.Driver.Branch
	if c.Driver.Source == SourceCUDARepo && c.branchNumber() > lastBranchSuffixed {
		name = "nvidia-fabricmanager"
	}
	return Pin{Name: name, Version: c.Driver.Version}, true
}

func (c *Config) cudaPin() (Pin, bool) {
	v := c.CUDA.Version
	if v == "" {
		return Pin{}, false
	}
	if c.Driver.Source == SourceDebian {
		return Pin{Name: "nvidia-cuda-toolkit", Version: v}, true
	}
	m := cudaRe.FindStringSubmatch(v)
	name := "cuda-toolkit-" + m[1] + "-" + m[2]
	if m[4] == "" {
		// 12.8: the meta package's name is the pin.
		return Pin{Name: name}, true
	}
	return Pin{Name: name, Version: v}, true
}

// cudaSet is the CUDA release pinned whole, for NVIDIA's cuda-toolkit-X-Y
// meta package; Debian's nvidia-cuda-toolkit is one source package, pinned
// through sourcePins instead.
func (c *Config) cudaSet() *cudaSet {
	p, ok := c.cudaPin()
	if !ok || c.Driver.Source == SourceDebian {
		return nil
	}
	m := cudaRe.FindStringSubmatch(c.CUDA.Version)
	return &cudaSet{Toolkit: p, Suffix: m[1] + "-" + m[2], Major: m[1]}
}

func (c *Config) toolkitPins() []Pin {
	if c.ContainerToolkit.Version == "" {
		return nil
	}
	pins := make([]Pin, 0, len(ToolkitPackages))
	for _, n := range ToolkitPackages {
		pins = append(pins, Pin{Name: n, Version: c.ContainerToolkit.Version})
	}
	return pins
}

func (c *Config) kernelPins() []Pin {
	if !c.Hold.Kernel || c.TargetKernel == "" {
		return nil
	}
	return []Pin{{Name: "linux-image-" + c.TargetKernel}}
}

// Pins returns every package the plan holds and verifies, in plan order.
func (c *Config) Pins() []Pin {
	var pins []Pin
	pins = append(pins, c.kernelPins()...)
	for _, g := range c.driverPins() {
		pins = append(pins, g...)
	}
	if p, ok := c.fabricManagerPin(); ok {
		pins = append(pins, p)
	}
	if p, ok := c.cudaPin(); ok {
		pins = append(pins, p)
	}
	pins = append(pins, c.toolkitPins()...)
	if c.Containerd.Version != "" {
		pins = append(pins, Pin{Name: "containerd", Version: c.Containerd.Version})
	}
	seen := map[string]bool{}
	for _, p := range pins {
		seen[p.Name] = true
	}
	for _, n := range sortedUnique(c.Hold.Packages) {
		if !seen[n] {
			pins = append(pins, Pin{Name: n})
		}
	}
	return pins
}

// installGroups returns the apt-get install calls in order.
func (c *Config) installGroups() []aptGroup {
	var groups []aptGroup
	if c.Driver.Source == SourceCUDARepo {
		// DKMS builds the modules against these headers, for the target
		// kernel rather than the build host's.
		groups = append(groups, aptGroup{Step: "kernel headers", Packages: []Pin{{Name: "linux-headers-" + c.TargetKernel}}})
	}
	for i, g := range c.driverPins() {
		step := "driver"
		if c.Driver.Source == SourceCUDARepo && i == 0 {
			step = "driver pinning"
		}
		groups = append(groups, aptGroup{Step: step, Packages: g})
	}
	if p, ok := c.fabricManagerPin(); ok {
		groups = append(groups, aptGroup{Step: "fabric manager", Packages: []Pin{p}})
	}
	if p, ok := c.cudaPin(); ok {
		groups = append(groups, aptGroup{Step: "cuda toolkit", Packages: []Pin{p}, CUDASet: c.cudaSet() != nil})
	}
	if t := c.toolkitPins(); len(t) > 0 {
		groups = append(groups, aptGroup{Step: "container toolkit", Packages: t})
	}
	ctr := Pin{Name: "containerd", Version: c.Containerd.Version}
	groups = append(groups, aptGroup{Step: "containerd", Packages: []Pin{ctr}})
	return groups
}

// availableOrder is every package the install steps name, those pinned to
// a version first: when a driver version is missing from the repository,
// the message then names the meta package and the versions the repository
// has, not only the pinning package whose name carries the version.
func availableOrder(groups []aptGroup) []Pin {
	var versioned, any []Pin
	for _, g := range groups {
		for _, p := range g.Packages {
			if p.Version != "" {
				versioned = append(versioned, p)
			} else {
				any = append(any, p)
			}
		}
	}
	return append(versioned, any...)
}

// payload is what the plan checks in the installed files, past the package
// versions dpkg records: a meta package at the pin says little about the
// library or module it pulled in.
type payload struct {
	// NVML is the upstream driver version libnvidia-ml.so.1 must resolve
	// to (libnvidia-ml.so.<NVML>).
	NVML string
	// Module is the version the nvidia kernel module for the target kernel
	// must carry; empty where the source installs no module.
	Module string
	// Toolkit is the version nvidia-ctk and nvidia-container-cli (and the
	// libnvidia-container it loads) must report; empty without the toolkit.
	Toolkit string
	// CUDA is the release nvcc must report (12.8), and CUDAHome where the
	// toolkit lives; empty for the debian source and without CUDA.
	CUDA, CUDAHome string
}

func (c *Config) payload() payload {
	p := payload{NVML: upstreamVersion(c.Driver.Version)}
	// Debian's source is userspace only; the other two bring the module,
	// DKMS-built or Canonical's precompiled one.
	if c.Driver.Source != SourceDebian {
		p.Module = p.NVML
	}
	if v := c.ContainerToolkit.Version; v != "" {
		p.Toolkit = upstreamVersion(v)
	}
	if m := cudaRe.FindStringSubmatch(c.CUDA.Version); m != nil && c.Driver.Source != SourceDebian {
		p.CUDA = m[1] + "." + m[2]
		p.CUDAHome = "/usr/local/cuda-" + p.CUDA
	}
	return p
}
