# METADATA
# title: No listener the firewall lets in is outside allowed_ports
# description: >-
#   On a live host, a socket listening outside loopback on a port not in params.allowed_ports
#   fails when the input path admits it (a rule, the input policy, or no firewall), naming the
#   port, the process and the rule. A listener the ruleset drops passes here (GH-NET-001 still
#   reports it). An unreadable kernel ruleset, or an unmodeled rule that may admit the port, makes
#   the check an error. Each address family is judged and named apart: an IPv6 socket on :: answers
#   over both, and a family no input hook filters admits every port (IPv6 off on the host's
#   evidence excepted). A port destination NAT moves is judged where it goes: redirected onto a
#   listener the input path admits, or sent by dnat to another address (a container's published
#   port) past the forward path, it fails naming the nat rule; a listener whose port NAT moves
#   elsewhere is not reached as itself.
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

# Ports destination NAT publishes: a connection to a port outside
# allowed_ports that the path before NAT lets in, moved onto a listener of
# this host (or the same port) that the input path admits, reaches that
# listener. One finding per nat rule's run of ports and listener.
deny contains {"msg": msg, "subject": run_subject(run, pub.proto)} if {
	not fw.kernel_error
	fw != null
	data.gpuhost.params.allowed_ports
	some name in lib.judged
	some pub in object.get(lib.families[name], "published", [])
	pub.admitted
	object.get(pub, "to_address", "") == ""
	some l in object.get(input.network, "listening", [])
	proto(l.proto) == pub.proto
	not lib.loopback(l.address)
	name in lib.listener_families(l.proto, l.address)
	lands_on(pub, l.port)
	some run in outside_allowed(pub, l.port)
	msg := sprintf("%s %s %s not in allowed_ports and %s reachable over %s: %s sends %s to %s %s port %d%s", [
		pub.proto, lib.said(run), lib.is_are(run), lib.is_are(run), lib.family_label[name], pub.rule,
		lib.it_them(run), l.proto, l.address, l.port, lib.owner(object.get(l, "process", "")),
	])
}

# And moved onto another address, past the forward path: a container's or
# another host's listener, which the scan cannot see, answers there.
deny contains {"msg": msg, "subject": run_subject(run, pub.proto)} if {
	not fw.kernel_error
	fw != null
	data.gpuhost.params.allowed_ports
	some name in lib.judged
	some pub in object.get(lib.families[name], "published", [])
	pub.admitted
	object.get(pub, "to_address", "") != ""
	some run in outside_allowed(pub, 0)
	msg := sprintf("%s %s %s not in allowed_ports and %s reachable over %s: %s forwards %s to %s", [
		pub.proto, lib.said(run), lib.is_are(run), lib.is_are(run), lib.family_label[name], pub.rule,
		lib.it_them(run), lib.nat_target(pub),
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
# is not); undefined when the family drops it, or when destination NAT
# moves every connection to the port elsewhere. The nftables views list
# every port they admit, the policy's included; ufw's list none, and
# their policy speaks for the ports no rule names.
reachable(f, open, p, port) := open if {
	not f.filtered
	not lib.moved(f, proto(p), port)
} else := concat("", ["admitted by ", rules[0]]) if {
	rules := [a.rule |
		some a in object.get(f, "admits", [])
		a.proto == proto(p)
		a.from <= port
		port <= a.to
	]
	count(rules) > 0
} else := open if {
	open != ""
	not lib.lists_admissions(f)
}

# lands_on says the published run's connections reach port: its one
# target port, or the port itself when each keeps its own.
lands_on(pub, port) if pub.to_port == port

lands_on(pub, port) if {
	object.get(pub, "to_port", 0) == 0
	pub.from <= port
	port <= pub.to
}

# outside_allowed are the runs of a published run that allowed_ports
# leaves out: the whole run, or (when each port keeps its own) the one
# port listened on; a run wholly allowed has none.
outside_allowed(pub, port) := [{"from": port, "to": port}] if {
	object.get(pub, "to_port", 0) == 0
	port != 0
	not port in data.gpuhost.params.allowed_ports
} else := [{"from": pub.from, "to": pub.to}] if {
	object.get(pub, "to_port", 0) != 0
	lib.leaves_out(pub)
} else := []

run_subject(run, p) := sprintf("%s/%d", [p, run.from]) if run.from == run.to

else := sprintf("%s/%d-%d", [p, run.from, run.to])

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
