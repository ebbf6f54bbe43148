package facts

import (
	"github.com/gpuhost/gpuhost/facts/collect"
)

// Network holds listening sockets (live only) and the firewall.
type Network struct {
	Listening []Listener `json:"listening"`
	Firewall  *Firewall  `json:"firewall,omitempty"`
}

// Listener is one listening socket.
type Listener struct {
	Proto   string `json:"proto"`
	Address string `json:"address"`
	Port    int    `json:"port" jsonschema:"minimum=0,maximum=65535"`
	Process string `json:"process,omitempty"`
	PID     int    `json:"pid,omitempty" jsonschema:"minimum=0"`
}

// Firewall is the input path of the firewall: on a live host the ruleset
// the kernel holds, offline the nftables or ufw configuration.
type Firewall struct {
	Backend string `json:"backend"`
	// Enabled says the firewall comes up at boot (offline: a wants link) or,
	// on a live host, that its unit is active; Unit says how it was told.
	Enabled bool `json:"enabled"`
	// DefaultInputPolicy is "accept" when a port no rule admits still
	// reaches an accepting policy, and otherwise the strictest policy (drop
	// when rules leave no port to an accepting one).
	DefaultInputPolicy string `json:"default_input_policy"`
	// AllowedPorts are the TCP and UDP ports that rules admit on the input
	// path, following jumps, gotos and sets.
	AllowedPorts []int `json:"allowed_ports" jsonschema:"minimum=0,maximum=65535"`
	// AllowedPortRanges are AllowedPorts as runs of consecutive ports, so
	// that a check's work follows the rules rather than the ports they
	// open: an accept of 1-65535 is one run (new in issue 47).
	AllowedPortRanges []PortRange `json:"allowed_port_ranges,omitempty"`
	// Source is "kernel" when the ruleset was read over netlink and "file"
	// when it was parsed from Path.
	Source string `json:"source,omitempty" jsonschema:"enum=file,enum=kernel"`
	Path   string `json:"path,omitempty"`
	// KernelError says why a live host's ruleset could not be read from
	// the kernel, so that the file was read instead.
	KernelError string `json:"kernel_error,omitempty"`
	// Unit is the systemd unit that loads the firewall, and its state.
	Unit *UnitState `json:"unit,omitempty"`
	// Admits names, for each range of admitted ports, the rule (or the
	// policy) that lets it in.
	Admits []FirewallAdmit `json:"admits,omitempty"`
	// Unmodeled lists rules with conditions gpuhost cannot evaluate.
	Unmodeled []FirewallRule `json:"unmodeled,omitempty"`
	// PolicyLocation is the line that sets the policy DefaultInputPolicy
	// reports, in a ruleset read from files: the policy statement of the
	// input chain it comes from, or the hook declaration of a chain that
	// leaves its policy at accept. Nil when rules decide it (a catch-all
	// drop), or the ruleset came from the kernel or from ufw.
	PolicyLocation *collect.FileLine `json:"policy_location,omitempty"`

	// New in issue 29: the fields above mix IPv4 and IPv6, and a ruleset
	// with no IPv6 input hook left IPv6 wide open behind a drop policy.
	// DefaultInputPolicy now also reads "accept" when a family the host has
	// on has no input hook at all; AllowedPorts and Admits still join the
	// families, so a document from before still reads the same.

	// Families judges IPv4 and IPv6 apart, IPv4 first: inet tables count
	// for both, ip tables for IPv4 and ip6 tables for IPv6 alone.
	Families []FirewallFamily `json:"families,omitempty"`
	// IPv6 says whether IPv6 is on in the scanned network namespace (live
	// only; absent offline, where it is taken to be on).
	IPv6 *IPv6State `json:"ipv6,omitempty"`
}

