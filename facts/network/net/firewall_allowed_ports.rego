# METADATA
# title: Firewall opens only allowed ports
# description: >-
#   Every port the firewall accepts inbound must be in params.allowed_ports: the ports its rules
#   admit on the input path (following jumps, gotos and sets), read from the kernel on a live host
#   and from /etc/nftables.conf or ufw offline. An input policy of accept fails, since then every
#   port is open. A rule gpuhost cannot evaluate that may accept more is an error, not a pass.
#   Skips when no firewall is configured (GH-NET-002 reports that). IPv4 and IPv6 are judged apart:
#   a port or an open policy of one family alone is named with its family, and a family no input
#   hook filters has every port open (IPv6 on a live host whose evidence shows it off excepted). A
#   run of consecutive ports outside allowed_ports is one finding. A port a redirect or dnat rule
#   publishes is open too when the chains behind NAT let it through, and fails outside
#   allowed_ports naming the nat rule and where it sends the port.
# scope: package
# custom:
#   id: GH-NET-003
#   severity: medium
#   location: /etc/nftables.conf
#   remediation: >-
#     Remove the rule that opens the listed port (ufw delete allow PORT, or the nftables accept
#     rule), or add the port to allowed_ports in the params file if it is meant to be reachable.
#   controls:
#     nist-800-53: [CM-7, SC-7]
#   targets: [rootfs, image, host, facts]
#   requires: [firewall]
package gpuhost.net.firewall_allowed_ports

import data.gpuhost.lib.locate
import data.gpuhost.net.lib

fw := lib.firewall

skip contains "no firewall is configured" if fw == null

deny contains "parameter allowed_ports is not set" if {
	not data.gpuhost.params.allowed_ports
}

# A run of ports outside allowed_ports is one finding, which points at the
# rule that opens its first port.
deny contains finding if {
	data.gpuhost.params.allowed_ports
	fw != null
	some k, i in starts
	run := {"from": segments[i].from, "to": segments[ends[k]].to}
	msg := sprintf("the %s firewall accepts inbound %s%s, %s allowed_ports", [fw.backend, said(run), over(admitting(run.from)), outside(run)])
	at := lib.rule_place(run.from)
	finding := object.union({"msg": msg, "subject": subject(run)}, locate.place(at.file, at.line))
}

deny contains finding if {
	fw != null
	lib.families_alike
	lower(lib.joined_policy) == "accept"
	msg := sprintf("the %s firewall's input policy is accept: every port is open", [fw.backend])
	finding := locate.at(msg, lib.policy_place.file, lib.policy_place.line)
}

deny contains finding if {
	fw != null
	not lib.families_alike
	some name in lib.judged
	why := lib.open_families[name]
	msg := sprintf("every port is open over %s: %s", [lib.family_label[name], why])
	at := lib.family_policy_place[name]
	finding := locate.at(msg, at.file, at.line)
}

# Ports destination NAT publishes are open too, as whatever they are sent
# to: one finding per nat rule's run, naming the families it is open over
# when not all judged families publish it.
deny contains finding if {
	data.gpuhost.params.allowed_ports
	fw != null
	some key, pub in published
	lib.leaves_out(pub)
	msg := sprintf("the %s firewall %s inbound %s %s%s to %s (%s), %s allowed_ports", [
		fw.backend, lib.nat_move(pub), pub.proto, lib.said(pub), over(published_over(key)),
		lib.nat_destination(pub), pub.rule, outside(pub),
	])
	finding := object.union({"msg": msg, "subject": subject(pub)}, locate.place(object.get(pub, "file", ""), object.get(pub, "line", 0)))
}

# The views judged: the joined one in facts without families, else each
# judged family, so that a port only IPv6 admits on a host with IPv6 off
# counts for nothing. runs are each view's admitted ports as runs.
views["all"] := fw if {
	fw != null
	count(lib.families) == 0
}

views[name] := lib.families[name] if some name in lib.judged

runs[name] := lib.port_runs(view) if some name, view in views

allowed := {port | some port in data.gpuhost.params.allowed_ports}

# The port space is cut where a view's run starts or ends and around each
# allowed port, so that within a segment every port is admitted by the
# same views and is allowed alike: the work grows with the rules and the
# parameter, never with the ports a rule opens.
cuts := sort({x | some rs in runs; some r in rs; some x in [r.from, r.to + 1]} | {x | some p in allowed; some x in [p, p + 1]})

segments := [{"from": cuts[i], "to": cuts[i + 1] - 1} | some i, _ in cuts; i < count(cuts) - 1]

admitting(port) := {name | some name, rs in runs; some r in rs; r.from <= port; port <= r.to}

# The segments that are admitted and not allowed.
outside_segments contains i if {
	some i, s in segments
	not s.from in allowed
	count(admitting(s.from)) > 0
}

# A segment goes on the run before it when the one before is outside too
# and the same views admit both.
goes_on(i) if {
	outside_segments[i]
	outside_segments[i - 1]
	admitting(segments[i].from) == admitting(segments[i - 1].from)
}

starts := sort([i | some i in outside_segments; not goes_on(i)])

ends := sort([i | some i in outside_segments; not goes_on(i + 1)])

said(run) := sprintf("port %d", [run.from]) if run.from == run.to

else := sprintf("ports %d-%d", [run.from, run.to])

outside(run) := "which is not in" if run.from == run.to

else := "none of which is in"

subject(run) := sprintf("port/%d", [run.from]) if run.from == run.to

else := sprintf("ports/%d-%d", [run.from, run.to])

# A run every judged family admits is said as before; one some admit is
# said with their names.
over(names) := "" if {
	count(lib.families) == 0
} else := "" if {
	count(lib.judged) == count(names)
} else := sprintf(" over %s", [concat(" and ", sort([lib.family_label[name] | some name in names]))])

# The published runs the judged families admit, each once, by its facts
# without the admitted flag; published_over names the families of one.
published[key] := pub if {
	some name in lib.judged
	some pub in object.get(lib.families[name], "published", [])
	pub.admitted
	key := json.marshal(object.remove(pub, ["admitted"]))
}

published_over(key) := {name |
	some name in lib.judged
	some pub in object.get(lib.families[name], "published", [])
	pub.admitted
	json.marshal(object.remove(pub, ["admitted"])) == key
}

error contains msg if {
	fw != null
	some r in object.get(fw, "unmodeled", [])
	r.may_accept
	msg := sprintf("%s may accept ports that cannot be listed (%s)", [r.rule, r.reason])
}
