package runtime

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/internal/boundedyaml"
)

const (
	// maxDropIns bounds the kubelet's drop-ins.
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

// CollectKubelet reads the kubelet's configuration file and the drop-ins merged
// over it. A target with neither runs no kubelet, or one configured by
// flags this collector does not read.
func CollectKubelet(_ context.Context, env *collect.Env) (*facts.Kubelet, error) {
	var files []string
	if _, err := env.FS.Stat(kubeletConfigPath); err == nil {
		files = append(files, kubeletConfigPath)
	} else if !sysroot.IsNotExist(err) {
		return nil, fmt.Errorf("reading %s: %w", env.FS.Display(kubeletConfigPath), err)
	}
	entries, err := env.FS.ReadDir(kubeletDropInDir)
	if err != nil && !sysroot.IsNotExist(err) {
		return nil, fmt.Errorf("reading %s: %w", env.FS.Display(kubeletDropInDir), err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".conf") {
			files = append(files, path.Join(kubeletDropInDir, e.Name()))
		}
	}
	if len(files) > maxDropIns {
		return nil, fmt.Errorf("reading %s: more than %d drop-ins", env.FS.Display(kubeletDropInDir), maxDropIns)
	}
	if len(files) == 0 {
		return nil, collect.NotApplicable("no kubelet configuration (" + kubeletConfigPath + " or " + kubeletDropInDir + ")")
	}
	var k *facts.Kubelet
	for _, name := range files {
		data, err := env.FS.ReadFileLimit(name, maxKubeletConfig)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", env.FS.Display(name), err)
		}
		doc, err := decodeKubelet(env.FS.Display(name), data)
		if err != nil {
			return nil, err
		}
		k = mergeKubelet(k, doc, env.FS.Display(name))
	}
	return k, nil
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
