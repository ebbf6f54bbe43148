package facts

import "github.com/gpuhost/gpuhost/facts/collect"

// OS comes from os-release.
type OS struct {
	ID         string `json:"id"`
	VersionID  string `json:"version_id"`
	Codename   string `json:"codename"`
	PrettyName string `json:"pretty_name"`
}

// Kernel holds the running kernel (host) or the installed ones and the
// configured command line (image).
type Kernel struct {
	Release string   `json:"release,omitempty"`
	Cmdline []string `json:"cmdline"`
	// CmdlineSource names the file the command line came from.
	CmdlineSource string `json:"cmdline_source,omitempty"`
	// CmdlineLocations are, in an image whose command line comes from
	// GRUB's defaults, the file and line that put each parameter there
	// (by its name, before any "="), so that a finding about it points at
	// the line to change.
	CmdlineLocations map[string]collect.FileLine `json:"cmdline_locations,omitempty"`
	// Installed lists kernel releases found under /lib/modules.
	Installed []string `json:"installed,omitempty" factschema:"notnull"`
}

// Cgroup says which cgroup hierarchy the host runs (or the image will boot).
type Cgroup struct {
	Version int    `json:"version" jsonschema:"minimum=0"`
	Source  string `json:"source"`
	// Memory is how memory is limited: on a live host from its cgroup2
	// tree (nil under v1), in an image from the slices' unit files.
	Memory *CgroupMemory `json:"memory,omitempty"`
}

// CgroupMemory is the memory controller and the limits set on the
// top-level slices.
type CgroupMemory struct {
	// ControllerEnabled says whether the root's cgroup.subtree_control
	// enables the memory controller for its children; known on a live host
	// only (nil in an image, where systemd enables it at boot).
	ControllerEnabled *bool `json:"controller_enabled,omitempty"`
	// Slices are system.slice, user.slice and machine.slice, in that order.
	Slices []SliceMemory `json:"slices"`
}

// SliceMemory is one slice's memory limits: the values of MemoryMax= and
// MemoryHigh= ("max" or empty when unlimited), from the slice's cgroup on a
// live host (Source "cgroup") or its unit drop-ins in an image (the file).
type SliceMemory struct {
	Name       string `json:"name"`
	MemoryMax  string `json:"memory_max"`
	MemoryHigh string `json:"memory_high"`
	Source     string `json:"source"`
}

// UnitState is a systemd unit's ActiveState, or "unknown" with a reason.
type UnitState struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// Systemd lists the unit state that policy cares about.
type Systemd struct {
	Enabled []string `json:"enabled"`
	Masked  []string `json:"masked"`
	// Version is systemd's major version from the installed package; it
	// decides the cgroup default when the kernel command line says nothing.
	Version int `json:"version,omitempty" jsonschema:"minimum=0"`
}
