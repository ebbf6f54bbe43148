package system

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"

	"github.com/gpuhost/gpuhost/checks/collector"
	"github.com/gpuhost/gpuhost/checks/facts"
	"github.com/gpuhost/gpuhost/checks/sysroot"
	"github.com/gpuhost/gpuhost/internal/boundedyaml"
)

const (
	// maxUnitFile bounds one systemd unit or drop-in file.
	maxUnitFile = 256 << 10
	// maxDropIns bounds the drop-ins read for one slice.
	maxDropIns = 256
	// maxKubeletConfig bounds the kubelet's configuration file.
	maxKubeletConfig = 1 << 20
	// kubeletConfigPath is where kubeadm and most installers put the
	// kubelet's configuration.
	kubeletConfigPath = "/var/lib/kubelet/config.yaml"
	// kubeletDropInDir is the kubelet's --config-dir as images bake it:
	// its *.conf files are merged over the configuration, in name order.
	kubeletDropInDir = "/etc/kubernetes/kubelet.conf.d"
)

// topSlices are the slices under the root that hold every process.
var topSlices = []string{"system.slice", "user.slice", "machine.slice"}

// cgroupMemory reads the memory controller's state and the top-level
// slices' limits: from the cgroup tree on a live host, from the slices'
// drop-ins in an image.
func cgroupMemory(fsys sysroot.FS, live bool) (*facts.CgroupMemory, error) {
	m := &facts.CgroupMemory{Slices: []facts.SliceMemory{}}
	if live {
		data, err := fsys.ReadFileLimit("/sys/fs/cgroup/cgroup.subtree_control", 4096)
		if err != nil {
			return nil, fmt.Errorf("reading the root cgroup's controllers: %w", err)
		}
		on := slices.Contains(strings.Fields(string(data)), "memory")
		m.ControllerEnabled = &on
		for _, s := range topSlices {
			dir := "/sys/fs/cgroup/" + s
			if _, err := fsys.Stat(dir); err != nil {
				// Not started yet (user.slice waits for the first
				// login): what applies when it starts is in its units.
				sm, err := sliceDropIns(fsys, s)
				if err != nil {
					return nil, err
				}
				sm.Source += " (slice not started)"
				m.Slices = append(m.Slices, sm)
				continue
			}
			sm := facts.SliceMemory{Name: s, Source: "cgroup"}
			for _, f := range []struct {
				file string
				dst  *string
			}{{"memory.max", &sm.MemoryMax}, {"memory.high", &sm.MemoryHigh}} {
				data, err := fsys.ReadFileLimit(dir+"/"+f.file, 4096)
				switch {
				case err == nil:
					*f.dst = strings.TrimSpace(string(data))
				case !sysroot.IsNotExist(err):
					return nil, fmt.Errorf("reading %s: %w", fsys.Display(dir+"/"+f.file), err)
				}
			}
			m.Slices = append(m.Slices, sm)
		}
		return m, nil
	}
	for _, s := range topSlices {
		sm, err := sliceDropIns(fsys, s)
		if err != nil {
			return nil, err
		}
		m.Slices = append(m.Slices, sm)
	}
	return m, nil
}

// sliceDropIns reads MemoryMax= and MemoryHigh= from a slice's unit and
// drop-ins, in the order systemd applies them: the unit in /etc wins over
// /usr/lib, and drop-ins apply in name order, later ones overriding.
func sliceDropIns(fsys sysroot.FS, name string) (facts.SliceMemory, error) {
	sm := facts.SliceMemory{Name: name, Source: "systemd default: no unit file or drop-in sets a limit"}
	var files []string
	for _, dir := range []string{"/usr/lib/systemd/system", "/lib/systemd/system", "/etc/systemd/system"} {
		if _, err := fsys.Stat(path.Join(dir, name)); err == nil {
			files = append(files, path.Join(dir, name))
		}
	}
	var dropIns []string
	for _, dir := range []string{"/usr/lib/systemd/system", "/lib/systemd/system", "/etc/systemd/system", "/run/systemd/system"} {
		entries, err := fsys.ReadDir(path.Join(dir, name+".d"))
		if err != nil {
			continue
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".conf") {
				dropIns = append(dropIns, path.Join(dir, name+".d", e.Name()))
			}
		}
	}
	if len(dropIns) > maxDropIns {
		return sm, fmt.Errorf("%s: more than %d drop-ins", name, maxDropIns)
	}
	slices.SortStableFunc(dropIns, func(a, b string) int { return strings.Compare(path.Base(a), path.Base(b)) })
	for _, file := range append(files, dropIns...) {
		data, err := fsys.ReadFileLimit(file, maxUnitFile)
		if err != nil {
			return sm, fmt.Errorf("reading %s: %w", fsys.Display(file), err)
		}
		opts, err := unit.DeserializeOptions(bytes.NewReader(data))
		if err != nil {
			return sm, fmt.Errorf("parsing %s: %w", fsys.Display(file), err)
		}
		for _, o := range opts {
			if o.Section != "Slice" {
				continue
			}
			switch o.Name {
			case "MemoryMax":
				sm.MemoryMax, sm.Source = o.Value, fsys.Display(file)
			case "MemoryHigh":
				sm.MemoryHigh, sm.Source = o.Value, fsys.Display(file)
			}
		}
	}
	return sm, nil
}

