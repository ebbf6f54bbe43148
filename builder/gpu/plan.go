package gpu

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"text/template"

	"github.com/hashicorp/packer-plugin-sdk/template/config"

	"github.com/gpuhost/gpuhost/builder/internal/configerr"
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
	cudaRepoBase   = "https://developer.download.nvidia.com/compute/cuda/repos"
	toolkitKeyURL  = "https://nvidia.github.io/libnvidia-container/gpgkey"
	toolkitRepo    = "https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /"
	// ToolkitKeyring is where the dearmored toolkit key is written; the
	// source list names it with signed-by, so the key trusts only that repo.
	ToolkitKeyring = "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg"
	// lastBranchSuffixed is the last driver branch whose meta packages carry
	// the branch in their names (nvidia-driver-580-open); from 590 on only
	// the unsuffixed names exist and nvidia-driver-pinning selects the branch.
	lastBranchSuffixed = 580
)

// aptGroup is one apt-get install call: packages that must be resolved
// together, in the plan's order.
type aptGroup struct {
	Step     string
	Packages []string
}

// planData is what the template sees; every string in it has passed the
// validation regexps, so none needs shell quoting beyond single quotes.
type planData struct {
	C              *Config
	CUDARepoURL    string
	ToolkitKeyURL  string
	ToolkitRepo    string
	ToolkitKeyring string
	Keyring        string
	Prereqs        []string
	Groups         []aptGroup
	Pins           []Pin
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
}

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
	d := planData{
		C:              c,
		ToolkitKeyURL:  toolkitKeyURL,
		ToolkitRepo:    toolkitRepo,
		ToolkitKeyring: ToolkitKeyring,
		Keyring:        CUDAKeyringDeb,
		Pins:           c.Pins(),
		KernelHold:     c.Hold.Kernel,
		DKMS:           c.Driver.Source == SourceCUDARepo,
		Toolkit:        c.ContainerToolkit.Version != "",
		SystemdCgroup:  c.Containerd.SystemdCgroup == config.TriTrue,
		Debian:         c.Driver.Source == SourceDebian,
	}
	if c.Driver.Source == SourceCUDARepo {
		d.CUDARepoURL = cudaRepoBase + "/" + cudaRepoDistro[c.Distro.VersionID]
	}
	if d.CUDARepoURL != "" || d.Toolkit {
		d.Prereqs = []string{"ca-certificates", "curl", "gpg"}
	}
	d.Groups = c.installGroups()
	d.Preferences = c.sourcePins()
	d.SliceLimits = c.MemoryLimits.sliceDropIns()
	d.Kubelet = c.MemoryLimits.Kubelet
	d.KubeletMemory = d.Kubelet != KubeletMemory{}
	d.Unattended = c.DisableUnattendedUpgrades.True()
	if c.Hardening != nil {
		d.Hardening = c.Hardening.plan()
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

func specs(pins []Pin) []string {
	out := make([]string, len(pins))
	for i, p := range pins {
		out[i] = p.Spec()
	}
	return out
}

// installGroups returns the apt-get install calls in order.
func (c *Config) installGroups() []aptGroup {
	var groups []aptGroup
	if c.Driver.Source == SourceCUDARepo {
		// DKMS builds the modules against these headers, for the target
		// kernel rather than the build host's.
		groups = append(groups, aptGroup{"kernel headers", []string{"linux-headers-" + c.TargetKernel}})
	}
	for i, g := range c.driverPins() {
		step := "driver"
		if c.Driver.Source == SourceCUDARepo && i == 0 {
			step = "driver pinning"
		}
		groups = append(groups, aptGroup{step, specs(g)})
	}
	if p, ok := c.fabricManagerPin(); ok {
		groups = append(groups, aptGroup{"fabric manager", []string{p.Spec()}})
	}
	if p, ok := c.cudaPin(); ok {
		groups = append(groups, aptGroup{"cuda toolkit", []string{p.Spec()}})
	}
	if t := c.toolkitPins(); len(t) > 0 {
		groups = append(groups, aptGroup{"container toolkit", specs(t)})
	}
	ctr := Pin{Name: "containerd", Version: c.Containerd.Version}
	groups = append(groups, aptGroup{"containerd", []string{ctr.Spec()}})
	return groups
}
