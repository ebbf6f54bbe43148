package facts

// Network holds listening sockets (live only) and the firewall.
type Network struct {
	Listening []Listener `json:"listening"`
	Firewall  *Firewall  `json:"firewall,omitempty"`
}

// Listener is one listening socket.
type Listener struct {
	Proto   string `json:"proto"`
	Address string `json:"address"`
	Port    int    `json:"port"`
	Process string `json:"process,omitempty"`
	PID     int    `json:"pid,omitempty"`
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
	AllowedPorts []int `json:"allowed_ports"`
	// Source is "kernel" when the ruleset was read over netlink and "file"
	// when it was parsed from Path.
	Source string `json:"source,omitempty"`
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
}

// FirewallAdmit is a run of ports of one protocol and what admits it.
type FirewallAdmit struct {
	Proto string `json:"proto"`
	From  int    `json:"from"`
	To    int    `json:"to"`
	Rule  string `json:"rule"`
}

// FirewallRule is a rule the model could not evaluate. MayAccept is true
// when it could let in ports that AllowedPorts does not list.
type FirewallRule struct {
	Rule      string `json:"rule"`
	Reason    string `json:"reason"`
	MayAccept bool   `json:"may_accept"`
}
