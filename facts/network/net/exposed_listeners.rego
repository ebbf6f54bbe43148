# METADATA
# title: No listener the firewall lets in is outside allowed_ports
# description: >-
#   Joins the listening sockets with the firewall's ruleset on a live host: a socket listening on
#   an address other than loopback, whose port is not in params.allowed_ports and which the input
#   path admits (a rule, the input policy, or no firewall at all), fails, naming the port, the
#   process and the rule that lets it in. A listener the ruleset drops is not reachable and passes
#   here (GH-NET-001 still reports it). When the kernel's ruleset could not be read, or a rule that
#   cannot be evaluated may admit the port, the check is an error. Each address family is judged
#   apart and named: an IPv4 socket answers over IPv4, an IPv6 socket on :: over both (IPV6_V6ONLY
#   is not visible), and a family no ip6, ip or inet input hook filters admits every port, unless
#   it is IPv6 and the host's evidence shows IPv6 off.
# scope: package
# custom:
#   id: GH-NET-004
#   severity: high
#   location: /etc/nftables.conf
#   remediation: >-
#     Stop the process or bind it to 127.0.0.1, or remove the named rule (or set the input policy to
#     drop) so that the port is no longer admitted; add the port to allowed_ports only if it is
#     meant to be reachable.
#   controls:
#     nist-800-53: [SC-7, CM-7]
#   targets: [host, facts]
#   requires: [network, firewall]
package gpuhost.net.exposed_listeners

import data.gpuhost.net.lib

fw := lib.found

skip contains msg if {
	input.target.kind in lib.offline_kinds
	msg := sprintf("listening sockets are only observed on a live host; target kind is %s", [input.target.kind])
}

deny contains "parameter allowed_ports is not set" if {
	not data.gpuhost.params.allowed_ports
}

# Each finding names its socket by protocol and port, so SARIF follows it.
# The rules read a listener's fields where they test them, rather than
# collecting whole listeners (their pids differ from host to host), so that
# fleet scans can share a verdict across hosts.
deny contains {"msg": msg, "subject": sprintf("%s/%d", [l.proto, l.port])} if {
	not fw.kernel_error
	fw != null
	count(lib.families) == 0
	data.gpuhost.params.allowed_ports
	some l in object.get(input.network, "listening", [])
	not lib.loopback(l.address)
	not l.port in data.gpuhost.params.allowed_ports
	by := admitted_by(l.proto, l.port)
	msg := sprintf("%s %s port %d%s is not in allowed_ports and is admitted%s", [l.proto, l.address, l.port, lib.owner(object.get(l, "process", "")), by])
}

# With the per-family view, each family the listener answers over is
# judged by that family's input path and named.
deny contains {"msg": msg, "subject": sprintf("%s/%d", [l.proto, l.port])} if {
	not fw.kernel_error
	fw != null
	count(lib.families) > 0
	data.gpuhost.params.allowed_ports
	some l in object.get(input.network, "listening", [])
	not lib.loopback(l.address)
	not l.port in data.gpuhost.params.allowed_ports
	some name in lib.listener_families(l.proto, l.address)
	name in lib.judged
	why := reachable(lib.families[name], object.get(lib.open_families, name, ""), l.proto, l.port)
	msg := sprintf("%s %s port %d%s is not in allowed_ports and is reachable over %s: %s", [
		l.proto, l.address, l.port, lib.owner(object.get(l, "process", "")),
		lib.family_label[name], why,
	])
}

error contains "no firewall facts: which listeners are admitted is unknown" if fw == null

error contains msg if {
	fw.kernel_error
	msg := sprintf("the kernel's ruleset could not be read (%s): which listeners it admits is unknown", [fw.kernel_error])
}

error contains {"msg": msg, "subject": sprintf("%s/%d", [l.proto, l.port])} if {
	not fw.kernel_error
	fw != null
	count(lib.families) == 0
	data.gpuhost.params.allowed_ports
	some l in object.get(input.network, "listening", [])
	not lib.loopback(l.address)
	not l.port in data.gpuhost.params.allowed_ports
	not admitted_by(l.proto, l.port)
	some r in object.get(fw, "unmodeled", [])
	r.may_accept
	msg := sprintf("%s %s port %d%s may be admitted by %s (%s)", [l.proto, l.address, l.port, lib.owner(object.get(l, "process", "")), r.rule, r.reason])
}

error contains {"msg": msg, "subject": sprintf("%s/%d", [l.proto, l.port])} if {
	not fw.kernel_error
	fw != null
	count(lib.families) > 0
	data.gpuhost.params.allowed_ports
	some l in object.get(input.network, "listening", [])
	not lib.loopback(l.address)
	not l.port in data.gpuhost.params.allowed_ports
	some name in lib.listener_families(l.proto, l.address)
	name in lib.judged
	not reachable(lib.families[name], object.get(lib.open_families, name, ""), l.proto, l.port)
	some r in object.get(fw, "unmodeled", [])
	r.may_accept
	msg := sprintf("%s %s port %d%s may be reachable over %s: admitted by %s (%s)", [
		l.proto, l.address, l.port, lib.owner(object.get(l, "process", "")),
		lib.family_label[name], r.rule, r.reason,
	])
}

# Why a family lets the port in: nothing filters it, a rule admits it, or
# its input policy accepts (open says why the family is open, "" when it
# is not); undefined when the family drops it.
reachable(f, open, p, port) := open if {
	not f.filtered
} else := concat("", ["admitted by ", rules[0]]) if {
	rules := [a.rule |
		some a in object.get(f, "admits", [])
		a.proto == proto(p)
		a.from <= port
		port <= a.to
	]
	count(rules) > 0
} else := open if open != ""

proto(p) := "tcp" if startswith(p, "tcp")

proto(p) := "udp" if startswith(p, "udp")

admitted_by(p, port) := ": no firewall is configured" if {
	fw.backend == "none"
} else := concat("", [" by ", rules[0]]) if {
	rules := [a.rule |
		some a in object.get(fw, "admits", [])
		a.proto == proto(p)
		a.from <= port
		port <= a.to
	]
	count(rules) > 0
} else := sprintf(": the %s firewall's input policy is accept", [fw.backend]) if {
	lower(fw.default_input_policy) == "accept"
}
