# What the network checks share: which addresses are loopback, how a
# listener's process is named in a message, the firewall facts with
# "no firewall" told apart from "not collected", and the firewall's view
# of each address family.
package gpuhost.net.lib

offline_kinds := {"rootfs", "image", "oci"}

loopback(addr) if startswith(addr, "127.")

loopback(addr) if addr in {"::1", "[::1]", "localhost"}

loopback(addr) if startswith(addr, "::ffff:127.")

# The process alone, not the whole listener: a listener's PID differs from
# host to host, and what a check reads decides which hosts share its outcome.
owner(process) := sprintf(" (%s)", [process]) if process != ""

else := ""

found := object.get(object.get(input, "network", {}), "firewall", null)

# The collector reports backend "none" when neither ufw nor nftables is set up.
default firewall := null

firewall := found if {
	found != null
	found.backend != "none"
}

# Address families. A family is judged unless the facts show it off: IPv4
# always, IPv6 unless the live host's evidence says it is off. Facts from
# before the per-family view have no families and are judged as one.
family_label := {"ipv4": "IPv4", "ipv6": "IPv6"}

# The nftables families whose input hook filters each address family.
family_tables := {"ipv4": "ip", "ipv6": "ip6"}

default ipv6_on := true

ipv6_on := false if found.ipv6.enabled == false

# The per-family view by family name; a document that names a family twice
# is an evaluation error, not a guess.
families[f.family] := f if {
	found != null
	some f in object.get(found, "families", [])
}

judged contains "ipv4" if families.ipv4

judged contains "ipv6" if {
	families.ipv6
	ipv6_on
}

# Whether the judged families answer alike: then the joined fields say it
# for both, in the words the checks used before families were told apart.
default families_alike := true

families_alike := false if {
	count({[families[name].filtered, lower(families[name].default_input_policy)] | some name in judged}) > 1
}

# The input policy of the judged families when they are alike (then one
# judged family may say it alone), else the joined one.
joined_policy := lower(families[name].default_input_policy) if {
	families_alike
	some name in judged
} else := found.default_input_policy

# Why every port of a family is open, by family; a family whose input
# policy does not accept by default has no entry.
open_families[name] := "no firewall is configured" if {
	found.backend == "none"
	some name, f in families
	not f.filtered
}

open_families[name] := sprintf("no %s or inet table filters input", [family_tables[name]]) if {
	found.backend != "none"
	some name, f in families
	not f.filtered
}

open_families[name] := sprintf("the %s firewall's input policy for %s is accept", [found.backend, family_label[name]]) if {
	some name, f in families
	f.filtered
	lower(f.default_input_policy) == "accept"
}

# The families a listener answers over. An IPv6 socket on the wildcard also
# takes IPv4 (IPV6_V6ONLY is off by default and /proc/net does not show it);
# one on an IPv4-mapped address takes IPv4 alone.
listener_families(proto, _) := {"ipv4"} if not endswith(proto, "6")

listener_families(proto, addr) := {"ipv4", "ipv6"} if {
	endswith(proto, "6")
	addr == "::"
}

listener_families(proto, addr) := {"ipv4"} if {
	endswith(proto, "6")
	startswith(addr, "::ffff:")
}

listener_families(proto, addr) := {"ipv6"} if {
	endswith(proto, "6")
	addr != "::"
	not startswith(addr, "::ffff:")
}

# Where the input policy is set, joined and by family: the chain's policy
# statement, or the hook declaration of a chain that leaves it at accept.
# A ruleset read from the kernel, and a family no chain filters, have no
# such line (nowhere).
nowhere := {"file": "", "line": 0}

default policy_place := {"file": "", "line": 0}

policy_place := object.get(found, "policy_location", nowhere) if found != null

family_policy_place[name] := object.get(f, "policy_location", nowhere) if some name, f in families

# rule_place(port) is where the first rule that admits port is (TCP before
# UDP, IPv4 before IPv6), when the facts know its line.
rule_place(port) := {"file": rules[0].file, "line": rules[0].line} if {
	rules := [a |
		some a in object.get(found, "admits", [])
		a.from <= port
		port <= a.to
		object.get(a, "line", 0) > 0
	]
	count(rules) > 0
} else := nowhere

# port_runs(view) are the ports a firewall view (the joined one or a
# family's) admits by rules, as runs {from, to}: the collector's runs, or,
# in facts from before it wrote them, the listed ports joined into runs.
# A check reads runs, so that its work follows the rules and not the ports
# they open.
port_runs(view) := ranges if {
	ranges := view.allowed_port_ranges
} else := runs_of(object.get(view, "allowed_ports", []))

runs_of(ports) := [{"from": sorted[i], "to": sorted[ends[k]]} |
	some k, i in starts
] if {
	sorted := sort({p | some p in ports})
	starts := [i | some i, _ in sorted; run_starts(sorted, i)]
	ends := [i | some i, _ in sorted; run_ends(sorted, i)]
}

run_starts(_, 0)

run_starts(sorted, i) if sorted[i - 1] + 1 != sorted[i]

run_ends(sorted, i) if i == count(sorted) - 1

run_ends(sorted, i) if sorted[i + 1] != sorted[i] + 1

# Destination NAT. moved says every new connection to port over the family
# view f is sent elsewhere by a nat rule whose match is known, so nothing
# reaches the port as itself.
moved(f, proto, port) if {
	some pub in object.get(f, "published", [])
	pub.proto == proto
	pub.from <= port
	port <= pub.to
	not pub.partial
}

# lists_admissions says the view's admits list every port it lets in, the
# input policy's included: nftables views do, ufw's do not.
lists_admissions(f) if f.source == "kernel"

lists_admissions(_) if found.backend == "nftables"

# How a run of ports {from, to} is said in a finding.
said(run) := sprintf("port %d", [run.from]) if run.from == run.to

else := sprintf("ports %d-%d", [run.from, run.to])

is_are(run) := "is" if run.from == run.to

else := "are"

it_them(run) := "it" if run.from == run.to

else := "them"

# Where a published run goes, as nft writes it.
nat_target(pub) := sprintf("[%s]:%d", [pub.to_address, pub.to_port]) if {
	contains(pub.to_address, ":")
	object.get(pub, "to_port", 0) != 0
} else := sprintf("%s:%d", [pub.to_address, pub.to_port]) if {
	object.get(pub, "to_port", 0) != 0
} else := sprintf("%s (the same port)", [pub.to_address])

# leaves_out says some port of a run {from, to} is not in allowed_ports.
leaves_out(run) if {
	inside := {p | some p in data.gpuhost.params.allowed_ports; run.from <= p; p <= run.to}
	count(inside) < (run.to - run.from) + 1
}

# How a published run's move is said: "redirects ... to port 22" or
# "forwards ... to 10.0.0.2:80".
nat_move(pub) := "forwards" if {
	object.get(pub, "to_address", "") != ""
} else := "redirects"

nat_destination(pub) := nat_target(pub) if {
	object.get(pub, "to_address", "") != ""
} else := sprintf("port %d", [pub.to_port]) if {
	object.get(pub, "to_port", 0) != 0
} else := "the same port"