type kubeletCollector struct{}

var _ collector.Collector = kubeletCollector{}

func (kubeletCollector) Name() string { return "kubelet" }

// Needs is empty: it reads the target alone.
func (kubeletCollector) Needs() []string { return nil }

// Collect reads the kubelet's configuration file and the drop-ins merged
// over it. A target with neither runs no kubelet, or one configured by
// flags this collector does not read.
func (kubeletCollector) Collect(_ context.Context, env *collector.Env, f *facts.Facts) error {
	var files []string
	if _, err := env.FS.Stat(kubeletConfigPath); err == nil {
		files = append(files, kubeletConfigPath)
	} else if !sysroot.IsNotExist(err) {
		return fmt.Errorf("reading %s: %w", env.FS.Display(kubeletConfigPath), err)
	}
	entries, err := env.FS.ReadDir(kubeletDropInDir)
	if err != nil && !sysroot.IsNotExist(err) {
		return fmt.Errorf("reading %s: %w", env.FS.Display(kubeletDropInDir), err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".conf") {
			files = append(files, path.Join(kubeletDropInDir, e.Name()))
		}
	}
	if len(files) > maxDropIns {
		return fmt.Errorf("reading %s: more than %d drop-ins", env.FS.Display(kubeletDropInDir), maxDropIns)
	}
	if len(files) == 0 {
		return collector.NotApplicable("no kubelet configuration (" + kubeletConfigPath + " or " + kubeletDropInDir + ")")
	}
	var k *facts.Kubelet
	for _, name := range files {
		data, err := env.FS.ReadFileLimit(name, maxKubeletConfig)
		if err != nil {
			return fmt.Errorf("reading %s: %w", env.FS.Display(name), err)
		}
		doc, err := decodeKubelet(env.FS.Display(name), data)
		if err != nil {
			return err
		}
		k = mergeKubelet(k, doc, env.FS.Display(name))
	}
	f.Kubelet = k
	return nil
}

// kubeletDoc is the part of a KubeletConfiguration the checks read; a nil
// field is one the document leaves unset, so a drop-in changes only what
// it names.
type kubeletDoc struct {
	Kind                   string            `yaml:"kind"`
	CgroupDriver           *string           `yaml:"cgroupDriver"`
	SystemReserved         map[string]string `yaml:"systemReserved"`
	KubeReserved           map[string]string `yaml:"kubeReserved"`
	EvictionHard           map[string]string `yaml:"evictionHard"`
	EnforceNodeAllocatable *[]string         `yaml:"enforceNodeAllocatable"`
	RotateCertificates     *bool             `yaml:"rotateCertificates"`
	ServerTLSBootstrap     *bool             `yaml:"serverTLSBootstrap"`
}

func decodeKubelet(display string, data []byte) (*kubeletDoc, error) {
	var doc kubeletDoc
	if err := boundedyaml.Decode(display, data, &doc); err != nil {
		return nil, fmt.Errorf("parsing %w", err)
	}
	if doc.Kind != "KubeletConfiguration" {
		return nil, fmt.Errorf("parsing %s: kind %q, want KubeletConfiguration", display, doc.Kind)
	}
	return &doc, nil
}

// ParseKubeletConfig reads a KubeletConfiguration document's memory and
// certificate rotation settings; display names the file.
func ParseKubeletConfig(display string, data []byte) (*facts.Kubelet, error) {
	doc, err := decodeKubelet(display, data)
	if err != nil {
		return nil, err
	}
	return mergeKubelet(nil, doc, display), nil
}

// mergeKubelet lays doc over base as the kubelet lays a drop-in over its
// configuration: a field doc sets replaces the earlier value. A nil base
// starts from the kubelet's defaults.
func mergeKubelet(base *facts.Kubelet, doc *kubeletDoc, display string) *facts.Kubelet {
	k := facts.Kubelet{ConfigPath: display, EnforceNodeAllocatable: []string{}}
	if base != nil {
		k = *base
		k.ConfigPath = base.ConfigPath + ", " + display
	}
	if doc.CgroupDriver != nil {
		k.CgroupDriver = *doc.CgroupDriver
	}
	if doc.SystemReserved != nil {
		k.SystemReservedMemory = doc.SystemReserved["memory"]
	}
	if doc.KubeReserved != nil {
		k.KubeReservedMemory = doc.KubeReserved["memory"]
	}
	if doc.EvictionHard != nil {
		k.EvictionHardMemory = doc.EvictionHard["memory.available"]
	}
	if doc.EnforceNodeAllocatable != nil {
		k.EnforceNodeAllocatable = append([]string{}, *doc.EnforceNodeAllocatable...)
	}
	if doc.RotateCertificates != nil {
		k.RotateCertificates = *doc.RotateCertificates
	}
	if doc.ServerTLSBootstrap != nil {
		k.ServerTLSBootstrap = *doc.ServerTLSBootstrap
	}
	return &k
}