// FirewallFamily is the input path of one address family (new in issue 29).
type FirewallFamily struct {
	// Family is "ipv4" or "ipv6".
	Family string `json:"family" jsonschema:"enum=ipv4,enum=ipv6"`
	// Filtered is true when some filter chain on the input hook sees the
	// family; when false, every port is open over it.
	Filtered bool `json:"filtered"`
	// DefaultInputPolicy, AllowedPorts and Admits mean what the Firewall
	// fields of the same names mean, for this family alone; an unfiltered
	// family's policy is "accept".
	DefaultInputPolicy string          `json:"default_input_policy"`
	AllowedPorts       []int           `json:"allowed_ports" jsonschema:"minimum=0,maximum=65535"`
	AllowedPortRanges  []PortRange     `json:"allowed_port_ranges,omitempty"`
	Admits             []FirewallAdmit `json:"admits,omitempty"`
	// Chains names the input hook chains that judge the family, as
	// "FAMILY TABLE CHAIN" ("inet filter input", "ip filter INPUT").
	Chains []string `json:"chains,omitempty"`
	// PolicyLocation means what the Firewall field of that name means,
	// for this family alone; nil for a family no chain filters.
	PolicyLocation *collect.FileLine `json:"policy_location,omitempty"`
	// Source is "kernel" or "file", as for the Firewall.
	Source string `json:"source" jsonschema:"enum=file,enum=kernel"`
	// Published are the ports destination NAT moves before the input
	// hook sees them (new in issue 48): such a port is not admitted as
	// itself, and answers wherever its connections are sent.
	Published []FirewallPublished `json:"published,omitempty"`
}

// FirewallPublished is a run of ports that a prerouting nat rule
// (redirect or dnat) sends elsewhere: to ToPort on this host, or on
// ToAddress, which the forward path then judges (new in issue 48).
type FirewallPublished struct {
	Proto string `json:"proto" jsonschema:"enum=tcp,enum=udp"`
	From  int    `json:"from" jsonschema:"minimum=0,maximum=65535"`
	To    int    `json:"to" jsonschema:"minimum=0,maximum=65535"`
	// ToAddress is empty when the connections stay on this host (a
	// redirect); ToPort is 0 when each keeps the port it came to.
	ToAddress string `json:"to_address,omitempty"`
	ToPort    int    `json:"to_port,omitempty" jsonschema:"minimum=0,maximum=65535"`
	// Admitted says the filter chains before NAT let the ports in and
	// those behind it (input for this host, forward for another address)
	// let the moved connections through. Partial says the nat rule has
	// conditions gpuhost cannot evaluate: some connections to these ports
	// are moved, the others reach the ports as they are.
	Admitted bool `json:"admitted"`
	Partial  bool `json:"partial,omitempty"`
	// Rule is the nat rule; File and Line are where it is, in a ruleset
	// read from files.
	Rule string `json:"rule"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty" jsonschema:"minimum=1"`
}

// IPv6State is whether IPv6 can carry a connection to the host (new in
// issue 29). Enabled is false only on evidence: the kernel has no IPv6,
// disable_ipv6 is set everywhere, or no interface has an IPv6 address but
// the loopback's ::1 (another address on lo is routed to from outside, and
// keeps IPv6 on). Evidence says which, or why the state is not known (then
// Enabled is true).
type IPv6State struct {
	Enabled  bool   `json:"enabled"`
	Evidence string `json:"evidence"`
}

// PortRange is a run of ports, both ends included.
type PortRange struct {
	From int `json:"from" jsonschema:"minimum=0,maximum=65535"`
	To   int `json:"to" jsonschema:"minimum=0,maximum=65535"`
}

// FirewallAdmit is a run of ports of one protocol and what admits it.
// File and Line are where that rule (or policy) is, in a ruleset read from
// files.
type FirewallAdmit struct {
	Proto string `json:"proto" jsonschema:"enum=tcp,enum=udp"`
	From  int    `json:"from" jsonschema:"minimum=0,maximum=65535"`
	To    int    `json:"to" jsonschema:"minimum=0,maximum=65535"`
	Rule  string `json:"rule"`
	File  string `json:"file,omitempty"`
	Line  int    `json:"line,omitempty" jsonschema:"minimum=1"`
}

// FirewallRule is a rule the model could not evaluate. MayAccept is true
// when it could let in ports that AllowedPorts does not list.
type FirewallRule struct {
	Rule      string `json:"rule"`
	Reason    string `json:"reason"`
	MayAccept bool   `json:"may_accept"`
}
