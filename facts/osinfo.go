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

// KernelModules is what decides whether the kernel can load a module: the
// modprobe.d(5) configuration and, on a live host, the modules it holds.
type KernelModules struct {
	// Files are the modprobe.d files read, in the order modprobe reads
	// them: by file name, a name in /etc/modprobe.d hiding the same name
	// in /run, /usr/local/lib, /usr/lib and /lib/modprobe.d.
	Files []string `json:"files" factschema:"notnull"`
	// Modules holds what the configuration says of each module it names
	// in an install or blacklist line, by name as modprobe reads it: "-"
	// is "_" in a module name, so usb-storage is usb_storage.
	Modules map[string]ModuleConfig `json:"modules" factschema:"notnull"`
	// Loaded lists, sorted, the modules the running kernel holds
	// (/proc/modules): on a live host only, absent in an image.
	Loaded []string `json:"loaded,omitempty"`
}

// ModuleConfig is what modprobe.d says of one module.
type ModuleConfig struct {
	// Install is the command modprobe runs instead of loading the module.
	// It is the first install line for the module in Files' order: the
	// one modprobe obeys, whatever follows.
	Install *ModuleInstall `json:"install,omitempty"`
	// Blacklist is the first "blacklist" line naming the module. It stops
	// loading by alias (a device's or a filesystem's), not an explicit
	// modprobe of the module.
	Blacklist *collect.FileLine `json:"blacklist,omitempty"`
}

// ModuleInstall is an install line of modprobe.d: the command, as the
// shell would be given it, and where it is.
type ModuleInstall struct {
	Command string `json:"command"`
	File    string `json:"file"`
	Line    int    `json:"line" jsonschema:"minimum=1"`
}

// Sysctl holds the kernel parameters: as the sysctl.d(5) files configure
// them for the next boot and, on a live host, as the running kernel holds
// them. Keys are in sysctl's dotted form (net.ipv4.ip_forward); a key
// written with slashes is turned as sysctl.d(5) says ("net/ipv4/conf/eth0.1/rp_filter"
// is "net.ipv4.conf.eth0/1.rp_filter").
type Sysctl struct {
	// Files are the files read, in the order systemd-sysctl applies them:
	// by file name across /etc, /run, /usr/local/lib, /usr/lib and
	// /lib/sysctl.d, a name in an earlier directory hiding the same name
	// in a later one; then /etc/sysctl.conf, unless a sysctl.d link
	// (Debian's 99-sysctl.conf) already put it in its place.
	Files []string `json:"files" factschema:"notnull"`
	// Configured holds the value each key is set to, with the line that
	// set it: the last assignment in Files' order, as systemd-sysctl
	// applies them.
	Configured map[string]SysctlSetting `json:"configured" factschema:"notnull"`
	// Globs are the assignments whose key is a glob
	// ("net.ipv4.conf.*.rp_filter"), in the order they apply: each sets
	// every matching key that Configured and Excluded do not name, a later
	// glob over an earlier one.
	Globs []SysctlGlob `json:"globs" factschema:"notnull"`
	// Excluded are the keys a "-key" line with no value keeps every glob
	// from setting, each with that line.
	Excluded map[string]collect.FileLine `json:"excluded" factschema:"notnull"`
	// Running holds, on a live host, the value of every parameter the
	// running kernel shows under /proc/sys (the per-interface ones of
	// net.ipv4 and net.ipv6 only for all, default and the interfaces a
	// file configures), blanks between fields made single spaces; absent
	// in an image.
	Running map[string]string `json:"running,omitempty"`
}

// SysctlSetting is one configured kernel parameter's value, as written,
// and the line that set it.
type SysctlSetting struct {
	Value string `json:"value"`
	File  string `json:"file"`
	Line  int    `json:"line" jsonschema:"minimum=1"`
}

// SysctlGlob is an assignment to every kernel parameter a glob matches.
type SysctlGlob struct {
	Pattern string `json:"pattern"`
	Value   string `json:"value"`
	File    string `json:"file"`
	Line    int    `json:"line" jsonschema:"minimum=1"`
}

// Limits are the resource limits pam_limits sets at a login, from
// /etc/security/limits.conf and then /etc/security/limits.d/*.conf in
// name order, as it reads them.
type Limits struct {
	// Files are the files read, in that order.
	Files []string `json:"files" factschema:"notnull"`
	// Entries are their lines, in the same order: for a domain, type and
	// item, a later line overrides an earlier one.
	Entries []LimitEntry `json:"entries" factschema:"notnull"`
}

// LimitEntry is one line of limits.conf(5): "<domain> <type> <item>
// <value>".
type LimitEntry struct {
	// Domain is a user, @group, %group, a uid or gid range, or "*", which
	// applies to everyone but root.
	Domain string `json:"domain"`
	// Type is soft, hard or "-" (both).
	Type  string `json:"type" jsonschema:"enum=soft,enum=hard,enum=-"`
	Item  string `json:"item"`
	Value string `json:"value"`
	File  string `json:"file"`
	Line  int    `json:"line" jsonschema:"minimum=1"`
}
