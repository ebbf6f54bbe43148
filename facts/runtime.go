package facts

import "github.com/gpuhost/gpuhost/facts/collect"

// Kubelet is what the kubelet's configuration file says about memory.
type Kubelet struct {
	ConfigPath   string `json:"config_path"`
	CgroupDriver string `json:"cgroup_driver"`
	// SystemReservedMemory and KubeReservedMemory are the memory kept from
	// pods for the system and for Kubernetes' own daemons; empty when unset.
	SystemReservedMemory string `json:"system_reserved_memory"`
	KubeReservedMemory   string `json:"kube_reserved_memory"`
	// EvictionHardMemory is evictionHard's memory.available threshold;
	// empty when unset, which leaves the kubelet's default.
	EvictionHardMemory     string   `json:"eviction_hard_memory"`
	EnforceNodeAllocatable []string `json:"enforce_node_allocatable"`
	// RotateCertificates and ServerTLSBootstrap say whether the kubelet
	// renews its client and serving certificates; false when unset, the
	// kubelet's default.
	RotateCertificates bool `json:"rotate_certificates"`
	ServerTLSBootstrap bool `json:"server_tls_bootstrap"`
}

// ContainerRuntime covers containerd, docker and CDI.
type ContainerRuntime struct {
	Containerd *Containerd `json:"containerd,omitempty"`
	Docker     *Docker     `json:"docker,omitempty"`
	CDISpecs   []CDISpec   `json:"cdi_specs"`
}

// Containerd is the effective config after conf.d drop-ins are merged.
type Containerd struct {
	ConfigPath    string   `json:"config_path"`
	ConfigVersion int      `json:"config_version" jsonschema:"minimum=0"`
	Imports       []string `json:"imports"`
	NvidiaRuntime bool     `json:"nvidia_runtime" factschema:"located"`
	NvidiaBinary  string   `json:"nvidia_binary,omitempty" factschema:"located"`
	// NvidiaBinaryPresent says whether NvidiaBinary is an executable file
	// in the target, found as containerd's shim would find it.
	NvidiaBinaryPresent bool   `json:"nvidia_binary_present"`
	DefaultRuntime      string `json:"default_runtime" factschema:"located"`
	// SystemdCgroup is the runc (or default runtime) option; nil when unset.
	SystemdCgroup       *bool `json:"systemd_cgroup" factschema:"located"`
	NvidiaSystemdCgroup *bool `json:"nvidia_systemd_cgroup" factschema:"located"`
	CDIEnabled          bool  `json:"cdi_enabled" factschema:"located"`
	// Source is "process" when the file is the one a running containerd
	// was started with (PID), "file" when it is the default file read
	// without a running daemon.
	Source string `json:"source,omitempty" jsonschema:"enum=file,enum=process"`
	PID    int    `json:"pid,omitempty" jsonschema:"minimum=1"`
	// Locations say where the settings above are set, by their JSON name
	// (default_runtime, cdi_enabled, systemd_cgroup, nvidia_runtime,
	// nvidia_binary, nvidia_systemd_cgroup): the key's line, or its
	// table's header, in the main file or the import that set it last. A
	// setting left at containerd's default has none.
	Locations map[string]collect.FileLine `json:"locations,omitempty" factschema:"locations"`
}

// Docker is /etc/docker/daemon.json.
type Docker struct {
	ConfigPath     string   `json:"config_path"`
	DefaultRuntime string   `json:"default_runtime" factschema:"located"`
	Runtimes       []string `json:"runtimes" factschema:"located"`
	CgroupDriver   string   `json:"cgroup_driver" factschema:"located"`
	CDIEnabled     bool     `json:"cdi_enabled" factschema:"located"`
	// Locations say where the settings above are set, by their JSON name
	// (default_runtime, runtimes, cgroup_driver, cdi_enabled): the line of
	// the key's value, or for cgroup_driver of the exec-opts entry that
	// names it. A setting daemon.json leaves out has none.
	Locations map[string]collect.FileLine `json:"locations,omitempty" factschema:"locations"`
}

// CDISpec is one CDI spec file.
type CDISpec struct {
	File    string   `json:"file"`
	Kind    string   `json:"kind"`
	Devices []string `json:"devices"`
}

// Containers lists pre-seeded container images found in the target.
type Containers struct {
	Images []ContainerImage `json:"images"`
	// Damaged are the images the layout lists whose blobs are missing or do
	// not hash to their digests: not seeded, whatever their names say.
	Damaged []DamagedImage `json:"damaged,omitempty"`
}

// DamagedImage is a listed image that is not whole, and why.
type DamagedImage struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
	Reason string `json:"reason"`
}

// ContainerImage is one pre-seeded base.
type ContainerImage struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
	Source string `json:"source"`
}
